// The runtime's two speed targets (issue 5):
//   * NVRTC compile of a typical fusion <= 100 ms: a lowered pointwise
//     fusion (relu(a * s + b) on symbolic 2-D tensors over BIDx x TIDx) in
//     fp32 and in fp16 (whose cuda_fp16.h is the usual cost); plus the whole
//     cache-miss compile (lowering + codegen + NVRTC) for reference;
//   * the host overhead of a cached launch <= 10 us: FusionExecutor::
//     prepareLaunch, i.e. everything run() does on CUDA tensors before
//     cuLaunchKernel (validation, binding sizes, launch parameters, output
//     allocation, argument packing), measured on CPU tensors so it runs
//     without a GPU; plus the kernel-cache lookup by key;
//   * the host cost of a repeated FusionExecutorCache run (a static-shape
//     model calls each fusion with the same shapes every forward): its
//     lookups, the segment's launch plan and output allocation, on meta
//     tensors (compileFor: everything but the launch).
// Times are wall-clock (NVRTC and allocation are not pure CPU work).
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include "codegen/cuda_codegen.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "lower/lower.h"
#include "runtime/executor.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/fusion_key.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/registry.h"
#include "scheduler/runtime_info.h"

namespace {

using namespace smelt;

void buildPointwise(Fusion& fusion, DataType dtype) {
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2, dtype);
  TensorView* b = makeContigTensor(2, dtype);
  Scalar* s = symbolicScalar(DataType::Float);
  fusion.addInput(a);
  fusion.addInput(s);
  fusion.addInput(b);
  TensorView* c = castOp(dtype, relu(add(mul(a, s), b)));
  fusion.addOutput(c);
  c->merge(0)->split(0, 128);
  c->axis(0)->parallelize(ParallelType::BIDx);
  c->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(c);
  inlineMost(&fusion);
}

DataType dtypeArg(const benchmark::State& state) {
  return state.range(0) == 16 ? DataType::Half : DataType::Float;
}

void BM_NvrtcCompile(benchmark::State& state) {
  Fusion fusion;
  buildPointwise(fusion, dtypeArg(state));
  GpuLower lower(&fusion);
  const std::string source = generateCuda(lower.run(), "pointwise");
  compileCuda(source, "pointwise");  // NVRTC's one-time start-up is not the fusion's cost
  for (auto _ : state) benchmark::DoNotOptimize(compileCuda(source, "pointwise"));
  state.SetLabel(state.range(0) == 16 ? "fp16" : "fp32");
}
BENCHMARK(BM_NvrtcCompile)->Arg(32)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ExecutorCompileMiss(benchmark::State& state) {
  Fusion fusion;
  buildPointwise(fusion, dtypeArg(state));
  const auto type = dtypeArg(state) == DataType::Half ? at::kHalf : at::kFloat;
  const std::vector<at::Tensor> inputs = {at::randn({64, 64}).to(type), at::scalar_tensor(1.0),
                                          at::randn({64, 64}).to(type)};
  for (auto _ : state) {
    KernelCache cache;
    ExecutorOptions options;
    options.cache = &cache;
    FusionExecutor fe;
    fe.compile(&fusion, inputs, options);
  }
  state.SetLabel(state.range(0) == 16 ? "fp16" : "fp32");
}
BENCHMARK(BM_ExecutorCompileMiss)->Arg(32)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CachedLaunchHostOverhead(benchmark::State& state) {
  Fusion fusion;
  buildPointwise(fusion, DataType::Float);
  const std::vector<at::Tensor> inputs = {at::randn({1024, 1024}), at::scalar_tensor(0.5),
                                          at::randn({1024, 1024})};
  FusionExecutor fe;
  fe.compile(&fusion, inputs);
  for (auto _ : state) benchmark::DoNotOptimize(fe.prepareLaunch(inputs));
}
BENCHMARK(BM_CachedLaunchHostOverhead)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelCacheLookup(benchmark::State& state) {
  Fusion fusion;
  buildPointwise(fusion, DataType::Float);
  const std::vector<at::Tensor> inputs = {at::randn({8, 8}), at::scalar_tensor(0.5), at::randn({8, 8})};
  FusionExecutor fe;
  fe.compile(&fusion, inputs);
  KernelCache& cache = FusionExecutor::globalCache();
  const std::string key = fe.cacheKey();
  for (auto _ : state) benchmark::DoNotOptimize(cache.find(key));
  state.counters["key_bytes"] = static_cast<double>(key.size());
}
BENCHMARK(BM_KernelCacheLookup)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The cache key of a fusion (what a lookup by fusion, e.g. a
// FusionExecutorCache, has to build unless it keys by something cheaper).
void BM_FusionCacheKey(benchmark::State& state) {
  Fusion fusion;
  buildPointwise(fusion, DataType::Float);
  for (auto _ : state) benchmark::DoNotOptimize(fusionCacheKey(fusion));
}
BENCHMARK(BM_FusionCacheKey)->Unit(benchmark::kMicrosecond)->UseRealTime();

// What FusionExecutorCache did for every segment of every run before it kept
// each segment's choice per exact input shape: RuntimeInfo, the scheduler's
// checks, its heuristics and the parameters' key, for an unscheduled softmax
// on [256, 1024] (a persistent segment). A run with a shape seen before now
// skips all of it.
void BM_SegmentHeuristicsPerRun(benchmark::State& state) {
  Fusion fusion;
  {
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(2);
    fusion.addInput(x);
    TensorView* e = exp(sub(x, broadcast(max(x, {1}), {false, true})));
    fusion.addOutput(div(e, broadcast(sum(e, {1}), {false, true})));
  }
  const std::vector<InputInfo> infos = {InputInfo::contiguous(DataType::Float, {256, 1024})};
  const SchedulerEntry& scheduler = schedulerEntry(SchedulerType::Persistent);
  for (auto _ : state) {
    RuntimeInfo runtime(fusion, infos, 90);
    if (!scheduler.reject_reason(fusion, runtime).empty()) state.SkipWithError("softmax rejected");
    benchmark::DoNotOptimize(scheduler.heuristics(fusion, runtime)->toString());
  }
}
BENCHMARK(BM_SegmentHeuristicsPerRun)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_RepeatedRunHostOverhead(benchmark::State& state) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeContigTensor(2);
    fusion->addInput(x);
    TensorView* e = exp(sub(x, broadcast(max(x, {1}), {false, true})));
    fusion->addOutput(div(e, broadcast(sum(e, {1}), {false, true})));
  }
  FusionExecutorCache cache(std::move(fusion));
  const std::vector<at::Tensor> inputs = {at::empty({256, 1024}, at::TensorOptions().device(c10::kMeta))};
  const c10::Device device(c10::kCUDA, 0);
  cache.compileFor(inputs, device);
  for (auto _ : state) benchmark::DoNotOptimize(cache.compileFor(inputs, device));
}
BENCHMARK(BM_RepeatedRunHostOverhead)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
