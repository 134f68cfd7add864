// Analysis: which pairs of Shared buffers may share bytes without a new
// barrier (docs/planning.md §3). Reads liveness, changes nothing.
//
// For buffers X and Y whose outer intervals (liveness.h) do not overlap, X
// the earlier one, sharing is safe when
// - a synchronizing statement (BlockSync, BlockReduce, BlockBroadcast) sits
//   at a position in [X.inner.last, Y.inner.first): after X's last access in
//   program order — one that is itself X's last read counts, it reads before
//   it synchronizes — so even when X's interval widens to a loop, a barrier
//   inside the loop after X's last access (a K loop's closing WAR barrier)
//   is passed by every thread in the final iteration before any writes Y;
//   and, when a non-trivial loop M encloses both Allocates (both buffers live
//   again in M's next iteration), one also sits on the back edge: in
//   [Y.inner.last, end of M) or in (start of M, X.inner.first). As in
//   nvFuser, a barrier inside a loop is trusted to run (trip count >= 1); or
// - in SmemHazards::Precise, the reuse is thread-private: the block has one
//   thread (the only case that holds at any relative offset).
// At one address (an alias, aliasing.h) Precise also accepts identical
// per-thread bytes: every element Y writes is read in X only by the thread
// that writes it in Y (overwritesFollowOwnReads). Overlapping intervals always
// conflict. Conservative is nvFuser's rule: barriers only.
#pragma once

#include <string>
#include <vector>

#include "lower/alloc_reuse/access_footprint.h"
#include "lower/alloc_reuse/buffer_set.h"
#include "lower/alloc_reuse/liveness.h"
#include "lower/lower_context.h"

namespace smelt::alloc_reuse {

enum class PairRelation {
  LiveTogether,    // outer intervals overlap
  BarrierBetween,  // an existing barrier separates them (back edge included)
  ThreadPrivate,   // Precise mode, one-thread block
  NeedsBarrier,    // disjoint in time, but another thread may still read X
};

std::string toString(PairRelation relation);

// True when the launch has one thread per block.
bool singleThreadBlock(const kir::Kernel& kernel);

// The relation of two (non-alias) buffers with valid intervals, any order.
PairRelation relate(const Liveness& live, const kir::Kernel& kernel, const kir::Buffer* a,
                    const kir::Buffer* b, SmemHazards mode);

// True when, with both buffers at one address and one element size, every
// element that `later_writes` overwrite is read by `earlier_reads` only in
// the thread that overwrites it (any thread when !by_thread: registers) and
// in an iteration of `key_loops` no later than the overwrite's (so program
// order puts the read first). Provable by footprints (access_footprint.h)
// only; unknown means false. The analysis caches each access's footprint
// for the next question about the same kernel.
bool overwritesFollowOwnReads(FootprintAnalysis& footprints,
                              const std::vector<BufferAccess>& earlier_reads,
                              const std::vector<BufferAccess>& later_writes,
                              const std::vector<const kir::ForLoop*>& key_loops, bool by_thread);
bool overwritesFollowOwnReads(const Liveness& live, const kir::Kernel& kernel,
                              const std::vector<BufferAccess>& earlier_reads,
                              const std::vector<BufferAccess>& later_writes,
                              const std::vector<const kir::ForLoop*>& key_loops, bool by_thread);

// The barrier rule above on explicit intervals (x before y), and its two
// halves: a barrier after x's last access and before y's first; a barrier on
// the back edge of a non-trivial loop enclosing both Allocates (true when
// there is no such loop).
bool barrierSeparates(const Liveness& live, const BufferLiveness& x, const BufferLiveness& y);
bool barrierAfter(const Liveness& live, const BufferLiveness& x, const BufferLiveness& y);
bool backEdgeBarrier(const Liveness& live, const BufferLiveness& x, const BufferLiveness& y);

// Conflicts among `buffers` (Shared, non-alias): every pair whose relation
// is LiveTogether or NeedsBarrier.
ConflictGraph sharedConflicts(const Liveness& live, const kir::Kernel& kernel,
                              const std::vector<const kir::Buffer*>& buffers, SmemHazards mode);

}  // namespace smelt::alloc_reuse
