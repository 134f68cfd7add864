// Value types shared by every shared-memory planner: the buffers to place, the
// symmetric relation saying which pairs may not share bytes, and the plan.
//
// Guarantees:
// - Nothing here knows about kernel IR: a buffer is a name, a size, an
//   alignment and a closed live interval [first_write, last_read] of program
//   positions (the *effective* interval, computed by the liveness analysis).
// - validateBuffers() rejects malformed input (alignment not a power of two,
//   negative constant size, last_read before first_write) with a smelt::Error
//   naming the buffer.
// - ConflictGraph is symmetric and irreflexive by construction.
// - The two builders give the conflict relations of docs/planning.md §3: plain interval
//   overlap, and overlap of intervals extended to the next barrier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/int_expr.h"

namespace smelt::alloc_reuse {

inline constexpr int64_t kDefaultBufferAlignment = 16;

// One shared-memory buffer to place.
struct Buffer {
  std::string name;
  std::string dtype;  // for reports only
  IntExpr bytes;      // usually constant
  int64_t alignment = kDefaultBufferAlignment;  // a power of two
  int64_t first_write = 0;  // program position, closed interval start
  int64_t last_read = 0;    // program position, closed interval end
  int64_t creation_order = 0;  // order of the buffer's Allocate in the kernel
};

// Throws smelt::Error naming the first malformed buffer.
void validateBuffers(const std::vector<Buffer>& buffers);

bool isPowerOfTwo(int64_t value);

// Symmetric relation over buffer indices: conflicts(i, j) means buffers i and
// j must not overlap in bytes. Stored as one bit row per buffer.
class ConflictGraph {
 public:
  explicit ConflictGraph(size_t buffer_count = 0);

  size_t size() const { return rows_.size(); }
  // Records that i and j conflict (and j and i). Self-conflicts are refused.
  void addConflict(size_t i, size_t j);
  bool conflicts(size_t i, size_t j) const;
  std::vector<size_t> neighbors(size_t i) const;
  // Bit j of word j / 64 is set iff i conflicts with j.
  const std::vector<uint64_t>& row(size_t i) const { return rows_.at(i); }

 private:
  std::vector<std::vector<uint64_t>> rows_;
};

// Two buffers conflict iff their closed intervals [first_write, last_read]
// overlap (one expression that is X's last read and Y's first write counts).
ConflictGraph conflictsFromIntervals(const std::vector<Buffer>& buffers);

// The first barrier position at or after `last_read` (a synchronizing
// expression that is itself the last read counts, as in nvFuser: it reads
// before it synchronizes), or `no_barrier_end` when none follows.
int64_t barrierAfterLastRead(int64_t last_read, const std::vector<int64_t>& sorted_barriers,
                             int64_t no_barrier_end);

// docs/planning.md §3 in the conservative hazard mode: each buffer stays live from its
// first write to the next barrier at or after its last read, so X and Y may
// share bytes only when a barrier lies in [X.last_read, Y.first_write).
// `barrier_positions` need not be sorted.
ConflictGraph conflictsFromBarriers(const std::vector<Buffer>& buffers,
                                    std::vector<int64_t> barrier_positions);

// One strategy's outcome, in the order the planner tried them.
struct PlanAttempt {
  std::string strategy;
  int64_t total_bytes = 0;
};

// The result of planning: a byte offset per buffer (input order).
struct AddressPlan {
  static constexpr int kNotStacked = -1;

  std::vector<IntExpr> addresses;
  // For symbolic layouts: the index of the buffer this one sits directly on top
  // of (address == alignUp(below.address + below.bytes, alignment)), or
  // kNotStacked. verifyPlan() uses it to prove symbolic buffers disjoint.
  std::vector<int> stacked_on;
  IntExpr total_bytes;         // max over buffers of address + bytes
  int64_t lower_bound_bytes = 0;  // over constant-size buffers; never above the optimum
  IntExpr no_reuse_bytes;      // every buffer stacked in creation order
  std::string strategy;        // the strategy whose layout was kept
  std::vector<PlanAttempt> attempts;  // constant-size strategies tried, in order
  // total == lower bound (never on a symbolic plan)
  bool lower_bound_reached = false;
  // Proved optimal: the lower bound is reached or an exhaustive search proved
  // no smaller layout exists. Never set on a heuristic guess.
  bool optimal = false;
  bool symbolic = false;       // some size is symbolic: stack layout fallback
  std::vector<std::string> notes;  // human-readable remarks for the report
};

// "bound reached", "optimal" (proved above the bound), "symbolic" or
// "heuristic": the status the plan report shows.
std::string planStatusName(const AddressPlan& plan);

// Every buffer stacked in creation order with no reuse (the baseline figure).
IntExpr noReuseBytes(const std::vector<Buffer>& buffers);

// max over buffers of address + bytes; symbolic ends that provably lie below
// another buffer's end (via stacked_on) are left out of the expression.
IntExpr planTotalBytes(const std::vector<Buffer>& buffers, const std::vector<IntExpr>& addresses,
                       const std::vector<int>& stacked_on);

}  // namespace smelt::alloc_reuse
