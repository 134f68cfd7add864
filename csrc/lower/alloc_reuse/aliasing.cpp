#include "lower/alloc_reuse/aliasing.h"

#include <algorithm>
#include <unordered_set>

#include "lower/alloc_reuse/hazards.h"

namespace smelt::alloc_reuse {

int64_t vectorAccessBytes(const kir::Buffer* buffer) {
  int64_t elements = 1;
  if (buffer->tv != nullptr) {
    for (int64_t k = 0; k < buffer->tv->nDims(); ++k) {
      const IterDomain* id = buffer->tv->axis(k);
      if (id->parallelType() != ParallelType::Vectorize) continue;
      elements = std::max(elements, id->extent().constant().value_or(1));
    }
  }
  return elements * dataTypeSize(buffer->dtype);
}

namespace {

class AliasFinder {
 public:
  AliasFinder(const kir::Kernel& kernel, const Liveness& live, SmemHazards mode)
      : kernel_(kernel),
        live_(live),
        mode_(mode),
        state_(live.buffers),
        footprints_(live, kernel) {}

  std::vector<AliasDecision> run() {
    for (size_t y = 0; y < state_.size(); ++y) {
      if (!candidate(y)) continue;
      for (size_t x = y; x-- > 0;) {
        if (!candidate(x) || aliases_.count(x)) continue;
        std::string rule = lifetimeRule(x, y);
        if (rule.empty() || !compatible(x, y)) continue;
        decisions_.push_back({state_[y].buffer, state_[x].buffer, rule});
        aliases_.insert(y);
        has_alias_.insert(x);
        members_[x].push_back(y);
        LiveInterval& inner = state_[x].inner;
        LiveInterval& outer = state_[x].outer;
        inner = {std::min(inner.first, state_[y].inner.first),
                 std::max(inner.last, state_[y].inner.last)};
        outer = {std::min(outer.first, state_[y].outer.first),
                 std::max(outer.last, state_[y].outer.last)};
        break;
      }
    }
    return decisions_;
  }

 private:
  bool candidate(size_t i) const {
    const BufferLiveness& b = state_[i];
    return b.buffer->tv != nullptr && live_.aliasOf(b.buffer) == nullptr && b.inner.valid() &&
           (b.buffer->memory == MemoryType::Shared || b.buffer->memory == MemoryType::Local);
  }

  bool compatible(size_t x, size_t y) const {
    const kir::Buffer* bx = state_[x].buffer;
    const kir::Buffer* by = state_[y].buffer;
    if (bx->memory != by->memory || dataTypeSize(bx->dtype) != dataTypeSize(by->dtype) ||
        !bx->elements.sameAs(by->elements)) {
      return false;
    }
    if (bx->memory == MemoryType::Shared) return by->alignment <= bx->alignment;
    return vectorAccessBytes(by) <= vectorAccessBytes(bx);
  }

  // Reads (or writes) of x's storage: x's own and its aliases'.
  std::vector<BufferAccess> accessesOf(size_t x, bool writes) const {
    std::vector<BufferAccess> result;
    std::vector<size_t> all = {x};
    auto it = members_.find(x);
    if (it != members_.end()) all.insert(all.end(), it->second.begin(), it->second.end());
    for (size_t i : all) {
      for (const BufferAccess& a : state_[i].accesses) {
        if (writes ? a.write : a.read) result.push_back(a);
      }
    }
    return result;
  }

  static std::vector<BufferAccess> writes(const BufferLiveness& b) {
    std::vector<BufferAccess> result;
    for (const BufferAccess& a : b.accesses) {
      if (a.write) result.push_back(a);
    }
    return result;
  }

  static std::vector<BufferAccess> reads(const BufferLiveness& b) {
    std::vector<BufferAccess> result;
    for (const BufferAccess& a : b.accesses) {
      if (a.read) result.push_back(a);
    }
    return result;
  }

  // At one address, thread-private in Precise mode: one thread per block, or
  // every overwritten element read only by the thread overwriting it.
  bool privateAtOneAddress(const std::vector<BufferAccess>& old_reads,
                           const std::vector<BufferAccess>& new_writes) const {
    return mode_ == SmemHazards::Precise &&
           (singleThreadBlock(kernel_) ||
            overwritesFollowOwnReads(footprints_, old_reads, new_writes, {}, true));
  }

  // "outer", "inner", or "" when the lifetimes may overlap.
  std::string lifetimeRule(size_t x, size_t y) const {
    const BufferLiveness& bx = state_[x];
    const BufferLiveness& by = state_[y];
    if (bx.outer.last < by.outer.first) {
      if (bx.buffer->memory == MemoryType::Local) return "outer";
      // y overwrites x's bytes after x's reads, and (in a loop around both)
      // x's next iteration overwrites y's after y's reads.
      bool forward = barrierAfter(live_, bx, by) ||
                     privateAtOneAddress(accessesOf(x, false), writes(by));
      bool back = backEdgeBarrier(live_, bx, by) ||
                  privateAtOneAddress(reads(by), accessesOf(x, true));
      return forward && back ? "outer" : "";
    }
    if (has_alias_.count(x) || bx.inner.last >= by.inner.first) return "";
    const kir::Stmt* last_read = live_.stmt_at[bx.inner.last];
    const kir::Stmt* first_write = live_.stmt_at[by.inner.first];
    const kir::ForLoop* loop = live_.commonLoop(last_read, first_write);
    if (loop == nullptr) return "";
    std::vector<const kir::ForLoop*> key_loops;
    for (const kir::Stmt* s : live_.ancestors(loop)) {
      auto* l = dynamic_cast<const kir::ForLoop*>(s);
      if (l != nullptr && !l->trivial) key_loops.push_back(l);
    }
    key_loops.push_back(loop);
    int64_t start = live_.positions.start.at(loop);
    int64_t end = live_.positions.loop_end.at(loop);
    auto inside = [&](const BufferAccess& a) {
      int64_t p = live_.positions.start.at(a.stmt);
      return start < p && p < end;
    };
    std::vector<BufferAccess> reads_in, writes_in;
    bool all_inside = true;
    for (const BufferAccess& a : bx.accesses) {
      if (!a.read) continue;
      if (inside(a)) reads_in.push_back(a);
      else all_inside = false;
    }
    for (const BufferAccess& a : writes(by)) {
      if (inside(a)) writes_in.push_back(a);
      else all_inside = false;
    }
    bool registers = bx.buffer->memory == MemoryType::Local;
    if (!registers && !singleThreadBlock(kernel_) && !all_inside) return "";
    return overwritesFollowOwnReads(footprints_, reads_in, writes_in, key_loops, !registers)
               ? "inner"
               : "";
  }

  const kir::Kernel& kernel_;
  const Liveness& live_;
  SmemHazards mode_;
  std::vector<BufferLiveness> state_;  // intervals of bases grow with their aliases
  std::unordered_set<size_t> aliases_;
  std::unordered_set<size_t> has_alias_;
  std::unordered_map<size_t, std::vector<size_t>> members_;
  std::vector<AliasDecision> decisions_;
  // Footprints of accesses asked about for several pairs, computed once.
  mutable FootprintAnalysis footprints_;
};

}  // namespace

std::vector<AliasDecision> findAliases(const kir::Kernel& kernel, const Liveness& live,
                                       SmemHazards mode) {
  return AliasFinder(kernel, live, mode).run();
}

}  // namespace smelt::alloc_reuse
