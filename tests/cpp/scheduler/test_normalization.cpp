// The persistent (normalization) scheduler: softmax, layer norm and RMS norm
// patterns in one kernel, rows in registers or shared memory, simulated with
// race detection against ATen and compiled with NVRTC.
#include <gtest/gtest.h>

#include "common/example_fusions.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "scheduler/normalization.h"
#include "scheduler/scheduler_test_util.h"

namespace smelt::testing {
namespace {

PersistentParams scheduleAndCheck(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                                  const std::string& name,
                                  const std::function<void(PersistentParams&)>& adjust = {}) {
  return testing::scheduleAndCheck(fusion, inputs, name, persistentHeuristics,
                                   schedulePersistent, adjust);
}

// softmax over the last dimension of x [I, R].
void buildSoftmax(Fusion& fusion) {
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  TensorView* m = broadcast(max(x, {1}), {false, true});
  TensorView* e = exp(sub(x, m));
  TensorView* s = broadcast(sum(e, {1}), {false, true});
  fusion.addOutput(div(e, s));
}

// Layer norm over the last dimension with weight and bias; 1 / (var + eps)
// stands in for rsqrt (the op set has no square root yet). Outputs the mean too.
void buildLayerNorm(Fusion& fusion, int64_t r) {
  TensorView* x = makeContigTensor(2);
  TensorView* w = makeContigTensor(1);
  TensorView* b = makeContigTensor(1);
  fusion.addInput(x);
  fusion.addInput(w);
  fusion.addInput(b);
  TensorView* mean = div(sum(x, {1}), static_cast<double>(r));
  TensorView* xc = sub(x, broadcast(mean, {false, true}));
  TensorView* var = div(sum(mul(xc, xc), {1}), static_cast<double>(r));
  TensorView* inv = div(constant(1.0), add(var, 1e-5));
  TensorView* y = mul(xc, broadcast(inv, {false, true}));
  fusion.addOutput(add(mul(y, broadcast(w, {true, false})), broadcast(b, {true, false})));
  fusion.addOutput(mean);
}

struct Shape {
  int64_t rows;
  int64_t cols;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << "[" << s.rows << ", " << s.cols << "]"; }

TEST(PersistentScheduler, SoftmaxOfManyShapes) {
  for (const Shape& s : std::vector<Shape>{{1, 1}, {3, 7}, {5, 32}, {2, 131}, {33, 12}, {2, 1030}, {1, 2053}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildSoftmax(fusion);
    PersistentParams params = scheduleAndCheck(fusion, {randn({s.rows, s.cols})}, "softmax");
    EXPECT_FALSE(params.shared_memory);
    // x and exp(x - max) stay in registers.
    EXPECT_EQ(persistentBuffers(fusion).size(), 2u);
  }
}

TEST(PersistentScheduler, SoftmaxHeuristics) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildSoftmax(fusion);
  RuntimeInfo rows_of_8k(fusion, {InputInfo::contiguous(DataType::Float, {64, 8192})});
  EXPECT_EQ(persistentHeuristics(fusion, rows_of_8k).toString(),
            "PersistentParams{vector_width=4, persistent_batch=4, block_y=1, buffers=registers, "
            "vectorized_inputs={0}, vectorized_outputs={0}}");
  RuntimeInfo rows_of_24(fusion, {InputInfo::contiguous(DataType::Float, {100, 24})});
  EXPECT_EQ(persistentHeuristics(fusion, rows_of_24).toString(),
            "PersistentParams{vector_width=4, persistent_batch=1, block_y=32, buffers=registers, "
            "vectorized_inputs={0}, vectorized_outputs={0}}");
  // 16k floats in two buffers do not fit registers: shared memory.
  RuntimeInfo rows_of_16k(fusion, {InputInfo::contiguous(DataType::Float, {4, 16384})});
  EXPECT_TRUE(persistentHeuristics(fusion, rows_of_16k).shared_memory);
  // 32k floats in two buffers exceed the shared-memory budget.
  RuntimeInfo rows_of_32k(fusion, {InputInfo::contiguous(DataType::Float, {4, 32768})});
  EXPECT_NE(persistentRejectReason(fusion, &rows_of_32k).find("budget"), std::string::npos);
}

TEST(PersistentScheduler, LayerNormWithWeightBiasAndMeanOutput) {
  for (Shape s : {Shape{4, 10}, Shape{3, 64}, Shape{2, 301}}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildLayerNorm(fusion, s.cols);
    PersistentParams params = scheduleAndCheck(
        fusion, {randn({s.rows, s.cols}), randn({s.cols}), randn({s.cols})}, "layer_norm");
    EXPECT_EQ(params.vectorized_outputs, s.cols % 2 == 0 ? std::vector<int64_t>{0}
                                                         : std::vector<int64_t>{});
  }
}

TEST(PersistentScheduler, RmsNormHalf) {
  // y = x * 1 / (mean(x^2) + eps) * w in float, stored as half.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* xh = makeContigTensor(2, DataType::Half);
  TensorView* w = makeContigTensor(1, DataType::Half);
  fusion.addInput(xh);
  fusion.addInput(w);
  TensorView* x = castOp(DataType::Float, xh);
  TensorView* ms = div(sum(mul(x, x), {1}), 48.0);
  TensorView* inv = div(constant(1.0), add(ms, 1e-6));
  TensorView* y = mul(mul(x, broadcast(inv, {false, true})),
                      castOp(DataType::Float, broadcast(w, {true, false})));
  fusion.addOutput(castOp(DataType::Half, y));
  PersistentParams params =
      scheduleAndCheck(fusion, {randn({5, 48}, at::kHalf), randn({48}, at::kHalf)}, "rms_norm");
  EXPECT_EQ(params.vector_width, 8);
}

TEST(PersistentScheduler, NonContiguousRows) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildSoftmax(fusion);
  at::Tensor x = randn({20, 6}).t();  // [6, 20], rows strided
  PersistentParams params = scheduleAndCheck(fusion, {x}, "softmax_strided");
  EXPECT_TRUE(params.vectorized_inputs.empty());
}

// Softmax over rows of fixed length, applied `times` times in a row.
void buildRepeatedSoftmax(Fusion& fusion, std::vector<int64_t> shape, int times) {
  TensorView* x = makeConcreteTensor(shape);
  fusion.addInput(x);
  TensorView* y = x;
  for (int k = 0; k < times; ++k) {
    TensorView* e = exp(sub(y, broadcast(max(y, {1}), {false, true})));
    y = div(e, broadcast(sum(e, {1}), {false, true}));
  }
  fusion.addOutput(y);
}

const alloc_reuse::SharedMemoryPlan& planOf(GpuLower& lower) { return *lower.run().smem_plan; }

void forceSharedMemory(PersistentParams& p) {
  p.shared_memory = true;
  p.persistent_batch = 2;
  p.block_y = 1;
}

TEST(PersistentScheduler, SharedMemoryBuffers) {
  // Forced into shared memory on rows of 40: each persistent buffer is
  // [batch 2, TIDx 5, vector 4] floats = 160 B.
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildRepeatedSoftmax(fusion, {3, 40}, 1);
  scheduleAndCheck(fusion, {randn({3, 40})}, "softmax_smem", forceSharedMemory);
  std::vector<TensorView*> buffers = persistentBuffers(fusion);
  ASSERT_EQ(buffers.size(), 2u);
  for (TensorView* tv : buffers) EXPECT_EQ(tv->memoryType(), MemoryType::Shared);
  GpuLower lower(&fusion);
  const auto& plan = planOf(lower);
  // x and exp(x - max) are live together; the first block reduction's
  // workspace takes bytes of exp(x - max) before it is written.
  EXPECT_EQ(plan.tensor_bytes.constant(), 320) << plan.report_text;
  EXPECT_EQ(plan.plan.total_bytes.constant(), 340) << plan.report_text;
  EXPECT_EQ(plan.plan.no_reuse_bytes.constant(), 372) << plan.report_text;
}

TEST(PersistentScheduler, SharedMemoryBuffersWithDisjointLifetimesShareBytes) {
  // softmax(softmax(x)): the first softmax's buffers are dead (a block
  // reduction lies between) when the second softmax's are first written, so
  // four 160 B buffers fit in the bytes of two.
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildRepeatedSoftmax(fusion, {2, 40}, 2);
  scheduleAndCheck(fusion, {randn({2, 40})}, "softmax2_smem", forceSharedMemory);
  EXPECT_EQ(persistentBuffers(fusion).size(), 4u);
  GpuLower lower(&fusion);
  const auto& plan = planOf(lower);
  EXPECT_EQ(plan.tensor_bytes.constant(), 320) << plan.report_text;
  // Without reuse: the four buffers and four 20 B workspaces, 16 B aligned.
  EXPECT_EQ(plan.plan.no_reuse_bytes.constant(), 4 * 160 + 3 * 32 + 20) << plan.report_text;
}

TEST(PersistentScheduler, RejectsPlainReductions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {1}));
  EXPECT_NE(persistentRejectReason(fusion).find("plain reduction"), std::string::npos);
  EXPECT_SMELT_ERROR(schedulePersistent(fusion, PersistentParams{}), "persistent scheduler",
                     "plain reduction");
}

