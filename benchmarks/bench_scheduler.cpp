// Host-side costs of automatic scheduling, measurable without a GPU:
//   * per run, on a cache hit, FusionExecutorCache computes the input
//     signature and each segment's heuristics before launching: those are
//     the *Heuristics and InputSignature figures;
//   * per new signature, segmentation; per new parameter set, scheduling and
//     lowering: the Segment* and ScheduleAndLower* figures.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include <memory>

#include "common/example_fusions.h"
#include "fusion/ops.h"
#include "lower/lower.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/normalization.h"
#include "scheduler/pointwise.h"
#include "scheduler/registry.h"
#include "scheduler/segmenter.h"

namespace smelt {
namespace {

std::unique_ptr<Fusion> pointwiseFusion() {
  return examples::fusionOf({2, 1}, [](const std::vector<TensorView*>& in) {
    return relu(add(mul(in[0], 2.0), broadcast(in[1], {true, false})));
  });
}

void BM_PointwiseHeuristics(benchmark::State& state) {
  auto fusion = pointwiseFusion();
  std::vector<InputInfo> inputs = {InputInfo::contiguous(DataType::Float, {4096, 4096}),
                                   InputInfo::contiguous(DataType::Float, {4096})};
  for (auto _ : state) {
    RuntimeInfo runtime(*fusion, inputs);
    benchmark::DoNotOptimize(pointwiseHeuristics(*fusion, runtime));
  }
}
BENCHMARK(BM_PointwiseHeuristics);

void BM_PersistentHeuristics(benchmark::State& state) {
  auto fusion = examples::rowSoftmaxFusion();
  std::vector<InputInfo> inputs = {InputInfo::contiguous(DataType::Float, {4096, 1024})};
  for (auto _ : state) {
    RuntimeInfo runtime(*fusion, inputs);
    benchmark::DoNotOptimize(persistentHeuristics(*fusion, runtime));
  }
}
BENCHMARK(BM_PersistentHeuristics);

void BM_InputSignature(benchmark::State& state) {
  std::vector<at::Tensor> inputs = {at::empty({4096, 4096}), at::empty({4096})};
  for (auto _ : state) benchmark::DoNotOptimize(inputSignature(inputs));
}
BENCHMARK(BM_InputSignature);

// Segmentation when one scheduler takes the fusion, and when the row is too
// long and the greedy merge runs.
void BM_SegmentSoftmax(benchmark::State& state) {
  auto fusion = examples::rowSoftmaxFusion();
  RuntimeInfo runtime(*fusion, {InputInfo::contiguous(DataType::Float, {64, state.range(0)})});
  for (auto _ : state) benchmark::DoNotOptimize(segmentFusion(*fusion, runtime));
  state.SetLabel(segmentFusion(*fusion, runtime).toString());
}
BENCHMARK(BM_SegmentSoftmax)->Arg(1024)->Arg(32768)->Unit(benchmark::kMicrosecond);

void BM_ScheduleAndLowerSoftmax(benchmark::State& state) {
  auto fusion = examples::rowSoftmaxFusion();
  RuntimeInfo runtime(*fusion, {InputInfo::contiguous(DataType::Float, {4096, 1024})});
  for (auto _ : state) {
    std::unique_ptr<Fusion> copy = fusion->clone();
    RuntimeInfo copy_runtime(*copy, runtime.inputs());
    scheduleFusion(*copy, copy_runtime);
    GpuLower lower(copy.get());
    benchmark::DoNotOptimize(&lower.run());
  }
}
BENCHMARK(BM_ScheduleAndLowerSoftmax)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace smelt
