// The multi-block scan (issue 44). The block scan (scan.h) gives each row one
// block, so a scan of fewer rows than SMs (a 1-D cumsum of 10^5 elements, or
// [2, 10^6]) leaves most of the GPU idle. Before segmentation such a scan is
// rewritten, in a copy of the fusion, into a reduce-then-scan over chunks of
// its row, in ops other schedulers already take (SchedulerEntry::rewrite,
// which the segmenter applies; it names no scheduler):
//   x [.., N, ..]   in the accumulator type (16-bit floats in float, bool in
//                   int32), padded with the combine's identity to C * L and
//                   viewed as [.., C, L, ..] (one view per reader)
//   totals [.., C]  the combine over each chunk          (reduction scheduler)
//   prefix [.., C]  the identity, then the inclusive scan of totals 0..C-2:
//                   each chunk's exclusive prefix          (scan scheduler)
//   out [.., C, L]  each chunk's block scan (R x C rows fill the GPU),
//                   combined element-wise with its chunk's prefix
//   -> cast back, viewed [.., C * L, ..], cropped to N: the scan's output.
// Guarantees: the result is the scan's up to the order of floating sums and
// products (as the block scan's: a chunk's product that underflows to 0
// times an infinite prefix is NaN where the serial one stays infinite); NaN propagates through every combine (max
// and min totals, maximum/minimum, log-add-exp), logcumsumexp keeps -inf
// and +inf as torch does, integers stay exact in their type (sums and
// products of the totals in int64, cast back wrapping as the serial scan).
// Only scans whose every extent is a constant are rewritten (splitting a
// symbolic extent would need a divisibility check at run time); others keep
// the one-block-per-row scan. The scan's element-wise producers and
// consumers are no longer in its kernel: they run in kernels of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "fusion/fusion.h"
#include "scheduler/runtime_info.h"

namespace smelt {

// A chunk is at least a tile of 128 threads x 4 items (the block scan's
// shortest row, kBlockScanMinExtent) and at most 8 tiles of 256 x 4: a
// longer row gets more chunks rather than longer ones, so each of the chunk
// scan's blocks walks a few tiles and the grid grows past one block per SM.
inline constexpr int64_t kMaxScanChunk = 8192;

struct ScanChunking {
  int64_t chunks = 1;  // C per row
  int64_t length = 0;  // L; chunks * length >= extent, the rest is padding
};

// How a scan of `rows` rows of `extent` elements is chunked on a GPU of
// `sm_count` SMs, or nullopt when the block scan's one block per row already
// gives every SM a block (rows >= sm_count) or the chunks would be shorter
// than kBlockScanMinExtent. At least ceil(sm_count / rows) chunks per row;
// among up to twice that many, a count dividing the extent (no padding),
// with a length a multiple of 4 (vector loads) where there is one; else
// that many, the length rounded up to a multiple of 4 and padded.
// (Thresholds from this occupancy argument; no GPU measurement yet.)
std::optional<ScanChunking> scanChunking(int64_t rows, int64_t extent, int64_t sm_count);

// A copy of `fusion` with every scan that scanChunking chunks (for the
// target of `runtime`) rewritten as described above; nullptr when none is.
// The copy's inputs and outputs stand for the fusion's, in order.
std::unique_ptr<Fusion> chunkLongScans(const Fusion& fusion, const RuntimeInfo& runtime);

}  // namespace smelt
