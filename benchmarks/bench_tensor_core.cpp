// TFLOP/s of the tensor-core matmul kernel (default heuristic configuration,
// fp16, TT layout with a cast epilogue) against torch.matmul (cuBLAS), side by
// side per shape: M = N = K in {1024, 2048, 4096, 8192}, LLM MLP shapes
// (M 4096, K 4096, N 11008 / 14336) and skinny M = 16 / 64. GPU only: every
// benchmark reports an error and stops without a GPU; never run in CI.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <chrono>

#include "common/tensor_core_fusions.h"
#include "runtime/cuda_driver.h"
#include "runtime/tensor_core_runner.h"

namespace {

using namespace smelt::testing::tensor_core;

bool skipWithoutGpu(benchmark::State& state) {
  if (smelt::cuda::deviceAvailable() && at::cuda::is_available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

// Times `run` per iteration (launch and synchronize) and reports TFLOP/s.
template <typename Run>
void timeMatmul(benchmark::State& state, int64_t m, int64_t n, int64_t k, Run&& run) {
  for (int i = 0; i < 3; ++i) run();  // warm-up (module load, cuBLAS heuristics)
  at::cuda::device_synchronize();
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    run();
    at::cuda::device_synchronize();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["TFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

Case shapeCase(const benchmark::State& state) {
  Case c;
  c.m = state.range(0);
  c.n = state.range(1);
  c.k = state.range(2);
  return c;
}

void BM_Smelt(benchmark::State& state) {
  if (skipWithoutGpu(state)) return;
  Case c = shapeCase(state);
  TcFusion f = makeFusion(c, c10::Device(c10::kCUDA, 0));
  smelt::TensorCoreMatmulParams p =
      smelt::tensorCoreHeuristics(c.m, c.n, c.k, c.a_k_contiguous, c.b_k_contiguous);
  smelt::TensorCoreMatmulRunner runner(f.fusion.get(), f.operands, p);
  state.SetLabel(p.toString() + ", " + std::to_string(runner.compiled().ptxas.registers) +
                 " registers");
  timeMatmul(state, c.m, c.n, c.k, [&] { runner.run(f.inputs); });
}

void BM_Torch(benchmark::State& state) {
  if (skipWithoutGpu(state)) return;
  Case c = shapeCase(state);
  TcFusion f = makeFusion(c, c10::Device(c10::kCUDA, 0));
  timeMatmul(state, c.m, c.n, c.k, [&] { at::matmul(f.inputs[0], f.inputs[1]); });
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t s : {1024, 2048, 4096, 8192}) b->Args({s, s, s});
  for (int64_t n : {11008, 14336}) b->Args({4096, n, 4096});
  for (int64_t m : {16, 64}) b->Args({m, 4096, 4096});
  b->ArgNames({"M", "N", "K"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Smelt)->Apply(shapes);
BENCHMARK(BM_Torch)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
