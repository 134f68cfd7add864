// TFLOP/s of the tensor-core matmul (fp16, TT layout, the matmul scheduler's
// heuristic configuration for the GPU's architecture, run by FusionExecutor)
// and of torch.matmul (cuBLAS) side by side, one row per shape: M = N = K in
// {1024, 2048, 4096, 8192}, the LLM MLP shapes M 4096, K 4096, N 4096 /
// 11008 / 14336, and skinny M = 16 / 64. Counters: "TFLOP/s" (smelt),
// "torch TFLOP/s" and "vs torch" (the ratio). GPU only: without a device
// every benchmark is skipped with "no CUDA device" and the program exits 0.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <chrono>

#include "bench_gpu_util.h"
#include "common/tensor_core_fusions.h"
#include "runtime/executor.h"
#include "runtime/fusion_executor_cache.h"

namespace {

using namespace smelt::testing::tensor_core;

// Seconds per call of `run` (launch and synchronize), after a warm-up
// (module load, cuBLAS heuristics).
template <typename Run>
double secondsPerCall(Run&& run, int calls) {
  for (int i = 0; i < 3; ++i) run();
  at::cuda::device_synchronize();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) run();
  at::cuda::device_synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
}

void BM_TensorCoreVsTorch(benchmark::State& state) {
  if (smelt::bench::gpuMissing(state)) return;
  Case c;
  c.m = state.range(0);
  c.n = state.range(1);
  c.k = state.range(2);
  TcFusion f = makeFusion(c, c10::Device(c10::kCUDA, 0));
  smelt::ExecutorOptions options;
  const int arch = smelt::targetArch(options, c10::Device(c10::kCUDA, 0));
  smelt::RuntimeInfo runtime(*f.fusion, smelt::inputInfosOf(*f.fusion, f.inputs), arch);
  const smelt::MatmulParams p =
      smelt::matmulHeuristics(*f.fusion, runtime, smelt::DeviceLimits::forArch(arch));
  if (!p.use_tensor_cores) {
    state.SkipWithError(("no tensor cores: " + p.tensor_core_blocker).c_str());
    return;
  }
  smelt::scheduleMatmul(f.fusion.get(), p);
  smelt::FusionExecutor fe;
  fe.compile(f.fusion.get(), f.inputs, options);
  state.SetLabel(p.tensor_core.toString() + ", " + std::to_string(fe.ptxasInfo().registers) +
                 " registers, " + std::to_string(fe.launchParams().smem_bytes) + " B shared");
  const double flop = 2.0 * c.m * c.n * c.k;
  const double torch_seconds = secondsPerCall([&] { at::matmul(f.inputs[0], f.inputs[1]); }, 20);
  secondsPerCall([&] { fe.run(f.inputs); }, 1);  // warm-up
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    fe.run(f.inputs);
    at::cuda::device_synchronize();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["TFLOP/s"] =
      benchmark::Counter(flop * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["torch TFLOP/s"] = flop * 1e-12 / torch_seconds;
  // Iteration time per call against torch's: > 1 means faster than cuBLAS.
  state.counters["vs torch"] = benchmark::Counter(
      torch_seconds, benchmark::Counter::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t s : {1024, 2048, 4096, 8192}) b->Args({s, s, s});
  for (int64_t n : {11008, 14336}) b->Args({4096, n, 4096});
  for (int64_t m : {16, 64}) b->Args({m, 4096, 4096});
  b->ArgNames({"M", "N", "K"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_TensorCoreVsTorch)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
