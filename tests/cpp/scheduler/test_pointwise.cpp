// The pointwise scheduler on a spread of shapes, layouts and broadcasts:
// heuristics asserted, every kernel simulated with race detection against
// ATen and compiled with NVRTC.
#include <gtest/gtest.h>

#include "common/expect_error.h"
#include "common/example_fusions.h"
#include "fusion/ops.h"
#include "scheduler/pointwise.h"
#include "scheduler/utils.h"
#include "scheduler/scheduler_test_util.h"

namespace smelt::testing {
namespace {

using sim::testing::expectKernelCorrect;

PointwiseParams scheduleAndCheck(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                                 const std::string& name) {
  return testing::scheduleAndCheck(fusion, inputs, name, pointwiseHeuristics, schedulePointwise);
}

// out = relu(a + b) * 2 over symbolic [I, J] tensors.
void buildAddRelu(Fusion& fusion, DataType dtype = DataType::Float) {
  TensorView* a = makeContigTensor(2, dtype);
  TensorView* b = makeContigTensor(2, dtype);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(mul(relu(add(a, b)), 2.0));
}

TEST(PointwiseScheduler, AddReluOfManyShapes) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1, 1}, {1, 7}, {3, 5}, {13, 17}, {8, 64}, {33, 6}, {1, 1031}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildAddRelu(fusion);
    PointwiseParams params =
        scheduleAndCheck(fusion, {randn(shape), randn(shape)}, "pw_add_relu");
    // Merged to one dimension: vectorized by 4 floats when the extent allows.
    const int64_t numel = shape[0] * shape[1];
    EXPECT_EQ(params.vector_width, numel % 4 == 0 ? 4 : numel % 2 == 0 ? 2 : 1);
    EXPECT_EQ(params.block_y, 1);
  }
}

TEST(PointwiseScheduler, HeuristicsForContiguousFloat) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildAddRelu(fusion);
  RuntimeInfo runtime(fusion, {InputInfo::contiguous(DataType::Float, {1024, 1024}),
                               InputInfo::contiguous(DataType::Float, {1024, 1024})});
  PointwiseParams params = pointwiseHeuristics(fusion, runtime);
  EXPECT_EQ(params.toString(),
            "PointwiseParams{vector_width=4, block=(128, 1), split_grid_y=false, "
            "vectorized_inputs={0, 1}, vectorized_outputs={0}}");
}

TEST(PointwiseScheduler, MisalignedOrStridedInputIsNotVectorized) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildAddRelu(fusion);
  // Input 0 starts 4 bytes past a 16-byte boundary; input 1 has a padded row.
  RuntimeInfo runtime(fusion, {InputInfo::contiguous(DataType::Float, {16, 64}, 4),
                               InputInfo::tensor(DataType::Float, {16, 64}, {66, 1})});
  PointwiseParams params = pointwiseHeuristics(fusion, runtime);
  EXPECT_EQ(params.vector_width, 4);
  EXPECT_TRUE(params.vectorized_inputs.empty());
  EXPECT_EQ(params.vectorized_outputs, std::vector<int64_t>{0});
}

TEST(PointwiseScheduler, HalfVectorizesEightElements) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2, DataType::Half);
  fusion.addInput(a);
  fusion.addOutput(castOp(DataType::Half, exp(castOp(DataType::Float, a))));
  at::Tensor x = randn({4, 40}, at::kHalf);
  PointwiseParams params = scheduleAndCheck(fusion, {x}, "pw_half_exp");
  EXPECT_EQ(params.vector_width, 8);
  EXPECT_EQ(params.block_x, 32);  // 160 / 8 = 20 vectors
}

