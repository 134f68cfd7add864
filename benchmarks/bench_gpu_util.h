// What the GPU benchmarks share: skipping where there is no CUDA device (so
// the binaries run, reporting nothing, on machines without one) and the
// throughput counters.
#pragma once

#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <vector>

#include "runtime/cuda_driver.h"

namespace smelt::bench {

// True (and the benchmark skipped with an error) when no CUDA device is usable.
inline bool gpuMissing(benchmark::State& state) {
  if (cuda::deviceAvailable() && at::cuda::is_available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

// Bytes of the tensors, each counted once (compulsory traffic).
inline int64_t bytesOf(const std::vector<at::Tensor>& tensors) {
  int64_t bytes = 0;
  for (const at::Tensor& t : tensors) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  return bytes;
}

// "GB/s": `bytes` moved per iteration.
inline void reportBandwidth(benchmark::State& state, int64_t bytes) {
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace smelt::bench
