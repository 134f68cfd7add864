#include "lower/alloc_reuse/hazards.h"

#include <algorithm>
#include <map>

#include "lower/alloc_reuse/access_footprint.h"

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

bool overwritesFollowOwnReads(const Liveness& live, const kir::Kernel& kernel,
                              const std::vector<BufferAccess>& earlier_reads,
                              const std::vector<BufferAccess>& later_writes,
                              const std::vector<const kir::ForLoop*>& key_loops, bool by_thread) {
  auto reads = footprint(live, kernel, earlier_reads, key_loops, by_thread);
  auto writes = footprint(live, kernel, later_writes, key_loops, by_thread);
  if (!reads || !writes) return false;
  const size_t loops = key_loops.size();
  // Element -> every (iteration, thread) key reading it.
  std::map<int64_t, std::vector<const std::vector<int64_t>*>> readers;
  for (const auto& [key, elements] : *reads) {
    for (int64_t e : elements) readers[e].push_back(&key);
  }
  for (const auto& [key, elements] : *writes) {
    for (int64_t e : elements) {
      auto it = readers.find(e);
      if (it == readers.end()) continue;
      for (const std::vector<int64_t>* reader : it->second) {
        bool same_thread = std::equal(reader->begin() + loops, reader->end(), key.begin() + loops);
        bool not_later = !std::lexicographical_compare(key.begin(), key.begin() + loops,
                                                       reader->begin(), reader->begin() + loops);
        if (!same_thread || !not_later) return false;
      }
    }
  }
  return true;
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
