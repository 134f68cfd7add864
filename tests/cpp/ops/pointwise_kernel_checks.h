// What the op-kernel suites (test_op_kernels, test_layout_kernels) do to each
// fusion: a plain pointwise schedule, and NVRTC compiling the lowered kernel.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda_codegen.h"
#include "fusion/fusion.h"
#include "fusion/transform_replay.h"
#include "lower/lower.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt::testing {

// Merges every axis of `reference`, splits by `threads` onto BIDx x TIDx,
// propagates that to every tensor and inlines.
inline void schedulePointwise(Fusion& fusion, TensorView* reference, int64_t threads = 64) {
  while (reference->nDims() > 1) reference->merge(0);
  reference->split(0, threads);
  reference->axis(0)->parallelize(ParallelType::BIDx);
  reference->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(reference);
  inlineMost(&fusion);
}

// NVRTC compiles the fusion's kernel (ptxas reports its registers).
inline void expectCompiles(Fusion& fusion, const std::string& name) {
  GpuLower lower(&fusion);
  const std::string cuda = generateCuda(lower.run(), name);
  EXPECT_GT(compileCuda(cuda, name).ptxas.registers, 0) << cuda;
}

}  // namespace smelt::testing