TEST(PointwiseScheduler, NonContiguousInputs) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildAddRelu(fusion);
  at::Tensor transposed = randn({9, 12}).t();                     // [12, 9], strides (1, 12)
  at::Tensor sliced = randn({12, 20}).slice(1, 3, 12);           // [12, 9], strides (20, 1)
  PointwiseParams params = scheduleAndCheck(fusion, {transposed, sliced}, "pw_strided");
  // 108 elements allow 4-wide vectors, but only the output's layout takes them.
  EXPECT_EQ(params.vector_width, 4);
  EXPECT_TRUE(params.vectorized_inputs.empty());
  EXPECT_EQ(params.vectorized_outputs, std::vector<int64_t>{0});
}

TEST(PointwiseScheduler, RowBroadcast) {
  // out[I, J] = a[I, J] + b[J]: the broadcast stops the merge, so J takes
  // BIDx/TIDx and I takes BIDy/TIDy.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(1);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(add(a, broadcast(b, {true, false})));
  PointwiseParams params = scheduleAndCheck(fusion, {randn({6, 20}), randn({20})}, "pw_row_bcast");
  EXPECT_EQ(params.vector_width, 4);
  EXPECT_EQ(params.block_x, 8);
  EXPECT_EQ(params.block_y, 8);
  EXPECT_EQ(params.vectorized_inputs, (std::vector<int64_t>{0, 1}));
}

TEST(PointwiseScheduler, ColumnBroadcastWithOddSizes) {
  // out[I, J] = a[I, J] * b[I]: b is constant along the inner dimension.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(1);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(mul(a, broadcast(b, {false, true})));
  PointwiseParams params =
      scheduleAndCheck(fusion, {randn({7, 131}), randn({7})}, "pw_col_bcast");
  EXPECT_EQ(params.vector_width, 1);
  EXPECT_EQ(params.block_x, 128);
  EXPECT_EQ(params.block_y, 1);
}

TEST(PointwiseScheduler, ThreeDimensionalBroadcastsAndScalar) {
  // out[B, I, J] = x[B, I, J] * w[I] + s: runs {B}, {I}, {J}; B stays serial.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  TensorView* w = makeContigTensor(1);
  Scalar* s = symbolicScalar(DataType::Double);
  fusion.addInput(x);
  fusion.addInput(w);
  fusion.addInput(s);
  fusion.addOutput(add(mul(x, broadcast(w, {true, false, true})), s));
  scheduleAndCheck(fusion, {randn({3, 5, 12}), randn({5}), at::scalar_tensor(0.5, at::kDouble)},
                   "pw_3d");
}

TEST(PointwiseScheduler, SizeOneDimensionsAndMultipleOutputs) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({1, 9, 1});
  fusion.addInput(a);
  TensorView* e = exp(a);
  fusion.addOutput(e);
  fusion.addOutput(neg(e));
  scheduleAndCheck(fusion, {randn({1, 9, 1})}, "pw_size_one");
}

TEST(PointwiseScheduler, PaddedInputIsReadDirectly) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({5, 6});
  TensorView* b = makeConcreteTensor({5, 8});
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(add(pad(a, {1, 1}, 3.0), b));
  PointwiseParams params = scheduleAndCheck(fusion, {randn({5, 6}), randn({5, 8})}, "pw_pad");
  EXPECT_EQ(params.vectorized_inputs, std::vector<int64_t>{1});
}

TEST(PointwiseScheduler, RejectsReductions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  fusion.addInput(a);
  fusion.addOutput(sum(a, {1}));
  EXPECT_NE(pointwiseRejectReason(fusion).find("reduction"), std::string::npos);
  EXPECT_SMELT_ERROR(schedulePointwise(fusion, PointwiseParams{}), "pointwise scheduler",
                     "reduction");
}

