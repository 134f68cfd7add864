// Bank-conflict analysis of the shared-memory accesses of a planned kernel
// (an analysis: it changes nothing). For every statement that touches shared
// memory, the lanes of the block's first warp are evaluated at the first two
// iterations of each enclosing loop (combinations of the outermost loops
// first, at most 16, so a stage or k-step that changes the pattern is seen), with block indices 0, and the
// accesses of lanes whose guards hold are split into the phases the
// hardware serves together (a guard term over a tensor size, which the
// analysis does not bind, is taken to hold):
//   * up to 4-byte accesses: the whole warp is one phase;
//   * 8-byte accesses: two phases of 16 lanes; 16-byte accesses (cp.async of
//     16 bytes, 16-byte vectors): four phases of 8 lanes;
//   * ldmatrix: one phase per 8 x 8 matrix (its 8 row addresses).
// In a phase, the bytes fall into 32 banks of 4-byte words; lanes reading the
// same word share it (broadcast); the phase takes as many wavefronts as the
// largest number of distinct words in one bank (its "ways"). An access is
// conflict free when every phase takes one wavefront.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/kir.h"

namespace smelt {

struct BankConflictAccess {
  const kir::Stmt* stmt = nullptr;
  int64_t position = -1;  // kir::numberPositions
  std::string buffer;
  std::string kind;       // "read", "write", "cp.async", "ldmatrix"
  int64_t bytes_per_lane = 0;
  // Worst over the evaluated iterations: the ways of the worst phase, and
  // the wavefronts the access takes against the conflict-free count.
  int64_t ways = 1;
  int64_t wavefronts = 0;
  int64_t ideal_wavefronts = 0;
  // Inside a loop that iterates (a non-trivial serial or unrolled loop).
  bool in_loop = false;
  bool conflictFree() const { return ways <= 1; }
};

struct BankConflictReport {
  std::vector<BankConflictAccess> accesses;
  // Statements whose indices could not be evaluated (a symbolic size in a
  // shared index, a symbolic block size), by position.
  std::vector<int64_t> unevaluated_positions;
  int64_t conflicted() const;  // accesses with ways > 1
  // One line per access: "position 12 ldmatrix A_s 16 B/lane: 1-way (4/4 wavefronts)".
  std::string toString() const;
};

// Needs every Shared buffer's address (run after the plan_shared_memory pass).
BankConflictReport analyzeBankConflicts(const kir::Kernel& kernel);

}  // namespace smelt
