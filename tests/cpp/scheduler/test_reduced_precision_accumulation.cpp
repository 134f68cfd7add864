// Sums and products of Half/BFloat16 tensors built with sum() and prod():
// they accumulate in Float and round once (ops.h), as torch's do. Inputs
// are chosen so that the Float accumulation is exact in any order: the
// result is then the one correctly rounded value and the simulated kernel
// must give it bit for bit, where a 16-bit accumulator rounds at every step.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "fusion/ops.h"
#include "runtime/aten_dtype.h"
#include "scheduler/scheduler_test_util.h"

namespace smelt::testing {
namespace {

// Values below 4 in magnitude with all of the type's significant bits (11
// in half, 8 in bfloat16): multiples of 2^-(bits-2), so a sum of up to 2^13
// of them needs at most 24 bits and Float holds it exactly.
at::Tensor exactSummands(DataType dtype, const std::vector<int64_t>& shape) {
  const int64_t bits = dtype == DataType::Half ? 11 : 8;
  at::manual_seed(7);
  const at::Tensor whole = at::randint(1 - (int64_t{1} << bits), int64_t{1} << bits, shape, at::kDouble);
  return (whole / static_cast<double>(int64_t{1} << (bits - 2))).to(toAtenType(dtype));
}

// Factors in [0.9, 1.1): a product of n of them rounds n - 1 times in any
// grouping, each time by up to half a 16-bit ulp, so a 16-bit accumulator
// ends several ulps off where Float's roundings stay far below one.
at::Tensor factorsNearOne(DataType dtype, const std::vector<int64_t>& shape) {
  at::manual_seed(11);
  return (at::rand(shape, at::kDouble) * 0.2 + 0.9).to(toAtenType(dtype));
}

// Segments `fusion` as the runtime does (so the schedulers must take what
// sum()/prod() build) and returns its only output, simulated.
at::Tensor simulate(Fusion& fusion, const at::Tensor& input) {
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, {input}));
  SegmentedFusion segmented = segmentFusion(fusion, runtime);
  EXPECT_EQ(segmented.segments.size(), 1u) << segmented.toString();
  return runSegmentsInSimulator(fusion, segmented, {input}).at(0);
}

void expectSameBits(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  ASSERT_EQ(got.sizes(), want.sizes());
  const at::Tensor wrong = got.ne(want);
  EXPECT_EQ(wrong.sum().item<int64_t>(), 0)
      << "first wrong: " << got.masked_select(wrong).slice(0, 0, 4) << " instead of "
      << want.masked_select(wrong).slice(0, 0, 4);
}

// Positive 16-bit values: their bit patterns count ulps.
void expectWithinOneUlp(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_TRUE(want.gt(0).all().item<bool>());
  const at::Tensor ulps = (got.view(at::kShort).to(at::kInt) - want.view(at::kShort).to(at::kInt)).abs();
  EXPECT_LE(ulps.max().item<int64_t>(), 1) << "at most 1 ulp off; " << ulps.gt(1).sum().item<int64_t>()
                                           << " of " << ulps.numel() << " are further";
}

class ReducedPrecisionAccumulation : public ::testing::TestWithParam<DataType> {};

TEST_P(ReducedPrecisionAccumulation, SumBuildsFloatReductionAndCastBack) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2, GetParam());
  TensorView* total = sum(x, {1});
  EXPECT_EQ(total->dtype(), GetParam());
  const Expr* cast_back = total->definition();
  ASSERT_EQ(cast_back->type(), ExprType::Unary);
  EXPECT_EQ(static_cast<const UnaryOp*>(cast_back)->op(), UnaryOpType::Cast);
  const Expr* reduction = cast_back->input(0)->definition();
  ASSERT_EQ(reduction->type(), ExprType::Reduction);
  EXPECT_EQ(reduction->output()->dtype(), DataType::Float);
  EXPECT_EQ(reduction->input(0)->dtype(), DataType::Float);
  // Max rounds nothing: it stays in the input's type.
  EXPECT_EQ(max(x, {1})->definition()->type(), ExprType::Reduction);
}

TEST_P(ReducedPrecisionAccumulation, SumOf8192ValuesEqualsATen) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(1, GetParam());
  fusion.addInput(x);
  fusion.addOutput(sum(x, {0}));
  const at::Tensor input = exactSummands(GetParam(), {8192});
  // ATen's CPU sum of 16-bit tensors accumulates in float as well.
  expectSameBits(simulate(fusion, input), at::sum(input));
}

TEST_P(ReducedPrecisionAccumulation, RowSumsEqualATen) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2, GetParam());
  fusion.addInput(x);
  fusion.addOutput(sum(x, {1}));
  const at::Tensor input = exactSummands(GetParam(), {16, 4096});
  expectSameBits(simulate(fusion, input), at::sum(input, {1}));
}

TEST_P(ReducedPrecisionAccumulation, ColumnProductsOf512FactorsRoundOnce) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2, GetParam());
  fusion.addInput(x);
  fusion.addOutput(prod(x, {0}));
  const at::Tensor input = factorsNearOne(GetParam(), {512, 64});
  // ATen's CPU prod multiplies in the 16-bit type (its CUDA prod in float):
  // the expected value is the product in double, rounded once.
  const at::Tensor want = at::prod(input.to(at::kDouble), {0}).to(input.scalar_type());
  expectWithinOneUlp(simulate(fusion, input), want);
}

INSTANTIATE_TEST_SUITE_P(HalfAndBFloat16, ReducedPrecisionAccumulation,
                         ::testing::Values(DataType::Half, DataType::BFloat16),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return info.param == DataType::Half ? std::string("Half")
                                                               : std::string("BFloat16");
                         });

}  // namespace
}  // namespace smelt::testing
