#include "fusion/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "fusion/error.h"
#include "fusion/ops_axes.h"
#include "fusion/symbols.h"

namespace smelt {

namespace op_axes {

// The consumer-side copy of a producer's axis for an elementwise op: an
// expanded broadcast becomes a real axis of its expanded extent.
IterDomain* elementwiseAxis(Fusion* f, const IterDomain* id) {
  if (id->hasExpandedExtent()) return f->newIterDomain(id->expandedExtent(), IterType::Iteration);
  return f->newIterDomain(id->extent(), id->isBroadcast() ? IterType::Broadcast : IterType::Iteration);
}

IntExpr viewExtent(const IterDomain* id) {
  return id->isPlainBroadcast() ? IntExpr(1) : id->loopExtent();
}

}  // namespace op_axes

using op_axes::elementwiseAxis;

namespace {

std::string describe(const Val* v) {
  const TensorView* tv = v->asTensor();
  return tv ? tv->name() : v->toString();
}

// Output axes of an elementwise op over `operands` (tensors and scalars).
// `skip_dim` (if >= 0) is not checked and gets no axis (cat's joined one).
std::vector<IterDomain*> elementwiseDomain(const std::string& op, const std::vector<Val*>& operands,
                                           int64_t skip_dim = -1) {
  Fusion* f = Fusion::current();
  // Rank-0 tensors (full reductions) combine with any rank, like scalars.
  const TensorView* first = nullptr;
  for (Val* v : operands) {
    SMELT_CHECK(v != nullptr, op, ": an operand is null");
    SMELT_CHECK(v->fusion() == f, op, ": operand ", describe(v),
                " belongs to another fusion than the active one");
    const TensorView* tv = v->asTensor();
    if (tv == nullptr || tv->logicalNoReductions().empty()) continue;
    if (first == nullptr) {
      first = tv;
      continue;
    }
    SMELT_CHECK(tv->logicalNoReductions().size() == first->logicalNoReductions().size(), op,
                ": ", first->name(), " has rank ", first->logicalNoReductions().size(), " but ",
                tv->name(), " has rank ", tv->logicalNoReductions().size());
  }
  bool any_tensor = std::any_of(operands.begin(), operands.end(),
                                [](Val* v) { return v->asTensor() != nullptr; });
  SMELT_CHECK(any_tensor, op, ": needs at least one tensor operand");
  if (first == nullptr) return {};
  size_t rank = first->logicalNoReductions().size();
  std::vector<IterDomain*> out;
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) == skip_dim) continue;
    const IterDomain* chosen = nullptr;
    const TensorView* chosen_tv = nullptr;
    for (Val* v : operands) {
      const TensorView* tv = v->asTensor();
      if (tv == nullptr || tv->logicalNoReductions().empty()) continue;
      const IterDomain* id = tv->logicalNoReductions()[d];
      if (chosen == nullptr || chosen->isPlainBroadcast()) {
        chosen = id;
        chosen_tv = tv;
        continue;
      }
      if (id->isPlainBroadcast()) continue;
      auto a = chosen->loopExtent().constant();
      auto b = id->loopExtent().constant();
      SMELT_CHECK(!a || !b || *a == *b, op, ": dimension ", d, " of ", chosen_tv->name(),
                  " (extent ", *a, ") does not match dimension ", d, " of ", tv->name(),
                  " (extent ", *b, ")");
    }
    out.push_back(elementwiseAxis(f, chosen));
  }
  return out;
}

TensorView* unaryOp(UnaryOpType op, TensorView* in, DataType out_dtype) {
  SMELT_CHECK(in != nullptr, toString(op), ": input is null");
  Fusion* f = Fusion::current();
  TensorView* out = f->newTensor(out_dtype, elementwiseDomain(toString(op), {in}));
  f->newExpr<UnaryOp>(op, out, in);
  return out;
}

TensorView* floatingUnary(UnaryOpType op, TensorView* in) {
  SMELT_CHECK(in != nullptr, toString(op), ": input is null");
  return unaryOp(op, in, isFloatingType(in->dtype()) ? in->dtype() : DataType::Float);
}

// floor/ceil/round/trunc: integers are already whole (returned as they are,
// as torch does); bool has no rounding in torch.
TensorView* roundingUnary(UnaryOpType op, TensorView* in) {
  SMELT_CHECK(in != nullptr, toString(op), ": input is null");
  SMELT_CHECK(in->dtype() != DataType::Bool, toString(op), ": tensor ", in->name(),
              " is bool; cast it to a numeric type first");
  return unaryOp(op, in, in->dtype());
}

