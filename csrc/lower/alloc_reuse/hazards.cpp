#include "lower/alloc_reuse/hazards.h"

#include <algorithm>

namespace smelt::alloc_reuse {

std::string toString(PairRelation relation) {
  switch (relation) {
    case PairRelation::LiveTogether: return "live together";
    case PairRelation::BarrierBetween: return "barrier between";
    case PairRelation::ThreadPrivate: return "thread-private";
    case PairRelation::NeedsBarrier: return "needs barrier";
  }
  return "?";
}

bool singleThreadBlock(const kir::Kernel& kernel) {
  for (const IntExpr& dim : kernel.launch.block) {
    if (dim.constant() != 1) return false;
  }
  return true;
}

bool barrierAfter(const Liveness& live, const BufferLiveness& x, const BufferLiveness& y) {
  return live.syncIn(x.inner.last, y.inner.first);
}

bool backEdgeBarrier(const Liveness& live, const BufferLiveness& x, const BufferLiveness& y) {
  const kir::ForLoop* loop = live.commonLoop(x.allocate, y.allocate);
  if (loop == nullptr) return true;
  int64_t start = live.positions.start.at(loop);
  int64_t end = live.positions.loop_end.at(loop);
  return live.syncIn(y.inner.last, end) || live.syncIn(start + 1, x.inner.first);
}

bool barrierSeparates(const Liveness& live, const BufferLiveness& x, const BufferLiveness& y) {
  return barrierAfter(live, x, y) && backEdgeBarrier(live, x, y);
}

PairRelation relate(const Liveness& live, const kir::Kernel& kernel, const kir::Buffer* a,
                    const kir::Buffer* b, SmemHazards mode) {
  const BufferLiveness* x = &live.of(a);
  const BufferLiveness* y = &live.of(b);
  if (x->outer.overlaps(y->outer)) return PairRelation::LiveTogether;
  if (y->outer.last < x->outer.first) std::swap(x, y);
  if (barrierSeparates(live, *x, *y)) return PairRelation::BarrierBetween;
  if (mode == SmemHazards::Precise && singleThreadBlock(kernel)) {
    return PairRelation::ThreadPrivate;
  }
  return PairRelation::NeedsBarrier;
}

bool overwritesFollowOwnReads(FootprintAnalysis& footprints,
                              const std::vector<BufferAccess>& earlier_reads,
                              const std::vector<BufferAccess>& later_writes,
                              const std::vector<const kir::ForLoop*>& key_loops, bool by_thread) {
  auto reads = footprints.touches(earlier_reads, key_loops, by_thread);
  auto writes = footprints.touches(later_writes, key_loops, by_thread);
  if (!reads || !writes) return false;
  const size_t loops = key_loops.size();
  // Every element both touch: one thread reads and writes it, and its
  // earliest write comes no sooner than its latest read.
  size_t r = 0;
  for (size_t w = 0; w < writes->elements.size(); ++w) {
    const ElementTouches::Element& written = writes->elements[w];
    while (r < reads->elements.size() && reads->elements[r].index < written.index) ++r;
    if (r == reads->elements.size()) break;
    const ElementTouches::Element& read = reads->elements[r];
    if (read.index != written.index) continue;
    if (read.several_threads || written.several_threads || read.thread != written.thread) {
      return false;
    }
    const int64_t* first_write = writes->first_iteration.data() + w * loops;
    const int64_t* last_read = reads->last_iteration.data() + r * loops;
    if (std::lexicographical_compare(first_write, first_write + loops, last_read,
                                     last_read + loops)) {
      return false;
    }
  }
  return true;
}

bool overwritesFollowOwnReads(const Liveness& live, const kir::Kernel& kernel,
                              const std::vector<BufferAccess>& earlier_reads,
                              const std::vector<BufferAccess>& later_writes,
                              const std::vector<const kir::ForLoop*>& key_loops, bool by_thread) {
  FootprintAnalysis footprints(live, kernel);
  return overwritesFollowOwnReads(footprints, earlier_reads, later_writes, key_loops, by_thread);
}

ConflictGraph sharedConflicts(const Liveness& live, const kir::Kernel& kernel,
                              const std::vector<const kir::Buffer*>& buffers, SmemHazards mode) {
  ConflictGraph graph(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      PairRelation r = relate(live, kernel, buffers[i], buffers[j], mode);
      if (r == PairRelation::LiveTogether || r == PairRelation::NeedsBarrier) {
        graph.addConflict(i, j);
      }
    }
  }
  return graph;
}

}  // namespace smelt::alloc_reuse
