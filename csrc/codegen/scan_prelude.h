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

// A block-level scan (kir::BlockScan, codegen/scan_ops.h): added when a
// kernel has one. The block is one-dimensional, kWarps whole warps.
constexpr const char* kBlockScanPrelude = R"(
namespace smelt {

// __shfl_up_sync for every accumulator type (bool and 8/16-bit integers
// travel as int).
template <typename T>
__device__ inline T shuffleUp(T value, unsigned delta) {
  if constexpr (sizeof(T) < 4) {
    return static_cast<T>(__shfl_up_sync(0xffffffffu, static_cast<int>(value), delta));
  } else {
    return __shfl_up_sync(0xffffffffu, value, delta);
  }
}

// The threads' partials scanned across the block: `running` becomes the
// combine of `carry` with the partials of the threads before this one, and
// `carry` (the same on every thread) the combine of `carry` with all of
// them. Within a warp a Kogge-Stone scan over shuffles; the warps' totals go
// through `warp_totals` (kWarps elements of shared memory), between two
// barriers.
template <int kWarps, typename T, typename Combine>
__device__ inline void blockScan(T partial, T& carry, T& running, T* warp_totals, Combine combine) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  T inclusive = partial;
#pragma unroll
  for (unsigned delta = 1; delta < 32; delta *= 2) {
    const T before = shuffleUp(inclusive, delta);
    if (lane >= delta) inclusive = combine(before, inclusive);
  }
  const T lane_before = shuffleUp(inclusive, 1);
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  T prefix = carry;
  T total = carry;
#pragma unroll
  for (unsigned w = 0; w < kWarps; ++w) {
    const T t = warp_totals[w];
    if (w < warp) prefix = combine(prefix, t);
    total = combine(total, t);
  }
  running = lane == 0 ? prefix : combine(prefix, lane_before);
  carry = total;
  __syncthreads();
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
