// The element-wise op set at the fusion level: result dtypes (torch's type
// promotion), printing, and the errors each op documents.
#include <gtest/gtest.h>

#include "common/expect_error.h"
#include "fusion/ops.h"

namespace smelt {
namespace {

class OpTypes : public ::testing::Test {
 protected:
  Fusion fusion;
  FusionGuard guard{&fusion};
  TensorView* f = makeConcreteTensor({4, 5});
  TensorView* h = makeConcreteTensor({4, 5}, DataType::Half);
  TensorView* b = makeConcreteTensor({4, 5}, DataType::BFloat16);
  TensorView* d = makeConcreteTensor({4, 5}, DataType::Double);
  TensorView* i = makeConcreteTensor({4, 5}, DataType::Int);
  TensorView* i32 = makeConcreteTensor({4, 5}, DataType::Int32);
  TensorView* flag = makeConcreteTensor({4, 5}, DataType::Bool);
};

TEST_F(OpTypes, FloatingUnaryOpsLiftIntegersAndBoolToFloat) {
  using UnaryFn = TensorView* (*)(TensorView*);
  for (UnaryFn op : {sqrt, rsqrt, log, log2, log1p, exp2, expm1, sigmoid, erf, reciprocal,
                     sin, cos}) {
    EXPECT_EQ(op(f)->dtype(), DataType::Float);
    EXPECT_EQ(op(h)->dtype(), DataType::Half);
    EXPECT_EQ(op(b)->dtype(), DataType::BFloat16);
    EXPECT_EQ(op(d)->dtype(), DataType::Double);
    EXPECT_EQ(op(i)->dtype(), DataType::Float);
    EXPECT_EQ(op(flag)->dtype(), DataType::Float);
  }
}

TEST_F(OpTypes, RoundingKeepsTheDtypeAndRejectsBool) {
  using UnaryFn = TensorView* (*)(TensorView*);
  for (UnaryFn op : {floor, ceil, round, trunc}) {
    EXPECT_EQ(op(h)->dtype(), DataType::Half);
    EXPECT_EQ(op(i32)->dtype(), DataType::Int32);
  }
  EXPECT_SMELT_ERROR(floor(flag), "floor", "T6", "bool");
  EXPECT_SMELT_ERROR(round(flag), "round", "T6", "bool");
}

TEST_F(OpTypes, ComparisonsAndLogicalOpsReturnBool) {
  using BinaryFn = TensorView* (*)(Val*, Val*);
  for (BinaryFn op : {eq, ne, lt, le, gt, ge, logicalAnd, logicalOr}) {
    EXPECT_EQ(op(h, b)->dtype(), DataType::Bool);
    EXPECT_EQ(op(i, flag)->dtype(), DataType::Bool);
  }
  EXPECT_EQ(lt(i, 0.5)->dtype(), DataType::Bool);
  EXPECT_EQ(logicalNot(f)->dtype(), DataType::Bool);
  // What a comparison compares in: the promoted operand type.
  auto* half_vs_bf16 = static_cast<const BinaryOp*>(lt(h, b)->definition());
  EXPECT_EQ(half_vs_bf16->operandDtype(), DataType::Float);
  auto* int_vs_fraction = static_cast<const BinaryOp*>(lt(i, 0.5)->definition());
  EXPECT_EQ(int_vs_fraction->operandDtype(), DataType::Float);
  auto* int_vs_whole = static_cast<const BinaryOp*>(ge(i32, 2.0)->definition());
  EXPECT_EQ(int_vs_whole->operandDtype(), DataType::Int32);
}

TEST_F(OpTypes, PowRemainderFmodPromoteLikeTorch) {
  EXPECT_EQ(pow(i, i32)->dtype(), DataType::Int);
  EXPECT_EQ(pow(i, 2.0)->dtype(), DataType::Int);    // a whole exponent keeps int
  EXPECT_EQ(pow(i, 0.5)->dtype(), DataType::Float);
  EXPECT_EQ(pow(h, 2.0)->dtype(), DataType::Half);
  EXPECT_EQ(remainder(h, b)->dtype(), DataType::Float);
  EXPECT_EQ(fmod(d, f)->dtype(), DataType::Double);
  EXPECT_EQ(remainder(i32, 3.0)->dtype(), DataType::Int32);
  // A bool tensor with an integer scalar becomes int64, as in torch.
  EXPECT_EQ(add(flag, constant(1, DataType::Int))->dtype(), DataType::Int);
  EXPECT_EQ(add(flag, flag)->dtype(), DataType::Bool);
}

TEST_F(OpTypes, ArithmeticOnTwoBoolsIsRejected) {
  EXPECT_SMELT_ERROR(sub(flag, flag), "sub", "T6", "bool", "cast");
  EXPECT_SMELT_ERROR(pow(flag, flag), "pow", "T6");
  EXPECT_SMELT_ERROR(remainder(flag, constant(1, DataType::Bool)), "remainder", "T6", "true");
  EXPECT_SMELT_ERROR(fmod(flag, flag), "fmod", "bool");
}

TEST_F(OpTypes, ShapesAreCheckedAndNamed) {
  TensorView* wide = makeConcreteTensor({4, 6});
  EXPECT_SMELT_ERROR(lt(f, wide), "lt", "dimension 1", "T0", "extent 5", "T7", "extent 6");
  EXPECT_SMELT_ERROR(logicalAnd(f, makeConcreteTensor({5})), "logical_and", "rank 2",
                     "rank 1");
  EXPECT_SMELT_ERROR(sqrt(nullptr), "sqrt", "null");
}

TEST_F(OpTypes, CastBetweenEveryPairOfDtypes) {
  const DataType all[] = {DataType::Float, DataType::Double, DataType::Half, DataType::BFloat16,
                          DataType::Int,   DataType::Int32,  DataType::Bool};
  for (TensorView* in : {f, d, h, b, i, i32, flag}) {
    for (DataType to : all) {
      TensorView* out = castOp(to, in);
      EXPECT_EQ(out->dtype(), to);
      EXPECT_EQ(out->definition()->opName(), "cast<" + toString(to) + ">");
    }
  }
}

TEST(OpPrinting, NewOpsPrintByName) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({4});
  fusion.addInput(x);
  TensorView* y = rsqrt(x);
  TensorView* z = remainder(y, 2.5);
  TensorView* c = le(z, x);
  TensorView* not_c = logicalNot(c);
  TensorView* n = logicalOr(not_c, gt(x, 0.0));
  fusion.addOutput(pow(where(n, x, y), 1.5));
  EXPECT_EQ(fusion.mathString(),
            "Fusion inputs: (T0_g_float[i0{4}])\n"
            "  T1_l_float[i1{4}] = rsqrt(T0)\n"
            "  T2_l_float[i2{4}] = remainder(T1, 2.5)\n"
            "  T3_l_bool[i3{4}] = le(T2, T0)\n"
            "  T4_l_bool[i4{4}] = logical_not(T3)\n"
            "  T5_l_bool[i5{4}] = gt(T0, 0.0)\n"
            "  T6_l_bool[i6{4}] = logical_or(T4, T5)\n"
            "  T7_l_float[i7{4}] = where(T6, T0, T1)\n"
            "  T8_g_float[i8{4}] = pow(T7, 1.5)\n"
            "Fusion outputs: (T8)\n");
}

}  // namespace
}  // namespace smelt