TensorView* reduction(ReductionOpType op, TensorView* in, const std::vector<int64_t>& axes) {
  std::string name = toString(op);
  SMELT_CHECK(in != nullptr, name, ": input is null");
  SMELT_CHECK(!axes.empty(), name, ": tensor ", in->name(), " needs at least one axis to reduce");
  int64_t rank = static_cast<int64_t>(in->logicalNoReductions().size());
  std::set<int64_t> reduced;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    SMELT_CHECK(n >= 0 && n < rank, name, ": axis ", a, " is out of range for tensor ",
                in->name(), " of rank ", rank);
    SMELT_CHECK(reduced.insert(n).second, name, ": axis ", a, " of tensor ", in->name(),
                " is listed twice");
  }
  // Sums and products of Half/BFloat16 accumulate in Float and round once at
  // the end, as torch's do: an accumulator of the 16-bit type would round at
  // every step (products of 512 factors near 1 ended 15 half ulps off). The
  // reduction's dtype types its accumulator, so the input is widened and
  // the result cast back.
  const bool widen_to_float = op != ReductionOpType::Max && isReducedPrecision(in->dtype());
  TensorView* operand = widen_to_float ? castOp(DataType::Float, in) : in;
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> in_axes = operand->logicalNoReductions();
  std::vector<IterDomain*> out_axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced.count(d)) {
      out_axes.push_back(f->newIterDomain(in_axes[d]->loopExtent(), IterType::Reduction));
    } else {
      out_axes.push_back(elementwiseAxis(f, in_axes[d]));
    }
  }
  // As torch.sum and torch.prod: bool and integer inputs accumulate and return int64.
  const bool widen_to_int = op != ReductionOpType::Max && !isFloatingType(in->dtype());
  TensorView* out = f->newTensor(widen_to_int ? DataType::Int : operand->dtype(), std::move(out_axes));
  f->newExpr<ReductionOp>(op, out, operand);
  return widen_to_float ? castOp(in->dtype(), out) : out;
}

}  // namespace

TensorView* makeContigTensor(int64_t ndims, DataType dtype) {
  SMELT_CHECK(ndims >= 0, "makeContigTensor: rank ", ndims, " is negative");
  Fusion* f = Fusion::current();
  // The tensor's number names its size symbols, so create it first.
  TensorView* tv = f->newTensor(dtype, {}, MemoryType::Global);
  std::vector<IterDomain*> axes;
  for (int64_t d = 0; d < ndims; ++d) {
    axes.push_back(f->newIterDomain(
        IntExpr::symbol(sizeSymbol(tv, d)),
        IterType::Iteration));
  }
  tv->setLogicalDomain(std::move(axes));
  return tv;
}

TensorView* makeConcreteTensor(const std::vector<int64_t>& shape, DataType dtype) {
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> axes;
  for (size_t d = 0; d < shape.size(); ++d) {
    SMELT_CHECK(shape[d] > 0, "makeConcreteTensor: dimension ", d, " has extent ", shape[d],
                "; extents must be positive");
    axes.push_back(f->newIterDomain(shape[d], IterType::Iteration));
  }
  return f->newTensor(dtype, std::move(axes), MemoryType::Global);
}

Scalar* constant(double value, DataType dtype) { return Fusion::current()->newConstant(value, dtype); }
Scalar* symbolicScalar(DataType dtype) { return Fusion::current()->newSymbolicScalar(dtype); }

TensorView* full(const std::vector<IntExpr>& shape, Val* fill_value, DataType dtype) {
  SMELT_CHECK(fill_value != nullptr && fill_value->asTensor() == nullptr,
              "full: the fill value must be a scalar");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> axes;
  for (size_t d = 0; d < shape.size(); ++d) {
    auto c = shape[d].constant();
    SMELT_CHECK(!c || *c > 0, "full: dimension ", d, " has extent ", shape[d],
                "; extents must be positive");
    axes.push_back(f->newIterDomain(shape[d], IterType::Iteration));
  }
  TensorView* out = f->newTensor(dtype, std::move(axes));
  f->newExpr<FullOp>(out, fill_value);
  return out;
}

TensorView* full(const std::vector<IntExpr>& shape, double fill_value, DataType dtype) {
  return full(shape, constant(fill_value, dtype), dtype);
}

TensorView* set(TensorView* in) {
  SMELT_CHECK(in != nullptr, "set: input is null");
  Fusion* f = Fusion::current();
  TensorView* out = f->newTensor(in->dtype(), elementwiseDomain("set", {in}));
  f->newExpr<LoadStoreOp>(out, in);
  return out;
}

