// Pass predicate_elimination: a serial sum over products of shared tiles (the
// CUDA-core matmul's K loop) runs without bounds guards. Guarantees, for each
// ReduceStep of a Sum whose input is computed, through register (Local)
// tensors only, by copies, casts, broadcasts and products from Shared tiles
// that are each loaded by one copy from a Global tensor:
//   * each tile's load reads its Global element only where the element's
//     logical indices are in range and writes zero elsewhere (the guard's
//     axis bounds become the operand's in-bounds test, value 0); its other
//     terms (thread extents, a split's wrapped overrun) stay on the load;
//   * the register statements of the chain, the ReduceStep and its
//     ReduceInit lose their axis bounds. Positions past an extent then read
//     tile slots that exist (a tile allocation covers the whole block tile)
//     and were written this step, and compute values that reach memory only
//     through statements that keep their own guards (the epilogue). Along
//     the reduced axis every product reads zeros from both tiles, so past
//     the extent the sum adds exactly 0.
// A chain statement that has any other guard term (a thread extent, a single
// writer), a Global operand, a scalar operand or several writers leaves the
// whole sum as it was; so does a sum over an axis the summed tensor has as a
// broadcast (no tile holds it, so no load zero-fills past its extent). Runs after `predicates`, before `circular_buffer`
// (whose prologue copies the loads as rewritten here).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fusion/ops.h"
#include "lower/kir_rewrite.h"
#include "lower/passes.h"

namespace smelt {

namespace {

using Term = kir::Predicate::Term;

bool onlyAxisBounds(const kir::Predicate& p) {
  return std::all_of(p.terms.begin(), p.terms.end(),
                     [](const Term& t) { return t.bounded_axis != nullptr; });
}

bool isCopy(const Expr* e) {
  return e->type() == ExprType::Set || e->type() == ExprType::Broadcast ||
         (e->type() == ExprType::Unary &&
          static_cast<const UnaryOp*>(e)->op() == UnaryOpType::Cast);
}

bool isProduct(const Expr* e) {
  return e->type() == ExprType::Binary && static_cast<const BinaryOp*>(e)->op() == BinaryOpType::Mul;
}

class PredicateEliminator {
 public:
  explicit PredicateEliminator(kir::Kernel& kernel) {
    for (auto& stmt : kernel.body) {
      kir::forEachInTree(*stmt, [&](kir::Stmt& s) {
        if (auto* c = dynamic_cast<kir::Compute*>(&s)) writers_[c->expr->output()].push_back(c);
        if (auto* init = dynamic_cast<kir::ReduceInit*>(&s)) inits_[init->expr].push_back(init);
        if (auto* step = dynamic_cast<kir::ReduceStep*>(&s)) steps_.push_back(step);
      });
    }
  }

  void run() {
    for (kir::ReduceStep* step : steps_) {
      if (step->expr->op() != ReductionOpType::Sum || !onlyAxisBounds(step->predicate) ||
          reducesABroadcast(*step->expr)) {
        continue;
      }
      Chain chain;
      if (!collect(step->expr->input(0)->asTensor(), chain)) continue;
      for (kir::Compute* load : chain.loads) zeroFill(*load);
      for (kir::Compute* c : chain.registers) c->predicate.terms.clear();
      step->predicate.terms.clear();
      for (kir::ReduceInit* init : inits_[step->expr]) {
        if (onlyAxisBounds(init->predicate)) init->predicate.terms.clear();
      }
    }
  }

 private:
  struct Chain {
    std::vector<kir::Compute*> registers;  // Local statements, unguarded
    std::vector<kir::Compute*> loads;      // Global -> Shared copies, zero-filled
    std::unordered_set<const TensorView*> seen;
  };

  // A reduced axis that is a broadcast in the summed tensor (a K of extent
  // 1 declared as such) is no axis of the tiles: their loads have no bound
  // on it to zero-fill, and every step past its extent would add the same
  // product again.
  static bool reducesABroadcast(const ReductionOp& sum) {
    const std::vector<IterDomain*>& out = sum.output()->logicalDomain();
    const std::vector<IterDomain*>& in = sum.input(0)->asTensor()->logicalDomain();
    for (size_t d = 0; d < out.size() && d < in.size(); ++d) {
      if (out[d]->isReduction() && in[d]->isBroadcast()) return true;
    }
    return false;
  }

  // The only statement writing `tv`, or nullptr.
  kir::Compute* writer(const TensorView* tv) const {
    auto it = writers_.find(tv);
    return it != writers_.end() && it->second.size() == 1 ? it->second[0] : nullptr;
  }

  // Whether `tv`'s values past its extents are harmless (registers) or zero
  // (tiles), adding the statements that make them so to `chain`.
  bool collect(const TensorView* tv, Chain& chain) const {
    if (tv == nullptr) return false;
    if (!chain.seen.insert(tv).second) return true;
    kir::Compute* c = writer(tv);
    if (c == nullptr) return false;
    if (tv->memoryType() == MemoryType::Shared) {
      const bool loads_global = isCopy(c->expr) && c->operands.size() == 1 &&
                                c->operands[0].access && c->operands[0].in_bounds.alwaysTrue() &&
                                c->operands[0].access->buffer->memory == MemoryType::Global;
      if (!loads_global) return false;
      chain.loads.push_back(c);
      return true;
    }
    if (tv->memoryType() != MemoryType::Local || !onlyAxisBounds(c->predicate) ||
        !(isCopy(c->expr) || isProduct(c->expr))) {
      return false;
    }
    for (const Val* in : c->expr->inputs()) {
      if (!collect(in->asTensor(), chain)) return false;
    }
    chain.registers.push_back(c);
    return true;
  }

  // The load's axis bounds become its operand's in-bounds test, reading 0
  // outside.
  static void zeroFill(kir::Compute& load) {
    kir::Operand& operand = load.operands[0];
    std::vector<Term> kept;
    for (const Term& t : load.predicate.terms) {
      (t.bounded_axis != nullptr ? operand.in_bounds.terms : kept).push_back(t);
    }
    if (operand.in_bounds.alwaysTrue()) return;
    load.predicate.terms = std::move(kept);
    operand.out_of_bounds_value = constant(0.0, operand.access->buffer->dtype);
  }

  std::unordered_map<const TensorView*, std::vector<kir::Compute*>> writers_;
  std::unordered_map<const ReductionOp*, std::vector<kir::ReduceInit*>> inits_;
  std::vector<kir::ReduceStep*> steps_;
};

}  // namespace

void eliminatePredicates(LoweringContext& ctx) { PredicateEliminator(ctx.kernel).run(); }

}  // namespace smelt
