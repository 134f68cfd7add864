#include "runtime/simulator/block_scan_sim.h"

#include <cmath>
#include <type_traits>

#include "runtime/simulator/element_math.h"
#include "runtime/simulator/value_convert.h"

namespace smelt::sim {

namespace {

constexpr int32_t kWarp = 32;

// Loads, stores and combines in T: double, or int64_t for integer and bool
// accumulators.
template <typename T>
struct Arithmetic {
  const Instr& in;
  const BlockScanMemory& memory;

  T load(int32_t buffer, int64_t index, int32_t t) const {
    const uint8_t* e = memory.element(buffer, index, t, false);
    if constexpr (std::is_same_v<T, double>) {
      return e ? loadValue(memory.dtype(buffer), e) : std::nan("");
    } else {
      return e ? loadInt(memory.dtype(buffer), e) : 0;
    }
  }
  void store(int32_t buffer, int64_t index, int32_t t, T v) const {
    uint8_t* e = memory.element(buffer, index, t, true);
    if (e == nullptr) return;
    if constexpr (std::is_same_v<T, double>) {
      storeValue(memory.dtype(buffer), e, v);
    } else {
      storeInt(memory.dtype(buffer), e, v);
    }
  }
  T load(const RtAccess& a, int32_t t) const { return load(a.buffer, memory.eval(a.index, t), t); }
  void store(const RtAccess& a, int32_t t, T v) const { store(a.buffer, memory.eval(a.index, t), t, v); }
  T combine(T a, T b) const { return scanCombine(in.scan, a, b); }
  // The combine's identity as the accumulator holds it (integers saturate
  // the infinities of max and min).
  T identity() const {
    if constexpr (std::is_same_v<T, double>) {
      return in.init;
    } else {
      uint8_t bytes[8];
      storeValue(memory.dtype(in.in2.buffer), bytes, in.init);
      return loadInt(memory.dtype(in.in2.buffer), bytes);
    }
  }
};

template <typename T>
T partialOf(const Arithmetic<T>& a, int32_t t) {
  const Instr& in = a.in;
  T partial = a.identity();
  const int64_t first = a.memory.eval(in.extent2, t);
  const int64_t extent = a.memory.eval(in.extent, t);
  const int64_t base = a.memory.eval(in.in.index, t);
  for (int32_t k = 0; k < in.count && first + k < extent; ++k) {
    partial = a.combine(partial, a.load(in.in.buffer, base + k, t));
  }
  return partial;
}

// Warp `warp`'s inclusive scans and its total in the workspace, stored by
// its lane 31.
template <typename T>
void warpScan(const Arithmetic<T>& a, int32_t warp, const std::vector<T>& partials, std::vector<T>& inclusive) {
  for (int32_t t = warp * kWarp; t < (warp + 1) * kWarp; ++t) {
    inclusive[t] = t % kWarp == 0 ? partials[t] : a.combine(inclusive[t - 1], partials[t]);
  }
  const int32_t last = (warp + 1) * kWarp - 1;
  a.store(a.in.workspace, warp, last, inclusive[last]);
}

template <typename T>
void finishThread(const Arithmetic<T>& a, int32_t t, const std::vector<T>& inclusive) {
  const int32_t warps = static_cast<int32_t>(inclusive.size()) / kWarp;
  const T carry = a.load(a.in.in2, t);
  T prefix = carry;
  T total = carry;
  for (int32_t w = 0; w < warps; ++w) {
    const T warp_total = a.load(a.in.workspace, w, t);
    if (w < t / kWarp) prefix = a.combine(prefix, warp_total);
    total = a.combine(total, warp_total);
  }
  a.store(a.in.out, t, t % kWarp == 0 ? prefix : a.combine(prefix, inclusive[t - 1]));
  a.store(a.in.in2, t, total);
}

bool integer(const Instr& in, const BlockScanMemory& memory) { return isIntegerStorage(memory.dtype(in.in2.buffer)); }

}  // namespace

BlockScanModel::BlockScanModel(int32_t threads) : arrived_(static_cast<size_t>(threads / kWarp), 0) {
  floating_.partials.resize(threads);
  floating_.inclusive.resize(threads);
  integer_.partials.resize(threads);
  integer_.inclusive.resize(threads);
}

void BlockScanModel::arrive(const Instr& in, int32_t t, const BlockScanMemory& memory) {
  const int32_t warp = t / kWarp;
  const bool warp_arrived = ++arrived_.at(warp) == kWarp;
  if (warp_arrived) arrived_[warp] = 0;
  if (integer(in, memory)) {
    const Arithmetic<int64_t> a{in, memory};
    integer_.partials[t] = partialOf(a, t);
    if (warp_arrived) warpScan(a, warp, integer_.partials, integer_.inclusive);
  } else {
    const Arithmetic<double> a{in, memory};
    floating_.partials[t] = partialOf(a, t);
    if (warp_arrived) warpScan(a, warp, floating_.partials, floating_.inclusive);
  }
}

void BlockScanModel::finish(const Instr& in, int32_t t, const BlockScanMemory& memory) {
  if (integer(in, memory)) {
    finishThread(Arithmetic<int64_t>{in, memory}, t, integer_.inclusive);
  } else {
    finishThread(Arithmetic<double>{in, memory}, t, floating_.inclusive);
  }
}

}  // namespace smelt::sim
