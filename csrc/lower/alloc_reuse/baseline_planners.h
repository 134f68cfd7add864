// Two textbook shared-memory planners: baselines for the planner comparison
// table (bench_case_plans) and the planning-time benchmark (bench_alloc_plan),
// and incumbents inside planAddresses(), which is therefore never worse than
// either of them on constant sizes.
//
// Both walk the buffers in program order (first write, then creation order)
// and run on the same abstract input as the real planner: the buffers and the
// hazard-aware ConflictGraph of SharedMemoryPlan (or of a random workload).
//
// Why they take the conflict graph and not just the intervals: in smelt two
// buffers may conflict although their intervals are disjoint (conservative
// hazards: no barrier between them; precise hazards: another thread may still
// read X when Y is written). A baseline that freed a buffer at its last read
// would produce plans that verifyPlan() rejects. So each buffer is *released*
// (its bytes become reusable) only once every buffer it conflicts with has
// been placed: releaseOrder() below. Bytes then pass only between buffers
// that do not conflict, and — because a release happens after the last
// conflicting placement — not between two earlier occupants of the same bytes
// and a later one either. With interval conflicts this is freeing at the
// last read.
//
// Guarantees (constant sizes only; a symbolic size is a smelt::Error): every
// address is a multiple of the buffer's alignment, no two conflicting buffers
// overlap, and total_bytes / no_reuse_bytes / lower_bound_bytes are filled in
// as the real planner fills them, so verifyPlan() checks the result.
#pragma once

#include <cstdint>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::baselines {

// Buffer indices sorted by (first_write, creation_order, index).
std::vector<size_t> programOrder(const std::vector<alloc_reuse::Buffer>& buffers);

// released_before[r]: the buffers whose bytes become reusable just before the
// r-th buffer of `order` is placed (r in [0, order.size()]).
std::vector<std::vector<size_t>> releaseOrder(const std::vector<size_t>& order,
                                              const alloc_reuse::ConflictGraph& conflicts);

// TVM-style free list (after the storage-entry planner of TVM's
// MergeSharedMemoryAllocations; written from its description, not its code).
// Memory is a set of blocks. A new buffer takes, whole, the smallest free
// block at least its size and at most kMatchRange times its size (no split:
// the rest of the block is wasted while it lives); failing that, it merges
// the largest smaller free blocks, side by side, into a new block until they
// cover its size (growing the block if they do not); failing that, a new
// block. A released buffer returns its block to the free list. At the end the
// top-level blocks are laid out one after another.
inline constexpr int64_t kMatchRange = 16;
alloc_reuse::AddressPlan planFreeListAddresses(const std::vector<alloc_reuse::Buffer>& buffers,
                                               const alloc_reuse::ConflictGraph& conflicts);
// The free list's byte offsets only (input order), without the plan figures.
std::vector<int64_t> freeListOffsets(const std::vector<alloc_reuse::Buffer>& buffers,
                                     const alloc_reuse::ConflictGraph& conflicts);

// Linear scan in program order: each buffer goes to the lowest aligned
// address that overlaps no buffer still unreleased (first fit over the live
// set; it never moves a placed buffer).
alloc_reuse::AddressPlan planLinearScanAddresses(const std::vector<alloc_reuse::Buffer>& buffers,
                                                 const alloc_reuse::ConflictGraph& conflicts);
std::vector<int64_t> linearScanOffsets(const std::vector<alloc_reuse::Buffer>& buffers,
                                       const alloc_reuse::ConflictGraph& conflicts);

}  // namespace smelt::baselines
