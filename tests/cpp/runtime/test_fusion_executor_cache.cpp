// FusionExecutorCache on CPU tensors (the simulator): unscheduled fusions are
// segmented, scheduled and compiled per input signature and parameter set,
// reused when they repeat, and match ATen.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/pointwise.h"

namespace smelt {
namespace {

using testing::evaluateWithATen;
using testing::expectOutputsMatch;

at::Tensor randn(std::vector<int64_t> shape) {
  return at::randn(shape, at::kDouble).to(at::kFloat);
}

std::unique_ptr<Fusion> addRelu() {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(2);
  fusion->addInput(a);
  fusion->addInput(b);
  fusion->addOutput(relu(add(a, b)));
  return fusion;
}

std::unique_ptr<Fusion> softmax() {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* x = makeContigTensor(2);
  fusion->addInput(x);
  TensorView* e = exp(sub(x, broadcast(max(x, {1}), {false, true})));
  fusion->addOutput(div(e, broadcast(sum(e, {1}), {false, true})));
  return fusion;
}

// Runs through the cache and compares with ATen on the cache's own fusion.
std::vector<at::Tensor> runAndCheck(FusionExecutorCache& cache,
                                    const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  Fusion& fusion = const_cast<Fusion&>(cache.fusion());
  expectOutputsMatch(fusion, outputs, evaluateWithATen(fusion, inputs), cache.lastRun().toString());
  return outputs;
}

TEST(FusionExecutorCache, ReusesKernelsPerSignatureAndParameters) {
  FusionExecutorCache cache(addRelu());
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_TRUE(cache.lastRun().new_signature);
  ASSERT_EQ(cache.lastRun().segments.size(), 1u);
  const SegmentRun& first = cache.lastRun().segments[0];
  EXPECT_EQ(first.scheduler, SchedulerType::Pointwise);
  EXPECT_TRUE(first.compiled);
  EXPECT_EQ(first.params,
            "PointwiseParams{vector_width=4, block=(128, 1), split_grid_y=false, "
            "vectorized_inputs={0, 1}, vectorized_outputs={0}}");
  EXPECT_EQ(first.launch.grid[0], 1);
  EXPECT_EQ(first.launch.block[0], 128);

  // Same shapes: nothing new.
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_FALSE(cache.lastRun().segments[0].compiled);
  // Same size classes and the same parameters: the kernel is reused.
  runAndCheck(cache, {randn({7, 60}), randn({7, 60})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_FALSE(cache.lastRun().segments[0].compiled);
  // Same size classes, rows of 62 floats: only 2-wide vectors divide them.
  runAndCheck(cache, {randn({7, 62}), randn({7, 62})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_TRUE(cache.lastRun().segments[0].compiled);
  // Another size class.
  runAndCheck(cache, {randn({3, 1000}), randn({3, 1000})});
  EXPECT_TRUE(cache.lastRun().new_signature);
  EXPECT_EQ(cache.numSignatures(), 2);
  EXPECT_EQ(cache.numCompiledKernels(), 3);
}

TEST(FusionExecutorCache, SignatureNamesClassesContiguityAlignmentAndDevice) {
  at::Tensor x = randn({5, 1, 64});
  EXPECT_EQ(inputSignature({x, at::scalar_tensor(2.0, at::kDouble)}),
            "float[b3,1,b6]{c,c,c}@16:cpu; double[]{}@16:cpu");
  at::Tensor t = randn({6, 9}).t();
  at::Tensor offset = randn({65}).slice(0, 1, 65);
  EXPECT_EQ(inputSignature({t, offset}), "float[b4,b3]{n,n}@16:cpu; float[b6]{c}@4:cpu");
}

TEST(FusionExecutorCache, NonContiguousAndMisalignedInputs) {
  FusionExecutorCache cache(addRelu());
  at::Tensor transposed = randn({9, 12}).t();
  at::Tensor shifted = randn({12 * 9 + 1}).slice(0, 1, 12 * 9 + 1).view({12, 9});
  runAndCheck(cache, {transposed, shifted});
  EXPECT_NE(cache.lastRun().segments[0].params.find("vectorized_inputs={}"), std::string::npos);
  runAndCheck(cache, {randn({12, 9}), randn({12, 9})});
  EXPECT_EQ(cache.numSignatures(), 2);
}

TEST(FusionExecutorCache, SoftmaxIsOnePersistentKernel) {
  FusionExecutorCache cache(softmax());
  runAndCheck(cache, {randn({6, 100})});
  ASSERT_EQ(cache.lastRun().segments.size(), 1u);
  EXPECT_EQ(cache.lastRun().segments[0].scheduler, SchedulerType::Persistent);
  EXPECT_EQ(cache.lastExecutor(0).launchParams().block[0], 25);  // 100 floats as 25 float4
}

TEST(FusionExecutorCache, TwoReductionsRunAsTwoKernels) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeContigTensor(2);
    fusion->addInput(x);
    TensorView* s = sum(x, {1});
    fusion->addOutput(sum(mul(x, broadcast(s, {false, true})), {0}));
    fusion->addOutput(s);
  }
  FusionExecutorCache cache(std::move(fusion));
  runAndCheck(cache, {randn({9, 21})});
  const FusionRun& run = cache.lastRun();
  ASSERT_EQ(run.segments.size(), 2u) << run.toString();
  EXPECT_EQ(run.segments[0].scheduler, SchedulerType::Reduction);
  EXPECT_EQ(run.segments[1].scheduler, SchedulerType::Reduction);
  EXPECT_EQ(cache.segmentation(run.signature).toString(),
            "segment 0 (reduction): T0 -> T1\n"
            "segment 1 (reduction): T1, T0 -> T4\n");
}

TEST(FusionExecutorCache, ScalarInputsAndHeuristicOverride) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeContigTensor(1);
    Scalar* alpha = symbolicScalar(DataType::Double);
    fusion->addInput(x);
    fusion->addInput(alpha);
    fusion->addOutput(mul(x, alpha));
  }
  FusionExecutorCache cache(std::move(fusion));
  cache.setHeuristicOverride([](HeuristicParams& params) {
    auto& p = dynamic_cast<PointwiseParams&>(params);
    p.vector_width = 2;
    p.block_x = 32;
    p.vectorized_outputs = {};
  });
  runAndCheck(cache, {randn({100}), at::scalar_tensor(0.5, at::kDouble)});
  EXPECT_EQ(cache.lastRun().segments[0].params,
            "PointwiseParams{vector_width=2, block=(32, 1), split_grid_y=false, "
            "vectorized_inputs={0}, vectorized_outputs={}}");
  EXPECT_EQ(cache.lastExecutor(0).launchParams().grid[0], 2);
}

TEST(FusionExecutorCache, Errors) {
  auto scheduled = addRelu();
  scheduled->outputs()[0]->asTensor()->split(1, 4);
  EXPECT_SMELT_ERROR(FusionExecutorCache(std::move(scheduled)), "unscheduled fusion", "T3");
  FusionExecutorCache cache(addRelu());
  // Inputs are validated like FusionExecutor's, strides aside.
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2})}), "the fusion has 2 inputs",
                     "got 1");
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2}), randn({2})}),
                     "input 1 (T1) must have rank 2", "shape [2]");
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2}), randn({2, 2}).to(at::kDouble)}),
                     "input 1 (T1) must be a float tensor", "Double");
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2}), randn({2, 3})}), "input 1 (T1)",
                     "dimension 1");
  EXPECT_EQ(cache.numSignatures(), 0);
}

}  // namespace
}  // namespace smelt
