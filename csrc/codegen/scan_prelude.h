// Scans (ScanOp, fusion/ir.h) in CUDA: the combine of a running value with
// the next element, and the device function log-add-exp needs (added to a
// kernel's prelude when it scans with it).
#pragma once

#include <string>

#include "fusion/ir.h"

namespace smelt::codegen {

constexpr const char* kLogAddExpPrelude = R"(
namespace smelt {

// log(exp(x) + exp(y)) as torch's logcumsumexp computes it: the larger plus
// log1p of the exponential of the difference; two equal infinities give
// themselves (-inf stays -inf without an inf - inf NaN), NaN propagates.
template <typename T>
__device__ inline T logAddExp(T x, T y) {
  if (x != x || y != y) return x + y;
  const T lo = y < x ? y : x;
  const T hi = x < y ? y : x;
  const bool finite = lo == lo && lo - lo == T(0);
  if (lo != hi || finite) {
    if constexpr (sizeof(T) == 4) return hi + log1pf(expf(lo - hi));
    else return hi + log1p(exp(lo - hi));
  }
  return x;
}

}  // namespace smelt
)";

// The CUDA expression combining running value `carry` with `value`, both of
// CUDA type `type` (the scan's accumulator type).
inline std::string scanCombine(ScanCombine combine, const std::string& carry,
                               const std::string& value, const std::string& type) {
  switch (combine) {
    case ScanCombine::Add: return carry + " + " + value;
    case ScanCombine::Mul: return carry + " * " + value;
    case ScanCombine::Max: return "smelt::maximum<" + type + ">(" + carry + ", " + value + ")";
    case ScanCombine::Min: return "smelt::minimum<" + type + ">(" + carry + ", " + value + ")";
    case ScanCombine::LogAddExp: return "smelt::logAddExp<" + type + ">(" + carry + ", " + value + ")";
  }
  return carry;
}

}  // namespace smelt::codegen
