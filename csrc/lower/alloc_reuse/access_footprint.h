// Analysis: which elements of a buffer each thread touches, by evaluating the
// kernel IR's index expressions over every loop iteration (constant extents
// only). Used to prove reuse thread-private (DESIGN §3.2: every byte of the
// old buffer is read only by the thread that later writes it in the new one)
// and in-place aliasing safe (cases A7, A8).
//
// Guarantees: footprint() returns, for each key — the values of `key_loops`'
// indices followed, when `by_thread`, by threadIdx.x/y/z — the set of element
// indices the given accesses touch, honouring statement guards, pad bounds,
// enclosing IfThenElse predicates and thread-bound loops shorter than the
// block. It returns std::nullopt (unknown) when an extent, the block size or
// an index is symbolic, when an access is a block-op workspace (shared across
// threads by construction), or when the enumeration exceeds its budget.
// Callers treat unknown as "not provable".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "lower/alloc_reuse/liveness.h"

namespace smelt::alloc_reuse {

using Footprint = std::map<std::vector<int64_t>, std::set<int64_t>>;

std::optional<Footprint> footprint(const Liveness& live, const kir::Kernel& kernel,
                                   const std::vector<BufferAccess>& accesses,
                                   const std::vector<const kir::ForLoop*>& key_loops,
                                   bool by_thread);

}  // namespace smelt::alloc_reuse