TensorView* neg(TensorView* in) {
  SMELT_CHECK(in != nullptr, "neg: input is null");
  SMELT_CHECK(in->dtype() != DataType::Bool, "neg: tensor ", in->name(), " is bool");
  return unaryOp(UnaryOpType::Neg, in, in->dtype());
}
TensorView* exp(TensorView* in) { return floatingUnary(UnaryOpType::Exp, in); }
TensorView* tanh(TensorView* in) { return floatingUnary(UnaryOpType::Tanh, in); }
TensorView* abs(TensorView* in) {
  SMELT_CHECK(in != nullptr, "abs: input is null");
  SMELT_CHECK(in->dtype() != DataType::Bool, "abs: tensor ", in->name(), " is bool");
  return unaryOp(UnaryOpType::Abs, in, in->dtype());
}
TensorView* relu(TensorView* in) {
  SMELT_CHECK(in != nullptr, "relu: input is null");
  // As torch: max(x, 0) of a bool is not defined.
  SMELT_CHECK(in->dtype() != DataType::Bool, "relu: tensor ", in->name(), " is bool");
  return unaryOp(UnaryOpType::Relu, in, in->dtype());
}
TensorView* castOp(DataType dtype, TensorView* in) {
  SMELT_CHECK(in != nullptr, "cast: input is null");
  return unaryOp(UnaryOpType::Cast, in, dtype);
}
TensorView* sqrt(TensorView* in) { return floatingUnary(UnaryOpType::Sqrt, in); }
TensorView* rsqrt(TensorView* in) { return floatingUnary(UnaryOpType::Rsqrt, in); }
TensorView* log(TensorView* in) { return floatingUnary(UnaryOpType::Log, in); }
TensorView* log2(TensorView* in) { return floatingUnary(UnaryOpType::Log2, in); }
TensorView* log1p(TensorView* in) { return floatingUnary(UnaryOpType::Log1p, in); }
TensorView* exp2(TensorView* in) { return floatingUnary(UnaryOpType::Exp2, in); }
TensorView* expm1(TensorView* in) { return floatingUnary(UnaryOpType::Expm1, in); }
TensorView* sigmoid(TensorView* in) { return floatingUnary(UnaryOpType::Sigmoid, in); }
TensorView* erf(TensorView* in) { return floatingUnary(UnaryOpType::Erf, in); }
TensorView* reciprocal(TensorView* in) { return floatingUnary(UnaryOpType::Reciprocal, in); }
TensorView* sin(TensorView* in) { return floatingUnary(UnaryOpType::Sin, in); }
TensorView* cos(TensorView* in) { return floatingUnary(UnaryOpType::Cos, in); }
TensorView* tan(TensorView* in) { return floatingUnary(UnaryOpType::Tan, in); }
TensorView* asin(TensorView* in) { return floatingUnary(UnaryOpType::Asin, in); }
TensorView* acos(TensorView* in) { return floatingUnary(UnaryOpType::Acos, in); }
TensorView* atan(TensorView* in) { return floatingUnary(UnaryOpType::Atan, in); }
TensorView* sinh(TensorView* in) { return floatingUnary(UnaryOpType::Sinh, in); }
TensorView* cosh(TensorView* in) { return floatingUnary(UnaryOpType::Cosh, in); }
TensorView* asinh(TensorView* in) { return floatingUnary(UnaryOpType::Asinh, in); }
TensorView* acosh(TensorView* in) { return floatingUnary(UnaryOpType::Acosh, in); }
TensorView* atanh(TensorView* in) { return floatingUnary(UnaryOpType::Atanh, in); }
TensorView* log10(TensorView* in) { return floatingUnary(UnaryOpType::Log10, in); }
TensorView* erfc(TensorView* in) { return floatingUnary(UnaryOpType::Erfc, in); }
TensorView* lgamma(TensorView* in) { return floatingUnary(UnaryOpType::Lgamma, in); }
TensorView* floor(TensorView* in) { return roundingUnary(UnaryOpType::Floor, in); }
TensorView* ceil(TensorView* in) { return roundingUnary(UnaryOpType::Ceil, in); }
TensorView* round(TensorView* in) { return roundingUnary(UnaryOpType::Round, in); }
TensorView* trunc(TensorView* in) { return roundingUnary(UnaryOpType::Trunc, in); }
TensorView* logicalNot(TensorView* in) {
  SMELT_CHECK(in != nullptr, "logical_not: input is null");
  return unaryOp(UnaryOpType::LogicalNot, in, DataType::Bool);
}
TensorView* signbit(TensorView* in) {
  SMELT_CHECK(in != nullptr, "signbit: input is null");
  return unaryOp(UnaryOpType::Signbit, in, DataType::Bool);
}
TensorView* bitwiseNot(TensorView* in) {
  SMELT_CHECK(in != nullptr, "bitwise_not: input is null");
  if (in->dtype() == DataType::Bool) return logicalNot(in);
  SMELT_CHECK(isIntegralType(in->dtype()), "bitwise_not: tensor ", in->name(), " is ",
              in->dtype(), "; bitwise ops need integer or bool tensors");
  return unaryOp(UnaryOpType::BitwiseNot, in, in->dtype());
}

namespace {
TensorView* binaryOpWithType(BinaryOpType op, Val* lhs, Val* rhs, DataType dtype,
                             std::vector<IterDomain*> axes);
}  // namespace

TensorView* binaryOp(BinaryOpType op, Val* lhs, Val* rhs) {
  std::string name = toString(op);
  SMELT_CHECK(lhs != nullptr && rhs != nullptr, name, ": an operand is null");
  std::vector<IterDomain*> axes = elementwiseDomain(name, {lhs, rhs});
  DataType dtype = promoteOperandTypes({lhs, rhs});
  bool arithmetic_only = op == BinaryOpType::Sub || op == BinaryOpType::Pow ||
                         op == BinaryOpType::Remainder || op == BinaryOpType::Fmod;
  SMELT_CHECK(!arithmetic_only || dtype != DataType::Bool, name, ": operands ", describe(lhs),
              " and ", describe(rhs), " are both bool; ", name,
              " needs numbers (cast an operand first)");
  // Integers divide in integers (truncating, as nvFuser's div and C); bools
  // have no integer division and divide as floats. truediv() is torch's `/`.
  if (op == BinaryOpType::Div && dtype == DataType::Bool) dtype = DataType::Float;
  if (isComparison(op) || isLogical(op)) dtype = DataType::Bool;
  if (isBitwise(op)) {
    SMELT_CHECK(isIntegralType(dtype) || dtype == DataType::Bool, name, ": operands ",
                describe(lhs), " and ", describe(rhs), " promote to ", dtype,
                "; bitwise ops need integer or bool operands");
    // On bools the bitwise ops are the logical ones (xor: differ).
    if (dtype == DataType::Bool) {
      op = op == BinaryOpType::BitwiseAnd ? BinaryOpType::LogicalAnd
         : op == BinaryOpType::BitwiseOr  ? BinaryOpType::LogicalOr
                                          : BinaryOpType::Ne;
    }
  }
  SMELT_CHECK(op != BinaryOpType::RandomUniform, name, ": use randomUniform()");
  return binaryOpWithType(op, lhs, rhs, dtype, std::move(axes));
}

namespace {
TensorView* binaryOpWithType(BinaryOpType op, Val* lhs, Val* rhs, DataType dtype,
                             std::vector<IterDomain*> axes) {
  Fusion* f = Fusion::current();
  TensorView* out = f->newTensor(dtype, std::move(axes));
  f->newExpr<BinaryOp>(op, out, lhs, rhs);
  return out;
}
}  // namespace

