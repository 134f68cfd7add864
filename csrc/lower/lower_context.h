// State shared by the lowering passes of one fusion: the kernel being built
// and the maps from fusion objects to kernel-IR objects. Each pass reads what
// earlier passes produced (see passes.cpp for the order).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fusion/device_limits.h"
#include "fusion/fusion.h"
#include "fusion/transform_replay.h"
#include "lower/kir.h"

namespace smelt {

// When two shared buffers may share bytes without a new barrier (docs/planning.md §3).
enum class SmemHazards {
  Precise,       // a barrier between them, or the reuse is provably thread-private
  Conservative,  // a barrier between them (nvFuser's rule)
};

// How shared-memory addresses are assigned (docs/planning.md §5).
enum class SmemAllocator {
  Best,   // best-fit over several orderings + exact search, never worse than Stack
  Stack,  // nvFuser's stack allocator and promoteReuse rule, reproduced exactly
};

struct LowerOptions {
  // The per-block shared-memory limit (sm_90's by default). Set to 48 KiB to
  // forbid the opt-in dynamic shared memory above the static limit.
  int64_t max_shared_memory_bytes = DeviceLimits::sm90().max_shared_memory_per_block;
  SmemHazards smem_hazards = SmemHazards::Precise;
  SmemAllocator smem_allocator = SmemAllocator::Best;
  // Every Shared buffer is aligned to at least this many bytes (a power of
  // two). 16 B suffices for vector accesses; nvFuser uses 128 B.
  int64_t min_shared_alignment = 16;
};

struct LoweringContext {
  Fusion* fusion = nullptr;
  LowerOptions options;
  kir::Kernel kernel;
  // Which loop each loop axis runs in; validate_schedule computes it once
  // the compute positions are known to be valid.
  std::optional<LoopOwners> loop_owners;
  // The loop that runs loop axis `axis` of a tensor that owns it (see loopOwner).
  std::map<std::pair<const TensorView*, int64_t>, kir::ForLoop*> loops;
  // Loops that run some of a tensor's loop axes for one statement only: a
  // reduction's init runs before its reduction loops, so iteration axes nested
  // inside those loops get copies around the init (statement -> axis -> loop).
  std::map<const kir::Stmt*, std::map<int64_t, kir::ForLoop*>> statement_loops;
  std::map<const TensorView*, kir::Buffer*> buffers;
  // The register holding each scan's running value (kir::ScanInit).
  std::map<const ScanOp*, kir::Buffer*> scan_carries;
  // Tensors the circular_buffer pass pipelined (their barriers are its own).
  std::set<const TensorView*> circular_buffered;

  // The tensor and axis that own the loop `tv`'s axis `axis` runs in.
  std::pair<const TensorView*, int64_t> loopOwner(const TensorView* tv, int64_t axis) const;
  // The loop of `tv`'s loop axis `axis` (following compute-at sharing), or
  // the statement's own copy of it when `stmt` has one.
  kir::ForLoop* loopOf(const TensorView* tv, int64_t axis, const kir::Stmt* stmt = nullptr) const;
  // The index value of that loop: the loop variable, the thread/block index,
  // or 0 for a loop of one iteration.
  IntExpr loopIndex(const TensorView* tv, int64_t axis, const kir::Stmt* stmt = nullptr) const;
  kir::Buffer* bufferOf(const TensorView* tv) const;
};

}  // namespace smelt
