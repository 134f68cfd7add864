#include "runtime/simulator/element_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/special_math.h"
#include "fusion/error.h"
#include "runtime/simulator/value_convert.h"

namespace smelt::sim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// torch.remainder: the result takes the divisor's sign.
double remainder(double a, double b) {
  const double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

// torch's integer pow (negative exponents give 0 unless the base is 1 or -1),
// squaring in unsigned 64-bit arithmetic so overflow wraps as on the GPU
// (the store wraps an int32 result to 32 bits, as smelt::ipow<int> does).
int64_t integerPow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
  uint64_t result = 1;
  uint64_t b = static_cast<uint64_t>(base);
  for (; exp != 0; exp >>= 1, b *= b) {
    if (exp & 1) result *= b;
  }
  return static_cast<int64_t>(result);
}

// Integer division truncating toward zero (C, nvFuser's div, torch's
// rounding_mode='trunc'), made total as smelt::idiv is in the generated CUDA:
// x / 0 gives -1 (what the GPU's integer division returns; torch on the CPU
// raises) and INT64_MIN / -1 wraps instead of trapping.
int64_t integerDivide(int64_t a, int64_t b) {
  if (b == 0) return -1;
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}

// torch's gcd: Euclid on the absolute values (negated with wrapping, so the
// most negative value stays itself), as smelt::gcd in the generated CUDA.
int64_t integerGcd(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  int64_t p = static_cast<int64_t>(x), q = static_cast<int64_t>(y);
  while (q != 0) {
    const int64_t c = p;
    p = q;
    q = (q == -1) ? 0 : c % q;  // INT64_MIN % -1 would trap; the remainder is 0
  }
  return p;
}

// `v` wrapped to the width of an integer `dtype`, as a value of it.
int64_t wrapToWidth(uint64_t v, DataType dtype) {
  const int bits = static_cast<int>(dataTypeSize(dtype) * 8);
  if (bits == 64) return static_cast<int64_t>(v);
  const uint64_t low = v & ((uint64_t{1} << bits) - 1);
  if (dtype == DataType::UInt8) return static_cast<int64_t>(low);
  return static_cast<int64_t>(low << (64 - bits)) >> (64 - bits);
}

}  // namespace

double combine(Fn fn, double a, double b) {
  if (fn == Fn::Sum) return a + b;
  if (fn == Fn::Prod) return a * b;
  // max propagates NaN, as torch.max and the CUDA reduction do.
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return a > b ? a : b;
}

// A scan's combine in double: max and min propagate NaN; log-add-exp as
// torch's (the larger plus log1p(exp(difference)); equal infinities give
// themselves).
double scanCombine(ScanCombine combine, double carry, double x) {
  switch (combine) {
    case ScanCombine::Add: return carry + x;
    case ScanCombine::Mul: return carry * x;
    case ScanCombine::Max: return std::isnan(carry) || std::isnan(x) ? kNaN : std::max(carry, x);
    case ScanCombine::Min: return std::isnan(carry) || std::isnan(x) ? kNaN : std::min(carry, x);
    case ScanCombine::LogAddExp: {
      if (std::isnan(carry) || std::isnan(x)) return kNaN;
      const double lo = std::min(carry, x), hi = std::max(carry, x);
      if (lo != hi || std::isfinite(lo)) return hi + std::log1p(std::exp(lo - hi));
      return x;
    }
  }
  return carry;
}

int64_t scanCombine(ScanCombine combine, int64_t carry, int64_t x) {
  const uint64_t a = static_cast<uint64_t>(carry), b = static_cast<uint64_t>(x);
  switch (combine) {
    case ScanCombine::Add: return static_cast<int64_t>(a + b);
    case ScanCombine::Mul: return static_cast<int64_t>(a * b);
    case ScanCombine::Max: return std::max(carry, x);
    case ScanCombine::Min: return std::min(carry, x);
    case ScanCombine::LogAddExp: break;
  }
  SMELT_INTERNAL_CHECK(false, "logcumsumexp of integers");
}

int64_t scatterCombine(ScatterCombine combine, int64_t old, int64_t v) {
  const uint64_t a = static_cast<uint64_t>(old), b = static_cast<uint64_t>(v);
  switch (combine) {
    case ScatterCombine::Set: return v;
    case ScatterCombine::Add: return static_cast<int64_t>(a + b);
    case ScatterCombine::Mul: return static_cast<int64_t>(a * b);
    case ScatterCombine::Max: return std::max(old, v);
    case ScatterCombine::Min: return std::min(old, v);
  }
  return v;
}

double scatterCombine(ScatterCombine combine, double old, double v) {
  switch (combine) {
    case ScatterCombine::Set: return v;
    case ScatterCombine::Add: return old + v;
    case ScatterCombine::Mul: return old * v;
    case ScatterCombine::Max: return std::isnan(old) || std::isnan(v) ? kNaN : std::max(old, v);
    case ScatterCombine::Min: return std::isnan(old) || std::isnan(v) ? kNaN : std::min(old, v);
  }
  return v;
}