// Issue 17: a flatten merging the dimension that a computed broadcast lacks.
// Replaying the merge onto the broadcast drops that dimension, so its loop
// is not the flatten's (it read the row values at the flat index): the
// scheduler declines the fusion, and the segmenter cuts before the
// broadcast.
TEST(PointwiseScheduler, DeclinesABroadcastComputedBeforeAReshapeMergingItsDimension) {
  for (const bool merges_the_broadcast : {true, false}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(3);
    TensorView* plane = makeContigTensor(2);
    fusion.addInput(x);
    fusion.addInput(plane);
    TensorView* product = mul(x, broadcast(plane, {false, false, true}));
    fusion.addOutput(merges_the_broadcast ? flatten(product, 1, 2) : flatten(product, 0, 1));
    const std::string reason = pointwiseRejectReason(fusion);
    if (merges_the_broadcast) {
      EXPECT_NE(reason.find("T4 = reshape(T3) merges dimensions {1, 2} of T3, but T2 iterates only "
                            "{1} (it broadcasts or lacks {2})"),
                std::string::npos)
          << reason;
    } else {
      EXPECT_EQ(reason, "");  // the broadcast iterates both merged dimensions
    }
  }
}

// An input that broadcasts the merged dimension itself is not cached but read
// directly, indexed from its consumer: one kernel, correct.
TEST(PointwiseScheduler, ReadsAnInputBroadcastAlongAReshapeMergeDirectly) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({5, 7});
  TensorView* column = examples::makeBroadcastingTensor({5, 1});
  fusion.addInput(x);
  fusion.addInput(column);
  fusion.addOutput(flatten(sub(x, column)));
  EXPECT_EQ(scheduler_utils::cacheableInputs(fusion), std::vector<TensorView*>{x});
  scheduleAndCheck(fusion, {randn({5, 7}), randn({5, 1})}, "pw_flatten_column");
}

// tanh(x - mean[J] broadcast over I), viewed as [2, 3, 3, 2] (splitting I
// and J) and permuted so the pieces of J come before those of I: the
// broadcast tensor computed before the view broadcasts I's pieces, so they
// must not share a loop with J's (torch fuzz seeds 702150, 801330, 802821:
// the merged loop could not inline it and the kernel was refused).
TEST(PointwiseScheduler, ViewSplittingABroadcastDimensionKeepsItsPiecesApart) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 6});
  TensorView* sums = makeConcreteTensor({6});
  fusion.addInput(x);
  fusion.addInput(sums);
  TensorView* mean = div(broadcast(sums, {true, false}), 6.0);
  TensorView* viewed = reshape(tanh(sub(x, mean)), {IntExpr(2), IntExpr(3), IntExpr(3), IntExpr(2)});
  TensorView* out = permute(viewed, {2, 3, 0, 1});
  fusion.addOutput(out);
  scheduler_utils::DimensionMap map(fusion, out, scheduler_utils::DimensionMap::Reshapes::Upstream);
  ASSERT_EQ(map.problem(), "");
  // Dimensions 0, 1 come from J (iterated by `mean`), 2, 3 from I (broadcast).
  EXPECT_EQ(map.mergeableRuns({0, 1, 2, 3}), (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  scheduleAndCheck(fusion, {randn({6, 6}), randn({6})}, "pw_view_splits_broadcast");
}

// Fuzz seed 1100433: (x + 0.5).expand(2, 3, 2, 4).view(6, 8), x [1, 1, 2, 4].
// The view merges the two expanded dimensions into one the tensors before it
// broadcast: they see dimension 0 of the output as broadcast (expanded for the
// expand's output), dimension 1 as iterated, so the two never merge into one
// loop (which the expand's output, extent 8 there, could not be inlined into).
TEST(PointwiseScheduler, ViewMergingExpandedDimensionsKeepsThemApart) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = examples::makeBroadcastingTensor({1, 1, 2, 4});
  fusion.addInput(x);
  TensorView* expanded = expand(add(x, 0.5), {IntExpr(2), IntExpr(3), IntExpr(2), IntExpr(4)});
  TensorView* out = reshape(expanded, {IntExpr(6), IntExpr(8)});
  fusion.addOutput(out);
  scheduler_utils::DimensionMap map(fusion, out, scheduler_utils::DimensionMap::Reshapes::Upstream);
  ASSERT_EQ(map.problem(), "");
  EXPECT_EQ(map.mergeableRuns({0, 1}), (std::vector<std::vector<int64_t>>{{0}, {1}}));
  scheduleAndCheck(fusion, {randn({1, 1, 2, 4})}, "pw_view_merges_expanded");
}

