// Analysis: which Shared and Local buffers can be second names for an earlier
// buffer's storage (kir::Buffer::alias_of), cases A7-A9. Changes nothing; the
// plan_shared_memory pass applies the chosen decisions (apply_plan.h).
//
// Walking buffers in Allocate order, a later buffer Y aliases the nearest
// earlier buffer X (never a block-op workspace) when
// - both have the same memory type, element count (equal expressions, so
//   symbolic sizes qualify) and element size; for Shared, Y's alignment is no
//   larger than X's; for Local, Y's vector access width in bytes is no larger
//   than X's (a register array is aligned for its own vector accesses: A8);
// - their lifetimes do not overlap, by one of two rules:
//   * outer: X's outer interval (extended by X's earlier aliases) ends before
//     Y's begins. Local: always safe (registers are per thread). Shared: a
//     barrier lies after X's last access and before Y's first, or in Precise
//     mode the block has one thread or every element Y writes is read in X
//     only by the thread writing it; and, when a non-trivial loop encloses
//     both Allocates, the same holds across its back edge from Y to X (a
//     back-edge barrier, or X's writes overwrite only what the same thread
//     read in Y — case B2: Csub shares Asub's per-thread layout);
//   * inner (in place, as nvFuser): X's last read precedes Y's first write
//     as statements inside the innermost non-trivial loop C holding both, and
//     within C each element Y writes was read in X only in the same or an
//     earlier iteration of C (and, for Shared with several threads, by the
//     same thread, with every read of X and write of Y inside C). X must
//     have no alias yet.
// - One hop only: X is not an alias and Y gets at most one base; a base may
//   have several aliases, its lifetime then covers all of them.
#pragma once

#include <string>
#include <vector>

#include "lower/alloc_reuse/liveness.h"
#include "lower/lower_context.h"

namespace smelt::alloc_reuse {

struct AliasDecision {
  const kir::Buffer* alias = nullptr;
  const kir::Buffer* base = nullptr;
  std::string rule;  // "outer" or "inner"
};

// Bytes of the widest vectorized access of a buffer's tensor (element size
// when none is vectorized).
int64_t vectorAccessBytes(const kir::Buffer* buffer);

// Candidates by the rules above among the buffers `live` does not alias yet.
std::vector<AliasDecision> findAliases(const kir::Kernel& kernel, const Liveness& live,
                                       SmemHazards mode);

}  // namespace smelt::alloc_reuse
