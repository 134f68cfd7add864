#include "scheduler/reduction_utils.h"

#include <algorithm>
#include <unordered_set>

#include "fusion/error.h"

namespace smelt::scheduler_utils {

namespace {

bool iterates(const IterDomain* id) { return !id->isPlainBroadcast(); }

// Tensors computed (transitively) from any of `sources`, sources excluded.
std::unordered_set<const TensorView*> downstreamOf(const Fusion& fusion,
                                                   const std::vector<TensorView*>& sources) {
  std::unordered_set<const TensorView*> reached(sources.begin(), sources.end());
  std::unordered_set<const TensorView*> result;
  for (const Expr* expr : fusion.exprs()) {
    for (const TensorView* in : expr->tensorInputs()) {
      if (reached.count(in)) {
        reached.insert(expr->output());
        result.insert(expr->output());
        break;
      }
    }
  }
  return result;
}

}  // namespace

std::string analyzeReductions(const Fusion& fusion, ReductionLayout* layout) {
  ReductionLayout result;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->type() == ExprType::Reduction) result.reductions.push_back(expr->output());
  }
  if (result.reductions.empty()) return "it has no reduction";
  result.reference = result.reductions.front();
  result.map = std::make_shared<DimensionMap>(fusion, result.reference,
                                              DimensionMap::Reshapes::MergedDownstream);
  const DimensionMap& map = *result.map;
  if (!map.problem().empty()) return map.problem();
  // The map refuses an input axis that is no dimension of the reference
  // (e.g. one a reshape regroups): a cached register copy of that input
  // could not follow the reference's dimensions, so the reshape takes a
  // kernel of its own.
  const auto& logical = result.reference->logicalDomain();
  std::vector<int64_t> iteration_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(logical.size()); ++d) {
    if (logical[d]->isReduction()) {
      result.reduced_dims.push_back(d);
    } else if (iterates(logical[d])) {
      iteration_dims.push_back(d);
    }
  }
  for (const TensorView* r : result.reductions) {
    std::vector<int64_t> dims;
    for (const IterDomain* id : r->logicalDomain()) {
      if (id->isReduction()) dims.push_back(*map.dimOf(id));
    }
    std::sort(dims.begin(), dims.end());
    if (dims != result.reduced_dims) {
      return "reductions " + result.reference->name() + " and " + r->name() +
             " reduce different dimensions";
    }
  }
  for (const TensorView* tv : downstreamOf(fusion, result.reductions)) {
    for (int64_t d : result.reduced_dims) {
      auto role = map.role(tv, d);
      if (role == DimensionMap::Role::Broadcast || role == DimensionMap::Role::Iteration ||
          role == DimensionMap::Role::Expanded) {
        result.broadcasts_back = true;
      }
    }
  }
  for (const Val* out : fusion.outputs()) {
    for (int64_t d : result.reduced_dims) {
      if (map.role(out->asTensor(), d) == DimensionMap::Role::Iteration &&
          result.full_output == nullptr) {
        result.full_output = out->asTensor();
      }
    }
  }
  result.iteration_runs = map.mergeableRuns(iteration_dims);
  std::string merges = map.mergedGroupsFitRuns(result.iteration_runs);
  if (!merges.empty()) return merges;
  result.reduction_runs = map.mergeableRuns(result.reduced_dims);
  int64_t innermost = -1;
  for (int64_t d = 0; d < static_cast<int64_t>(logical.size()); ++d) {
    if (iterates(logical[d])) innermost = d;
  }
  result.inner = innermost >= 0 && logical[innermost]->isReduction();
  *layout = std::move(result);
  return "";
}

std::vector<TensorView*> cacheForReductions(Fusion& fusion,
                                            const std::vector<int64_t>& vectorized_inputs,
                                            const std::vector<int64_t>& vectorized_outputs,
                                            const std::string& scheduler, ReductionLayout* layout) {
  std::vector<TensorView*> vectorized = cacheInputsAndOutputs(
      fusion, vectorized_inputs, vectorized_outputs,
      [](const TensorView* out) { return out->definition()->type() == ExprType::Reduction; },
      scheduler);
  // analyzeReductions refuses inputs whose copies would not fit its map.
  std::string reason = analyzeReductions(fusion, layout);
  SMELT_INTERNAL_CHECK(reason.empty(), scheduler, " scheduler, after caching: ", reason);
  return vectorized;
}

void bindIterationRuns(TensorView* reference, const std::vector<int64_t>& positions,
                       int64_t threads, ParallelType thread_type) {
  if (positions.empty()) return;
  const int64_t inner = positions.back();
  if (threads > 1) {
    reference->split(inner, threads);
    reference->axis(inner + 1)->parallelize(thread_type);
  }
  reference->axis(inner)->parallelize(ParallelType::BIDx);
  if (positions.size() >= 2) {
    reference->axis(positions[positions.size() - 2])->parallelize(ParallelType::BIDy);
  }
  // Not a serial loop: see serialLoopBufferReason.
  if (positions.size() >= 3) {
    reference->axis(positions[positions.size() - 3])->parallelize(ParallelType::BIDz);
  }
}

std::string serialIterationReason(const Fusion& fusion, const ReductionLayout& layout) {
  std::string reason = serialLoopBufferReason(fusion, *layout.map, serialRunDims(layout.iteration_runs),
                                              "its dimension run is outside the three bound to blocks");
  if (!reason.empty()) return reason;
  // Dimensions the reference broadcasts are no loop of its schedule: the
  // tensors iterating them run them in serial loops of their own (x1 [s0,
  // 1, s2] + x0.unsqueeze(1).sum(0, keepdim=True), with x1 also read by a
  // second output: x1's cache spanned a loop of s0 registers).
  std::vector<int64_t> broadcast_dims;
  const auto& logical = layout.reference->logicalDomain();
  for (int64_t d = 0; d < static_cast<int64_t>(logical.size()); ++d) {
    if (!logical[d]->isReduction() && !iterates(logical[d])) broadcast_dims.push_back(d);
  }
  return serialLoopBufferReason(fusion, *layout.map, broadcast_dims,
                                "the reduction " + layout.reference->name() + " broadcasts it");
}

}  // namespace smelt::scheduler_utils
