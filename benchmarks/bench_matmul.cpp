// The matmul scheduler's costs.
// Host side (no GPU needed):
//   * scheduling + lowering (with the shared-memory plan) of the case D1
//     configuration (128 x 128 x 32 tiles, 3 stages, fp16, C_s epilogue);
//   * the CPU simulator on a 64^3 fp32 matmul with the heuristic schedule
//     (256 threads, 4 blocks, race detection on), one thread order — the
//     simulator has to stay fast enough for CI to run every matmul variant.
// GPU (skipped without a device): fp16 N^3 matmuls, N = 1024 .. 8192, with
// the heuristic schedule (CUDA cores) and with torch.matmul (cuBLAS), as
// TFLOP/s.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include "bench_gpu_util.h"

#include "fusion/ops.h"
#include "lower/lower.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/simulator/simulator.h"
#include "scheduler/matmul/matmul_scheduler.h"

namespace {

using namespace smelt;

void buildMatmul(Fusion& fusion, int64_t m, int64_t n, int64_t k, DataType dtype) {
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({m, k}, dtype);
  TensorView* b = makeConcreteTensor({k, n}, dtype);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(matmul(a, b));
}

void BM_MatmulScheduleAndLowerD1(benchmark::State& state) {
  MatmulParams params;
  params.block_m = params.block_n = 128;
  params.block_k = 32;
  params.stages = 3;
  params.smem_epilogue = true;
  params.promote_operand_reuse = true;
  for (auto _ : state) {
    Fusion fusion;
    buildMatmul(fusion, 4096, 4096, 4096, DataType::Half);
    scheduleMatmul(&fusion, params);
    GpuLower lower(&fusion);
    benchmark::DoNotOptimize(lower.run().smem_plan);
  }
}
BENCHMARK(BM_MatmulScheduleAndLowerD1)->Unit(benchmark::kMillisecond);

void BM_MatmulSimulate64Cubed(benchmark::State& state) {
  Fusion fusion;
  buildMatmul(fusion, 64, 64, 64, DataType::Float);
  RuntimeInfo runtime(fusion, {InputInfo::contiguous(DataType::Float, {64, 64}),
                               InputInfo::contiguous(DataType::Float, {64, 64})});
  scheduleMatmul(&fusion, matmulHeuristics(fusion, runtime));
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  at::Tensor a = at::randn({64, 64});
  at::Tensor b = at::randn({64, 64});
  for (auto _ : state) benchmark::DoNotOptimize(sim::simulate(kernel, {a, b}));
  state.SetItemsProcessed(state.iterations() * 64 * 64 * 64);  // multiply-adds
}
BENCHMARK(BM_MatmulSimulate64Cubed)->Unit(benchmark::kMillisecond);

using bench::gpuMissing;

void reportTflops(benchmark::State& state, int64_t n) {
  state.counters["TFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 1e12,
      benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<at::Tensor> gpuOperands(int64_t n) {
  const at::TensorOptions options = at::TensorOptions().dtype(at::kHalf).device(at::kCUDA);
  return {at::randn({n, n}, options), at::randn({n, n}, options)};
}

void BM_SmeltMatmulFp16(benchmark::State& state) {
  if (gpuMissing(state)) return;
  const int64_t n = state.range(0);
  Fusion fusion;
  buildMatmul(fusion, n, n, n, DataType::Half);
  const std::vector<at::Tensor> inputs = gpuOperands(n);
  MatmulParams params = matmulHeuristics(fusion, RuntimeInfo(fusion, inputInfosOf(fusion, inputs)));
  params.use_tensor_cores = false;  // the CUDA-core baseline; bench_tensor_core times tensor cores
  scheduleMatmul(&fusion, params);
  FusionExecutor fe;
  ExecutorOptions options;
  options.device = at::Device(at::kCUDA, 0);
  fe.compile(&fusion, inputs, options);
  fe.run(inputs);
  c10::cuda::device_synchronize();
  for (auto _ : state) {
    benchmark::DoNotOptimize(fe.run(inputs));
    c10::cuda::device_synchronize();
  }
  reportTflops(state, n);
}
BENCHMARK(BM_SmeltMatmulFp16)->RangeMultiplier(2)->Range(1024, 8192)->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_TorchMatmulFp16(benchmark::State& state) {
  if (gpuMissing(state)) return;
  const int64_t n = state.range(0);
  const std::vector<at::Tensor> inputs = gpuOperands(n);
  at::matmul(inputs[0], inputs[1]);
  c10::cuda::device_synchronize();
  for (auto _ : state) {
    benchmark::DoNotOptimize(at::matmul(inputs[0], inputs[1]));
    c10::cuda::device_synchronize();
  }
  reportTflops(state, n);
}
BENCHMARK(BM_TorchMatmulFp16)->RangeMultiplier(2)->Range(1024, 8192)->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
