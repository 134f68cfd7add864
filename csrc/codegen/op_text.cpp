#include "codegen/op_text.h"

#include <algorithm>

#include "codegen/type_text.h"
#include "fusion/error.h"

namespace smelt::codegen {

namespace {

// True when the divisor is one value for many elements of the quotient: a
// scalar, or a tensor broadcast along a dimension. Such a division is a
// multiplication by the divisor's reciprocal (at most one rounding more than
// the quotient; ATen's division by a scalar does the same), so the elements a
// thread computes in an unrolled loop share one division: a float division
// is ten instructions and a call to a slow path, a multiplication one.
bool divisorRepeats(const Val* divisor) {
  const TensorView* tv = divisor->asTensor();
  if (tv == nullptr) return true;
  const std::vector<IterDomain*>& dims = tv->logicalDomain();
  return std::any_of(dims.begin(), dims.end(), [](const IterDomain* id) { return id->isBroadcast(); });
}

std::string negate(const std::string& x) { return x[0] == '-' ? "-(" + x + ")" : "-" + x; }

std::string mathCall(const char* float_fn, const char* double_fn, DataType ct, const std::string& x,
                     const Expr* expr) {
  SMELT_CHECK(ct == DataType::Float || ct == DataType::Double, "codegen: ", expr->opName(),
              " on ", ct, " is not supported (cast to a floating type first)");
  return std::string(ct == DataType::Float ? float_fn : double_fn) + "(" + x + ")";
}

// Rounding functions leave integers as they are.
std::string roundingCall(const char* float_fn, const char* double_fn, DataType ct,
                         const std::string& x, const Expr* expr) {
  if (isIntegralType(ct)) return x;
  return mathCall(float_fn, double_fn, ct, x, expr);
}

// A special function (special_math.h): a unary one evaluates in double (a
// float result is the double's, rounded), a binary one is a template on
// the compute type.
std::string specialCall(const Expr* expr, const std::string& name, DataType ct,
                        const std::vector<std::string>& args) {
  SMELT_CHECK(ct == DataType::Float || ct == DataType::Double, "codegen: ", expr->opName(),
              " on ", ct, " is not supported (cast to a floating type first)");
  if (args.size() == 2) {
    return "smelt::special::" + name + "<" + cudaType(ct) + ">(" + args[0] + ", " + args[1] + ")";
  }
  const std::string call = "smelt::special::" + name + "(" + args[0] + ")";
  return ct == DataType::Float ? "static_cast<float>(" + call + ")" : call;
}

}  // namespace

std::string unaryText(const UnaryOp* op, DataType ct, const OperandText& operand) {
  const std::string x = operand(0, ct);
  switch (op->op()) {
    case UnaryOpType::Cast: return x;
    case UnaryOpType::Neg: return negate(x);
    case UnaryOpType::Exp: return mathCall("expf", "exp", ct, x, op);
    case UnaryOpType::Tanh: return mathCall("tanhf", "tanh", ct, x, op);
    case UnaryOpType::Relu: return "smelt::relu(" + x + ")";
    case UnaryOpType::Abs:
      switch (ct) {
        case DataType::Float: return "fabsf(" + x + ")";
        case DataType::Double: return "fabs(" + x + ")";
        case DataType::Int: return "llabs(" + x + ")";
        case DataType::Int32:
        case DataType::Int16:
        case DataType::Int8: return "abs(" + x + ")";
        default: return x;  // bool, uint8
      }
    case UnaryOpType::Sqrt: return mathCall("sqrtf", "sqrt", ct, x, op);
    case UnaryOpType::Rsqrt: return mathCall("rsqrtf", "rsqrt", ct, x, op);
    case UnaryOpType::Log: return mathCall("logf", "log", ct, x, op);
    case UnaryOpType::Log2: return mathCall("log2f", "log2", ct, x, op);
    case UnaryOpType::Log1p: return mathCall("log1pf", "log1p", ct, x, op);
    case UnaryOpType::Exp2: return mathCall("exp2f", "exp2", ct, x, op);
    case UnaryOpType::Expm1: return mathCall("expm1f", "expm1", ct, x, op);
    case UnaryOpType::Sigmoid: return mathCall("smelt::sigmoid", "smelt::sigmoid", ct, x, op);
    case UnaryOpType::Erf: return mathCall("erff", "erf", ct, x, op);
    case UnaryOpType::Reciprocal:
      return mathCall("1.0f / ", "1.0 / ", ct, x, op);
    case UnaryOpType::Sin: return mathCall("sinf", "sin", ct, x, op);
    case UnaryOpType::Cos: return mathCall("cosf", "cos", ct, x, op);
    case UnaryOpType::Tan: return mathCall("tanf", "tan", ct, x, op);
    case UnaryOpType::Asin: return mathCall("asinf", "asin", ct, x, op);
    case UnaryOpType::Acos: return mathCall("acosf", "acos", ct, x, op);
    case UnaryOpType::Atan: return mathCall("atanf", "atan", ct, x, op);
    case UnaryOpType::Sinh: return mathCall("sinhf", "sinh", ct, x, op);
    case UnaryOpType::Cosh: return mathCall("coshf", "cosh", ct, x, op);
    case UnaryOpType::Asinh: return mathCall("asinhf", "asinh", ct, x, op);
    case UnaryOpType::Acosh: return mathCall("acoshf", "acosh", ct, x, op);
    case UnaryOpType::Atanh: return mathCall("atanhf", "atanh", ct, x, op);
    case UnaryOpType::Log10: return mathCall("log10f", "log10", ct, x, op);
    case UnaryOpType::Erfc: return mathCall("erfcf", "erfc", ct, x, op);
    case UnaryOpType::Lgamma: return mathCall("lgammaf", "lgamma", ct, x, op);
    case UnaryOpType::Floor: return roundingCall("floorf", "floor", ct, x, op);
    case UnaryOpType::Ceil: return roundingCall("ceilf", "ceil", ct, x, op);
    // rint rounds half to even, as torch.round does (round() would not).
    case UnaryOpType::Round: return roundingCall("rintf", "rint", ct, x, op);
    case UnaryOpType::Trunc: return roundingCall("truncf", "trunc", ct, x, op);
    case UnaryOpType::LogicalNot: return "!" + x;
    case UnaryOpType::BitwiseNot: return "~" + x;
#define SMELT_SPECIAL_CASE(Enum, name) case UnaryOpType::Enum:
    SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_CASE)
#undef SMELT_SPECIAL_CASE
      return specialCall(op, toString(op->op()), ct, {x});
    case UnaryOpType::Signbit: {
      const DataType in_ct = computeType(op->input(0)->dtype());
      const std::string v = operand(0, in_ct);
      if (isFloatingType(in_ct)) return "signbit(" + v + ")";
      return in_ct == DataType::Bool || in_ct == DataType::UInt8 ? "false" : v + " < 0";
    }
  }
  SMELT_INTERNAL_CHECK(false, "unknown unary op");
}

