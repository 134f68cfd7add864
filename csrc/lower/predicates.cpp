// Pass predicates: guards on every computing statement. Guarantees:
//   * no access beyond a tensor's logical extent, and no element visited
//     twice: axes that reach a loop through a split that may overrun
//     (non-divisible or symbolic) are bounded, the split's input axis too;
//   * a loop bound to a thread/block index with a smaller extent than the
//     launch's runs only for indices below its extent;
//   * a Shared or Global element is written by exactly one thread: when the
//     launch has more than one thread (block) along a dimension the writer's
//     loops do not bind, only index 0 along it writes; along an expanded
//     dimension (stored once) only index 0 writes too. Readers on other
//     threads then need a barrier, which the syncs pass provides.
// Block reductions keep every thread participating; their predicate only says
// which threads contribute a value, their write predicate which threads
// store the result (one per element of a Shared or Global output).
#include <algorithm>
#include <map>
#include <string>

#include "fusion/error.h"
#include "fusion/symbols.h"
#include "fusion/transform_replay.h"
#include "lower/passes.h"
#include "lower/transform_index.h"

namespace smelt {

namespace {

using Term = kir::Predicate::Term;

struct Dim {
  ParallelType pt;
  bool is_block;
  int slot;
  IntExpr index() const { return IntExpr::symbol(parallelIndexSymbol(pt)); }
};
const Dim kDims[] = {
    {ParallelType::TIDx, false, 0}, {ParallelType::TIDy, false, 1}, {ParallelType::TIDz, false, 2},
    {ParallelType::BIDx, true, 0},  {ParallelType::BIDy, true, 1},  {ParallelType::BIDz, true, 2},
};
bool isThreadIndex(const IntExpr& e) {
  if (e.kind() != IntExpr::Kind::Symbol) return false;
  return std::any_of(std::begin(kDims), std::end(kDims), [&](const Dim& dim) {
    return !dim.is_block && e.symbolName() == parallelIndexSymbol(dim.pt);
  });
}

class Predicator {
 public:
  explicit Predicator(LoweringContext& ctx) : ctx_(ctx) {}

  void run(kir::StmtList& body) {
    for (auto& stmt : body) {
      if (auto* loop = dynamic_cast<kir::ForLoop*>(stmt.get())) {
        run(loop->body);
      } else if (auto* c = dynamic_cast<kir::Compute*>(stmt.get())) {
        c->predicate = predicateFor(c->expr->output(), /*with_reduction_axes=*/false, true);
      } else if (auto* init = dynamic_cast<kir::ReduceInit*>(stmt.get())) {
        init->predicate = predicateFor(init->expr->output(), false, true, init);
      } else if (auto* step = dynamic_cast<kir::ReduceStep*>(stmt.get())) {
        step->predicate = predicateFor(step->expr->output(), true, true);
      } else if (auto* reduce = dynamic_cast<kir::BlockReduce*>(stmt.get())) {
        // After serial steps, out-of-range elements already hold the init
        // value; only a reduction reading its input directly bounds it.
        bool reads_input = reduce->in.buffer != reduce->out.buffer;
        reduce->predicate = predicateFor(reduce->expr->output(), reads_input, false, reduce);
        reduce->write_predicate = writePredicateFor(*reduce);
      }
    }
  }

