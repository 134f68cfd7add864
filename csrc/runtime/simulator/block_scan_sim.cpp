#include "runtime/simulator/block_scan_sim.h"

namespace smelt::sim {

namespace {
constexpr int32_t kWarp = 32;
}  // namespace

double blockScanPartial(const Instr& in, int32_t t, const BlockScanIo& io) {
  double partial = in.init;
  const int64_t first = io.eval(in.extent2, t);
  const int64_t extent = io.eval(in.extent, t);
  for (int32_t k = 0; k < in.count && first + k < extent; ++k) {
    const int64_t base = io.eval(in.in.index, t);
    partial = io.combine(partial, io.load_element(in.in.buffer, base + k, t));
  }
  return partial;
}

std::vector<double> blockScanWarpTotals(const Instr& in, const std::vector<double>& partials,
                                        const BlockScanIo& io) {
  const int32_t threads = static_cast<int32_t>(partials.size());
  std::vector<double> inclusive(partials.size());
  for (int32_t t = 0; t < threads; ++t) {
    const bool first_lane = t % kWarp == 0;
    inclusive[t] = first_lane ? partials[t] : io.combine(inclusive[t - 1], partials[t]);
    if (t % kWarp == kWarp - 1) io.store_element(in.workspace, t / kWarp, t, inclusive[t]);
  }
  return inclusive;
}

void blockScanFinish(const Instr& in, int32_t t, const std::vector<double>& inclusive, const BlockScanIo& io) {
  const int32_t warps = static_cast<int32_t>(inclusive.size()) / kWarp;
  const double carry = io.load(in.in2, t);
  double prefix = carry;
  double total = carry;
  for (int32_t w = 0; w < warps; ++w) {
    const double warp_total = io.load_element(in.workspace, w, t);
    if (w < t / kWarp) prefix = io.combine(prefix, warp_total);
    total = io.combine(total, warp_total);
  }
  io.store(in.out, t, t % kWarp == 0 ? prefix : io.combine(prefix, inclusive[t - 1]));
  io.store(in.in2, t, total);
}

}  // namespace smelt::sim
