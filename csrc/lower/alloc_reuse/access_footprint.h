// Analysis: which elements of a buffer each thread touches, by evaluating the
// kernel IR's index expressions over every loop iteration (constant extents
// only). Used to prove reuse thread-private (docs/planning.md §3: every byte of the
// old buffer is read only by the thread that later writes it in the new one)
// and in-place aliasing safe (cases A7, A8).
//
// Guarantees: footprint() returns, for each key — the values of `key_loops`'
// indices followed, when `by_thread`, by threadIdx.x/y/z — the set of element
// indices the given accesses touch, honouring statement guards, pad bounds,
// enclosing IfThenElse predicates and thread-bound loops shorter than the
// block. It returns std::nullopt (unknown) when an extent, the block size or
// an index is symbolic, when an access is a block-op workspace (shared across
// threads by construction), or when the enumeration of all the accesses
// together exceeds its budget. Callers treat unknown as "not provable".
//
// ElementTouches is the same enumeration summarized per element (which
// threads touch it, in which iterations of the key loops) — all the
// thread-private proofs need. FootprintAnalysis computes it once per access
// and key and answers a list of accesses by merging the cached summaries, so
// the aliasing analysis, which asks about the same accesses for many buffer
// pairs, enumerates each access once per kernel. Its answers equal the ones
// footprint() implies, the budget included.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "lower/alloc_reuse/liveness.h"

namespace smelt::alloc_reuse {

using Footprint = std::map<std::vector<int64_t>, std::set<int64_t>>;

std::optional<Footprint> footprint(const Liveness& live, const kir::Kernel& kernel,
                                   const std::vector<BufferAccess>& accesses,
                                   const std::vector<const kir::ForLoop*>& key_loops,
                                   bool by_thread);

// Who touches each element of a set of accesses, sorted by element: the
// thread (all zero unless by_thread) when only one does, and the earliest and
// latest iterations of the key loops (lexicographic) in which it is touched.
struct ElementTouches {
  struct Element {
    int64_t index = 0;
    std::array<int64_t, 3> thread{};
    bool several_threads = false;
  };
  size_t loops = 0;               // key loops
  std::vector<Element> elements;  // sorted by index, one per index
  // `loops` values per element, in the order of `elements`.
  std::vector<int64_t> first_iteration;
  std::vector<int64_t> last_iteration;
  int64_t leaves = 0;  // enumeration budget spent
};

class FootprintAnalysis {
 public:
  FootprintAnalysis(const Liveness& live, const kir::Kernel& kernel)
      : live_(live), kernel_(kernel) {}

  // The touches of all `accesses`; std::nullopt exactly when footprint()
  // of the same arguments is unknown.
  std::optional<ElementTouches> touches(const std::vector<BufferAccess>& accesses,
                                        const std::vector<const kir::ForLoop*>& key_loops,
                                        bool by_thread);

 private:
  // What the enumeration of one access depends on.
  using Key = std::tuple<const kir::Stmt*, const IntExpr*, const kir::Predicate*,
                         const kir::Predicate*, std::vector<const kir::ForLoop*>, bool>;
  const std::optional<ElementTouches>& ofAccess(const BufferAccess& access,
                                                const std::vector<const kir::ForLoop*>& key_loops,
                                                bool by_thread);

  const Liveness& live_;
  const kir::Kernel& kernel_;
  std::map<Key, std::optional<ElementTouches>> cache_;
};

}  // namespace smelt::alloc_reuse