 private:
  // `stmt`: the statement whose loops to use (a reduction's init and block
  // reduction may have their own).
  kir::Predicate predicateFor(const TensorView* tv, bool with_reduction_axes,
                              bool single_writer, const kir::Stmt* stmt = nullptr) {
    kir::Predicate pred;
    std::vector<IntExpr> loop_indices;
    for (int64_t k = 0; k < tv->nDims(); ++k) loop_indices.push_back(ctx_.loopIndex(tv, k, stmt));
    IndexMap logical = logicalIndices(tv, loop_indices);
    // The loop root: a scatter's loops cover its iteration domain.
    for (const IterDomain* id : tv->loopRoot()) {
      if (id->isReduction() && !with_reduction_axes) continue;
      const IntExpr& index = logical.at(id);
      // x % extent is in range by construction (a merge's inner index).
      bool in_range_by_construction =
          index.kind() == IntExpr::Kind::Mod && index.rhs().sameAs(id->extent());
      if (needsBoundsCheck(tv, id) && !in_range_by_construction) {
        pred.terms.push_back({index, Term::Kind::LessThan, id->extent(), id});
      }
    }
    // An expanded dimension is stored once (index 0; a Global output with
    // stride 0, output_layout.h): only the first iteration along it writes.
    // A Shared tensor has a copy per block, and one thread storing the same
    // value again is no hazard: there only the first thread along it writes.
    const bool shared_state = tv->memoryType() == MemoryType::Global || tv->memoryType() == MemoryType::Shared;
    const std::vector<IterDomain*> logical_axes = tv->logicalNoReductions();
    if (single_writer && shared_state &&
        std::any_of(logical_axes.begin(), logical_axes.end(),
                    [](const IterDomain* id) { return id->hasExpandedExtent(); })) {
      const IndexMap iterated = logicalIndices(tv, loop_indices, /*iterate_expanded=*/true);
      std::map<std::string, IntExpr> threads_only;
      if (tv->memoryType() == MemoryType::Shared) {
        for (const IntExpr& index : loop_indices) {
          if (index.kind() == IntExpr::Kind::Symbol && !isThreadIndex(index)) {
            threads_only[index.symbolName()] = 0;
          }
        }
      }
      for (const IterDomain* id : logical_axes) {
        const IntExpr index = substitute(iterated.at(id), threads_only);
        if (id->hasExpandedExtent() && !index.isConstant()) {
          pred.terms.push_back({index, Term::Kind::Equal, 0});
        }
      }
    }
    // A split that may overrun (non-divisible or symbolic) pushes its input's
    // index past the input's extent. Where that overrun carries, through
    // outer split outputs and merge outputs, into a logical index, the
    // bound above catches it; where it reaches the inner output of an
    // earlier split, it wraps into that split's outer index instead and
    // revisits elements (with every index in range), so the input is bounded
    // here.
    const std::vector<const IdTransform*> history = transformHistory(tv);
    for (const IdTransform* t : history) {
      const IterDomain* in = t->inputs[0];
      if (t->kind != IdTransform::Kind::Split || in->isBroadcast() ||
          (in->isReduction() && !with_reduction_axes) || !overrunWraps(history, in)) {
        continue;
      }
      const auto extent = in->extent().constant();
      const auto factor = t->factor.constant();
      if (extent && factor && *extent % *factor == 0) continue;
      pred.terms.push_back({logical.at(in), Term::Kind::LessThan, in->extent()});
    }
    const kir::LaunchDims& launch = ctx_.kernel.launch;
    for (const Dim& dim : kDims) {
      const IntExpr& launch_extent = dim.is_block ? launch.grid[dim.slot] : launch.block[dim.slot];
      // Bound by one of the tensor's loops (the statement may sit outside
      // trivial thread loops, as a reduction's init does, and still use the
      // thread index).
      const kir::ForLoop* bound = nullptr;
      const IterDomain* own_axis = nullptr;
      for (int64_t k = 0; k < tv->nDims(); ++k) {
        if (ctx_.loopOf(tv, k, stmt)->parallel_type == dim.pt) {
          bound = ctx_.loopOf(tv, k, stmt);
          own_axis = tv->axis(k);
        }
      }
      const bool writes_shared_state = tv->memoryType() == MemoryType::Global ||
                                       (tv->memoryType() == MemoryType::Shared && !dim.is_block);
      // The tensor's own axis is a plain broadcast but the loop it shares
      // (inlined into a consumer's) runs the whole launch extent: every
      // thread along it stores the same element (a matmul's C_s with M = 1:
      // a write-write race), so one thread writes.
      if (bound != nullptr && own_axis->isPlainBroadcast() && single_writer && writes_shared_state &&
          !bound->extent.sameAs(own_axis->extent()) && launch_extent.constant() != 1) {
        pred.terms.push_back({dim.index(), Term::Kind::Equal, 0});
        continue;
      }
      if (bound != nullptr) {
        // A broadcast axis bound to a thread index is computed by every
        // thread alike: no guard (a Local value must exist in each thread),
        // unless the threads would all store it to the same Shared or
        // Global element.
        const bool broadcast_axis = bound->iter_domain != nullptr && bound->iter_domain->isBroadcast();
        const bool one_writer = single_writer && writes_shared_state;
        if (!bound->extent.sameAs(launch_extent) && (!broadcast_axis || one_writer)) {
          pred.terms.push_back({dim.index(), Term::Kind::LessThan, bound->extent});
        }
        continue;
      }
      if (single_writer && writes_shared_state && launch_extent.constant() != 1) {
        pred.terms.push_back({dim.index(), Term::Kind::Equal, 0});
      }
    }
    return pred;
  }

  // Whether an index of `id` past its extent wraps into another element
  // rather than reaching a logical index past its extent: follow the carry
  // from a merge output to its outer input (the inner one, x % extent, stays
  // in range; to the other input when one is a broadcast) and from a split's
  // outer output to its input, up to a logical axis (no wrap) or a split's
  // inner output (a wrap).
  static bool overrunWraps(const std::vector<const IdTransform*>& history, const IterDomain* id) {
    for (auto it = history.rbegin(); it != history.rend(); ++it) {
      const IdTransform* t = *it;
      if (t->kind == IdTransform::Kind::Split) {
        if (t->outputs[1] == id) return true;
        if (t->outputs[0] == id) id = t->inputs[0];
      } else if (t->outputs[0] == id) {
        id = t->inputs[0]->isBroadcast() ? t->inputs[1] : t->inputs[0];
      }
    }
    return false;
  }

  kir::Predicate writePredicateFor(const kir::BlockReduce& reduce) {
    const TensorView* out = reduce.expr->output();
    kir::Predicate pred = predicateFor(out, /*with_reduction_axes=*/false, /*single_writer=*/true, &reduce);
    // The reduction leaves its result on every thread of the block: along a
    // reduced thread dimension, threads past the reduced axis' extent (a
    // size-1 reduced axis in a block that other tensors make wider) did not
    // contribute but hold the result too; a Local result must exist in each
    // thread that reads it. The guard on the reduced axis belongs to the
    // contribution predicate only.
    pred.terms.erase(std::remove_if(pred.terms.begin(), pred.terms.end(),
                                    [&](const Term& term) {
                                      return term.kind == Term::Kind::LessThan &&
                                             std::any_of(reduce.thread_axes.begin(),
                                                         reduce.thread_axes.end(),
                                                         [&](ParallelType pt) {
                                                           return term.lhs.sameAs(IntExpr::symbol(
                                                               parallelIndexSymbol(pt)));
                                                         });
                                    }),
                     pred.terms.end());
    if (out->memoryType() == MemoryType::Local) return pred;
    for (const Dim& dim : kDims) {
      const bool reduced = std::find(reduce.thread_axes.begin(), reduce.thread_axes.end(), dim.pt) !=
                           reduce.thread_axes.end();
      if (reduced) pred.terms.push_back({dim.index(), Term::Kind::Equal, 0});
    }
    return pred;
  }

  LoweringContext& ctx_;
};

}  // namespace

void insertPredicates(LoweringContext& ctx) { Predicator(ctx).run(ctx.kernel.body); }

}  // namespace smelt
