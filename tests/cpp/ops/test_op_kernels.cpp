// Every element-wise op through the whole pipeline: a pointwise schedule,
// GpuLower, the simulator (race detection, every thread order) against ATen,
// and the generated CUDA compiled by NVRTC for sm_90. Half and bfloat16 are
// computed in float and rounded on store; casts cover every dtype pair.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "ops/pointwise_kernel_checks.h"
#include "runtime/aten_dtype.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt {
namespace {

using smelt::testing::expectCompiles;
using smelt::testing::schedulePointwise;
using smelt::testing::toScalarType;

const std::vector<int64_t> kShape = {6, 37};

// The values an op's inputs are drawn from (its domain, or values that make
// its interesting cases happen: ties for comparisons, halves for round).
// UnitInterval: inside (-1, 1) (asin, atanh); AboveOne: over 1 (acosh).
// Probability: inside (0, 1) (ndtri).
enum class Values { Any, Positive, AboveMinusOne, NonZero, Whole, Halves, Exponents, UnitInterval, AboveOne, Probability };

at::Tensor sample(DataType dtype, Values values, uint64_t seed,
                  const std::vector<int64_t>& shape = kShape) {
  at::manual_seed(seed);
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  at::Tensor x;
  if (dtype == DataType::Bool) return at::rand(shape, opts).gt(0.5);
  if (isIntegralType(dtype)) {
    switch (values) {
      case Values::Positive: x = at::randint(1, 10, shape, opts); break;
      case Values::AboveOne: x = at::randint(2, 10, shape, opts); break;
      case Values::UnitInterval: x = at::zeros(shape, opts); break;
      case Values::Probability: x = at::randint(0, 2, shape, opts); break;
      case Values::AboveMinusOne: x = at::randint(0, 10, shape, opts); break;
      case Values::NonZero: x = at::randint(1, 6, shape, opts) * (at::rand(shape, opts).gt(0.5) * 2 - 1); break;
      case Values::Exponents: x = at::randint(-1, 4, shape, opts); break;
      default: x = at::randint(-5, 6, shape, opts); break;
    }
    return x.to(toScalarType(dtype));
  }
  switch (values) {
    case Values::Any: x = at::randn(shape, opts) * 2; break;
    case Values::Positive: x = at::rand(shape, opts) * 4 + 0.05; break;
    case Values::AboveMinusOne: x = at::rand(shape, opts) * 4 - 0.95; break;
    case Values::NonZero: x = (at::rand(shape, opts) + 0.25) * (at::rand(shape, opts).gt(0.5) * 2 - 1); break;
    case Values::Whole: x = at::randint(-3, 4, shape, opts); break;
    case Values::Halves: x = at::randint(-8, 9, shape, opts) * 0.5; break;
    case Values::Exponents: x = at::randn(shape, opts); break;
    case Values::UnitInterval: x = at::rand(shape, opts) * 1.8 - 0.9; break;
    case Values::AboveOne: x = at::rand(shape, opts) * 4 + 1.05; break;
    case Values::Probability: x = at::rand(shape, opts) * 0.98 + 0.01; break;
  }
  return x.to(toScalarType(dtype));
}

struct Tolerance {
  double rtol, atol;
};
// Half and bfloat16 results may round either way between the simulator
// (double math) and ATen (float math): one unit in the last place.
Tolerance toleranceFor(DataType dtype) {
  switch (dtype) {
    case DataType::Half: return {2e-3, 2e-3};
    case DataType::BFloat16: return {1e-2, 1e-2};
    case DataType::Double: return {1e-12, 1e-12};
    default: return {1e-5, 1e-6};
  }
}

std::string dtypeName(DataType dtype) { return toString(dtype); }

const DataType kAllDtypes[] = {DataType::Float, DataType::Double, DataType::Half, DataType::BFloat16,
                               DataType::Int,   DataType::Int32,  DataType::Bool};

// ---------------------------------------------------------------------------
// Unary ops
// ---------------------------------------------------------------------------

struct UnaryCase {
  const char* name;
  TensorView* (*op)(TensorView*);
  Values values;
};

const UnaryCase kUnaryCases[] = {
    {"neg", neg, Values::Any},           {"exp", exp, Values::Any},
    {"tanh", tanh, Values::Any},         {"abs", abs, Values::Any},
    {"relu", relu, Values::Any},         {"sqrt", sqrt, Values::Positive},
    {"rsqrt", rsqrt, Values::Positive},  {"log", log, Values::Positive},
    {"log2", log2, Values::Positive},    {"log1p", log1p, Values::AboveMinusOne},
    {"exp2", exp2, Values::Any},         {"expm1", expm1, Values::Any},
    {"sigmoid", sigmoid, Values::Any},   {"erf", erf, Values::Any},
    {"reciprocal", reciprocal, Values::NonZero},
    {"sin", sin, Values::Any},           {"cos", cos, Values::Any},
    {"tan", tan, Values::Any},
    {"asin", asin, Values::UnitInterval},
    {"acos", acos, Values::UnitInterval},
    {"atan", atan, Values::Any},
    {"sinh", sinh, Values::Any},
    {"cosh", cosh, Values::Any},
    {"asinh", asinh, Values::Any},
    {"acosh", acosh, Values::AboveOne},
    {"atanh", atanh, Values::UnitInterval},
    {"log10", log10, Values::Positive},
    {"erfc", erfc, Values::Any},
    {"lgamma", lgamma, Values::Positive},
    {"floor", floor, Values::Any},       {"ceil", ceil, Values::Any},
    {"round", round, Values::Halves},    {"trunc", trunc, Values::Any},
    {"logical_not", logicalNot, Values::Whole},
    {"signbit", signbit, Values::Any},
};

const DataType kUnaryDtypes[] = {DataType::Float, DataType::Half, DataType::BFloat16,
                                 DataType::Double, DataType::Int};

class UnaryOpKernels : public ::testing::TestWithParam<DataType> {};

// Each op on its own (simulated against ATen), then all of them in one
// kernel compiled by NVRTC.
TEST_P(UnaryOpKernels, SimulatedMatchATenAndCompile) {
  const DataType dtype = GetParam();
  for (const UnaryCase& c : kUnaryCases) {
    SCOPED_TRACE(c.name);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor(kShape, dtype);
    fusion.addInput(x);
    TensorView* y = c.op(x);
    fusion.addOutput(y);
    schedulePointwise(fusion, y);
    const Tolerance tol = toleranceFor(y->dtype());
    sim::testing::expectKernelCorrect(fusion, {sample(dtype, c.values, 7)}, tol.rtol, tol.atol);
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor(kShape, dtype);
  fusion.addInput(x);
  for (const UnaryCase& c : kUnaryCases) fusion.addOutput(c.op(x));
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  expectCompiles(fusion, "unary_" + dtypeName(dtype));
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryOpKernels, ::testing::ValuesIn(kUnaryDtypes),
                         [](const auto& info) { return dtypeName(info.param); });

// ---------------------------------------------------------------------------
// Binary ops
// ---------------------------------------------------------------------------

struct BinaryCase {
  const char* name;
  TensorView* (*op)(Val*, Val*);
  Values lhs, rhs;
};

const BinaryCase kBinaryCases[] = {
    {"add", add, Values::Any, Values::Any},
    {"sub", sub, Values::Any, Values::Any},
    {"mul", mul, Values::Any, Values::Any},
    {"div", div, Values::Any, Values::NonZero},
    {"maximum", maximum, Values::Whole, Values::Whole},
    {"minimum", minimum, Values::Whole, Values::Whole},
    {"pow", pow, Values::Positive, Values::Exponents},
    {"remainder", remainder, Values::Any, Values::NonZero},
    {"fmod", fmod, Values::Any, Values::NonZero},
    {"atan2", atan2, Values::Any, Values::Any},
    {"hypot", hypot, Values::Any, Values::Any},
    {"copysign", copysign, Values::Any, Values::Any},
    {"eq", eq, Values::Whole, Values::Whole},
    {"ne", ne, Values::Whole, Values::Whole},
    {"lt", lt, Values::Whole, Values::Whole},
    {"le", le, Values::Whole, Values::Whole},
    {"gt", gt, Values::Whole, Values::Whole},
    {"ge", ge, Values::Whole, Values::Whole},
    {"logical_and", logicalAnd, Values::Whole, Values::Whole},
    {"logical_or", logicalOr, Values::Whole, Values::Whole},
};

struct DtypePair {
  DataType lhs, rhs;
};
const DtypePair kBinaryDtypes[] = {
    {DataType::Float, DataType::Float},  {DataType::Half, DataType::Half},
    {DataType::BFloat16, DataType::Float}, {DataType::Half, DataType::BFloat16},
    {DataType::Int, DataType::Int},      {DataType::Int32, DataType::Float},
    {DataType::Double, DataType::Int32},
};

std::string pairName(const DtypePair& p) { return dtypeName(p.lhs) + "_" + dtypeName(p.rhs); }

class BinaryOpKernels : public ::testing::TestWithParam<DtypePair> {};

TEST_P(BinaryOpKernels, SimulatedMatchATenAndCompile) {
  const DtypePair dtypes = GetParam();
  for (const BinaryCase& c : kBinaryCases) {
    SCOPED_TRACE(c.name);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor(kShape, dtypes.lhs);
    TensorView* b = makeConcreteTensor(kShape, dtypes.rhs);
    fusion.addInput(a);
    fusion.addInput(b);
    TensorView* y = c.op(a, b);
    fusion.addOutput(y);
    schedulePointwise(fusion, y);
    const Tolerance tol = toleranceFor(y->dtype());
    sim::testing::expectKernelCorrect(
        fusion, {sample(dtypes.lhs, c.lhs, 11), sample(dtypes.rhs, c.rhs, 12)}, tol.rtol, tol.atol);
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor(kShape, dtypes.lhs);
  TensorView* b = makeConcreteTensor(kShape, dtypes.rhs);
  fusion.addInput(a);
  fusion.addInput(b);
  for (const BinaryCase& c : kBinaryCases) {
    fusion.addOutput(c.op(a, b));
    fusion.addOutput(c.op(a, constant(0.5)));
  }
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  expectCompiles(fusion, "binary_" + pairName(dtypes));
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryOpKernels, ::testing::ValuesIn(kBinaryDtypes),
                         [](const auto& info) { return pairName(info.param); });

class BinaryOpsWithScalars : public ::testing::TestWithParam<DataType> {};

// tensor op scalar and scalar op tensor, with a fractional and a whole
// scalar (a whole one keeps an integral tensor integral).
TEST_P(BinaryOpsWithScalars, SimulatedMatchATen) {
  const DataType dtype = GetParam();
  for (const BinaryCase& c : kBinaryCases) {
    for (double value : {1.5, 2.0}) {
      SCOPED_TRACE(std::string(c.name) + " with " + std::to_string(value));
      Fusion fusion;
      FusionGuard guard(&fusion);
      TensorView* x = makeConcreteTensor(kShape, dtype);
      fusion.addInput(x);
      DataType scalar_type = isIntegralType(dtype) && value == 2.0 ? dtype : DataType::Float;
      TensorView* right = c.op(x, constant(value, scalar_type));
      TensorView* left = c.op(constant(value, scalar_type), x);
      fusion.addOutput(right);
      fusion.addOutput(left);
      schedulePointwise(fusion, right);
      const Tolerance tol = toleranceFor(right->dtype());
      // x is a divisor and an exponent too: no zeros.
      sim::testing::expectKernelCorrect(fusion, {sample(dtype, Values::NonZero, 13)}, tol.rtol,
                                        tol.atol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryOpsWithScalars,
                         ::testing::Values(DataType::Float, DataType::Half, DataType::Int),
                         [](const auto& info) { return dtypeName(info.param); });

// A floating base to the constant exponents ATen's pow computes without pow
// is built as those ops (x.pow(2) of RMS norm is a multiply, not powf, in
// the kernel), with ATen's values (simulated, positive bases, float and
// half); other exponents stay pow.
TEST(PowWithConstantExponent, BuiltAsATenComputesIt) {
  const std::vector<std::pair<double, std::string>> cases = {
      {2.0, "mul"}, {3.0, "mul"}, {0.5, "sqrt"}, {-0.5, "rsqrt"}, {-1.0, "reciprocal"},
      {-2.0, "reciprocal"}, {1.5, "pow"}, {4.0, "pow"}};
  for (DataType dtype : {DataType::Float, DataType::Half}) {
    for (const auto& [exponent, op] : cases) {
      SCOPED_TRACE(dtypeName(dtype) + " ** " + std::to_string(exponent));
      Fusion fusion;
      FusionGuard guard(&fusion);
      TensorView* x = makeConcreteTensor(kShape, dtype);
      fusion.addInput(x);
      TensorView* y = pow(x, exponent);
      fusion.addOutput(y);
      EXPECT_EQ(y->definition()->opName(), op);
      EXPECT_EQ(y->dtype(), dtype);
      schedulePointwise(fusion, y);
      const Tolerance tol = toleranceFor(dtype);
      sim::testing::expectKernelCorrect(fusion, {sample(dtype, Values::Positive, 17)}, tol.rtol, tol.atol);
    }
  }
  // An integer base keeps pow (integer pow), and so does a promoting exponent.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* i = makeConcreteTensor(kShape, DataType::Int);
  fusion.addInput(i);
  EXPECT_EQ(pow(i, constant(2.0, DataType::Int))->definition()->opName(), "pow");
  EXPECT_EQ(pow(i, 2.0)->definition()->opName(), "pow");
}

// A fusion of two `dtype` inputs and the outputs `build` makes of them (each
// of `dtype`), simulated against ATen exactly on
// x and y, then compiled by NVRTC.
using TwoInputOps = std::function<std::vector<TensorView*>(TensorView*, TensorView*)>;
void expectTwoInputOpsExact(DataType dtype, const TwoInputOps& build, const at::Tensor& x,
                            const at::Tensor& y, const std::string& name) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor(kShape, dtype);
  TensorView* b = makeConcreteTensor(kShape, dtype);
  fusion.addInput(a);
  fusion.addInput(b);
  for (TensorView* out : build(a, b)) {
    EXPECT_EQ(out->dtype(), dtype);
    fusion.addOutput(out);
  }
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  sim::testing::expectKernelCorrect(fusion, {x, y}, 0, 0);
  expectCompiles(fusion, name + "_" + dtypeName(dtype));
}

// Bitwise ops on integers (wide random bit patterns) and bool (the logical
// ops).
TEST(BitwiseOpKernels, SimulatedMatchATenAndCompile) {
  for (DataType dtype : {DataType::Int, DataType::Int32, DataType::Bool}) {
    SCOPED_TRACE(dtypeName(dtype));
    const auto options = at::TensorOptions().dtype(toAtenType(dtype));
    const auto bits = [&] {
      return dtype == DataType::Bool
                 ? at::rand(kShape).gt(0.5)
                 : at::randint(-(int64_t{1} << 30), int64_t{1} << 30, kShape, options);
    };
    at::Tensor x = bits(), y = bits();
    expectTwoInputOpsExact(
        dtype,
        [&](TensorView* a, TensorView* b) {
          return std::vector<TensorView*>{
              bitwiseAnd(a, b), bitwiseOr(a, b), bitwiseXor(a, b), bitwiseNot(a),
              bitwiseXor(bitwiseAnd(a, constant(12, dtype)), b)};
        },
        x, y, "bitwise");
  }
}

// Shifts by counts inside and outside [0, bits), and gcd/lcm with zeros and
// negatives (not the most negative value: ATen's own lcm traps on it), in
// each integer width.
TEST(IntegerOpKernels, ShiftsGcdLcmMatchATenAndCompile) {
  for (DataType dtype : {DataType::Int, DataType::Int32, DataType::Int16, DataType::Int8,
                         DataType::UInt8}) {
    SCOPED_TRACE(dtypeName(dtype));
    const auto options = at::TensorOptions().dtype(toAtenType(dtype));
    const bool is_unsigned = dtype == DataType::UInt8;
    at::Tensor x = at::randint(is_unsigned ? 0 : -100, 100, kShape, options);
    at::Tensor counts = at::randint(is_unsigned ? 0 : -3, 70, kShape, options);
    x.view(-1)[0] = 0;  // gcd(0, 0), lcm with 0
    counts.view(-1)[0] = 0;
    expectTwoInputOpsExact(
        dtype,
        [](TensorView* a, TensorView* b) {
          return std::vector<TensorView*>{bitwiseLeftShift(a, b), bitwiseRightShift(a, b),
                                          gcd(a, b), lcm(a, b)};
        },
        x, counts, "integer");
  }
}

TEST(IntegerOpKernels, NextafterSteps) {
  for (DataType dtype : {DataType::Float, DataType::Double}) {
    SCOPED_TRACE(dtypeName(dtype));
    const auto options = at::TensorOptions().dtype(toAtenType(dtype));
    at::Tensor x = at::randn(kShape, options);
    x.view(-1)[0] = 0.0;  // toward a negative: the smallest negative subnormal
    expectTwoInputOpsExact(
        dtype, [](TensorView* a, TensorView* b) { return std::vector<TensorView*>{nextafter(a, b)}; },
        x, at::randn(kShape, options), "nextafter");
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* h = makeConcreteTensor(kShape, DataType::Half);
  EXPECT_SMELT_ERROR(nextafter(h, h), "nextafter takes float or double");
  TensorView* f = makeConcreteTensor(kShape, DataType::Float);
  EXPECT_SMELT_ERROR(gcd(f, f), "gcd needs integer operands");
}

TEST(BitwiseOpKernels, FloatOperandsAreRefused) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor(kShape, DataType::Float);
  EXPECT_SMELT_ERROR(bitwiseAnd(a, a), "bitwise ops need integer or bool operands");
  EXPECT_SMELT_ERROR(bitwiseNot(a), "bitwise ops need integer or bool tensors");
}

TEST(BoolOperands, LogicalComparisonAndArithmeticOnBool) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* p = makeConcreteTensor(kShape, DataType::Bool);
  TensorView* q = makeConcreteTensor(kShape, DataType::Bool);
  fusion.addInput(p);
  fusion.addInput(q);
  for (TensorView* out : {logicalAnd(p, q), logicalOr(p, q), logicalNot(p), eq(p, q), lt(p, q),
                          add(p, q), mul(p, q), maximum(p, q), add(p, constant(1, DataType::Int))}) {
    fusion.addOutput(out);
  }
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  sim::testing::expectKernelCorrect(
      fusion, {sample(DataType::Bool, Values::Any, 1), sample(DataType::Bool, Values::Any, 2)});
  expectCompiles(fusion, "bool_ops");
}

// A comparison against a broadcast row and a scalar selects with where: the
// masking pattern of softmax and attention.
TEST(OpComposition, MaskFromBroadcastComparison) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor(kShape, DataType::Half);
  TensorView* limit = makeConcreteTensor({kShape[1]}, DataType::Float);
  fusion.addInput(x);
  fusion.addInput(limit);
  TensorView* row = broadcast(limit, {true, false});
  TensorView* keep = logicalAnd(le(x, row), ne(x, 0.0));
  TensorView* out = where(keep, sigmoid(x), constant(-1.0));
  fusion.addOutput(out);
  // Rows on blocks, columns on threads (the broadcast row is not merged).
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(out);
  inlineMost(&fusion);
  sim::testing::expectKernelCorrect(
      fusion, {sample(DataType::Half, Values::Whole, 3), sample(DataType::Float, Values::Whole, 4, {kShape[1]})},
      2e-3, 2e-3);
  expectCompiles(fusion, "mask");
}

// ---------------------------------------------------------------------------
// Casts
// ---------------------------------------------------------------------------

class CastKernel : public ::testing::TestWithParam<DataType> {};

// One input cast to all seven dtypes. Conversions are exact functions of the
// input (truncation toward zero, round to nearest even, x != 0), so the
// simulator must equal ATen bit for bit.
TEST_P(CastKernel, EveryTargetDtypeMatchesATenExactly) {
  const DataType from = GetParam();
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor(kShape, from);
  fusion.addInput(x);
  for (DataType to : kAllDtypes) fusion.addOutput(castOp(to, x));
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  at::Tensor input = sample(from, Values::Any, 5);
  if (isFloatingType(from)) {
    // Wide values with fractions (truncation), and zeros (bool).
    input = (input * 40).masked_fill(at::rand(kShape).lt(0.2), 0);
  }
  sim::testing::expectKernelCorrect(fusion, {input}, 0, 0);
  expectCompiles(fusion, "cast_from_" + dtypeName(from));
}

INSTANTIATE_TEST_SUITE_P(Ops, CastKernel, ::testing::ValuesIn(kAllDtypes),
                         [](const auto& info) { return dtypeName(info.param); });


// ---------------------------------------------------------------------------
// torch's special functions (codegen/special_math.h: one implementation the
// simulator runs and the kernels' prelude holds)
// ---------------------------------------------------------------------------

// ATen's double results of several are float-grade Cephes approximations
// (J0 at 5.4728349: -0.0161385456, truly -0.0161383737; airy_ai between
// -2.09 and -3 only to 2e-5, in float as in double: 0.1360524 at -2.1412505,
// truly 0.1360500), so double is held to float's tolerance; special_math.h's
// values are closer to the true ones (checked against mpmath while written).
constexpr Tolerance kAiryTolerance = {1e-4, 1e-5};
Tolerance specialTolerance(DataType dtype, UnaryOpType op = UnaryOpType::Neg) {
  if (op == UnaryOpType::AiryAi && (dtype == DataType::Double || dtype == DataType::Float)) {
    return kAiryTolerance;
  }
  return toleranceFor(dtype == DataType::Double ? DataType::Float : dtype);
}

struct SpecialUnaryCase {
  UnaryOpType op;
  Values values;
};
const SpecialUnaryCase kSpecialUnaryCases[] = {
    {UnaryOpType::I0, Values::Any},          {UnaryOpType::I0e, Values::Any},
    {UnaryOpType::I1, Values::Any},          {UnaryOpType::I1e, Values::Any},
    {UnaryOpType::Digamma, Values::Any},     {UnaryOpType::Erfinv, Values::UnitInterval},
    {UnaryOpType::Ndtri, Values::Probability}, {UnaryOpType::LogNdtr, Values::Any},
    {UnaryOpType::Erfcx, Values::Any},       {UnaryOpType::AiryAi, Values::Any},
    {UnaryOpType::BesselJ0, Values::Any},    {UnaryOpType::BesselJ1, Values::Any},
    {UnaryOpType::BesselY0, Values::Positive}, {UnaryOpType::BesselY1, Values::Positive},
    {UnaryOpType::ModifiedBesselK0, Values::Positive},
    {UnaryOpType::ModifiedBesselK1, Values::Positive},
    {UnaryOpType::ScaledModifiedBesselK0, Values::Positive},
    {UnaryOpType::ScaledModifiedBesselK1, Values::Positive},
    {UnaryOpType::SphericalBesselJ0, Values::Any},
};

struct SpecialBinaryCase {
  BinaryOpType op;
  Values lhs, rhs;
};
const SpecialBinaryCase kSpecialBinaryCases[] = {
    {BinaryOpType::Igamma, Values::Positive, Values::Positive},
    {BinaryOpType::Igammac, Values::Positive, Values::Positive},
    {BinaryOpType::Zeta, Values::AboveOne, Values::Positive},
    {BinaryOpType::ChebyshevPolynomialT, Values::Any, Values::Whole},
    {BinaryOpType::ChebyshevPolynomialU, Values::Any, Values::Whole},
    {BinaryOpType::ChebyshevPolynomialV, Values::Any, Values::Whole},
    {BinaryOpType::ChebyshevPolynomialW, Values::Any, Values::Whole},
    {BinaryOpType::ShiftedChebyshevPolynomialT, Values::Any, Values::Whole},
    {BinaryOpType::ShiftedChebyshevPolynomialU, Values::Any, Values::Whole},
    {BinaryOpType::ShiftedChebyshevPolynomialV, Values::Any, Values::Whole},
    {BinaryOpType::ShiftedChebyshevPolynomialW, Values::Any, Values::Whole},
    {BinaryOpType::HermitePolynomialH, Values::Any, Values::Whole},
    {BinaryOpType::HermitePolynomialHe, Values::Any, Values::Whole},
    {BinaryOpType::LaguerrePolynomialL, Values::Any, Values::Whole},
    {BinaryOpType::LegendrePolynomialP, Values::Any, Values::Whole},
};

class SpecialOpKernels : public ::testing::TestWithParam<DataType> {};

// Each unary special function on its own against ATen, then all of them in
// one kernel compiled by NVRTC (float, double, half, and int64 promoted to
// float, as torch).
TEST_P(SpecialOpKernels, UnarySimulatedMatchATenAndCompile) {
  const DataType dtype = GetParam();
  for (const SpecialUnaryCase& c : kSpecialUnaryCases) {
    SCOPED_TRACE(toString(c.op));
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor(kShape, dtype);
    fusion.addInput(x);
    TensorView* y = special(c.op, x);
    EXPECT_EQ(y->dtype(), isFloatingType(dtype) ? dtype : DataType::Float);
    fusion.addOutput(y);
    schedulePointwise(fusion, y);
    const Tolerance tol = specialTolerance(y->dtype(), c.op);
    sim::testing::expectKernelCorrect(fusion, {sample(dtype, c.values, 23)}, tol.rtol, tol.atol);
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor(kShape, dtype);
  fusion.addInput(x);
  for (const SpecialUnaryCase& c : kSpecialUnaryCases) fusion.addOutput(special(c.op, x));
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  expectCompiles(fusion, "special_unary_" + dtypeName(dtype));
}

// The binary ones (the polynomials' degrees an integer tensor where the
// values are floating, as torch's tests pass them), and polygamma of each
// order 0..4.
TEST_P(SpecialOpKernels, BinarySimulatedMatchATenAndCompile) {
  const DataType dtype = GetParam();
  const auto rhsType = [&](const SpecialBinaryCase& c) {
    return c.rhs == Values::Whole && isFloatingType(dtype) ? DataType::Int : dtype;
  };
  for (const SpecialBinaryCase& c : kSpecialBinaryCases) {
    SCOPED_TRACE(toString(c.op));
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor(kShape, dtype);
    TensorView* b = makeConcreteTensor(kShape, rhsType(c));
    fusion.addInput(a);
    fusion.addInput(b);
    TensorView* y = special(c.op, a, b);
    fusion.addOutput(y);
    schedulePointwise(fusion, y);
    const Tolerance tol = specialTolerance(y->dtype());
    sim::testing::expectKernelCorrect(
        fusion, {sample(dtype, c.lhs, 29), sample(rhsType(c), c.rhs, 31)}, tol.rtol, tol.atol);
  }
  for (int64_t n = 0; n <= 4; ++n) {
    SCOPED_TRACE("polygamma " + std::to_string(n));
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor(kShape, dtype);
    fusion.addInput(x);
    TensorView* y = special(BinaryOpType::Polygamma, constant(n, DataType::Int), x);
    fusion.addOutput(y);
    schedulePointwise(fusion, y);
    const Tolerance tol = specialTolerance(y->dtype());
    sim::testing::expectKernelCorrect(fusion, {sample(dtype, Values::Any, 37)}, tol.rtol, tol.atol);
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor(kShape, dtype);
  fusion.addInput(a);
  for (const SpecialBinaryCase& c : kSpecialBinaryCases) fusion.addOutput(special(c.op, a, constant(3.0)));
  fusion.addOutput(special(BinaryOpType::Polygamma, constant(2, DataType::Int), a));
  schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
  expectCompiles(fusion, "special_binary_" + dtypeName(dtype));
}

INSTANTIATE_TEST_SUITE_P(Ops, SpecialOpKernels,
                         ::testing::Values(DataType::Float, DataType::Double, DataType::Half,
                                           DataType::Int),
                         [](const auto& info) { return dtypeName(info.param); });

// torch's special values: poles, domain ends, infinities, NaN and the
// polynomials' negative degrees and +-1, in float and double. The
// polynomials take no NaN x: ATen's value there depends on the element's
// position (0 or NaN, its vectorized and scalar loops differ); smelt's is NaN.
TEST(SpecialOpKernels, SpecialValuesMatchATen) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 2.0, -2.0, -2.5, 0.5, 1e-30,
                                      30.0, -30.0, inf, -inf, std::nan("")};
  for (DataType dtype : {DataType::Float, DataType::Double}) {
    SCOPED_TRACE(dtypeName(dtype));
    const auto options = at::TensorOptions().dtype(toAtenType(dtype));
    const int64_t n = static_cast<int64_t>(values.size());
    at::Tensor x = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(toAtenType(dtype));
    at::Tensor lhs = x.repeat_interleave(n), rhs = x.repeat({n});
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({n * n}, dtype);
    TensorView* b = makeConcreteTensor({n * n}, dtype);
    TensorView* not_nan = makeConcreteTensor({n * n}, dtype);  // a, NaN made 0.25
    fusion.addInput(a);
    fusion.addInput(b);
    fusion.addInput(not_nan);
    for (const SpecialUnaryCase& c : kSpecialUnaryCases) fusion.addOutput(special(c.op, a));
    for (const SpecialBinaryCase& c : kSpecialBinaryCases) {
      const bool polynomial = toString(c.op).find("polynomial") != std::string::npos;
      fusion.addOutput(special(c.op, polynomial ? not_nan : a, b));
    }
    for (int64_t order = 0; order <= 4; ++order) {
      fusion.addOutput(special(BinaryOpType::Polygamma, constant(order, DataType::Int), a));
    }
    schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
    const Tolerance tol = kAiryTolerance;  // the loosest of the functions' (airy_ai at -2.5)
    sim::testing::expectKernelCorrect(
        fusion, {lhs.to(options), rhs.to(options), at::nan_to_num(lhs, 0.25).to(options)}, tol.rtol,
        tol.atol);
  }
}

// The prelude holds the special functions a kernel calls and what they
// need, nothing of them for a kernel that calls none.
TEST(SpecialOpKernels, PreludeHoldsOnlyTheFunctionsUsed) {
  const auto cudaOf = [](const std::function<TensorView*(TensorView*)>& build) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor(kShape, DataType::Float);
    fusion.addInput(x);
    fusion.addOutput(build(x));
    schedulePointwise(fusion, fusion.outputs()[0]->asTensor());
    GpuLower lower(&fusion);
    return generateCuda(lower.run(), "prelude_check");
  };
  const std::string plain = cudaOf([](TensorView* x) { return exp(x); });
  EXPECT_EQ(plain.find("namespace special"), std::string::npos);
  const std::string j0 = cudaOf([](TensorView* x) { return special(UnaryOpType::BesselJ0, x); });
  EXPECT_NE(j0.find("besselJY("), std::string::npos);
  EXPECT_NE(j0.find("smelt::special::bessel_j0("), std::string::npos);
  EXPECT_EQ(j0.find("zeta("), std::string::npos);
  EXPECT_EQ(j0.find("bessel_y0("), std::string::npos);
  const std::string pg = cudaOf(
      [](TensorView* x) { return special(BinaryOpType::Polygamma, constant(3, DataType::Int), x); });
  for (const char* needed : {"digamma(", "zeta(", "polygamma("}) {
    EXPECT_NE(pg.find(needed), std::string::npos) << needed;
  }
}

TEST(SpecialOpKernels, BadOperandsAreRefusedNamingTheOp) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor(kShape, DataType::Float);
  EXPECT_SMELT_ERROR(special(BinaryOpType::Polygamma, constant(-1, DataType::Int), x),
                     "polygamma: the order n must be a whole number >= 0");
  EXPECT_SMELT_ERROR(special(BinaryOpType::Polygamma, constant(1.5), x), "polygamma: the order n");
  EXPECT_SMELT_ERROR(special(UnaryOpType::Exp, x), "exp is not a special function");
  EXPECT_SMELT_ERROR(special(UnaryOpType::I0, nullptr), "i0: input is null");
  EXPECT_SMELT_ERROR(special(BinaryOpType::Zeta, x, nullptr), "zeta: an operand is null");
}

}  // namespace
}  // namespace smelt
