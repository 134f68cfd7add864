#include "lower/alloc_reuse/liveness.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "fusion/error.h"

namespace smelt::alloc_reuse {

std::vector<BufferAccess> accessesOf(const kir::Stmt* stmt) {
  std::vector<BufferAccess> result;
  auto add = [&](const kir::Access& a, bool write, bool read, const kir::Predicate* guard,
                 const kir::Predicate* in_bounds = nullptr) {
    result.push_back({stmt, a.buffer, write, read, &a.index, guard, in_bounds});
  };
  auto workspace = [&](const kir::Buffer* ws) {
    if (ws != nullptr) result.push_back({stmt, ws, true, true, nullptr, nullptr, nullptr});
  };
  switch (stmt->kind()) {
    case kir::StmtKind::Compute: {
      auto* c = static_cast<const kir::Compute*>(stmt);
      for (const kir::Operand& op : c->operands) {
        if (op.access) add(*op.access, false, true, &c->predicate, &op.in_bounds);
      }
      add(c->out, true, false, &c->predicate);
      break;
    }
    case kir::StmtKind::ReduceInit: {
      auto* r = static_cast<const kir::ReduceInit*>(stmt);
      add(r->out, true, true, &r->predicate);
      break;
    }
    case kir::StmtKind::BlockScan: {
      auto* b = static_cast<const kir::BlockScan*>(stmt);
      add(b->items_in, false, true, nullptr);
      add(b->carry, true, true, nullptr);
      add(b->running, true, false, nullptr);
      workspace(b->workspace);
      break;
    }
    case kir::StmtKind::ScanInit: {
      auto* r = static_cast<const kir::ScanInit*>(stmt);
      add(r->carry, true, false, nullptr);
      break;
    }
    case kir::StmtKind::ReduceStep: {
      auto* r = static_cast<const kir::ReduceStep*>(stmt);
      if (r->in.access) add(*r->in.access, false, true, &r->predicate, &r->in.in_bounds);
      add(r->out, true, true, &r->predicate);
      break;
    }
    case kir::StmtKind::BlockReduce: {
      auto* r = static_cast<const kir::BlockReduce*>(stmt);
      add(r->in, false, true, nullptr);
      workspace(r->workspace);
      add(r->out, true, true, &r->predicate);
      break;
    }
    case kir::StmtKind::BlockBroadcast: {
      auto* b = static_cast<const kir::BlockBroadcast*>(stmt);
      add(b->in, false, true, nullptr);
      workspace(b->workspace);
      add(b->out, true, false, nullptr);
      break;
    }
    // Multi-element and cross-lane accesses carry no element index, so the
    // hazard analysis never proves them thread-private.
    case kir::StmtKind::CpAsync: {
      auto* c = static_cast<const kir::CpAsync*>(stmt);
      result.push_back({stmt, c->src.buffer, false, true, nullptr, &c->predicate, nullptr});
      result.push_back({stmt, c->dst.buffer, true, false, nullptr, nullptr, nullptr});
      break;
    }
    case kir::StmtKind::LdMatrix: {
      auto* l = static_cast<const kir::LdMatrix*>(stmt);
      result.push_back({stmt, l->src.buffer, false, true, nullptr, nullptr, nullptr});
      result.push_back({stmt, l->dst.buffer, true, false, nullptr, nullptr, nullptr});
      break;
    }
    case kir::StmtKind::Mma: {
      auto* m = static_cast<const kir::Mma*>(stmt);
      result.push_back({stmt, m->a.buffer, false, true, nullptr, nullptr, nullptr});
      result.push_back({stmt, m->b.buffer, false, true, nullptr, nullptr, nullptr});
      result.push_back({stmt, m->c.buffer, true, true, nullptr, nullptr, nullptr});
      break;
    }
    // An mbarrier operation reads the barrier's state; all but the wait write it.
    case kir::StmtKind::MbarrierInit: {
      auto* i = static_cast<const kir::MbarrierInit*>(stmt);
      result.push_back({stmt, i->barrier.buffer, true, false, nullptr, nullptr, nullptr});
      break;
    }
    case kir::StmtKind::MbarrierArrive: {
      auto* a = static_cast<const kir::MbarrierArrive*>(stmt);
      result.push_back({stmt, a->barrier.buffer, true, true, nullptr, nullptr, nullptr});
      break;
    }
    case kir::StmtKind::MbarrierWait: {
      auto* w = static_cast<const kir::MbarrierWait*>(stmt);
      result.push_back({stmt, w->barrier.buffer, false, true, nullptr, nullptr, nullptr});
      break;
    }
    case kir::StmtKind::TmaLoad: {
      auto* t = static_cast<const kir::TmaLoad*>(stmt);
      result.push_back({stmt, t->map->tensor, false, true, nullptr, nullptr, nullptr});
      result.push_back({stmt, t->dst.buffer, true, false, nullptr, nullptr, nullptr});
      result.push_back({stmt, t->barrier.buffer, true, true, nullptr, nullptr, nullptr});
      break;
    }
    case kir::StmtKind::Wgmma: {
      auto* w = static_cast<const kir::Wgmma*>(stmt);
      result.push_back({stmt, w->a.buffer, false, true, nullptr, nullptr, nullptr});
      result.push_back({stmt, w->b.buffer, false, true, nullptr, nullptr, nullptr});
      result.push_back({stmt, w->acc.buffer, true, w->accumulate, nullptr, nullptr, nullptr});
      break;
    }
    default:
      break;
  }
  return result;
}

const BufferLiveness& Liveness::of(const kir::Buffer* buffer) const {
  auto it = index_.find(buffer);
  SMELT_INTERNAL_CHECK(it != index_.end(), "liveness: no Allocate for buffer ", buffer->name);
  return buffers[it->second];
}

std::vector<const kir::Stmt*> Liveness::ancestors(const kir::Stmt* stmt) const {
  std::vector<const kir::Stmt*> chain;
  for (const kir::Stmt* p = parent.at(stmt); p != nullptr; p = parent.at(p)) chain.push_back(p);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

const kir::ForLoop* Liveness::commonLoop(const kir::Stmt* a, const kir::Stmt* b) const {
  std::vector<const kir::Stmt*> ca = ancestors(a);
  ca.push_back(a);
  std::vector<const kir::Stmt*> cb = ancestors(b);
  cb.push_back(b);
  const kir::ForLoop* result = nullptr;
  for (size_t i = 0; i < ca.size() && i < cb.size() && ca[i] == cb[i]; ++i) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(ca[i]);
    if (loop != nullptr && !loop->trivial) result = loop;
  }
  return result;
}

bool Liveness::syncIn(int64_t from, int64_t to) const {
  auto it = std::lower_bound(sync_positions.begin(), sync_positions.end(), from);
  return it != sync_positions.end() && *it < to;
}

Liveness Liveness::withAliases(const AliasMap& alias_map) const {
  SMELT_INTERNAL_CHECK(aliases.empty(), "liveness: aliases set twice");
  Liveness live = *this;
  live.aliases = alias_map;
  for (BufferLiveness& b : live.buffers) {
    const kir::Buffer* base_buffer = live.aliasOf(b.buffer);
    if (base_buffer == nullptr || !b.inner.valid()) continue;
    BufferLiveness& base = live.buffers[live.index_.at(base_buffer)];
    for (auto member : {&BufferLiveness::inner, &BufferLiveness::outer,
                        &BufferLiveness::kernel_scope}) {
      LiveInterval& to = base.*member;
      const LiveInterval& from = b.*member;
      to = to.valid() ? LiveInterval{std::min(to.first, from.first), std::max(to.last, from.last)}
                      : from;
    }
  }
  return live;
}

Liveness Liveness::withBarrierBefore(const kir::Stmt* before, const kir::BlockSync* sync) const {
  Liveness live = *this;
  const int64_t at = positions.start.at(before);
  auto shift = [at](int64_t& position) {
    if (position >= at) ++position;
  };
  for (auto& [stmt, position] : live.positions.start) shift(position);
  for (auto& [loop, position] : live.positions.loop_end) shift(position);
  live.positions.start[sync] = at;
  live.positions.count += 1;
  live.end_position = std::max<int64_t>(live.positions.count - 1, 0);
  live.parent[sync] = parent.at(before);
  live.stmt_at.insert(live.stmt_at.begin() + at, sync);
  for (int64_t& p : live.sync_positions) shift(p);
  live.sync_positions.insert(
      std::lower_bound(live.sync_positions.begin(), live.sync_positions.end(), at), at);
  for (BufferLiveness& b : live.buffers) {
    for (LiveInterval* interval : {&b.inner, &b.outer, &b.kernel_scope}) {
      if (!interval->valid()) continue;
      shift(interval->first);
      shift(interval->last);
    }
  }
  return live;
}

Liveness ownLiveness(const kir::Kernel& kernel) {
  Liveness live;
  live.positions = kir::numberPositions(kernel.body);
  live.stmt_at.assign(static_cast<size_t>(live.positions.count), nullptr);
  live.end_position = std::max<int64_t>(live.positions.count - 1, 0);

  std::vector<const kir::Allocate*> allocates;
  std::function<void(const kir::StmtList&, const kir::Stmt*)> walk =
      [&](const kir::StmtList& list, const kir::Stmt* owner) {
        for (const auto& stmt : list) {
          const kir::Stmt* s = stmt.get();
          live.parent[s] = owner;
          live.stmt_at[live.positions.start.at(s)] = s;
          if (s->synchronizesBlock()) live.sync_positions.push_back(live.positions.start.at(s));
          if (auto* alloc = dynamic_cast<const kir::Allocate*>(s)) allocates.push_back(alloc);
          if (auto* loop = dynamic_cast<const kir::ForLoop*>(s)) {
            walk(loop->body, s);
            if (!loop->trivial) live.stmt_at[live.positions.loop_end.at(loop)] = s;
          } else if (auto* ite = dynamic_cast<const kir::IfThenElse*>(s)) {
            walk(ite->then_body, s);
            walk(ite->else_body, s);
          }
        }
      };
  walk(kernel.body, nullptr);
  std::sort(live.sync_positions.begin(), live.sync_positions.end());

  auto addBuffer = [&](const kir::Buffer* buffer, const kir::Stmt* anchor) {
    BufferLiveness b;
    b.buffer = buffer;
    b.allocate = anchor;
    b.creation_order = static_cast<int64_t>(live.buffers.size());
    live.index_[buffer] = live.buffers.size();
    live.buffers.push_back(std::move(b));
  };
  for (const kir::Allocate* alloc : allocates) {
    if (alloc->buffer->memory != MemoryType::Global) addBuffer(alloc->buffer, alloc);
  }
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    for (const BufferAccess& a : accessesOf(s)) {
      if (a.index == nullptr && !live.index_.count(a.buffer)) addBuffer(a.buffer, s);
      auto it = live.index_.find(a.buffer);
      if (it != live.index_.end()) live.buffers[it->second].accesses.push_back(a);
    }
  });

  for (BufferLiveness& b : live.buffers) {
    std::vector<const kir::Stmt*> alloc_chain = live.ancestors(b.allocate);
    std::unordered_set<const kir::Stmt*> around_alloc(alloc_chain.begin(), alloc_chain.end());
    auto widen = [](LiveInterval& interval, int64_t first, int64_t last) {
      interval = interval.valid() ? LiveInterval{std::min(interval.first, first),
                                                 std::max(interval.last, last)}
                                  : LiveInterval{first, last};
    };
    for (const BufferAccess& a : b.accesses) {
      int64_t pos = live.positions.start.at(a.stmt);
      widen(b.inner, pos, pos);
      bool outer_done = false;
      bool kernel_scope_done = false;
      for (const kir::Stmt* anc : live.ancestors(a.stmt)) {
        auto* loop = dynamic_cast<const kir::ForLoop*>(anc);
        if (loop == nullptr || loop->trivial) continue;
        int64_t start = live.positions.start.at(loop);
        int64_t end = live.positions.loop_end.at(loop);
        if (!kernel_scope_done) widen(b.kernel_scope, start, end);
        kernel_scope_done = true;
        if (!outer_done && !around_alloc.count(loop)) {
          widen(b.outer, start, end);
          outer_done = true;
        }
      }
      if (!outer_done) widen(b.outer, pos, pos);
      if (!kernel_scope_done) widen(b.kernel_scope, pos, pos);
    }
  }
  return live;
}

AliasMap kernelAliases(const kir::Kernel& kernel) {
  AliasMap aliases;
  for (const auto& b : kernel.buffers) {
    if (b->alias_of != nullptr) aliases[b.get()] = b->alias_of;
  }
  return aliases;
}

Liveness computeLiveness(const kir::Kernel& kernel) {
  return ownLiveness(kernel).withAliases(kernelAliases(kernel));
}

}  // namespace smelt::alloc_reuse
