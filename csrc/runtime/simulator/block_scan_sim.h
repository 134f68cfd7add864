// The simulator's model of a block-level scan (kir::BlockScan, Op::BlockScan)
// for one block, in the three steps the CUDA code takes (codegen/scan_ops.h):
//   1. before its first barrier, each thread combines its items into a
//      partial (partial());
//   2. still before that barrier, each warp scans its lanes' partials (the
//      shuffles: lane l combines lanes 0..l in order) and its lane 31
//      stores the warp's total into the workspace (storeWarpTotals());
//   3. after the barrier, each thread reads every warp's total from the
//      workspace and sets its running value and the carry (finish()); the
//      second barrier follows.
// Every memory access goes through the interpreter (BlockScanIo), so the
// race checker sees the workspace's writes and reads with their threads.
// Values pass through double: integer scans are exact while the partial
// results stay within 2^53 (the serial scan step computes integers in
// int64_t; the block scan's model does not yet).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/simulator/program.h"

namespace smelt::sim {

struct BlockScanIo {
  // An access of thread t (its index evaluated in t's slots).
  std::function<double(const RtAccess&, int32_t t)> load;
  std::function<void(const RtAccess&, int32_t t, double)> store;
  // Element `index` of a buffer, accessed by thread t.
  std::function<double(int32_t buffer, int64_t index, int32_t t)> load_element;
  std::function<void(int32_t buffer, int64_t index, int32_t t, double)> store_element;
  // An index expression (IndexCode handle) in thread t's slots.
  std::function<int64_t(int32_t handle, int32_t t)> eval;
  std::function<double(double, double)> combine;
};

// Step 1: the combine of thread t's items that lie below the scan extent.
double blockScanPartial(const Instr& in, int32_t t, const BlockScanIo& io);

// Step 2: the threads' inclusive scans within their warps (one per thread,
// from `partials`); stores each warp's total into the workspace.
std::vector<double> blockScanWarpTotals(const Instr& in, const std::vector<double>& partials,
                                        const BlockScanIo& io);

// Step 3: thread t's running value and carry, from the workspace and the
// inclusive scans of step 2.
void blockScanFinish(const Instr& in, int32_t t, const std::vector<double>& inclusive, const BlockScanIo& io);

}  // namespace smelt::sim