bool hasIntegerForm(Fn fn) {
  switch (fn) {
    case Fn::Copy: case Fn::Neg: case Fn::Abs: case Fn::Add: case Fn::Sub: case Fn::Mul:
    case Fn::IntDiv: case Fn::Maximum: case Fn::Minimum: case Fn::IntPow:
    case Fn::Remainder: case Fn::Fmod: case Fn::Where: case Fn::Iota: case Fn::Gather:
    case Fn::BitwiseNot: case Fn::BitwiseAnd: case Fn::BitwiseOr: case Fn::BitwiseXor:
    case Fn::ShiftLeft: case Fn::ShiftRight: case Fn::Gcd: case Fn::Lcm:
      return true;
    default:
      return false;
  }
}

int64_t integerResult(Fn fn, const int64_t a[3], DataType dtype) {
  // Unsigned arithmetic wraps (signed overflow would be undefined).
  const uint64_t x = static_cast<uint64_t>(a[0]), y = static_cast<uint64_t>(a[1]);
  int64_t r = 0;
  switch (fn) {
    case Fn::Copy: r = a[0]; break;
    case Fn::Neg: r = static_cast<int64_t>(0 - x); break;
    case Fn::Abs: r = a[0] < 0 ? static_cast<int64_t>(0 - x) : a[0]; break;
    case Fn::Add: r = static_cast<int64_t>(x + y); break;
    case Fn::Sub: r = static_cast<int64_t>(x - y); break;
    case Fn::Mul: r = static_cast<int64_t>(x * y); break;
    case Fn::IntDiv: r = integerDivide(a[0], a[1]); break;
    case Fn::Maximum: r = std::max(a[0], a[1]); break;
    case Fn::Minimum: r = std::min(a[0], a[1]); break;
    case Fn::IntPow: r = integerPow(a[0], a[1]); break;
    case Fn::Remainder:
    case Fn::Fmod: {
      if (a[1] == 0 || a[1] == -1) { r = 0; break; }  // x % 0: as integerDivide, no trap
      r = a[0] % a[1];
      if (fn == Fn::Remainder && r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
      break;
    }
    case Fn::Where: r = a[0] != 0 ? a[1] : a[2]; break;
    case Fn::Iota: r = static_cast<int64_t>(static_cast<uint64_t>(a[1]) + x * static_cast<uint64_t>(a[2])); break;
    case Fn::Gather: r = a[0]; break;
    case Fn::BitwiseNot: r = static_cast<int64_t>(~x); break;
    case Fn::BitwiseAnd: r = static_cast<int64_t>(x & y); break;
    case Fn::BitwiseOr: r = static_cast<int64_t>(x | y); break;
    case Fn::BitwiseXor: r = static_cast<int64_t>(x ^ y); break;
    case Fn::ShiftLeft:
    case Fn::ShiftRight: {
      const int64_t bits = static_cast<int64_t>(dataTypeSize(dtype) * 8);
      const bool outside = a[1] < 0 || a[1] >= bits;
      if (fn == Fn::ShiftLeft) r = outside ? 0 : static_cast<int64_t>(x << a[1]);
      else r = outside ? (a[0] < 0 ? -1 : 0) : (a[0] >> a[1]);
      break;
    }
    case Fn::Gcd: r = integerGcd(a[0], a[1]); break;
    case Fn::Lcm: {  // |a / gcd * b|, the product in C++'s promoted type, as torch's
      const DataType product = dataTypeSize(dtype) < 4 ? DataType::Int32 : dtype;
      const int64_t g = wrapToWidth(static_cast<uint64_t>(integerGcd(a[0], a[1])), dtype);
      const int64_t m = g == 0 ? 0 : wrapToWidth(static_cast<uint64_t>(a[0] / g) * y, product);
      r = m < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(m)) : m;
      break;
    }
    default: SMELT_INTERNAL_CHECK(false, "not an integer fn"); break;
  }
  return r;
}

