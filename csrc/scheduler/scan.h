// The scan scheduler: a fusion computing one scan (ScanOp, ir.h) with
// element-wise producers and consumers (and pads of its inputs, read through
// a bounds predicate). Each thread scans one row: the scan
// axis is a serial loop, innermost, run in order, its running value in a
// register (kir::ScanInit before the loop, a combine and store per
// iteration); of the other axes the innermost is split into [BIDx, TIDx],
// the next bound to BIDy (a serial loop taking what passes gridDim.y's
// limit), outer ones serial loops. Axes are not merged (a producer's
// broadcast axes would not iterate in a merged loop). Producers and
// consumers are inlined into the scan loop, so the work is linear in the
// extent.
//
// With few long rows that leaves the GPU idle (a 1-D scan would run on one
// thread), so the scheduler then chooses the block scan (lower/block_scan.h):
// one block per row (the innermost other axis on BIDx, the next on BIDy,
// outer ones serial loops), the row walked in tiles of threads x items;
// each thread loads its `items` consecutive elements into registers (the
// scan's input, staged through a Local copy when it is a fusion input or
// output), the block scans the threads' partials, and each thread finishes
// its items serially from its prefix. Producers and consumers stay inlined.
//
// The choice (scanHeuristics): the block scan when the scan extent is at
// least kBlockScanMinExtent and there are fewer than blockScanMaxRows rows.
// Below that many rows the serial kernel's 128-thread blocks fill at most two
// waves of one block per SM (an H200 has 132 SMs): at most 256 of an SM's
// 2048 thread slots busy, each thread a latency-bound walk over a whole row
// whose loads a warp spreads over 32 rows. The block scan gives each row a
// block (8 resident 256-thread blocks per SM fill it at 1056 rows), reads a
// row's tile coalesced, and pays two barriers per tile. Rows shorter than
// kBlockScanMinExtent are at most a few tiles: the serial walk is short and
// needs no barriers. (Thresholds from this occupancy argument, not yet from a
// GPU measurement.) kBlockScanMinExtent is one tile of 128 threads x 4: it
// is also the shortest chunk of a chunked scan (chunked_scan.h), whose chunks
// are the block scan's rows when there are fewer rows than SMs. Threads per block: 1024 when there are fewer rows than
// SMs (each block has an SM to itself, the widest block reads the most in
// flight), else 256 (eight blocks per SM); fewer when the row is shorter
// than the tile. Items per thread: one 16-byte load of the input's type,
// vectorized where the input's layout allows (vectorize_items).
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct ScanParams : HeuristicParams {
  int64_t block_x = 128;  // threads per block along the innermost other axis
  // The next axis has more than gridDim.y's 65535 positions: BIDy takes
  // 65535 and a serial loop the rest.
  bool split_grid_y = false;
  // The block scan (see above): `block_threads` threads on TIDx, each with
  // `items_per_thread` consecutive elements per tile.
  bool block_scan = false;
  int64_t block_threads = 256;
  int64_t items_per_thread = 4;
  // The items come from a fusion input in one aligned vector load per
  // thread and tile (its scan dimension innermost and contiguous, every
  // other stride and the extent multiples of the items, the data aligned).
  bool vectorize_items = false;

  SchedulerType type() const override { return SchedulerType::Scan; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

inline constexpr int64_t kBlockScanMinExtent = 512;
// The serial kernel's row-threads in two waves of one 128-thread block per SM
// (DeviceLimits::sm_count of the target: 132 on sm_90).
inline int64_t blockScanMaxRows(int64_t sm_count) { return 2 * sm_count * 128; }

// Why the scan scheduler cannot take this (unscheduled) fusion; empty if it
// can.
std::string scanRejectReason(const Fusion& fusion);
ScanParams scanHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
void scheduleScan(Fusion& fusion, const ScanParams& params);

}  // namespace smelt
