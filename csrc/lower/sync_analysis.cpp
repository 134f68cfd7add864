#include "lower/sync_analysis.h"

#include <algorithm>

#include "fusion/error.h"
#include "fusion/transform_replay.h"

namespace smelt {

namespace {

const Expr* exprOf(const kir::Stmt* stmt) {
  if (auto* c = dynamic_cast<const kir::Compute*>(stmt)) return c->expr;
  if (auto* r = dynamic_cast<const kir::ReduceInit*>(stmt)) return r->expr;
  if (auto* r = dynamic_cast<const kir::ReduceStep*>(stmt)) return r->expr;
  if (auto* r = dynamic_cast<const kir::BlockReduce*>(stmt)) return r->expr;
  if (auto* b = dynamic_cast<const kir::BlockBroadcast*>(stmt)) return b->expr;
  return nullptr;
}

// The loop axis of `tv` bound to `pt` and its loop, if any.
std::pair<int64_t, const kir::ForLoop*> boundAxis(const LoweringContext& ctx, const TensorView* tv,
                                                  ParallelType pt) {
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    const kir::ForLoop* loop = ctx.loopOf(tv, k);
    if (loop->parallel_type == pt) return {k, loop};
  }
  return {-1, nullptr};
}

// Empty when every element is read by the thread that wrote it.
std::string crossThreadReason(const LoweringContext& ctx, const TensorView* producer,
                              const TensorView* consumer) {
  const ParallelType dims[3] = {ParallelType::TIDx, ParallelType::TIDy, ParallelType::TIDz};
  for (int slot = 0; slot < 3; ++slot) {
    if (ctx.kernel.launch.block[slot].constant() == 1) continue;
    ParallelType pt = dims[slot];
    auto [w_axis, w_loop] = boundAxis(ctx, producer, pt);
    auto [r_axis, r_loop] = boundAxis(ctx, consumer, pt);
    std::string name = toString(pt);
    // A plain broadcast axis of a Shared or Global tensor running in a
    // longer loop bound to pt is stored by thread 0 alone (the predicates
    // pass), as if unbound.
    const auto stored_by_thread_zero = [&](const TensorView* tv, int64_t axis, const kir::ForLoop* loop) {
      return loop != nullptr && tv->memoryType() != MemoryType::Local && tv->axis(axis)->isPlainBroadcast() &&
             !loop->extent.sameAs(tv->axis(axis)->extent());
    };
    if (stored_by_thread_zero(producer, w_axis, w_loop)) {
      if (consumer->memoryType() != MemoryType::Local &&
          (r_loop == nullptr || stored_by_thread_zero(consumer, r_axis, r_loop))) {
        continue;
      }
      return name + ": written by thread 0 only (a broadcast axis), read by every thread";
    }
    if (w_loop == nullptr && r_loop == nullptr) {
      // The writer is guarded to thread 0 along pt; so is a reader that
      // writes Shared or Global memory itself (see the predicates pass).
      if (consumer->memoryType() != MemoryType::Local) continue;
      return name + ": written by thread 0 only, read by every thread";
    }
    // A reduction over pt is a block all-reduce: every thread along pt
    // writes the whole result, so each reader reads its own write.
    if (w_loop != nullptr && producer->axis(w_axis)->isReduction()) continue;
    if (w_loop == nullptr || r_loop == nullptr) {
      return name + (w_loop ? ": bound by the writer only" : ": bound by the reader only");
    }
    if (w_loop == r_loop) continue;
    if (loopAxesMapped(producer->axis(w_axis), consumer->axis(r_axis),
                       pairwiseLogicalMap(producer, consumer))) {
      continue;
    }
    return name + ": writer axis " + std::to_string(w_axis) + ", reader axis " +
           std::to_string(r_axis) + " index different elements";
  }
  return "";
}

}  // namespace

const TensorView* writtenTensor(const kir::Stmt* stmt) {
  const Expr* e = exprOf(stmt);
  return e ? e->output() : nullptr;
}

std::vector<const TensorView*> readTensors(const kir::Stmt* stmt) {
  std::vector<const TensorView*> result;
  const Expr* e = exprOf(stmt);
  if (e == nullptr || stmt->kind() == kir::StmtKind::ReduceInit) return result;
  if (auto* r = dynamic_cast<const kir::BlockReduce*>(stmt)) {
    // After serial steps a block reduction reads its own partial result.
    if (r->in.buffer != r->out.buffer) result.push_back(e->tensorInputs().at(0));
    return result;
  }
  for (const TensorView* tv : e->tensorInputs()) result.push_back(tv);
  return result;
}

std::vector<CrossThreadAccess> crossThreadAccesses(const LoweringContext& ctx) {
  std::vector<const kir::Stmt*> stmts;
  kir::forEachStmt(ctx.kernel.body, [&](const kir::Stmt* s, int) { stmts.push_back(s); });
  std::vector<CrossThreadAccess> result;
  for (const kir::Stmt* read : stmts) {
    for (const TensorView* tv : readTensors(read)) {
      // Registers are private; Shared and Global tensors are visible to the
      // whole block (a fusion output that a later op reads). Fusion inputs
      // are not written by the kernel.
      if (tv->memoryType() == MemoryType::Local || tv->definition() == nullptr) continue;
      std::string reason = crossThreadReason(ctx, tv, writtenTensor(read));
      if (reason.empty()) continue;
      for (const kir::Stmt* write : stmts) {
        if (writtenTensor(write) == tv) result.push_back({tv, write, read, reason});
      }
    }
  }
  return result;
}

}  // namespace smelt
