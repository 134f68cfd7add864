// Analysis: live intervals of every Shared and Local buffer of a kernel IR
// (docs/planning.md §1). Reads the kernel, changes nothing.
//
// The shared-memory planner computes it once (ownLiveness) on the kernel as
// the planner receives it, then derives the views its decisions read instead
// of changing the kernel and computing again: withAliases() is the liveness of
// the kernel with other aliases set, withBarrierBefore() the liveness after
// one more barrier. Each view equals computeLiveness() of the kernel so
// changed (the verification at the end recomputes it from the final kernel).
//
// Guarantees, with positions from kir::numberPositions (loop-end markers for
// non-trivial loops only):
// - Accesses: a statement writes its output (and a block op its workspace)
//   and reads its operands; a reduction's output (ReduceInit, ReduceStep,
//   BlockReduce) also counts as read where it is written, since it
//   accumulates; a workspace is written and read by its block op.
// - inner interval = [first access, last access] over statement positions;
//   outer interval = the same after widening each access to the outermost
//   NON-TRIVIAL loop that contains the access but not the buffer's Allocate
//   (start of that loop for the start, its end marker for the end). Trivial
//   loops (thread/block bound, vectorized, trip count 1) never widen. So a
//   touch is attributed at the scope of the buffer's own Allocate, never at
//   an outer loop around it (a serial loop around a whole GEMM body keeps
//   each iteration's tiles separately reusable — case B2).
// - kernel_scope interval = the outer interval as nvFuser sees a kernel-scope
//   allocation: each access widened to the outermost non-trivial loop that
//   contains it, wherever the Allocate is (the stack allocator's input).
// - An alias (Buffer::alias_of, or the view's alias map) keeps its own
//   intervals and extends its base's: the base's intervals cover every alias.
// - Block-op workspaces have no Allocate: they are live at their statement
//   only (never widened) and listed after the allocated buffers.
// - A buffer without accesses has no valid interval (first == -1).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "lower/kir.h"

namespace smelt::alloc_reuse {

struct LiveInterval {
  int64_t first = -1;  // first write (first access)
  int64_t last = -1;   // last read (last access)
  bool valid() const { return first >= 0; }
  bool overlaps(const LiveInterval& other) const {
    return first <= other.last && other.first <= last;
  }
};

// One access of a buffer by one statement.
struct BufferAccess {
  const kir::Stmt* stmt = nullptr;
  const kir::Buffer* buffer = nullptr;
  bool write = false;
  bool read = false;
  // Element index; nullptr for a workspace (every thread uses its own slots,
  // then the block op reads across threads).
  const IntExpr* index = nullptr;
  const kir::Predicate* guard = nullptr;      // the statement's predicate
  const kir::Predicate* in_bounds = nullptr;  // an operand's pad bounds
};

// Every buffer access of one statement (none for loops, ifs, allocations
// and syncs).
std::vector<BufferAccess> accessesOf(const kir::Stmt* stmt);

struct BufferLiveness {
  const kir::Buffer* buffer = nullptr;
  // The buffer's Allocate; for a block-op workspace, which has none and lives
  // only during its statement, the block op itself.
  const kir::Stmt* allocate = nullptr;
  int64_t creation_order = 0;  // Allocates in kernel order, then workspaces
  LiveInterval inner;
  LiveInterval outer;
  LiveInterval kernel_scope;
  std::vector<BufferAccess> accesses;  // program order
};

// Alias -> base: the buffers that are second names for a base's storage.
using AliasMap = std::unordered_map<const kir::Buffer*, const kir::Buffer*>;

struct Liveness {
  kir::ProgramPositions positions;
  // Enclosing ForLoop / IfThenElse of each statement (nullptr at kernel scope).
  std::unordered_map<const kir::Stmt*, const kir::Stmt*> parent;
  // The statement at each position (loop-end markers map to their loop).
  std::vector<const kir::Stmt*> stmt_at;
  std::vector<BufferLiveness> buffers;  // Shared and Local, see creation_order
  std::vector<int64_t> sync_positions;  // block-synchronizing statements, sorted
  int64_t end_position = 0;             // the last position of the kernel
  AliasMap aliases;                     // as this view sees them

  const BufferLiveness& of(const kir::Buffer* buffer) const;
  // The buffer's base in this view, or nullptr.
  const kir::Buffer* aliasOf(const kir::Buffer* buffer) const {
    auto it = aliases.find(buffer);
    return it == aliases.end() ? nullptr : it->second;
  }
  // Enclosing statements of `stmt`, outermost first.
  std::vector<const kir::Stmt*> ancestors(const kir::Stmt* stmt) const;
  // The innermost non-trivial loop enclosing both statements, or nullptr.
  const kir::ForLoop* commonLoop(const kir::Stmt* a, const kir::Stmt* b) const;
  // True when a synchronizing statement sits at a position in [from, to).
  bool syncIn(int64_t from, int64_t to) const;

  // This view (which has no aliases) with `aliases` set: each base's
  // intervals widened to cover its aliases'.
  Liveness withAliases(const AliasMap& aliases) const;
  // This view after `sync` is inserted right before `before` (in its body):
  // `sync` takes `before`'s position and every later position moves up one.
  Liveness withBarrierBefore(const kir::Stmt* before, const kir::BlockSync* sync) const;

 private:
  std::unordered_map<const kir::Buffer*, size_t> index_;
  friend Liveness ownLiveness(const kir::Kernel& kernel);
};

// Each buffer's own intervals: the kernel's alias_of ignored.
Liveness ownLiveness(const kir::Kernel& kernel);
// The kernel's alias_of settings.
AliasMap kernelAliases(const kir::Kernel& kernel);
// The kernel as it stands, aliases included.
Liveness computeLiveness(const kir::Kernel& kernel);

}  // namespace smelt::alloc_reuse