TensorView* add(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Add, lhs, rhs); }
TensorView* sub(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Sub, lhs, rhs); }
TensorView* mul(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Mul, lhs, rhs); }
TensorView* div(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Div, lhs, rhs); }
namespace {
// A floating result, as torch: integral and bool operands compute in float.
// `name`: the op as errors name it (default: the op's own name).
TensorView* floatingBinary(BinaryOpType op, Val* lhs, Val* rhs, std::string name = "") {
  if (name.empty()) name = toString(op);
  SMELT_CHECK(lhs != nullptr && rhs != nullptr, name, ": an operand is null");
  std::vector<IterDomain*> axes = elementwiseDomain(name, {lhs, rhs});
  DataType dtype = promoteOperandTypes({lhs, rhs});
  if (!isFloatingType(dtype)) dtype = DataType::Float;  // torch's default float type
  return binaryOpWithType(op, lhs, rhs, dtype, std::move(axes));
}
}  // namespace
TensorView* truediv(Val* lhs, Val* rhs) { return floatingBinary(BinaryOpType::Div, lhs, rhs, "truediv"); }
TensorView* maximum(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Maximum, lhs, rhs); }
TensorView* minimum(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Minimum, lhs, rhs); }
// A floating base to a constant exponent that ATen's pow computes without
// pow (its tensor-scalar kernels): x * x, x * x * x, sqrt, rsqrt, 1 / x and
// 1 / (x * x), the values ATen gives, where powf takes about a hundred
// instructions (RMS norm's x.pow(2)).
TensorView* pow(Val* lhs, Val* rhs) {
  TensorView* base = lhs != nullptr ? lhs->asTensor() : nullptr;
  const auto* exponent = dynamic_cast<const Scalar*>(rhs);
  if (base == nullptr || exponent == nullptr || !exponent->isConstant() ||
      !isFloatingType(base->dtype()) || promoteOperandTypes({lhs, rhs}) != base->dtype()) {
    return binaryOp(BinaryOpType::Pow, lhs, rhs);
  }
  const double e = exponent->value();
  if (e == 2.0) return mul(base, base);
  if (e == 3.0) return mul(mul(base, base), base);
  if (e == 0.5) return sqrt(base);
  if (e == -0.5) return rsqrt(base);
  if (e == -1.0) return reciprocal(base);
  if (e == -2.0) return reciprocal(mul(base, base));
  return binaryOp(BinaryOpType::Pow, lhs, rhs);
}
TensorView* remainder(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Remainder, lhs, rhs); }
TensorView* fmod(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Fmod, lhs, rhs); }
TensorView* atan2(Val* lhs, Val* rhs) { return floatingBinary(BinaryOpType::Atan2, lhs, rhs); }
TensorView* hypot(Val* lhs, Val* rhs) { return floatingBinary(BinaryOpType::Hypot, lhs, rhs); }
TensorView* copysign(Val* lhs, Val* rhs) { return floatingBinary(BinaryOpType::Copysign, lhs, rhs); }
TensorView* special(UnaryOpType op, TensorView* in) {
  SMELT_CHECK(isSpecial(op), toString(op), " is not a special function");
  return floatingUnary(op, in);
}
TensorView* special(BinaryOpType op, Val* lhs, Val* rhs) {
  SMELT_CHECK(isSpecial(op), toString(op), " is not a special function");
  if (op == BinaryOpType::Polygamma && lhs != nullptr && lhs->asTensor() == nullptr) {
    const auto* n = static_cast<const Scalar*>(lhs);
    SMELT_CHECK(!n->isConstant() || (n->value() >= 0 && n->value() == static_cast<int64_t>(n->value())),
                "polygamma: the order n must be a whole number >= 0, not ", n->toString());
  }
  return floatingBinary(op, lhs, rhs);
}
TensorView* nextafter(Val* lhs, Val* rhs) {
  SMELT_CHECK(lhs != nullptr && rhs != nullptr, "nextafter: an operand is null");
  const DataType dtype = promoteOperandTypes({lhs, rhs});
  SMELT_CHECK(dtype == DataType::Float || dtype == DataType::Double, "nextafter: operands ",
              describe(lhs), " and ", describe(rhs), " promote to ", dtype,
              "; nextafter takes float or double (half's steps are its own)");
  return binaryOp(BinaryOpType::Nextafter, lhs, rhs);
}
namespace {
TensorView* integerBinary(BinaryOpType op, Val* lhs, Val* rhs) {
  const std::string name = toString(op);
  SMELT_CHECK(lhs != nullptr && rhs != nullptr, name, ": an operand is null");
  const DataType dtype = promoteOperandTypes({lhs, rhs});
  SMELT_CHECK(isIntegralType(dtype), name, ": operands ", describe(lhs), " and ", describe(rhs),
              " promote to ", dtype, "; ", name, " needs integer operands");
  return binaryOp(op, lhs, rhs);
}
}  // namespace
TensorView* bitwiseLeftShift(Val* lhs, Val* rhs) { return integerBinary(BinaryOpType::ShiftLeft, lhs, rhs); }
TensorView* bitwiseRightShift(Val* lhs, Val* rhs) { return integerBinary(BinaryOpType::ShiftRight, lhs, rhs); }
TensorView* gcd(Val* lhs, Val* rhs) { return integerBinary(BinaryOpType::Gcd, lhs, rhs); }
TensorView* lcm(Val* lhs, Val* rhs) { return integerBinary(BinaryOpType::Lcm, lhs, rhs); }
TensorView* eq(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Eq, lhs, rhs); }
TensorView* ne(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Ne, lhs, rhs); }
TensorView* lt(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Lt, lhs, rhs); }
TensorView* le(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Le, lhs, rhs); }
TensorView* gt(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Gt, lhs, rhs); }
TensorView* ge(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::Ge, lhs, rhs); }
TensorView* logicalAnd(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::LogicalAnd, lhs, rhs); }
TensorView* logicalOr(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::LogicalOr, lhs, rhs); }
TensorView* bitwiseAnd(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::BitwiseAnd, lhs, rhs); }
TensorView* bitwiseOr(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::BitwiseOr, lhs, rhs); }
TensorView* bitwiseXor(Val* lhs, Val* rhs) { return binaryOp(BinaryOpType::BitwiseXor, lhs, rhs); }

