// The block-level form of a scan's schedule (kir::BlockScan), shared by the
// passes that lower it (validate_schedule, loop_nest, allocation, indexing).
//
// A scan's output is in block form when its scan axis was split twice into
// its three innermost loop axes, [tiles, threads, items]: the row is walked
// in tiles of threads x items consecutive elements, `threads` bound to TIDx,
// `items` the consecutive elements of one thread. Its input is then a Local
// tensor computed at the threads axis (one register array of `items` per
// thread and tile). Lowered, each tile's loop body is:
//   the input's item loop    (each thread loads or computes its items)
//   BlockScan                (partials, the block-wide scan; sets `running`)
//   the output's item loop   (running = combine(running, item); out = running)
// with the running value across tiles (`carry`) set by the ScanInit before
// the tile loop.
//
// Barriers: a BlockScan holds its two __syncthreads (after the warp totals
// are stored, after they are read) as BlockReduce holds its own. Its
// workspace is touched by no other statement, so the syncs pass, which
// places barriers between statements, has nothing to add for it; the
// statement synchronizes the block, which the syncs pass and the planner
// count like any barrier.
#pragma once

#include <cstdint>
#include <optional>

#include "fusion/ir.h"

namespace smelt {

struct BlockScanAxes {
  int64_t tiles = 0;    // loop axes of the scan's output
  int64_t threads = 0;  // bound to TIDx
  int64_t items = 0;    // innermost; constant extent
};

// The output's block-form axes, or nullopt when its scan axis is not split
// that way (the serial form keeps it whole).
std::optional<BlockScanAxes> blockScanAxes(const ScanOp* scan);

}  // namespace smelt