DataType binaryComputeType(const BinaryOp* op, DataType result_ct) {
  if (isLogical(op->op())) return DataType::Bool;
  if (isComparison(op->op())) return computeType(op->operandDtype());
  return result_ct;
}

std::string binaryText(const BinaryOp* op, DataType ct, const OperandText& operand) {
  const std::string a = operand(0, ct);
  const std::string b = operand(1, ct);
  switch (op->op()) {
    case BinaryOpType::Add: return a + " + " + b;
    case BinaryOpType::Sub: return a + " - " + b;
    case BinaryOpType::Mul: return a + " * " + b;
    case BinaryOpType::Div:
      if (isIntegralType(ct)) return "smelt::idiv<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      if (divisorRepeats(op->input(1))) return a + " * (" + literal(1.0, ct) + " / " + b + ")";
      return a + " / " + b;
    // Explicit template types: a literal operand (`3`) would not deduce as int64_t.
    case BinaryOpType::Maximum: return "smelt::maximum<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Minimum: return "smelt::minimum<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Pow:
      // The explicit type: a literal exponent (`39`) would not deduce as int64_t.
      if (isIntegralType(ct)) return "smelt::ipow<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      return mathCall("powf", "pow", ct, a + ", " + b, op);
    case BinaryOpType::Remainder:
      return "smelt::remainder<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Fmod: return "smelt::fmod<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Atan2: return mathCall("atan2f", "atan2", ct, a + ", " + b, op);
    case BinaryOpType::Hypot: return mathCall("hypotf", "hypot", ct, a + ", " + b, op);
    case BinaryOpType::Copysign: return mathCall("copysignf", "copysign", ct, a + ", " + b, op);
    case BinaryOpType::Nextafter: return mathCall("nextafterf", "nextafter", ct, a + ", " + b, op);
    case BinaryOpType::ShiftLeft: return "smelt::shiftLeft<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::ShiftRight: return "smelt::shiftRight<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Gcd: return "smelt::gcd<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Lcm: return "smelt::lcm<" + cudaType(ct) + ">(" + a + ", " + b + ")";
    case BinaryOpType::Eq: return a + " == " + b;
    case BinaryOpType::Ne: return a + " != " + b;
    case BinaryOpType::Lt: return a + " < " + b;
    case BinaryOpType::Le: return a + " <= " + b;
    case BinaryOpType::Gt: return a + " > " + b;
    case BinaryOpType::Ge: return a + " >= " + b;
    case BinaryOpType::LogicalAnd: return a + " && " + b;
    case BinaryOpType::LogicalOr: return a + " || " + b;
    case BinaryOpType::BitwiseAnd: return a + " & " + b;
    case BinaryOpType::BitwiseOr: return a + " | " + b;
    case BinaryOpType::BitwiseXor: return a + " ^ " + b;
#define SMELT_SPECIAL_CASE(Enum, name) case BinaryOpType::Enum:
    SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_CASE)
#undef SMELT_SPECIAL_CASE
      return specialCall(op, toString(op->op()), ct, {a, b});
    case BinaryOpType::RandomUniform:
      return "smelt::randomUniform<" + cudaType(ct) + ">(" +
             operand(0, DataType::Int) + ", " + operand(1, DataType::Int) + ")";
  }
  SMELT_INTERNAL_CHECK(false, "unknown binary op");
}

}  // namespace smelt::codegen