TensorView* randomUniform(Val* seed, TensorView* counter, DataType dtype) {
  SMELT_CHECK(seed != nullptr && counter != nullptr, "random_uniform: an operand is null");
  SMELT_CHECK(seed->asTensor() == nullptr && isIntegralType(seed->dtype()),
              "random_uniform: the seed must be an integer scalar, not ", describe(seed), " (",
              seed->dtype(), ")");
  SMELT_CHECK(isIntegralType(counter->dtype()), "random_uniform: the counter ", counter->name(),
              " must be an integer tensor, not ", counter->dtype());
  SMELT_CHECK(dtype == DataType::Float || dtype == DataType::Double,
              "random_uniform: draws Float or Double, not ", dtype);
  return binaryOpWithType(BinaryOpType::RandomUniform, seed, counter, dtype,
                          elementwiseDomain("random_uniform", {seed, counter}));
}

namespace {
Scalar* scalarLike(TensorView* tv, double value) {
  SMELT_CHECK(tv != nullptr, "binary op: tensor operand is null");
  DataType dtype = isFloatingType(tv->dtype()) ? tv->dtype() : DataType::Float;
  // A whole number keeps an integral tensor integral (the C++ API cannot tell 2 from 2.0).
  bool whole = std::isfinite(value) && std::trunc(value) == value && std::fabs(value) < 0x1p62;
  if (isIntegralType(tv->dtype()) && whole) {
    dtype = tv->dtype();
  }
  return constant(value, dtype);
}
}  // namespace

TensorView* add(TensorView* lhs, double rhs) { return add(lhs, scalarLike(lhs, rhs)); }
TensorView* sub(TensorView* lhs, double rhs) { return sub(lhs, scalarLike(lhs, rhs)); }
TensorView* mul(TensorView* lhs, double rhs) { return mul(lhs, scalarLike(lhs, rhs)); }
TensorView* div(TensorView* lhs, double rhs) { return div(lhs, scalarLike(lhs, rhs)); }
TensorView* truediv(TensorView* lhs, double rhs) { return truediv(lhs, scalarLike(lhs, rhs)); }
TensorView* pow(TensorView* lhs, double rhs) { return pow(lhs, scalarLike(lhs, rhs)); }
TensorView* remainder(TensorView* lhs, double rhs) { return remainder(lhs, scalarLike(lhs, rhs)); }
TensorView* fmod(TensorView* lhs, double rhs) { return fmod(lhs, scalarLike(lhs, rhs)); }
TensorView* eq(TensorView* lhs, double rhs) { return eq(lhs, scalarLike(lhs, rhs)); }
TensorView* ne(TensorView* lhs, double rhs) { return ne(lhs, scalarLike(lhs, rhs)); }
TensorView* lt(TensorView* lhs, double rhs) { return lt(lhs, scalarLike(lhs, rhs)); }
TensorView* le(TensorView* lhs, double rhs) { return le(lhs, scalarLike(lhs, rhs)); }
TensorView* gt(TensorView* lhs, double rhs) { return gt(lhs, scalarLike(lhs, rhs)); }
TensorView* ge(TensorView* lhs, double rhs) { return ge(lhs, scalarLike(lhs, rhs)); }

TensorView* where(Val* condition, Val* if_true, Val* if_false) {
  SMELT_CHECK(condition != nullptr && if_true != nullptr && if_false != nullptr,
              "where: an operand is null");
  SMELT_CHECK(condition->dtype() == DataType::Bool, "where: condition ", describe(condition),
              " must be bool, not ", condition->dtype());
  std::vector<IterDomain*> axes = elementwiseDomain("where", {condition, if_true, if_false});
  DataType dtype = promoteOperandTypes({if_true, if_false});
  Fusion* f = Fusion::current();
  TensorView* out = f->newTensor(dtype, std::move(axes));
  f->newExpr<WhereOp>(out, condition, if_true, if_false);
  return out;
}

TensorView* sum(TensorView* in, const std::vector<int64_t>& axes) {
  return reduction(ReductionOpType::Sum, in, axes);
}
TensorView* max(TensorView* in, const std::vector<int64_t>& axes) {
  return reduction(ReductionOpType::Max, in, axes);
}
TensorView* prod(TensorView* in, const std::vector<int64_t>& axes) {
  return reduction(ReductionOpType::Prod, in, axes);
}

