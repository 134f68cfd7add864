// Pass simplify_predicates: drops the guard terms that hold for every value
// their indices can take. Guarantees: a term `index < extent` is removed only
// when the index's exclusive upper bound, from the extents of the serial
// loops around the statement and the launch's block and grid dimensions for
// thread and block indices, is provably at most the extent (constants, or
// the same expression); other terms stay. Operands' in-bounds tests (a pad's,
// a zero-filled tile load's) are simplified alike. A kernel of static sizes whose
// tiles divide them then computes and stores without per-element compares
// (a 4096x4096 matmul epilogue: two compares per element before).
#include <string>
#include <vector>

#include "fusion/symbols.h"
#include "lower/passes.h"

namespace smelt {

namespace {

class PredicateSimplifier {
 public:
  explicit PredicateSimplifier(const kir::LaunchDims& launch) {
    const ParallelType threads[] = {ParallelType::TIDx, ParallelType::TIDy, ParallelType::TIDz};
    const ParallelType blocks[] = {ParallelType::BIDx, ParallelType::BIDy, ParallelType::BIDz};
    for (int d = 0; d < 3; ++d) {
      bounds_[parallelIndexSymbol(threads[d])] = launch.block[d];
      bounds_[parallelIndexSymbol(blocks[d])] = launch.grid[d];
    }
  }

  void run(kir::StmtList& body) {
    for (auto& stmt : body) {
      switch (stmt->kind()) {
        case kir::StmtKind::ForLoop: {
          auto& loop = static_cast<kir::ForLoop&>(*stmt);
          // Thread and block loops keep the launch's bound: a loop narrower
          // than the launch is guarded by a term this pass must not drop.
          const bool serial = !isParallelDim(loop.parallel_type);
          if (serial) bounds_[loop.index] = loop.extent;
          run(loop.body);
          if (serial) bounds_.erase(loop.index);
          break;
        }
        case kir::StmtKind::IfThenElse: {
          auto& branch = static_cast<kir::IfThenElse&>(*stmt);
          simplify(branch.predicate);
          run(branch.then_body);
          run(branch.else_body);
          break;
        }
        case kir::StmtKind::Compute: {
          auto& c = static_cast<kir::Compute&>(*stmt);
          simplify(c.predicate);
          // A zero-filled load's bounds (predicate_elimination) or a pad's.
          for (kir::Operand& op : c.operands) simplify(op.in_bounds);
          break;
        }
        case kir::StmtKind::ReduceInit: simplify(static_cast<kir::ReduceInit&>(*stmt).predicate); break;
        case kir::StmtKind::ReduceStep: simplify(static_cast<kir::ReduceStep&>(*stmt).predicate); break;
        case kir::StmtKind::BlockReduce: {
          auto& reduce = static_cast<kir::BlockReduce&>(*stmt);
          simplify(reduce.predicate);
          simplify(reduce.write_predicate);
          break;
        }
        case kir::StmtKind::CpAsync: simplify(static_cast<kir::CpAsync&>(*stmt).predicate); break;
        default: break;
      }
    }
  }

 private:
  void simplify(kir::Predicate& predicate) const {
    std::vector<kir::Predicate::Term> kept;
    for (const kir::Predicate::Term& term : predicate.terms) {
      const bool holds = term.kind == kir::Predicate::Term::Kind::LessThan &&
                         provablyBelow(term.lhs, term.rhs, bounds_);
      if (!holds) kept.push_back(term);
    }
    predicate.terms = std::move(kept);
  }

  IntBounds bounds_;
};

}  // namespace

void simplifyPredicates(LoweringContext& ctx) {
  PredicateSimplifier(ctx.kernel.launch).run(ctx.kernel.body);
}

}  // namespace smelt