TEST(PointwiseScheduler, UserParametersOverrideHeuristics) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildAddRelu(fusion);
  std::vector<at::Tensor> inputs = {randn({10, 30}), randn({10, 30})};
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  PointwiseParams params = pointwiseHeuristics(fusion, runtime);
  params.block_x = 32;
  params.vector_width = 2;
  params.vectorized_inputs = {1};
  params.vectorized_outputs = {};
  schedulePointwise(fusion, params);
  expectKernelCorrect(fusion, inputs);
  EXPECT_EQ(fusion.outputs()[0]->asTensor()->axis(1)->extent().constant(), 32);
}

// y = x * 2 feeds two outputs, y + m and y * 3, where m is broadcast along
// the dimensions of x that `is_broadcast` marks: each broadcast dimension
// next to an iterated one ends a run of dimensions. y (and x's cache) run in
// neither output's loop nest, so they are not inlined.
void buildSharedTensorOfTwoOutputs(Fusion& fusion, int64_t rank, const std::vector<bool>& is_broadcast,
                                   bool second_output = true) {
  TensorView* x = makeContigTensor(rank);
  TensorView* m = makeContigTensor(std::count(is_broadcast.begin(), is_broadcast.end(), false));
  fusion.addInput(x);
  fusion.addInput(m);
  TensorView* y = mul(x, 2.0);
  fusion.addOutput(add(y, broadcast(m, is_broadcast)));
  if (second_output) fusion.addOutput(mul(y, 3.0));
}

// Three runs (x [A, B, C], m [A, C]): A was a serial loop, and the register
// buffers of y and x's cache spanned it (of A's symbolic extent: refused at
// lowering). A is bound to BIDz.
TEST(PointwiseScheduler, ThirdDimensionRunIsBoundToBIDz) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildSharedTensorOfTwoOutputs(fusion, 3, {false, true, false});
  scheduleAndCheck(fusion, {randn({3, 4, 5}), randn({3, 5})}, "pw_three_runs");
  TensorView* reference = fusion.outputs()[0]->asTensor();
  EXPECT_EQ(reference->axis(0)->parallelType(), ParallelType::BIDz) << reference->toString();
}

// Four runs (x [A, B, C, D], m [A, C]): A has no grid dimension left, so it
// stays a serial loop, which y's buffer would span; the scheduler declines
// (the segmenter then gives the outputs a kernel each). With one output
// nothing spans the loop, and the fusion is taken.
TEST(PointwiseScheduler, DeclinesABufferAcrossASerialLoop) {
  const std::vector<bool> is_broadcast = {false, true, false, true};
  const std::vector<at::Tensor> inputs = {randn({2, 3, 4, 5}), randn({2, 4})};
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildSharedTensorOfTwoOutputs(fusion, 4, is_broadcast);
    const std::string reason = pointwiseRejectReason(fusion);
    EXPECT_NE(reason.find("T0 feeds outputs T4 and T5, so it cannot be inlined into either"),
              std::string::npos) << reason;
    EXPECT_NE(reason.find("outside the three bound to blocks"), std::string::npos) << reason;
    EXPECT_SMELT_ERROR(schedulePointwise(fusion, PointwiseParams{}), "pointwise scheduler",
                       "T0 feeds outputs T4 and T5");
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildSharedTensorOfTwoOutputs(fusion, 4, is_broadcast, /*second_output=*/false);
  EXPECT_EQ(pointwiseRejectReason(fusion), "");
  scheduleAndCheck(fusion, inputs, "pw_four_runs");
}