namespace {
// Checks a random op's arguments; returns the type it draws in (Double
// draws 53 bits, every other floating type draws Float and rounds).
DataType randomDrawType(const char* op, Val* a, Val* b, Val* seed, Val* offset, DataType dtype) {
  for (Val* v : {a, b, seed, offset}) {
    SMELT_CHECK(v != nullptr && v->asTensor() == nullptr, op, ": its parameters must be scalars");
  }
  SMELT_CHECK(isIntegralType(seed->dtype()) && isIntegralType(offset->dtype()), op,
              ": the seed and the offset must be integers, not ", seed->dtype(), " and ",
              offset->dtype());
  SMELT_CHECK(isFloatingType(dtype), op, ": draws a floating type, not ", dtype);
  return dtype == DataType::Double ? DataType::Double : DataType::Float;
}

TensorView* castTo(TensorView* t, DataType dtype) { return t->dtype() == dtype ? t : castOp(dtype, t); }
}  // namespace

TensorView* uniform(const std::vector<IntExpr>& shape, Val* low, Val* high, Val* seed,
                    Val* offset, DataType dtype) {
  const DataType draw = randomDrawType("uniform", low, high, seed, offset, dtype);
  TensorView* u = randomUniform(seed, iota(shape, offset, constant(1, DataType::Int)), draw);
  // low + u * (high - low), written u * high + (1 - u) * low: the bounds are
  // scalars and an op needs a tensor operand.
  TensorView* r = add(mul(u, high), mul(sub(constant(1.0, draw), u), low));
  return castTo(r, dtype);
}

TensorView* normal(const std::vector<IntExpr>& shape, Val* mean, Val* std, Val* seed, Val* offset,
                   DataType dtype) {
  const DataType draw = randomDrawType("normal", mean, std, seed, offset, dtype);
  // Box-Muller from counters 2i and 2i + 1 of element i.
  TensorView* even = mul(iota(shape, offset, constant(1, DataType::Int)), 2);
  TensorView* u1 = randomUniform(seed, even, draw);
  TensorView* u2 = randomUniform(seed, add(even, 1), draw);
  TensorView* radius = sqrt(mul(log(sub(constant(1.0, draw), u1)), -2.0));  // 1 - u1 is in (0, 1]
  TensorView* z = mul(radius, cos(mul(u2, 2.0 * M_PI)));
  return castTo(add(mul(z, std), mean), dtype);
}