// RMS norm of x [s0, s1, R] followed by a view merging the leading dimensions
// (every nn.Linear after a norm reads x.view(B * T, C)): the view's merge is
// the one the schedule makes of the rows, so norm and view are one kernel.
// Views that merge the reduced dimension, or rows in another order than the
// schedule merges them, are declined.
TensorView* rmsNormOf3d(Fusion& fusion, const std::vector<int64_t>& shape) {
  TensorView* x = makeConcreteTensor(shape);
  TensorView* w = makeConcreteTensor({shape.back()});
  fusion.addInput(x);
  fusion.addInput(w);
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  std::vector<bool> keep(shape.size(), false);
  keep.back() = true;
  TensorView* ms = div(sum(mul(x, x), {last}), static_cast<double>(shape.back()));
  std::vector<bool> row(shape.size(), true);
  row.back() = false;
  return mul(mul(x, broadcast(rsqrt(add(ms, 1e-6)), keep)), broadcast(w, row));
}

TEST(PersistentScheduler, NormFollowedByAViewMergingItsRowsIsOneKernel) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* y = rmsNormOf3d(fusion, {2, 8, 32});
  fusion.addOutput(reshape(y, {IntExpr(16), IntExpr(32)}));
  EXPECT_EQ(persistentRejectReason(fusion), "");
  scheduleAndCheck(fusion, {randn({2, 8, 32}), randn({32})}, "norm_then_row_view");
}

