// The default shared-memory address planner (docs/planning.md §5, §6) and its lower bound.
//
// Guarantees:
// - planAddresses() never places two conflicting buffers on overlapping bytes
//   and honours every buffer's alignment; its total is never below
//   lowerBoundBytes() and never above the best heuristic layout it tried, nor
//   above the caller's baseline plan (e.g. the stack allocator's) when given,
//   nor (constant sizes) above the free-list and linear-scan planners'.
// - Constant sizes: best-fit and first-fit gap placement over several
//   orderings on the whole set; when that misses the lower bound, each
//   connected component of the conflict graph is planned on its own from
//   offset 0 (greedy, iterated greedy, then for components of at most
//   exact_search_max_buffers buffers an exact search over canonical
//   placements in address order: a short one that settles small components,
//   then a long iterated greedy as its finder, then the rest of the search:
//   iterative deepening on the capacity from the target, each capacity
//   searched by restarts under doubling node limits, independent groups of
//   unplaced buffers searched one after another, bounded by a node budget
//   and a time limit, so it always terminates; larger components get the
//   long iterated greedy alone). It
//   stops as soon as a layout reaches the target: the lower bound, or the
//   lowest stack of a clique under its alignments where that is higher.
//   `optimal` is set only when proved: the target is reached, or the search
//   exhausted the component that sets the total.
// - Symbolic sizes: constant-size buffers are planned as above at the bottom;
//   the symbolic ones are stacked above them in first-write order with address
//   expressions, sharing a slot only when trivially safe (identical size
//   expression and alignment, no conflict with the slot's occupants).
//   The plan says so (symbolic = true, a note).
// - lowerBoundBytes() is a true lower bound: the weight of a clique of
//   pairwise-conflicting constant-size buffers (exact for small cliques, the
//   best clique found within a budget otherwise).
#pragma once

#include <cstdint>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::alloc_reuse {

struct PlannerOptions {
  // Components of the conflict graph with at most this many buffers get the
  // exact search (at most 64); 0 disables it.
  size_t exact_search_max_buffers = 64;
  int64_t exact_search_node_budget = 200000;
  // Iterated best-fit rounds per component that misses the bound (0: none).
  int64_t heuristic_rounds = 64;
  // Where the exact search is enabled, the iterated best-fit is its finder
  // and runs longer: up to this many rounds x buffers^2 per component (and
  // 256 rounds per buffer; a round places every buffer: about 15 ms at 60
  // buffers), and at most half the time left for a component the search
  // then takes.
  int64_t search_greedy_work = int64_t{1} << 25;
  // Wall-clock limit of the iterated greedy and the exact search together;
  // the node budget is the deterministic limit, this one a safety net.
  double search_time_limit_ms = 50.0;
  bool stop_at_lower_bound = true;
  // A plan of the same buffers to beat, e.g. planStackAddresses() on the same
  // kernel: it is verified against the conflicts (smelt::Error if invalid),
  // tried first, and the result is never larger. Used when every size is
  // constant; otherwise ignored with a note.
  const AddressPlan* baseline = nullptr;
};

// Maximum-weight clique of conflicting constant-size buffers, searched among
// each buffer and its conflicting neighbours that start no later than it (for
// interval conflicts: the maximum total live bytes at any program point).
int64_t lowerBoundBytes(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts);

AddressPlan planAddresses(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                          const PlannerOptions& options = {});

}  // namespace smelt::alloc_reuse
