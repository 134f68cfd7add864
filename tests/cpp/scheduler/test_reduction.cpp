// The reduction scheduler: inner and outer reductions over a spread of
// shapes, with prologue and epilogue ops, heuristics asserted, every kernel
// simulated with race detection against ATen and compiled with NVRTC.
#include <gtest/gtest.h>

#include <functional>

#include "common/expect_error.h"
#include "fusion/ops.h"
#include "scheduler/reduction.h"
#include "scheduler/segmenter.h"
#include "scheduler/scheduler_test_util.h"

namespace smelt::testing {
namespace {

ReductionParams scheduleAndCheck(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                                 const std::string& name) {
  return testing::scheduleAndCheck(fusion, inputs, name, reductionHeuristics, scheduleReduction);
}

struct Shape {
  int64_t rows;
  int64_t cols;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << "[" << s.rows << ", " << s.cols << "]"; }

TEST(ReductionScheduler, SumOfSquaresOverRowsOfManyShapes) {
  for (const Shape& s : std::vector<Shape>{{1, 1}, {5, 1}, {1, 13}, {7, 3}, {3, 500}, {17, 64}, {2, 1031}, {64, 6}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(2);
    fusion.addInput(x);
    fusion.addOutput(sum(mul(x, x), {1}));
    ReductionParams params = scheduleAndCheck(fusion, {randn({s.rows, s.cols})}, "red_inner");
    EXPECT_TRUE(params.inner);
    EXPECT_EQ(params.vector_width, s.cols % 4 == 0 ? 4 : s.cols % 2 == 0 ? 2 : 1);
    EXPECT_LE(params.block_x * params.block_y, 256);
  }
}

// Columns vectorize like rows: 16-byte loads of 4 floats where the row
// length allows, each thread accumulating 4 columns.
TEST(ReductionScheduler, ColumnMaxPlusOneOfManyShapes) {
  for (const Shape& s :
       std::vector<Shape>{{1, 5}, {13, 1}, {7, 3}, {300, 5}, {9, 129}, {64, 64}, {33, 260}, {70, 6}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(2);
    fusion.addInput(x);
    fusion.addOutput(add(max(x, {0}), 1.0));
    ReductionParams params = scheduleAndCheck(fusion, {randn({s.rows, s.cols})}, "red_outer");
    EXPECT_FALSE(params.inner);
    EXPECT_EQ(params.vector_width, s.cols % 4 == 0 ? 4 : s.cols % 2 == 0 ? 2 : 1);
    EXPECT_EQ(params.vectorized_inputs.empty(), params.vector_width == 1);
    EXPECT_LE(params.block_x * params.vector_width, std::max<int64_t>(kOuterVectorColumns, 128));
  }
}

// max of bool (torch.any's reduction) starts from false: an init of -inf
// converted to true made every row's max true in the kernel and the
// simulator alike, so only a comparison with ATen could see it.
TEST(ReductionScheduler, MaxOfBoolRowsAndColumnsStartsFromFalse) {
  for (int64_t axis : {0, 1}) {
    SCOPED_TRACE(axis);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(2, DataType::Bool);
    fusion.addInput(x);
    fusion.addOutput(max(x, {axis}));
    at::Tensor input = at::rand({9, 33}, at::kDouble) < 0.05;
    input.select(axis == 1 ? 0 : 1, 2).fill_(false);  // a row (column) with no true
    scheduleAndCheck(fusion, {input}, "red_bool_max");
  }
}

TEST(ReductionScheduler, HeuristicsForColumns) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {0}));
  // Many columns: 64 per block, 16 threads of 4 floats, 16 rows at a time.
  RuntimeInfo many(fusion, {InputInfo::contiguous(DataType::Float, {8192, 65536})});
  EXPECT_EQ(reductionHeuristics(fusion, many).toString(),
            "ReductionParams{outer, vector_width=4, block=(16, 16), vectorized_inputs={0}}");
  // 64 columns per block would make 64 blocks, fewer than SMs: blocks narrow
  // to 16 columns (256 blocks) with 512 threads, 128 rows at a time.
  RuntimeInfo wide(fusion, {InputInfo::contiguous(DataType::Float, {8192, 4096})});
  EXPECT_EQ(reductionHeuristics(fusion, wide).toString(),
            "ReductionParams{outer, vector_width=4, block=(4, 128), vectorized_inputs={0}}");
  // An odd row length: one column per thread, 16 threads across (256 blocks).
  RuntimeInfo odd(fusion, {InputInfo::contiguous(DataType::Float, {8192, 4095})});
  EXPECT_EQ(reductionHeuristics(fusion, odd).toString(),
            "ReductionParams{outer, vector_width=1, block=(16, 32), vectorized_inputs={}}");
  // Narrow tensors: rows of 32 bytes at least (2 threads of 8 halves).
  Fusion halves;
  FusionGuard halves_guard(&halves);
  TensorView* h = makeContigTensor(2, DataType::Half);
  halves.addInput(h);
  halves.addOutput(sum(castOp(DataType::Float, h), {0}));
  RuntimeInfo narrow(halves, {InputInfo::contiguous(DataType::Half, {16384, 1024})});
  EXPECT_EQ(reductionHeuristics(halves, narrow).toString(),
            "ReductionParams{outer, vector_width=8, block=(2, 256), vectorized_inputs={0}}");
}

TEST(ReductionScheduler, HeuristicsForLongAndShortRows) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {1}));
  RuntimeInfo long_rows(fusion, {InputInfo::contiguous(DataType::Float, {64, 4096})});
  EXPECT_EQ(reductionHeuristics(fusion, long_rows).toString(),
            "ReductionParams{inner, vector_width=4, block=(256, 1), vectorized_inputs={0}}");
  // Rows of 24 floats: 6 vectors, so 8 threads per row and 32 rows per block.
  RuntimeInfo short_rows(fusion, {InputInfo::contiguous(DataType::Float, {1000, 24})});
  EXPECT_EQ(reductionHeuristics(fusion, short_rows).toString(),
            "ReductionParams{inner, vector_width=4, block=(8, 32), vectorized_inputs={0}}");
}