double floatResult(Fn fn, const double a[3], DataType dtype) {
  double r = 0;
  switch (fn) {
    case Fn::Copy: r = a[0]; break;
    case Fn::Neg: r = -a[0]; break;
    case Fn::Exp: r = std::exp(a[0]); break;
    case Fn::Tanh: r = std::tanh(a[0]); break;
    case Fn::Abs: r = std::fabs(a[0]); break;
    case Fn::Relu: r = a[0] < 0 ? 0.0 : a[0]; break;  // keeps NaN, as torch.relu
    case Fn::Sqrt: r = std::sqrt(a[0]); break;
    case Fn::Rsqrt: r = 1.0 / std::sqrt(a[0]); break;
    case Fn::Log: r = std::log(a[0]); break;
    case Fn::Log2: r = std::log2(a[0]); break;
    case Fn::Log1p: r = std::log1p(a[0]); break;
    case Fn::Exp2: r = std::exp2(a[0]); break;
    case Fn::Expm1: r = std::expm1(a[0]); break;
    case Fn::Sigmoid: r = 1.0 / (1.0 + std::exp(-a[0])); break;
    case Fn::Erf: r = std::erf(a[0]); break;
    case Fn::Reciprocal: r = 1.0 / a[0]; break;
    case Fn::Sin: r = std::sin(a[0]); break;
    case Fn::Cos: r = std::cos(a[0]); break;
    case Fn::Tan: r = std::tan(a[0]); break;
    case Fn::Asin: r = std::asin(a[0]); break;
    case Fn::Acos: r = std::acos(a[0]); break;
    case Fn::Atan: r = std::atan(a[0]); break;
    case Fn::Sinh: r = std::sinh(a[0]); break;
    case Fn::Cosh: r = std::cosh(a[0]); break;
    case Fn::Asinh: r = std::asinh(a[0]); break;
    case Fn::Acosh: r = std::acosh(a[0]); break;
    case Fn::Atanh: r = std::atanh(a[0]); break;
    case Fn::Log10: r = std::log10(a[0]); break;
    case Fn::Erfc: r = std::erfc(a[0]); break;
    case Fn::Lgamma: r = std::lgamma(a[0]); break;
    case Fn::Floor: r = std::floor(a[0]); break;
    case Fn::Ceil: r = std::ceil(a[0]); break;
    case Fn::Round: r = std::nearbyint(a[0]); break;  // half to even
    case Fn::Trunc: r = std::trunc(a[0]); break;
    case Fn::LogicalNot: r = a[0] == 0 ? 1.0 : 0.0; break;
    case Fn::Signbit: r = std::signbit(a[0]) ? 1.0 : 0.0; break;
    case Fn::Add: r = a[0] + a[1]; break;
    case Fn::Sub: r = a[0] - a[1]; break;
    case Fn::Mul: r = a[0] * a[1]; break;
    case Fn::Div: r = a[0] / a[1]; break;
    case Fn::Maximum:
      r = std::isnan(a[0]) || std::isnan(a[1]) ? kNaN : std::max(a[0], a[1]);
      break;
    case Fn::Minimum:
      r = std::isnan(a[0]) || std::isnan(a[1]) ? kNaN : std::min(a[0], a[1]);
      break;
    case Fn::Pow: r = std::pow(a[0], a[1]); break;
    case Fn::IntPow:
      r = static_cast<double>(integerPow(saturatingCast<int64_t>(a[0]), saturatingCast<int64_t>(a[1])));
      break;
    case Fn::IntDiv:
      r = static_cast<double>(integerDivide(saturatingCast<int64_t>(a[0]), saturatingCast<int64_t>(a[1])));
      break;
    case Fn::Remainder: r = remainder(a[0], a[1]); break;
    case Fn::Fmod: r = std::fmod(a[0], a[1]); break;
    case Fn::Atan2: r = std::atan2(a[0], a[1]); break;
    case Fn::Hypot: r = std::hypot(a[0], a[1]); break;
    case Fn::Copysign: r = std::copysign(a[0], a[1]); break;
    case Fn::Nextafter:  // in the result's own type: a float's next value is a float's
      r = dtype == DataType::Float
              ? std::nextafter(static_cast<float>(a[0]), static_cast<float>(a[1]))
              : std::nextafter(a[0], a[1]);
      break;
    // torch's special functions: the kernels' own code (codegen/special_math.h)
#define SMELT_SPECIAL_CALL(Enum, name) \
case Fn::Enum: r = special::name(a[0]); break;
    SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_CALL)
#undef SMELT_SPECIAL_CALL
// templates on the result's type (the polynomials compute in float for float)
#define SMELT_SPECIAL_CALL(Enum, name)                                                    \
case Fn::Enum:                                                                          \
  r = dtype == DataType::Double                                \
          ? special::name<double>(a[0], a[1])                                           \
          : special::name<float>(static_cast<float>(a[0]), static_cast<float>(a[1]));   \
  break;
    SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_CALL)
#undef SMELT_SPECIAL_CALL
    case Fn::Eq: r = a[0] == a[1]; break;
    case Fn::Ne: r = a[0] != a[1]; break;
    case Fn::Lt: r = a[0] < a[1]; break;
    case Fn::Le: r = a[0] <= a[1]; break;
    case Fn::Gt: r = a[0] > a[1]; break;
    case Fn::Ge: r = a[0] >= a[1]; break;
    case Fn::LogicalAnd: r = a[0] != 0 && a[1] != 0; break;
    case Fn::LogicalOr: r = a[0] != 0 || a[1] != 0; break;
    case Fn::Iota: r = a[1] + a[0] * a[2]; break;
    case Fn::Gather: r = a[0]; break;
    case Fn::Where: r = a[0] != 0 ? a[1] : a[2]; break;
    case Fn::BitwiseNot: case Fn::BitwiseAnd: case Fn::BitwiseOr: case Fn::BitwiseXor:
    case Fn::ShiftLeft: case Fn::ShiftRight: case Fn::Gcd: case Fn::Lcm:
    case Fn::RandomUniform:  // integer paths above
    case Fn::Scatter:        // scatter()
    case Fn::Scan:           // scanStep()
    case Fn::Sum:
    case Fn::Max:
    case Fn::Prod: SMELT_INTERNAL_CHECK(false, "fn ", static_cast<int>(fn), " in the float path"); break;
  }
  return r;
}

}  // namespace smelt::sim
