// Analysis: the barriers promoteReuse() asks for (docs/planning.md §4). Reads
// the kernel and a liveness view, changes nothing: it returns the barriers to
// insert, which apply_plan.h inserts with the rest of the plan.
// For each Shared tensor flagged with promoteReuse (non-alias in the view,
// accessed), in Allocate order, each request seeing the barriers planned
// before it (Liveness::withBarrierBefore):
//   L = its outer last read (aliases included); F = the smallest outer first
//   write after L among the other non-alias Shared tensor buffers (block-op
//   workspaces are not candidates, as in nvFuser). In Stack mode both use the
//   kernel-scope intervals nvFuser sees (liveness.h).
// SmemAllocator::Best:
//   * nothing when no buffer is first written after L (no reuse needs it),
//     when in Precise mode the block has one thread (the reuse is
//     thread-private), or when an existing barrier already lies after X's
//     last access and before the next buffer's first (hazards.h; a barrier
//     missing on a loop's back edge is the later buffer's to promote);
//   * otherwise one kir::BlockSync (inserted_for_reuse, reason "promoteReuse
//     X -> Y") at the latest legal point before F outside inner loops: in the
//     innermost body holding both X's last read and F's statement, right
//     before the child that leads to F, descending into trivial loops (a
//     TIDx-bound loop runs once per thread: case A6) but never into a
//     non-trivial loop or an IfThenElse. No barrier is inserted under an
//     IfThenElse (divergent control flow): the request is then recorded as
//     unmet;
//   * when no buffer follows X but X's Allocate sits in a non-trivial loop M,
//     the buffer also allocated in M that M's next iteration writes first
//     takes the role of the next buffer (F is then its first write, before
//     X's): the barrier covers M's back edge and goes at the latest legal
//     point before F in the body, as above; not when that buffer and X also
//     lack a barrier within one iteration (its own promotion would be needed).
// SmemAllocator::Stack (nvFuser, exactly): a barrier at a position in (L, F)
//   (loop-end positions included; one exactly at L does not count) meets the
//   request; otherwise a BlockSync goes immediately before the statement at F,
//   in whatever scope it sits.
// At most one barrier per flagged tensor; every inserted one is reported.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lower/alloc_reuse/liveness.h"
#include "lower/kir.h"
#include "lower/lower_context.h"

namespace smelt::alloc_reuse {

struct ReuseBarrier {
  const kir::Buffer* buffer = nullptr;  // the promoted buffer
  const kir::Buffer* next = nullptr;    // first written after it (nullptr: none)
  const kir::BlockSync* inserted = nullptr;  // nullptr when no barrier was inserted
  std::string outcome;                  // why inserted, or why not
};

// A barrier to insert right before `before`, a statement of the kernel.
struct PlannedBarrier {
  std::unique_ptr<kir::BlockSync> sync;
  const kir::Stmt* before = nullptr;
};

struct ReuseBarrierPlan {
  std::vector<ReuseBarrier> requests;      // one per flagged buffer
  std::vector<PlannedBarrier> insertions;  // in the order they are decided
};

// `live` is the kernel's liveness with the aliases the barriers must respect.
ReuseBarrierPlan planReuseBarriers(const kir::Kernel& kernel, const Liveness& live,
                                   SmemHazards hazards, SmemAllocator allocator);

// `live` after every planned insertion, in order.
Liveness withBarriers(Liveness live, const std::vector<PlannedBarrier>& insertions);

}  // namespace smelt::alloc_reuse