// Two runs (x [A, B], m [B]) with more blocks along A than gridDim.y takes:
// split_grid_y folds the rest into a serial loop, which y's buffer would
// span. The heuristics see the sizes and decline; so does the scheduler
// given such parameters.
TEST(PointwiseScheduler, DeclinesABufferAcrossTheLoopPastGridDimY) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildSharedTensorOfTwoOutputs(fusion, 2, {true, false});
  const RuntimeInfo huge(fusion, {InputInfo::contiguous(DataType::Float, {4000000, 3}),
                                  InputInfo::contiguous(DataType::Float, {3})});
  EXPECT_NE(pointwiseRejectReason(fusion, &huge).find("past gridDim.y's limit"), std::string::npos)
      << pointwiseRejectReason(fusion, &huge);
  const std::vector<at::Tensor> inputs = {randn({7, 3}), randn({3})};
  const RuntimeInfo small(fusion, inputInfosOf(fusion, inputs));
  EXPECT_EQ(pointwiseRejectReason(fusion, &small), "");
  PointwiseParams params = pointwiseHeuristics(fusion, small);
  params.split_grid_y = true;
  EXPECT_SMELT_ERROR(schedulePointwise(fusion, params), "pointwise scheduler cannot take this fusion",
                     "split_grid_y=true", "past gridDim.y's limit");
}

// m / where(x > m, m, x).reshape(3, 2), m a 0-dim value broadcast to [1]
// and then [1, 1]: the pointwise segment of the torch fuzzer's
// local-bidx-after-split (x0.amax(0, keepdim=True) in the other segment).
// Propagation reached x > m first from m's broadcast, whose only axis (a
// broadcast, split for the reshape's inner extent and bound to BIDx) cut
// x's extent 6 into 3 blocks no other tensor has; lowering then refused the
// accepted schedule ("T4 is in Local memory and its axis 0 is bound to
// BIDx, but T5 does not read it along an axis bound to BIDx"). A broadcast
// axis mapped onto an iterating one carries no loop structure: x > m is
// scheduled from where(...) or x's cache, like the reshape's other inputs.
TEST(PointwiseScheduler, ComparisonWithABroadcastValueIsScheduledFromItsIteratingSide) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* m = makeConcreteTensor({});
  TensorView* x = makeConcreteTensor({6});
  fusion.addInput(m);
  fusion.addInput(x);
  TensorView* m1 = broadcast(m, {true});
  TensorView* cond = gt(x, m1);
  TensorView* w = where(cond, m1, x);
  fusion.addOutput(div(broadcast(m1, {true, false}), reshape(w, {3, 2})));
  ASSERT_EQ(pointwiseRejectReason(fusion), "");
  scheduleAndCheck(fusion, {randn({}), randn({6})}, "pw_where_broadcast_reshape");
  TensorView* out = fusion.outputs()[0]->asTensor();
  ASSERT_EQ(cond->nDims(), out->nDims()) << cond->toString() << "\n" << out->toString();
  for (int64_t k = 0; k < out->nDims(); ++k) {
    const ParallelType pt = out->axis(k)->parallelType();  // Vectorize is the output's own
    EXPECT_EQ(cond->axis(k)->parallelType(), pt == ParallelType::Vectorize ? ParallelType::Serial : pt)
        << cond->toString();
    EXPECT_TRUE(cond->axis(k)->extent().sameAs(out->axis(k)->extent()))
        << cond->toString() << "\n" << out->toString();
  }
}