// Grid split: reductions of 32k elements or more whose kernel would have
// fewer blocks than SMs (132) are split into power-of-two chunk counts
// aiming at two blocks per SM, chunks of at least 4096 elements.
TEST(ReductionScheduler, HeuristicsSplitFewLongRowsOrColumnsAcrossBlocks) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(sum(mul(x, x), {1}));
  auto grid_split = [&](int64_t rows, int64_t cols) {
    RuntimeInfo runtime(fusion, {InputInfo::contiguous(DataType::Float, {rows, cols})});
    return reductionHeuristics(fusion, runtime).grid_split;
  };
  EXPECT_EQ(grid_split(2, 1 << 20), 128);  // 132 chunks per row wanted
  EXPECT_EQ(grid_split(1, 65536), 16);     // 16 chunks of 4096
  EXPECT_EQ(grid_split(8, 1 << 20), 32);   // 33 wanted
  EXPECT_EQ(grid_split(131, 1 << 20), 2);  // 3 wanted
  EXPECT_EQ(grid_split(132, 1 << 20), 1);  // a block per SM already
  EXPECT_EQ(grid_split(2, 32767), 1);      // short enough for one block
  RuntimeInfo runtime(fusion, {InputInfo::contiguous(DataType::Float, {1, 65536})});
  EXPECT_EQ(reductionHeuristics(fusion, runtime).toString(),
            "ReductionParams{inner, vector_width=4, block=(256, 1), vectorized_inputs={0}, "
            "grid_split=16}");
  // Columns: [N, C] takes ceil(C / 64) blocks when C vectorizes (16 threads
  // of 4 floats), narrowed to 8 columns a block (32 bytes) while that is
  // fewer than SMs.
  Fusion columns;
  FusionGuard columns_guard(&columns);
  TensorView* y = makeContigTensor(2);
  columns.addInput(y);
  columns.addOutput(sum(y, {0}));
  auto column_split = [&](int64_t rows, int64_t cols) {
    RuntimeInfo runtime(columns, {InputInfo::contiguous(DataType::Float, {rows, cols})});
    return reductionHeuristics(columns, runtime).grid_split;
  };
  EXPECT_EQ(column_split(1 << 20, 64), 32);     // 8 blocks: 33 wanted
  EXPECT_EQ(column_split(1 << 20, 8192), 1);    // 256 blocks of 32 columns
  EXPECT_EQ(column_split(1 << 20, 32768), 1);   // 256 blocks
  EXPECT_EQ(column_split(32768, 4), 8);         // chunks of 4096
  EXPECT_EQ(gridSplitChunks(100000, 16), 16);
  EXPECT_EQ(gridSplitChunks(999, 16), 9);
  EXPECT_EQ(gridSplitChunks(997, 16), 1);  // prime
  EXPECT_EQ(gridSplitChunks(6, 16), 6);
}

