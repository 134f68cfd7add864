// Internal to the address planner: the exact search over canonical layouts
// of one constant-size placement problem (placement_problem.h).
//
// Exact search over canonical layouts. Any layout can be pushed down until,
// taken in address order, every buffer sits at its lowest feasible offset
// given the buffers before it: at 0 or right above (aligned) a conflicting
// one. The search builds exactly those sequences (offsets non-decreasing,
// ties by index) under a capacity: every layout it finds fits the capacity,
// and a search that ends without one proves that none does. run() first
// deepens from the target (p.lower_bound), where the section bounds prune
// hardest: when no layout fits, the least bound among the pruned branches is
// a proved lower bound and the next capacity, so the first layout found is
// optimal. Then (budget left over from a deepening that could not settle the
// target) branch and bound from the incumbent: capacity one byte below the
// best layout so far, until a search fails (that layout is optimal) or the
// budget is spent.
// Pruning, all valid for every completion of a partial layout:
// - a buffer that fits entirely below the last offset can never be placed in
//   address order (its spot stays free): the branch duplicates another;
// - every unplaced buffer starts at or above the last offset, hence above
//   every placed buffer it conflicts with (`above`), and ends its size higher;
// - the unplaced members of a section are stacked above its floor (the
//   highest end of its placed members), the last offset and the lowest start
//   any of them can take;
// - twins (same size, alignment and conflicts) are placed in index order.
// Decomposition: when the unplaced buffers fall into groups that conflict
// with no other group, each group's placement depends only on the placed
// buffers, so the groups are searched one after another (a failing group
// fails the branch) instead of in every interleaving: that turns the
// product of the groups' search trees into their sum, which is what lets a
// proof of infeasibility finish on sets of dozens of buffers.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "lower/alloc_reuse/placement_problem.h"

namespace smelt::alloc_reuse::placement {

struct ExactSearchResult {
  Layout best;            // the incumbent, or a lower layout found
  bool complete = false;  // finished within its budget: `best` is optimal
  int64_t nodes = 0;
  int64_t splits = 0;  // nodes whose unplaced buffers fell into independent groups
};

// Searches `p` (at most kMaxSearchBuffers buffers, `adjacency` and `sections`
// its own) for a layout below `incumbent`, within `node_budget` nodes and
// `deadline`.
ExactSearchResult exactSearch(const Problem& p, const std::vector<uint64_t>& adjacency,
                              const Sections& sections, Layout incumbent, int64_t node_budget,
                              std::chrono::steady_clock::time_point deadline);

}  // namespace smelt::alloc_reuse::placement
