// SKIP_WITHOUT_GPU(): skips a GPU-labelled test, saying why, where there is
// no CUDA device (or torch sees none).
#pragma once

#include <gtest/gtest.h>

#include <ATen/cuda/CUDAContext.h>

#include <string>

#include "runtime/cuda_driver.h"

namespace smelt::testing {

inline bool gpuMissing(std::string& why) {
  if (!cuda::deviceAvailable()) {
    why = "no CUDA device: " + cuda::unavailableReason();
    return true;
  }
  if (!at::cuda::is_available()) {
    why = "torch sees no CUDA device";
    return true;
  }
  return false;
}

}  // namespace smelt::testing

#define SKIP_WITHOUT_GPU()                                        \
  do {                                                            \
    std::string why;                                              \
    if (::smelt::testing::gpuMissing(why)) GTEST_SKIP() << why;   \
  } while (false)