TensorView* broadcast(TensorView* in, const std::vector<bool>& is_new_axis) {
  SMELT_CHECK(in != nullptr, "broadcast: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  size_t kept = std::count(is_new_axis.begin(), is_new_axis.end(), false);
  SMELT_CHECK(kept == in_axes.size(), "broadcast: tensor ", in->name(), " has rank ",
              in_axes.size(), " but the flags keep ", kept, " axes");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> out_axes;
  size_t next = 0;
  for (bool is_new : is_new_axis) {
    out_axes.push_back(is_new ? f->newIterDomain(1, IterType::Broadcast)
                              : elementwiseAxis(f, in_axes[next++]));
  }
  TensorView* out = f->newTensor(in->dtype(), std::move(out_axes));
  f->newExpr<BroadcastOp>(out, in, is_new_axis);
  return out;
}

TensorView* expand(TensorView* in, const std::vector<IntExpr>& shape) {
  SMELT_CHECK(in != nullptr, "expand: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  SMELT_CHECK(shape.size() == in_axes.size(), "expand: tensor ", in->name(), " has rank ",
              in_axes.size(), " but the shape has ", shape.size(), " entries");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> out_axes;
  for (size_t d = 0; d < shape.size(); ++d) {
    const IterDomain* id = in_axes[d];
    bool keep = shape[d].constant() == -1;
    if (id->isBroadcast() && !keep) {
      auto c = shape[d].constant();
      SMELT_CHECK(!c || *c > 0, "expand: dimension ", d, " of ", in->name(),
                  " cannot expand to extent ", shape[d]);
      IterDomain* out = f->newIterDomain(1, IterType::Broadcast);
      out->setExpandedExtent(shape[d]);
      out_axes.push_back(out);
      continue;
    }
    // A symbolic extent may be given as the constant it will have at run time.
    bool compatible = keep || shape[d].sameAs(id->loopExtent()) ||
                      (!id->loopExtent().isConstant() && shape[d].isConstant());
    SMELT_CHECK(compatible, "expand: dimension ", d, " of ",
                in->name(), " has extent ", id->loopExtent(), " and is not a broadcast, so it cannot expand to ",
                shape[d]);
    IterDomain* out = f->newIterDomain(id->extent(), id->iterType());
    if (id->hasExpandedExtent()) out->setExpandedExtent(id->expandedExtent());
    out_axes.push_back(out);
  }
  TensorView* out = f->newTensor(in->dtype(), std::move(out_axes));
  f->newExpr<ExpandOp>(out, in);
  return out;
}

TensorView* pad(TensorView* in, const std::vector<int64_t>& widths, double value) {
  SMELT_CHECK(in != nullptr, "pad: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  size_t rank = in_axes.size();
  SMELT_CHECK(widths.size() % 2 == 0 && widths.size() / 2 <= rank, "pad: tensor ", in->name(),
              " of rank ", rank, " needs an even number of widths, at most ", 2 * rank,
              ", got ", widths.size());
  std::vector<std::pair<int64_t, int64_t>> per_axis(rank, {0, 0});
  for (size_t k = 0; k < widths.size() / 2; ++k) {
    per_axis[rank - 1 - k] = {widths[2 * k], widths[2 * k + 1]};
  }
  return padAxes(in, per_axis, value);
}

TensorView* padAxes(TensorView* in, const std::vector<std::pair<int64_t, int64_t>>& per_axis,
                    double value) {
  SMELT_CHECK(in != nullptr, "pad: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  const size_t rank = in_axes.size();
  SMELT_CHECK(per_axis.size() == rank, "pad: tensor ", in->name(), " has rank ", rank, ", ",
              per_axis.size(), " pairs of widths were given");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> out_axes;
  for (size_t d = 0; d < rank; ++d) {
    const auto [before, after] = per_axis[d];
    if (before == 0 && after == 0) {
      out_axes.push_back(elementwiseAxis(f, in_axes[d]));
      continue;
    }
    const IntExpr extent = in_axes[d]->loopExtent();
    const std::optional<int64_t> constant_extent = extent.constant();
    // A crop of a symbolic extent could leave nothing, which only the run
    // time would see.
    SMELT_CHECK(constant_extent || (before >= 0 && after >= 0), "pad: dimension ", d, " of ",
                in->name(), " has the symbolic extent ", extent, " and cannot be cropped (widths {",
                before, ", ", after, "})");
    SMELT_CHECK(!constant_extent || *constant_extent + before + after >= 1, "pad: dimension ", d,
                " of ", in->name(), " (extent ", extent, ") with widths {", before, ", ", after,
                "} leaves no element");
    out_axes.push_back(windowAxis(f, extent + before + after));
  }
  TensorView* out = f->newTensor(in->dtype(), std::move(out_axes));
  f->newExpr<PadOp>(out, in, per_axis, constant(value, in->dtype()));
  return out;
}

IterDomain* windowAxis(Fusion* fusion, const IntExpr& extent) {
  const bool one = extent.constant() == std::optional<int64_t>(1);
  return fusion->newIterDomain(extent, one ? IterType::Broadcast : IterType::Iteration);
}

TensorView* slice(TensorView* in, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& stops) {
  SMELT_CHECK(in != nullptr, "slice: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  const size_t rank = in_axes.size();
  SMELT_CHECK(starts.size() == rank && stops.size() == rank, "slice: tensor ", in->name(),
              " has rank ", rank, " but ", starts.size(), " starts and ", stops.size(),
              " stops were given");
  std::vector<std::pair<int64_t, int64_t>> per_axis(rank, {0, 0});
  for (size_t d = 0; d < rank; ++d) {
    const std::optional<int64_t> extent = in_axes[d]->loopExtent().constant();
    if (!extent) {
      // A symbolic extent may only be kept whole: [0, end).
      SMELT_CHECK(starts[d] == 0 && stops[d] == std::numeric_limits<int64_t>::max(), "slice: dimension ",
                  d, " of ", in->name(), " has the symbolic extent ", in_axes[d]->loopExtent(),
                  "; only its whole range can be taken, not [", starts[d], ", ", stops[d], ")");
      continue;
    }
    // Python's rules: negative positions count from the end, both clamp.
    auto position = [&](int64_t p) {
      if (p < 0) p += *extent;
      return std::clamp<int64_t>(p, 0, *extent);
    };
    const int64_t start = position(starts[d]), stop = position(stops[d]);
    SMELT_CHECK(start < stop, "slice: dimension ", d, " of ", in->name(), " (extent ", *extent,
                ") takes [", starts[d], ", ", stops[d], "), which holds no element");
    per_axis[d] = {-start, stop - *extent};
  }
  return padAxes(in, per_axis, 0.0);
}

TensorView* indexSelect(TensorView* table, int64_t dim, TensorView* index) {
  SMELT_CHECK(table != nullptr && index != nullptr, "index_select: an input is null");
  SMELT_CHECK(isIntegralType(index->dtype()) && index->dtype() != DataType::Bool, "index_select: index ",
              index->name(), " has dtype ", index->dtype(), "; indices are integers");
  const std::vector<IterDomain*> table_axes = table->logicalNoReductions();
  const std::vector<IterDomain*> index_axes = index->logicalNoReductions();
  const int64_t rank = static_cast<int64_t>(table_axes.size());
  const int64_t d = dim < 0 ? dim + rank : dim;
  SMELT_CHECK(d >= 0 && d < rank, "index_select: dimension ", dim, " is out of range for ",
              table->name(), " of rank ", rank);
  SMELT_CHECK(!index_axes.empty(), "index_select: index ", index->name(), " has rank 0");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> out_axes;
  for (int64_t k = 0; k < d; ++k) out_axes.push_back(elementwiseAxis(f, table_axes[k]));
  for (const IterDomain* id : index_axes) out_axes.push_back(elementwiseAxis(f, id));
  for (int64_t k = d + 1; k < rank; ++k) out_axes.push_back(elementwiseAxis(f, table_axes[k]));
  TensorView* out = f->newTensor(table->dtype(), std::move(out_axes));
  f->newExpr<IndexSelectOp>(out, table, index, d);
  return out;
}

TensorView* gather(TensorView* table, int64_t dim, TensorView* index) {
  SMELT_CHECK(table != nullptr && index != nullptr, "gather: an input is null");
  SMELT_CHECK(isIntegralType(index->dtype()), "gather: index ", index->name(), " has dtype ",
              index->dtype(), "; indices are integers");
  const std::vector<IterDomain*> table_axes = table->logicalNoReductions();
  const std::vector<IterDomain*> index_axes = index->logicalNoReductions();
  const int64_t rank = static_cast<int64_t>(table_axes.size());
  const int64_t d = dim < 0 ? dim + rank : dim;
  SMELT_CHECK(d >= 0 && d < rank, "gather: dimension ", dim, " is out of range for ", table->name(),
              " of rank ", rank);
  SMELT_CHECK(static_cast<int64_t>(index_axes.size()) == rank, "gather: index ", index->name(),
              " has rank ", index_axes.size(), " but ", table->name(), " has rank ", rank);
  for (int64_t k = 0; k < rank; ++k) {
    if (k == d) continue;
    const IntExpr a = table_axes[k]->loopExtent(), b = index_axes[k]->loopExtent();
    // Symbolic extents are checked when the fusion runs (mapped dimensions).
    const bool same = !a.constant() || !b.constant() || *a.constant() == *b.constant();
    SMELT_CHECK(same, "gather: dimension ", k, " of index ", index->name(), " has extent ", b,
                " but dimension ", k, " of ", table->name(), " has extent ", a,
                "; they must be equal outside dimension ", d);
  }
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> out_axes;
  for (const IterDomain* id : index_axes) out_axes.push_back(elementwiseAxis(f, id));
  TensorView* out = f->newTensor(table->dtype(), std::move(out_axes));
  f->newExpr<IndexSelectOp>(out, table, index, d, IndexSelectMode::Along);
  return out;
}

TensorView* iota(const IntExpr& length, Val* start, Val* step, DataType dtype) {
  return iota(std::vector<IntExpr>{length}, start, step, dtype);
}

TensorView* iota(const std::vector<IntExpr>& shape, Val* start, Val* step, DataType dtype) {
  SMELT_CHECK(start != nullptr && step != nullptr, "iota: start or step is null");
  SMELT_CHECK(dtype != DataType::Bool, "iota: a bool sequence is not supported");
  SMELT_CHECK(start->asTensor() == nullptr && step->asTensor() == nullptr,
              "iota: start and step must be scalars");
  SMELT_CHECK(!shape.empty(), "iota: the shape has no dimension");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> axes;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::optional<int64_t> n = shape[d].constant();
    SMELT_CHECK(!n || *n >= 1, "iota: dimension ", d, " of extent ", shape[d], " holds no element");
    axes.push_back(f->newIterDomain(shape[d], IterType::Iteration));
  }
  TensorView* out = f->newTensor(dtype, std::move(axes));
  f->newExpr<IotaOp>(out, start, step);
  return out;
}

TensorView* cat(const std::vector<TensorView*>& inputs, int64_t dim) {
  SMELT_CHECK(!inputs.empty(), "cat: needs at least one tensor");
  for (const TensorView* tv : inputs) SMELT_CHECK(tv != nullptr, "cat: an input is null");
  const int64_t rank = static_cast<int64_t>(inputs[0]->logicalNoReductions().size());
  SMELT_CHECK(rank >= 1, "cat: ", inputs[0]->name(), " has rank 0");
  const int64_t d = dim < 0 ? dim + rank : dim;
  SMELT_CHECK(d >= 0 && d < rank, "cat: dimension ", dim, " is out of range for rank ", rank);
  std::vector<Val*> operands(inputs.begin(), inputs.end());
  DataType dtype = promoteOperandTypes(operands);
  // Checks the ranks and the other dimensions as an elementwise op would.
  elementwiseDomain("cat", operands, d);
  for (int64_t k = 0; k < rank; ++k) {  // torch's cat does not broadcast
    if (k == d) continue;
    auto is_one = [&](const TensorView* tv) {
      const IterDomain* id = tv->logicalNoReductions()[k];
      return id->isPlainBroadcast() || id->loopExtent().constant() == std::optional<int64_t>(1);
    };
    for (const TensorView* tv : inputs) {
      SMELT_CHECK(is_one(tv) == is_one(inputs[0]), "cat: dimension ", k, " of ", tv->name(),
                  " has extent ", tv->logicalNoReductions()[k]->loopExtent(), " where ",
                  inputs[0]->name(), " has extent ", inputs[0]->logicalNoReductions()[k]->loopExtent(),
                  "; the dimensions other than ", d, " must match");
    }
  }
  std::vector<int64_t> extents;
  for (const TensorView* tv : inputs) {
    const IterDomain* id = tv->logicalNoReductions()[d];
    std::optional<int64_t> e = id->loopExtent().constant();
    SMELT_CHECK(e.has_value(), "cat: dimension ", d, " of ", tv->name(), " has the symbolic extent ",
                id->loopExtent(), "; cat needs constant extents along the joined dimension");
    extents.push_back(*e);
  }
  if (inputs.size() == 1) return dtype == inputs[0]->dtype() ? set(inputs[0]) : castOp(dtype, inputs[0]);
  int64_t total = 0;
  for (int64_t e : extents) total += e;
  // Each input padded to the whole extent at its place; a position takes the
  // input whose place holds it (a select, not a sum: -0.0 and NaN stay).
  std::vector<TensorView*> placed;
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorView* in = inputs[i]->dtype() == dtype ? inputs[i] : castOp(dtype, inputs[i]);
    std::vector<std::pair<int64_t, int64_t>> widths(rank, {0, 0});
    widths[d] = {offset, total - offset - extents[i]};
    placed.push_back(padAxes(in, widths, 0.0));
    offset += extents[i];
  }
  std::vector<bool> new_axes(rank, true);
  new_axes[d] = false;
  TensorView* position =
      broadcast(iota(IntExpr(total), constant(0, DataType::Int), constant(1, DataType::Int), DataType::Int),
                new_axes);
  TensorView* result = placed.back();
  offset = total - extents.back();
  for (size_t i = inputs.size() - 1; i-- > 0;) {
    result = where(lt(position, constant(static_cast<double>(offset), DataType::Int)), placed[i], result);
    offset -= extents[i];
  }
  return result;
}

}  // namespace smelt