TEST(PersistentScheduler, DeclinesViewsTheRowScheduleCannotFollow) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    fusion.addOutput(reshape(rmsNormOf3d(fusion, {2, 8, 32}), {IntExpr(512)}));
    EXPECT_NE(persistentRejectReason(fusion), "");
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* y = rmsNormOf3d(fusion, {4, 2, 8, 32});
    fusion.addOutput(reshape(y, {IntExpr(4), IntExpr(16), IntExpr(32)}));
    EXPECT_NE(persistentRejectReason(fusion).find("do not start one of the runs"), std::string::npos)
        << persistentRejectReason(fusion);
  }
}

// The numerator and denominator of an attention softmax over x [B, H, T, R]
// with a mask [B, T, R] broadcast over the heads, as outputs (how the
// segmenter cuts softmax(...).view(B * H, T, T)): the iteration
// dimensions form three runs (B, H, T), and exp(x - max) feeds both
// outputs, so it runs in neither's loops and is not inlined. B was a serial
// loop its register buffer spanned ("Local tensor T14 needs (T0.size[0] *
// 4) registers"); it is bound to BIDz.
TEST(PersistentScheduler, AttentionSoftmaxNumeratorAndDenominatorWithAMaskOverHeads) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* s = makeContigTensor(4);
  TensorView* mask = makeContigTensor(3);
  fusion.addInput(s);
  fusion.addInput(mask);
  TensorView* x = add(mul(s, 0.25), broadcast(mask, {false, true, false, false}));
  TensorView* e = exp(sub(x, broadcast(max(x, {3}), {false, false, false, true})));
  fusion.addOutput(e);
  fusion.addOutput(sum(e, {3}));
  scheduleAndCheck(fusion, {randn({2, 3, 5, 8}), randn({2, 5, 8})}, "attention_softmax_parts");
  EXPECT_EQ(e->axis(0)->parallelType(), ParallelType::BIDz) << e->toString();
}

// x1 / x1.sum(d, keepdim=True) + x0 with x1 of extent 1 (a broadcast) along
// d and x0 wider there (the torch fuzzer's reduce-size1-then-broadcast): the
// reduced axis, of extent 1, is bound to the thread dimension the wider
// tensors make 3 threads long. The block reduction's result was stored on
// thread 0 only (its contribution guard, threadIdx < 1, also guarded the
// store): the other threads read uninitialized registers (NaN past row 0).
TEST(PersistentScheduler, SizeOneReducedDimensionBroadcastToAWiderExtent) {
  for (int64_t d : {0, 1}) {
    SCOPED_TRACE(d);
    const std::vector<int64_t> narrow = d == 0 ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{4, 1};
    const std::vector<int64_t> wide = d == 0 ? std::vector<int64_t>{3, 4} : std::vector<int64_t>{4, 3};
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x0 = examples::makeBroadcastingTensor(wide);
    TensorView* x1 = examples::makeBroadcastingTensor(narrow);
    fusion.addInput(x0);
    fusion.addInput(x1);
    std::vector<bool> back(2, false);
    back[static_cast<size_t>(d)] = true;
    TensorView* v1 = div(x1, broadcast(sum(x1, {d}), back));
    fusion.addOutput(add(v1, x0));
    ASSERT_EQ(persistentRejectReason(fusion), "");
    scheduleAndCheck(fusion, {randn(wide), randn(narrow)}, "size1_reduction_broadcast");
  }
}

// x.sum(1, keepdim=True) / (|x.reshape(4, 4)| + 1) for x [1, 4, 4] (the torch
// fuzzer's seed 300418): the output, reached first from the broadcast sum
// (its reduced dimension a plain broadcast there), got that dimension
// unsplit and serial while |x| + 1 ran it on TIDx: lowering refused the
// accepted schedule. Propagation counts no plain broadcast axis as carrying
// loop structure, so the output is reached from |x| + 1.
TEST(PersistentScheduler, OutputReachedFromItsIteratingOperandNotTheBroadcastSum) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = examples::makeBroadcastingTensor({1, 4, 4});
  fusion.addInput(x);
  TensorView* s = broadcast(sum(x, {1}), {false, true, false});
  TensorView* y = broadcast(add(abs(squeeze(x, {0})), 1.0), {true, false, false});
  fusion.addOutput(div(s, y));
  ASSERT_EQ(persistentRejectReason(fusion), "");
  scheduleAndCheck(fusion, {randn({1, 4, 4})}, "sum_over_broadcast_row");
}

}  // namespace
}  // namespace smelt::testing