// What the two-kernel split cannot regroup is never split by the heuristics.
TEST(ReductionScheduler, GridSplitRejectReasons) {
  auto reason = [](const std::function<void(Fusion&)>& build) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    build(fusion);
    return gridSplitRejectReason(fusion);
  };
  auto input = [](Fusion& f, TensorView* tv) {
    f.addInput(tv);
    return tv;
  };
  EXPECT_EQ(reason([&](Fusion& f) {
              TensorView* x = input(f, makeContigTensor(2));
              f.addOutput(sum(mul(exp(x), input(f, makeContigTensor(2))), {1}));
            }),
            "");
  EXPECT_EQ(reason([&](Fusion& f) { f.addOutput(sum(input(f, makeContigTensor(3)), {0})); }), "");
  EXPECT_EQ(reason([&](Fusion& f) { f.addOutput(sum(input(f, makeContigTensor(3)), {1})); }),
            "reduction T1 reduces neither its innermost nor its outermost dimension alone");
  EXPECT_EQ(reason([&](Fusion& f) { f.addOutput(sum(input(f, makeContigTensor(1)), {0})); }),
            "it reduces a whole tensor; a grid split regroups rows");
  EXPECT_EQ(reason([&](Fusion& f) {
              f.addOutput(sum(input(f, makeConcreteTensor({2, 1 << 20})), {1}));
            }),
            "input T0 has a constant extent in dimension 0");
  EXPECT_EQ(reason([&](Fusion& f) {
              TensorView* x = input(f, makeContigTensor(2));
              TensorView* w = input(f, makeContigTensor(1));
              f.addOutput(sum(mul(x, broadcast(w, {true, false})), {1}));
            }),
            "input T1 is read before the reduction without the reduction's shape");
  Fusion concrete;
  FusionGuard guard(&concrete);
  TensorView* x = makeConcreteTensor({2, 1 << 20});
  concrete.addInput(x);
  concrete.addOutput(sum(x, {1}));
  RuntimeInfo runtime(concrete, {InputInfo::contiguous(DataType::Float, {2, 1 << 20})});
  EXPECT_EQ(reductionHeuristics(concrete, runtime).grid_split, 1);
}

TEST(ReductionScheduler, MeanOfHalfWithEpilogue) {
  // mean over the last dimension of a half tensor, accumulated in float.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2, DataType::Half);
  fusion.addInput(x);
  TensorView* total = sum(castOp(DataType::Float, x), {1});
  fusion.addOutput(total);
  fusion.addOutput(castOp(DataType::Half, div(total, 40.0)));
  ReductionParams params = scheduleAndCheck(fusion, {randn({6, 40}, at::kHalf)}, "red_mean_half");
  EXPECT_EQ(params.vector_width, 8);
}

TEST(ReductionScheduler, ThreeDimensionsReducedInTheMiddle) {
  // sum over dimension 1 of [B, R, I]: an outer reduction; B and I merge.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {1}));
  ReductionParams params = scheduleAndCheck(fusion, {randn({3, 11, 5})}, "red_middle");
  EXPECT_FALSE(params.inner);
}

TEST(ReductionScheduler, ReduceTwoInnerDimensionsAndNonContiguousInput) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {1, 2}));
  at::Tensor strided = randn({4, 6, 14}).slice(2, 0, 7);  // [4, 6, 7], row stride 14
  ReductionParams params = scheduleAndCheck(fusion, {strided}, "red_two_inner");
  EXPECT_TRUE(params.inner);
  EXPECT_EQ(params.vector_width, 1);
}

TEST(ReductionScheduler, FullReductionToRankZero) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {0, 1}));
  ReductionParams params = scheduleAndCheck(fusion, {randn({5, 37})}, "red_full");
  EXPECT_EQ(params.block_y, 1);
}

TEST(ReductionScheduler, BroadcastOperandInThePrologue) {
  // sum(x[I, R] * w[R]) over R.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  TensorView* w = makeContigTensor(1);
  fusion.addInput(x);
  fusion.addInput(w);
  fusion.addOutput(sum(mul(x, broadcast(w, {true, false})), {1}));
  ReductionParams params = scheduleAndCheck(fusion, {randn({9, 36}), randn({36})}, "red_bcast");
  EXPECT_EQ(params.vectorized_inputs, (std::vector<int64_t>{0, 1}));
}

TEST(ReductionScheduler, RejectsWhatItCannotSchedule) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  TensorView* m = max(x, {1});
  fusion.addOutput(sub(x, broadcast(m, {false, true})));
  EXPECT_NE(reductionRejectReason(fusion).find("broadcast back"), std::string::npos);
  Fusion two;
  FusionGuard guard2(&two);
  TensorView* y = makeContigTensor(2);
  two.addInput(y);
  two.addOutput(sum(y, {1}));
  two.addOutput(sum(y, {0}));
  EXPECT_NE(reductionRejectReason(two).find("reduce different dimensions"), std::string::npos);
  Fusion none;
  FusionGuard guard3(&none);
  TensorView* z = makeContigTensor(1);
  none.addInput(z);
  none.addOutput(neg(z));
  EXPECT_SMELT_ERROR(scheduleReduction(none, ReductionParams{}), "reduction scheduler",
                     "no reduction");
}

}  // namespace
}  // namespace smelt::testing
