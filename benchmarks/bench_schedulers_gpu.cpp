// Every scheduler on the GPU, automatically scheduled through
// FusionExecutorCache, against torch eager on the same CUDA inputs, in GB/s
// of compulsory traffic (each input read once, each output written once):
// pointwise, inner and outer reductions, few long rows (the grid split: two
// kernels), softmax and layer norm (persistent). The matmul is in
// bench_matmul (TFLOP/s). Each benchmark skips with an error where there is
// no CUDA device. torch.compile (Inductor) has no C++ entry point: its
// figures come from the Python side.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include <functional>
#include <memory>
#include <vector>

#include "bench_gpu_util.h"
#include "common/example_fusions.h"
#include "fusion/ops.h"
#include "runtime/fusion_executor_cache.h"

namespace smelt {
namespace {

using bench::bytesOf;
using bench::gpuMissing;
using bench::reportBandwidth;

using Tensors = std::vector<at::Tensor>;

struct Workload {
  std::function<void(Fusion&)> build;
  std::vector<std::vector<int64_t>> shapes;
  std::function<Tensors(const Tensors&)> eager;
};

TensorView* input(Fusion& fusion, int64_t rank) {
  TensorView* tv = makeContigTensor(rank);
  fusion.addInput(tv);
  return tv;
}

constexpr int64_t kNormCols = 1024;

const Workload kPointwise{
    [](Fusion& f) {
      TensorView* a = input(f, 2);
      f.addOutput(relu(add(mul(a, 2.0), broadcast(input(f, 1), {true, false}))));
    },
    {{8192, 8192}, {8192}},
    [](const Tensors& in) { return Tensors{at::relu(in[0] * 2.0 + in[1])}; }};

const Workload kInnerReduction{[](Fusion& f) { f.addOutput(sum(input(f, 2), {1})); },
                               {{8192, 8192}},
                               [](const Tensors& in) { return Tensors{in[0].sum(1)}; }};

const Workload kOuterReduction{[](Fusion& f) { f.addOutput(sum(input(f, 2), {0})); },
                               {{8192, 8192}},
                               [](const Tensors& in) { return Tensors{in[0].sum(0)}; }};

const Workload kLongRows{[](Fusion& f) {
                           TensorView* x = input(f, 2);
                           f.addOutput(sum(mul(x, x), {1}));
                         },
                         {{4, 1 << 24}},
                         [](const Tensors& in) { return Tensors{(in[0] * in[0]).sum(1)}; }};

const Workload kSoftmax{[](Fusion& f) { f.addOutput(examples::rowSoftmax(input(f, 2))); },
                        {{8192, kNormCols}},
                        [](const Tensors& in) { return Tensors{at::softmax(in[0], 1)}; }};

const Workload kLayerNorm{
    [](Fusion& f) {
      TensorView* x = input(f, 2);
      TensorView* w = input(f, 1);
      TensorView* b = input(f, 1);
      const double n = static_cast<double>(kNormCols);
      TensorView* xc = sub(x, broadcast(div(sum(x, {1}), n), {false, true}));
      TensorView* var = div(sum(mul(xc, xc), {1}), n);
      TensorView* y = mul(xc, broadcast(rsqrt(add(var, 1e-5)), {false, true}));
      f.addOutput(add(mul(y, broadcast(w, {true, false})), broadcast(b, {true, false})));
    },
    {{8192, kNormCols}, {kNormCols}, {kNormCols}},
    [](const Tensors& in) {
      return Tensors{at::layer_norm(in[0], {kNormCols}, in[1], in[2], 1e-5)};
    }};

Tensors gpuInputs(const Workload& w) {
  Tensors inputs;
  for (const auto& shape : w.shapes) inputs.push_back(at::randn(shape, at::Device(at::kCUDA, 0)));
  return inputs;
}

void BM_Smelt(benchmark::State& state, const Workload* w) {
  if (gpuMissing(state)) return;
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    w->build(*fusion);
  }
  FusionExecutorCache cache(std::move(fusion));
  const Tensors inputs = gpuInputs(*w);
  const Tensors outputs = cache.runFusionWithInputs(inputs);  // segments and compiles
  c10::cuda::device_synchronize();
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache.runFusionWithInputs(inputs));
    c10::cuda::device_synchronize();
  }
  reportBandwidth(state, bytesOf(inputs) + bytesOf(outputs));
  state.SetLabel(std::to_string(cache.lastRun().segments.size()) + " kernel(s)");
}

void BM_TorchEager(benchmark::State& state, const Workload* w) {
  if (gpuMissing(state)) return;
  const Tensors inputs = gpuInputs(*w);
  const Tensors outputs = w->eager(inputs);
  c10::cuda::device_synchronize();
  for (auto _ : state) {
    benchmark::DoNotOptimize(w->eager(inputs));
    c10::cuda::device_synchronize();
  }
  reportBandwidth(state, bytesOf(inputs) + bytesOf(outputs));
}

#define SMELT_VS_EAGER(name, workload)                                                    \
  BENCHMARK_CAPTURE(BM_Smelt, name, &workload)->UseRealTime()->Unit(benchmark::kMicrosecond); \
  BENCHMARK_CAPTURE(BM_TorchEager, name, &workload)->UseRealTime()->Unit(benchmark::kMicrosecond)

SMELT_VS_EAGER(pointwise, kPointwise);
SMELT_VS_EAGER(inner_reduction, kInnerReduction);
SMELT_VS_EAGER(outer_reduction, kOuterReduction);
SMELT_VS_EAGER(long_rows_grid_split, kLongRows);
SMELT_VS_EAGER(softmax, kSoftmax);
SMELT_VS_EAGER(layer_norm, kLayerNorm);

}  // namespace
}  // namespace smelt
