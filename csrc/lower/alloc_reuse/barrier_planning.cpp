#include "lower/alloc_reuse/barrier_planning.h"

#include <algorithm>

#include "fusion/error.h"
#include "lower/alloc_reuse/hazards.h"
#include "lower/alloc_reuse/liveness.h"

namespace smelt::alloc_reuse {

namespace {

// The bodies and child indices leading from the kernel body to `target`.
struct Step {
  kir::StmtList* body;
  size_t index;
};

bool findPath(kir::StmtList& body, const kir::Stmt* target, std::vector<Step>& path) {
  for (size_t i = 0; i < body.size(); ++i) {
    path.push_back({&body, i});
    kir::Stmt* s = body[i].get();
    if (s == target) return true;
    if (auto* loop = dynamic_cast<kir::ForLoop*>(s)) {
      if (findPath(loop->body, target, path)) return true;
    } else if (auto* ite = dynamic_cast<kir::IfThenElse*>(s)) {
      if (findPath(ite->then_body, target, path) || findPath(ite->else_body, target, path)) {
        return true;
      }
    }
    path.pop_back();
  }
  return false;
}

std::vector<Step> pathTo(kir::Kernel& kernel, const kir::Stmt* target) {
  std::vector<Step> path;
  SMELT_INTERNAL_CHECK(findPath(kernel.body, target, path), "barrier planning: statement lost");
  return path;
}

const kir::BlockSync* insertAt(const Step& at, const std::string& reason) {
  auto sync = std::make_unique<kir::BlockSync>();
  sync->reason = reason;
  sync->inserted_for_reuse = true;
  const kir::BlockSync* raw = sync.get();
  at.body->insert(at.body->begin() + static_cast<std::ptrdiff_t>(at.index), std::move(sync));
  return raw;
}

// Best mode: where the barrier goes, or nullopt under divergent control flow.
std::optional<Step> latestLegalPoint(kir::Kernel& kernel, const kir::Stmt* last_read,
                                     const kir::Stmt* first_write) {
  std::vector<Step> to_read = pathTo(kernel, last_read);
  std::vector<Step> to_write = pathTo(kernel, first_write);
  size_t d = 0;
  while (d + 1 < to_read.size() && d + 1 < to_write.size() &&
         to_read[d].body == to_write[d].body && to_read[d].index == to_write[d].index) {
    ++d;
  }
  // to_write[d] is the child leading to F in the innermost common body.
  while (d + 1 < to_write.size()) {
    auto* loop = dynamic_cast<kir::ForLoop*>((*to_write[d].body)[to_write[d].index].get());
    if (loop == nullptr || !loop->trivial) break;
    ++d;
  }
  for (size_t k = 0; k < d; ++k) {
    if ((*to_write[k].body)[to_write[k].index]->kind() == kir::StmtKind::IfThenElse) {
      return std::nullopt;
    }
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
        y.buffer->alias_of != nullptr || !y.outer.valid() || y.outer.first >= first ||
        live.commonLoop(x.allocate, y.allocate) != loop) {
      continue;
    }
    first = y.outer.first;
    next = y.buffer;
  }
  return next;
}

}  // namespace

std::vector<ReuseBarrier> insertReuseBarriers(kir::Kernel& kernel, SmemHazards hazards,
                                              SmemAllocator allocator) {
  std::vector<const kir::Buffer*> flagged;
  for (const auto& b : kernel.buffers) {
    if (b->memory == MemoryType::Shared && b->tv != nullptr && b->alias_of == nullptr &&
        b->tv->shouldPromoteReuse()) {
      flagged.push_back(b.get());
    }
  }
  std::vector<ReuseBarrier> result;
  for (const kir::Buffer* buffer : flagged) {
    Liveness live = computeLiveness(kernel);
    const BufferLiveness& x = live.of(buffer);
    ReuseBarrier entry;
    entry.buffer = buffer;
    if (!x.outer.valid()) {
      entry.outcome = "never accessed";
      result.push_back(entry);
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
          y.buffer->alias_of != nullptr || !y.outer.valid() || span(y).first <= last) {
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
        entry.inserted = insertAt(pathTo(kernel, live.stmt_at[first]).back(),
                                  "promoteReuse " + buffer->name + " -> " + entry.next->name);
        entry.outcome = "inserted before the first write of " + entry.next->name;
      }
    } else if (hazards == SmemHazards::Precise && singleThreadBlock(kernel)) {
      entry.outcome = "reuse is thread-private (one thread per block)";
    } else if (wraps ? barrierSeparates(live, live.of(entry.next), x)
                     : live.syncIn(x.inner.last, live.of(entry.next).inner.first)) {
      // (Not wrapping: a missing back-edge barrier is the later buffer's to ask for.)
      entry.outcome = "a barrier already lies between";
    } else if (auto at = latestLegalPoint(kernel, live.stmt_at[last], live.stmt_at[first])) {
      std::string target = entry.next->name + (wraps ? " (next iteration)" : "");
      entry.inserted = insertAt(*at, "promoteReuse " + buffer->name + " -> " + target);
      entry.outcome = "inserted before the first write of " + target;
    } else {
      entry.outcome = "not inserted: the only legal point is under divergent control flow";
    }
    result.push_back(entry);
  }
  return result;
}

}  // namespace smelt::alloc_reuse