// Eval batch norm after a convolution: per-channel [C] parameters broadcast
// over an NCHW activation. The batch is a run of its own (the parameters
// broadcast it, and iterate C), so the schedule has three runs: N, C and
// H*W (H and W merge: the parameters broadcast both, though [C, 1] lacks H). Every run but the
// innermost must reach the grid: a serial loop over N leaves a ResNet's
// kernels at 0.16 waves on an H100.
TEST(PointwiseScheduler, PerChannelAffineOverNchwPutsTheBatchInTheGrid) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(4, DataType::Half);
  TensorView* scale = makeContigTensor(1, DataType::Half);
  fusion.addInput(x);
  fusion.addInput(scale);
  TensorView* s = broadcast(unsqueeze(unsqueeze(castOp(DataType::Float, scale), -1), -1),
                            {true, false, false, false});
  fusion.addOutput(castOp(DataType::Half, relu(mul(castOp(DataType::Float, x), s))));
  TensorView* ref = fusion.outputs()[0]->asTensor();
  scheduler_utils::DimensionMap map(fusion, ref, scheduler_utils::DimensionMap::Reshapes::Upstream);
  EXPECT_EQ(map.mergeableRuns({0, 1, 2, 3}), (std::vector<std::vector<int64_t>>{{0}, {1}, {2, 3}}));
  scheduleAndCheck(fusion, {randn({4, 8, 6, 10}, at::kHalf), randn({8}, at::kHalf)}, "pw_per_channel_nchw");
  // No serial loop: N on BIDz, C on BIDy (and TIDy), H*W on BIDx/TIDx/vector.
  for (IterDomain* id : ref->loopDomain()) {
    EXPECT_NE(id->parallelType(), ParallelType::Serial) << ref->toString();
  }
  EXPECT_EQ(ref->axis(0)->parallelType(), ParallelType::BIDz) << ref->toString();
}

}  // namespace
}  // namespace smelt::testing

namespace smelt::testing {
namespace {

// x[N, C, H, W] + per-batch, per-channel, per-row and per-column terms: no
// two dimensions are seen alike by every tensor, so there are four runs,
// one more than the grid has dimensions.
void buildFourRunSum(Fusion& fusion) {
  TensorView* x = makeContigTensor(4);
  std::vector<TensorView*> terms;
  for (int i = 0; i < 4; ++i) terms.push_back(makeContigTensor(1));
  fusion.addInput(x);
  for (TensorView* t : terms) fusion.addInput(t);
  TensorView* sum = x;
  for (int64_t d = 0; d < 4; ++d) {
    std::vector<bool> added(4, true);
    added[d] = false;
    sum = add(sum, broadcast(terms[d], added));
  }
  fusion.addOutput(sum);
}

// A short innermost run fits one block (gridDim.x would be 1): the batch, the
// fourth run, takes blockIdx.x rather than a serial loop in every thread
// (LLaMA's rotary embedding: 4x the blocks; a channels-last max pool: 32x).
TEST(PointwiseScheduler, FourthRunTakesGridXWhenTheInnermostFitsOneBlock) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildFourRunSum(fusion);
  TensorView* ref = fusion.outputs()[0]->asTensor();
  scheduler_utils::DimensionMap map(fusion, ref, scheduler_utils::DimensionMap::Reshapes::Upstream);
  EXPECT_EQ(map.mergeableRuns({0, 1, 2, 3}),
            (std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {3}}));
  PointwiseParams params = scheduleAndCheck(
      fusion, {randn({5, 3, 6, 16}), randn({5}), randn({3}), randn({6}), randn({16})},
      "pw_four_runs");
  EXPECT_TRUE(params.outer_run_on_grid_x) << params.toString();
  EXPECT_EQ(ref->axis(0)->parallelType(), ParallelType::BIDx) << ref->toString();
  // The one serial loop left is the innermost run's block loop (one trip).
  const auto& loops = ref->loopDomain();
  EXPECT_EQ(std::count_if(loops.begin(), loops.end(),
                          [](IterDomain* id) { return id->parallelType() == ParallelType::Serial; }),
            1)
      << ref->toString();
}

TEST(PointwiseScheduler, FourthRunStaysSerialWhenTheInnermostNeedsSeveralBlocks) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildFourRunSum(fusion);
  PointwiseParams params = scheduleAndCheck(
      fusion, {randn({2, 3, 2, 1024}), randn({2}), randn({3}), randn({2}), randn({1024})},
      "pw_four_runs_wide");
  EXPECT_FALSE(params.outer_run_on_grid_x) << params.toString();
  TensorView* ref = fusion.outputs()[0]->asTensor();
  EXPECT_EQ(ref->axis(0)->parallelType(), ParallelType::Serial) << ref->toString();
}

}  // namespace
}  // namespace smelt::testing
