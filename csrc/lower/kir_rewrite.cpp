#include "lower/kir_rewrite.h"

#include "fusion/error.h"

namespace smelt::kir {

namespace {

void predicateIndices(Predicate& p, const std::function<void(IntExpr&)>& f) {
  for (Predicate::Term& term : p.terms) {
    f(term.lhs);
    f(term.rhs);
  }
}

void operandIndices(Operand& op, const std::function<void(IntExpr&)>& f) {
  if (op.access) f(op.access->index);
  if (op.index) f(*op.index);
  predicateIndices(op.in_bounds, f);
}

}  // namespace

void forEachIndex(Stmt& stmt, const std::function<void(IntExpr&)>& f) {
  switch (stmt.kind()) {
    case StmtKind::ForLoop: f(static_cast<ForLoop&>(stmt).extent); return;
    case StmtKind::IfThenElse: predicateIndices(static_cast<IfThenElse&>(stmt).predicate, f); return;
    case StmtKind::Compute: {
      auto& c = static_cast<Compute&>(stmt);
      f(c.out.index);
      for (Operand& op : c.operands) operandIndices(op, f);
      predicateIndices(c.predicate, f);
      return;
    }
    case StmtKind::ReduceInit: {
      auto& r = static_cast<ReduceInit&>(stmt);
      f(r.out.index);
      predicateIndices(r.predicate, f);
      return;
    }
    case StmtKind::ScanInit: f(static_cast<ScanInit&>(stmt).carry.index); return;
    case StmtKind::BlockScan: {
      auto& b = static_cast<BlockScan&>(stmt);
      f(b.items_in.index);
      f(b.first_item);
      f(b.extent);
      f(b.carry.index);
      f(b.running.index);
      return;
    }
    case StmtKind::ReduceStep: {
      auto& r = static_cast<ReduceStep&>(stmt);
      f(r.out.index);
      operandIndices(r.in, f);
      predicateIndices(r.predicate, f);
      return;
    }
    case StmtKind::BlockReduce: {
      auto& r = static_cast<BlockReduce&>(stmt);
      f(r.out.index);
      f(r.in.index);
      predicateIndices(r.predicate, f);
      return;
    }
    case StmtKind::BlockBroadcast: {
      auto& b = static_cast<BlockBroadcast&>(stmt);
      f(b.out.index);
      f(b.in.index);
      return;
    }
    case StmtKind::CpAsync: {
      auto& c = static_cast<CpAsync&>(stmt);
      f(c.dst.index);
      f(c.src.index);
      predicateIndices(c.predicate, f);
      return;
    }
    case StmtKind::LdMatrix: {
      auto& l = static_cast<LdMatrix&>(stmt);
      f(l.dst.index);
      f(l.src.index);
      return;
    }
    case StmtKind::Mma: {
      auto& m = static_cast<Mma&>(stmt);
      f(m.c.index);
      f(m.a.index);
      f(m.b.index);
      return;
    }
    case StmtKind::MbarrierInit: f(static_cast<MbarrierInit&>(stmt).barrier.index); return;
    case StmtKind::MbarrierArrive: f(static_cast<MbarrierArrive&>(stmt).barrier.index); return;
    case StmtKind::MbarrierWait: {
      auto& w = static_cast<MbarrierWait&>(stmt);
      f(w.barrier.index);
      f(w.parity);
      return;
    }
    case StmtKind::TmaLoad: {
      auto& t = static_cast<TmaLoad&>(stmt);
      f(t.dst.index);
      f(t.row);
      f(t.col);
      f(t.barrier.index);
      return;
    }
    case StmtKind::Wgmma: {
      auto& w = static_cast<Wgmma&>(stmt);
      f(w.acc.index);
      f(w.a.index);
      f(w.b.index);
      return;
    }
    case StmtKind::Allocate:
    case StmtKind::BlockSync:
    case StmtKind::CpAsyncCommit:
    case StmtKind::CpAsyncWait:
    case StmtKind::FenceProxyAsync:
    case StmtKind::WgmmaFence:
    case StmtKind::WgmmaCommit:
    case StmtKind::WgmmaWait: return;
  }
}

void forEachAccess(Stmt& stmt, const std::function<void(Access&, bool)>& f) {
  auto operand = [&](Operand& op) {
    if (op.access) f(*op.access, false);
  };
  switch (stmt.kind()) {
    case StmtKind::Compute: {
      auto& c = static_cast<Compute&>(stmt);
      f(c.out, true);
      for (Operand& op : c.operands) operand(op);
      return;
    }
    case StmtKind::ReduceInit: f(static_cast<ReduceInit&>(stmt).out, true); return;
    case StmtKind::ScanInit: f(static_cast<ScanInit&>(stmt).carry, true); return;
    case StmtKind::BlockScan: {  // the workspace has no element index (see forEachIndex)
      auto& b = static_cast<BlockScan&>(stmt);
      f(b.items_in, false);
      f(b.carry, true);
      f(b.running, true);
      return;
    }
    case StmtKind::ReduceStep: {
      auto& r = static_cast<ReduceStep&>(stmt);
      f(r.out, true);
      operand(r.in);
      return;
    }
    case StmtKind::BlockReduce: {
      auto& r = static_cast<BlockReduce&>(stmt);
      f(r.out, true);
      f(r.in, false);
      return;
    }
    case StmtKind::BlockBroadcast: {
      auto& b = static_cast<BlockBroadcast&>(stmt);
      f(b.out, true);
      f(b.in, false);
      return;
    }
    case StmtKind::CpAsync: {
      auto& c = static_cast<CpAsync&>(stmt);
      f(c.dst, true);
      f(c.src, false);
      return;
    }
    case StmtKind::LdMatrix: {
      auto& l = static_cast<LdMatrix&>(stmt);
      f(l.dst, true);
      f(l.src, false);
      return;
    }
    case StmtKind::Mma: {
      auto& m = static_cast<Mma&>(stmt);
      f(m.c, true);
      f(m.a, false);
      f(m.b, false);
      return;
    }
    // An mbarrier's state is read and written by every operation on it.
    case StmtKind::MbarrierInit: f(static_cast<MbarrierInit&>(stmt).barrier, true); return;
    case StmtKind::MbarrierArrive: f(static_cast<MbarrierArrive&>(stmt).barrier, true); return;
    case StmtKind::MbarrierWait: f(static_cast<MbarrierWait&>(stmt).barrier, false); return;
    case StmtKind::TmaLoad: {
      auto& t = static_cast<TmaLoad&>(stmt);
      f(t.dst, true);
      f(t.barrier, true);
      return;
    }
    case StmtKind::Wgmma: {
      auto& w = static_cast<Wgmma&>(stmt);
      f(w.acc, true);
      f(w.a, false);
      f(w.b, false);
      return;
    }
    default: return;
  }
}

void forEachInTree(Stmt& root, const std::function<void(Stmt&)>& f) {
  f(root);
  if (auto* loop = dynamic_cast<ForLoop*>(&root)) {
    for (auto& child : loop->body) forEachInTree(*child, f);
  } else if (auto* ite = dynamic_cast<IfThenElse*>(&root)) {
    for (auto& child : ite->then_body) forEachInTree(*child, f);
    for (auto& child : ite->else_body) forEachInTree(*child, f);
  }
}

namespace {

StmtList cloneList(const StmtList& list) {
  StmtList result;
  for (const auto& stmt : list) result.push_back(cloneTree(*stmt));
  return result;
}

void renumber(StmtList& list, const SymbolMap& scope, int64_t& next) {
  for (auto& stmt : list) {
    forEachIndex(*stmt, [&](IntExpr& e) { e = substitute(e, scope); });
    if (auto* loop = dynamic_cast<ForLoop*>(stmt.get())) {
      SymbolMap inner = scope;
      if (!isParallelDim(loop->parallel_type)) {
        const std::string name = "i" + std::to_string(next++);
        inner[loop->index] = IntExpr::symbol(name);
        loop->index = name;
      }
      renumber(loop->body, inner, next);
    } else if (auto* ite = dynamic_cast<IfThenElse*>(stmt.get())) {
      renumber(ite->then_body, scope, next);
      renumber(ite->else_body, scope, next);
    }
  }
}

}  // namespace

void forEachGuard(Stmt& root, const std::function<void(Predicate&)>& f) {
  forEachInTree(root, [&](Stmt& stmt) {
    switch (stmt.kind()) {
      case StmtKind::Compute: f(static_cast<Compute&>(stmt).predicate); return;
      case StmtKind::ReduceInit: f(static_cast<ReduceInit&>(stmt).predicate); return;
      case StmtKind::ReduceStep: f(static_cast<ReduceStep&>(stmt).predicate); return;
      case StmtKind::BlockReduce: f(static_cast<BlockReduce&>(stmt).predicate); return;
      case StmtKind::CpAsync: f(static_cast<CpAsync&>(stmt).predicate); return;
      default: return;
    }
  });
}

void substituteTree(Stmt& root, const SymbolMap& symbols) {
  forEachInTree(root, [&](Stmt& stmt) {
    forEachIndex(stmt, [&](IntExpr& e) { e = substitute(e, symbols); });
  });
}

std::unique_ptr<Stmt> cloneTree(const Stmt& root) {
  switch (root.kind()) {
    case StmtKind::ForLoop: {
      const auto& loop = static_cast<const ForLoop&>(root);
      auto copy = std::make_unique<ForLoop>();
      copy->index = loop.index;
      copy->extent = loop.extent;
      copy->parallel_type = loop.parallel_type;
      copy->iter_domain = loop.iter_domain;
      copy->trivial = loop.trivial;
      copy->body = cloneList(loop.body);
      return copy;
    }
    case StmtKind::IfThenElse: {
      const auto& ite = static_cast<const IfThenElse&>(root);
      auto copy = std::make_unique<IfThenElse>();
      copy->predicate = ite.predicate;
      copy->then_body = cloneList(ite.then_body);
      copy->else_body = cloneList(ite.else_body);
      return copy;
    }
    case StmtKind::Allocate: return std::make_unique<Allocate>(static_cast<const Allocate&>(root));
    case StmtKind::Compute: return std::make_unique<Compute>(static_cast<const Compute&>(root));
    case StmtKind::ReduceInit:
      return std::make_unique<ReduceInit>(static_cast<const ReduceInit&>(root));
    case StmtKind::ScanInit: return std::make_unique<ScanInit>(static_cast<const ScanInit&>(root));
    case StmtKind::BlockScan: return std::make_unique<BlockScan>(static_cast<const BlockScan&>(root));
    case StmtKind::ReduceStep:
      return std::make_unique<ReduceStep>(static_cast<const ReduceStep&>(root));
    case StmtKind::BlockReduce:
      return std::make_unique<BlockReduce>(static_cast<const BlockReduce&>(root));
    case StmtKind::BlockBroadcast:
      return std::make_unique<BlockBroadcast>(static_cast<const BlockBroadcast&>(root));
    case StmtKind::BlockSync: return std::make_unique<BlockSync>(static_cast<const BlockSync&>(root));
    case StmtKind::CpAsync: return std::make_unique<CpAsync>(static_cast<const CpAsync&>(root));
    case StmtKind::CpAsyncCommit:
      return std::make_unique<CpAsyncCommit>(static_cast<const CpAsyncCommit&>(root));
    case StmtKind::CpAsyncWait:
      return std::make_unique<CpAsyncWait>(static_cast<const CpAsyncWait&>(root));
    case StmtKind::LdMatrix: return std::make_unique<LdMatrix>(static_cast<const LdMatrix&>(root));
    case StmtKind::Mma: return std::make_unique<Mma>(static_cast<const Mma&>(root));
    case StmtKind::MbarrierInit:
      return std::make_unique<MbarrierInit>(static_cast<const MbarrierInit&>(root));
    case StmtKind::MbarrierArrive:
      return std::make_unique<MbarrierArrive>(static_cast<const MbarrierArrive&>(root));
    case StmtKind::MbarrierWait:
      return std::make_unique<MbarrierWait>(static_cast<const MbarrierWait&>(root));
    case StmtKind::TmaLoad: return std::make_unique<TmaLoad>(static_cast<const TmaLoad&>(root));
    case StmtKind::FenceProxyAsync:
      return std::make_unique<FenceProxyAsync>(static_cast<const FenceProxyAsync&>(root));
    case StmtKind::Wgmma: return std::make_unique<Wgmma>(static_cast<const Wgmma&>(root));
    case StmtKind::WgmmaFence:
      return std::make_unique<WgmmaFence>(static_cast<const WgmmaFence&>(root));
    case StmtKind::WgmmaCommit:
      return std::make_unique<WgmmaCommit>(static_cast<const WgmmaCommit&>(root));
    case StmtKind::WgmmaWait: return std::make_unique<WgmmaWait>(static_cast<const WgmmaWait&>(root));
  }
  SMELT_INTERNAL_CHECK(false, "unknown kernel IR statement");
}

std::optional<std::pair<StmtList*, size_t>> locate(StmtList& body, const Stmt* target) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].get() == target) return std::make_pair(&body, i);
    std::optional<std::pair<StmtList*, size_t>> found;
    if (auto* loop = dynamic_cast<ForLoop*>(body[i].get())) {
      found = locate(loop->body, target);
    } else if (auto* ite = dynamic_cast<IfThenElse*>(body[i].get())) {
      found = locate(ite->then_body, target);
      if (!found) found = locate(ite->else_body, target);
    }
    if (found) return found;
  }
  return std::nullopt;
}

void renumberLoopIndices(StmtList& body) {
  int64_t next = 0;
  renumber(body, {}, next);
}

}  // namespace smelt::kir
