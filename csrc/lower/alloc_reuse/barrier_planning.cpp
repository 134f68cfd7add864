#include "lower/alloc_reuse/barrier_planning.h"

#include <algorithm>

#include "fusion/error.h"
#include "lower/alloc_reuse/hazards.h"

namespace smelt::alloc_reuse {

namespace {

std::unique_ptr<kir::BlockSync> reuseSync(const std::string& reason) {
  auto sync = std::make_unique<kir::BlockSync>();
  sync->reason = reason;
  sync->inserted_for_reuse = true;
  return sync;
}

// `stmt` with its enclosing statements, outermost first.
std::vector<const kir::Stmt*> chainTo(const Liveness& live, const kir::Stmt* stmt) {
  std::vector<const kir::Stmt*> chain = live.ancestors(stmt);
  chain.push_back(stmt);
  return chain;
}

// Best mode: the statement the barrier goes right before, or nullptr under
// divergent control flow.
const kir::Stmt* latestLegalPoint(const Liveness& live, const kir::Stmt* last_read,
                                  const kir::Stmt* first_write) {
  std::vector<const kir::Stmt*> to_read = chainTo(live, last_read);
  std::vector<const kir::Stmt*> to_write = chainTo(live, first_write);
  size_t d = 0;
  while (d + 1 < to_read.size() && d + 1 < to_write.size() && to_read[d] == to_write[d]) ++d;
  // to_write[d] is the child leading to F in the innermost common body.
  while (d + 1 < to_write.size()) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(to_write[d]);
    if (loop == nullptr || !loop->trivial) break;
    ++d;
  }
  for (size_t k = 0; k < d; ++k) {
    if (to_write[k]->kind() == kir::StmtKind::IfThenElse) return nullptr;
  }
  return to_write[d];
}

// When x's Allocate sits in a non-trivial loop M, the Shared buffer also
// allocated in M that M's next iteration writes first (the smallest first
// write before x's), or nullptr.
const kir::Buffer* nextIterationBuffer(const Liveness& live, const BufferLiveness& x) {
  const kir::ForLoop* loop = nullptr;
  for (const kir::Stmt* s : live.ancestors(x.allocate)) {
    auto* l = dynamic_cast<const kir::ForLoop*>(s);
    if (l != nullptr && !l->trivial) loop = l;
  }
  if (loop == nullptr) return nullptr;
  const kir::Buffer* next = nullptr;
  int64_t first = x.outer.first;
  for (const BufferLiveness& y : live.buffers) {
    if (y.buffer == x.buffer || y.buffer->memory != MemoryType::Shared || y.buffer->tv == nullptr ||
        live.aliasOf(y.buffer) != nullptr || !y.outer.valid() || y.outer.first >= first ||
        live.commonLoop(x.allocate, y.allocate) != loop) {
      continue;
    }
    first = y.outer.first;
    next = y.buffer;
  }
  return next;
}

}  // namespace

ReuseBarrierPlan planReuseBarriers(const kir::Kernel& kernel, const Liveness& kernel_live,
                                   SmemHazards hazards, SmemAllocator allocator) {
  std::vector<const kir::Buffer*> flagged;
  for (const auto& b : kernel.buffers) {
    if (b->memory == MemoryType::Shared && b->tv != nullptr &&
        kernel_live.aliasOf(b.get()) == nullptr && b->tv->shouldPromoteReuse()) {
      flagged.push_back(b.get());
    }
  }
  ReuseBarrierPlan result;
  Liveness live = kernel_live;  // with the barriers planned so far
  auto insert = [&](const kir::Stmt* before, const std::string& reason) {
    PlannedBarrier planned{reuseSync(reason), before};
    live = live.withBarrierBefore(before, planned.sync.get());
    result.insertions.push_back(std::move(planned));
    return result.insertions.back().sync.get();
  };
  for (const kir::Buffer* buffer : flagged) {
    const BufferLiveness x = live.of(buffer);  // a copy: insert() replaces `live`
    ReuseBarrier entry;
    entry.buffer = buffer;
    if (!x.outer.valid()) {
      entry.outcome = "never accessed";
      result.requests.push_back(entry);
      continue;
    }
    // nvFuser sees every shared buffer at kernel scope.
    auto span = [&](const BufferLiveness& b) {
      return allocator == SmemAllocator::Stack ? b.kernel_scope : b.outer;
    };
    const int64_t last = span(x).last;
    int64_t first = -1;
    for (const BufferLiveness& y : live.buffers) {
      if (y.buffer == buffer || y.buffer->memory != MemoryType::Shared || y.buffer->tv == nullptr ||
          live.aliasOf(y.buffer) != nullptr || !y.outer.valid() || span(y).first <= last) {
        continue;
      }
      if (first < 0 || span(y).first < first) {
        first = span(y).first;
        entry.next = y.buffer;
      }
    }
    bool wraps = false;  // `next` is written in the next iteration of a loop around both
    if (entry.next == nullptr && allocator == SmemAllocator::Best) {
      entry.next = nextIterationBuffer(live, x);
      wraps = entry.next != nullptr;
      if (wraps) first = live.of(entry.next).outer.first;
    }
    if (entry.next == nullptr) {
      entry.outcome = "no shared buffer is first written after its last read";
    } else if (wraps && !live.syncIn(live.of(entry.next).inner.last, x.inner.first)) {
      entry.outcome = "not inserted: " + entry.next->name + " is written in the next iteration but " +
                      "also conflicts with " + buffer->name + " within one iteration";
    } else if (allocator == SmemAllocator::Stack) {
      if (live.syncIn(last + 1, first)) {
        entry.outcome = "a barrier already lies between";
      } else {
        entry.inserted =
            insert(live.stmt_at[first], "promoteReuse " + buffer->name + " -> " + entry.next->name);
        entry.outcome = "inserted before the first write of " + entry.next->name;
      }
    } else if (hazards == SmemHazards::Precise && singleThreadBlock(kernel)) {
      entry.outcome = "reuse is thread-private (one thread per block)";
    } else if (wraps ? barrierSeparates(live, live.of(entry.next), x)
                     : live.syncIn(x.inner.last, live.of(entry.next).inner.first)) {
      // (Not wrapping: a missing back-edge barrier is the later buffer's to ask for.)
      entry.outcome = "a barrier already lies between";
    } else if (auto* at = latestLegalPoint(live, live.stmt_at[last], live.stmt_at[first])) {
      std::string target = entry.next->name + (wraps ? " (next iteration)" : "");
      entry.inserted = insert(at, "promoteReuse " + buffer->name + " -> " + target);
      entry.outcome = "inserted before the first write of " + target;
    } else {
      entry.outcome = "not inserted: the only legal point is under divergent control flow";
    }
    result.requests.push_back(entry);
  }
  return result;
}

Liveness withBarriers(Liveness live, const std::vector<PlannedBarrier>& insertions) {
  for (const PlannedBarrier& b : insertions) live = live.withBarrierBefore(b.before, b.sync.get());
  return live;
}

}  // namespace smelt::alloc_reuse
