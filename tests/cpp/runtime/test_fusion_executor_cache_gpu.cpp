// FusionExecutorCache on CUDA tensors (label gpu): every scheduler (the
// matmul with a pointwise epilogue included, generated or in the library), segmented fusions (two
// reductions, a matmul followed by a reduction, a grid-split long row),
// against torch on the same inputs. Skipped without a GPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>

#include "common/aten_reference.h"
#include "common/example_fusions.h"
#include "fusion/ops.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/gpu_test_util.h"

namespace smelt {
namespace {

using testing::evaluateWithATen;
using testing::expectOutputsMatch;

struct GpuCase {
  const char* name;
  std::function<void(Fusion&)> build;
  std::vector<std::vector<int64_t>> shapes;
  SchedulerType first_scheduler;
  size_t segments;
  // Auto gives a GPU's matmuls to the library (cuBLAS through ATen);
  // Generated runs smelt's own matmul kernel.
  MatmulPolicy matmul = MatmulPolicy::Auto;
};

class CacheOnGpu : public ::testing::TestWithParam<GpuCase> {};

TEST_P(CacheOnGpu, MatchesTorch) {
  SKIP_WITHOUT_GPU();
  const GpuCase& c = GetParam();
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    c.build(*fusion);
  }
  ExecutorOptions options;
  options.matmul = c.matmul;
  FusionExecutorCache cache(std::move(fusion), options);
  std::vector<at::Tensor> inputs;
  for (const auto& shape : c.shapes) inputs.push_back(at::randn(shape, at::Device(at::kCUDA, 0)));
  std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  for (const at::Tensor& out : outputs) EXPECT_TRUE(out.is_cuda());
  Fusion& f = const_cast<Fusion&>(cache.fusion());
  expectOutputsMatch(f, outputs, evaluateWithATen(f, inputs), cache.lastRun().toString());
  ASSERT_EQ(cache.lastRun().segments.size(), c.segments) << cache.lastRun().toString();
  EXPECT_EQ(cache.lastRun().segments[0].scheduler, c.first_scheduler);
}

TensorView* input(Fusion& fusion, int64_t rank) {
  TensorView* tv = makeContigTensor(rank);
  fusion.addInput(tv);
  return tv;
}

void matmulBiasRelu(Fusion& f) {
  TensorView* a = input(f, 2);
  TensorView* b = input(f, 2);
  TensorView* bias = input(f, 1);
  f.addOutput(relu(add(matmul(a, b), broadcast(bias, {true, false}))));
}

void matmulThenReduction(Fusion& f) {
  TensorView* a = input(f, 2);
  f.addOutput(sum(relu(matmul(a, input(f, 2))), {1}));
}

INSTANTIATE_TEST_SUITE_P(
    Schedulers, CacheOnGpu,
    ::testing::Values(
        GpuCase{"pointwise",
                [](Fusion& f) { f.addOutput(relu(add(input(f, 2), input(f, 2)))); },
                {{1000, 1027}, {1000, 1027}}, SchedulerType::Pointwise, 1},
        GpuCase{"row_broadcast",
                [](Fusion& f) {
                  TensorView* a = input(f, 2);
                  f.addOutput(mul(a, broadcast(input(f, 1), {true, false})));
                },
                {{513, 4096}, {4096}}, SchedulerType::Pointwise, 1},
        GpuCase{"inner_reduction", [](Fusion& f) { f.addOutput(sum(input(f, 2), {1})); },
                {{1024, 5000}}, SchedulerType::Reduction, 1},
        GpuCase{"outer_reduction", [](Fusion& f) { f.addOutput(max(input(f, 2), {0})); },
                {{3000, 700}}, SchedulerType::Reduction, 1},
        GpuCase{"softmax",
                [](Fusion& f) { f.addOutput(examples::rowSoftmax(input(f, 2))); },
                {{4096, 1024}}, SchedulerType::Persistent, 1},
        GpuCase{"softmax_smem_row",
                [](Fusion& f) { f.addOutput(examples::rowSoftmax(input(f, 2))); },
                {{64, 12000}}, SchedulerType::Persistent, 1},
        GpuCase{"two_reductions",
                [](Fusion& f) {
                  TensorView* x = input(f, 2);
                  f.addOutput(sum(mul(x, broadcast(sum(x, {1}), {false, true})), {0}));
                },
                {{300, 500}}, SchedulerType::Reduction, 2},
        GpuCase{"matmul_bias_relu", matmulBiasRelu, {{301, 257}, {257, 199}, {199}},
                SchedulerType::Matmul, 1, MatmulPolicy::Generated},
        GpuCase{"matmul_then_reduction", matmulThenReduction, {{300, 129}, {129, 517}},
                SchedulerType::Matmul, 2, MatmulPolicy::Generated},
        GpuCase{"library_matmul_bias_relu", matmulBiasRelu, {{301, 257}, {257, 199}, {199}},
                SchedulerType::LibraryMatmul, 2},
        GpuCase{"library_matmul_then_reduction", matmulThenReduction, {{300, 129}, {129, 517}},
                SchedulerType::LibraryMatmul, 2},
        GpuCase{"long_rows_grid_split",
                [](Fusion& f) {
                  TensorView* x = input(f, 2);
                  f.addOutput(sum(mul(x, x), {1}));
                },
                {{4, 1 << 20}}, SchedulerType::Reduction, 2}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace smelt
