#include "scheduler/pointwise.h"

#include <algorithm>
#include <sstream>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "scheduler/utils.h"

namespace smelt {

using namespace scheduler_utils;

namespace {

// The output with the most axes that iterate (first among equals).
TensorView* pointwiseReference(const Fusion& fusion) {
  TensorView* best = nullptr;
  int64_t best_count = -1;
  for (Val* out : fusion.outputs()) {
    TensorView* tv = out->asTensor();
    auto dims = tv->logicalDomain();
    int64_t count = std::count_if(dims.begin(), dims.end(),
                                  [](const IterDomain* id) { return !id->isPlainBroadcast(); });
    if (count > best_count) {
      best = tv;
      best_count = count;
    }
  }
  return best;
}

// The reference's dimensions that iterate, in order.
std::vector<int64_t> iteratingDims(const TensorView* reference) {
  std::vector<int64_t> dims;
  const auto& logical = reference->logicalDomain();
  for (size_t d = 0; d < logical.size(); ++d) {
    if (!logical[d]->isPlainBroadcast()) dims.push_back(static_cast<int64_t>(d));
  }
  return dims;
}

PointwiseParams computeParams(const Fusion& fusion, const TensorView* ref, const DimensionMap& map,
                              const std::vector<std::vector<int64_t>>& runs,
                              const RuntimeInfo& runtime) {
  PointwiseParams params;
  if (runs.empty()) {
    params.block_x = 1;
    return params;
  }
  const std::vector<int64_t>& inner = runs.back();
  const int64_t n_inner = std::max<int64_t>(extentOf(ref, map, inner, runtime), 1);

  VectorChoice vector = chooseVectorWidth(fusion, map, inner, runtime, /*with_outputs=*/true);
  params.vector_width = vector.width;
  params.vectorized_inputs = vector.inputs;
  params.vectorized_outputs = vector.outputs;
  const int64_t inner_threads = ceilDiv(n_inner, params.vector_width);
  params.block_x = std::min<int64_t>(128, nextPowerOfTwo(inner_threads));
  params.outer_run_on_grid_x = runs.size() >= 4 && inner_threads <= params.block_x;
  if (runs.size() >= 2) {
    const int64_t n_outer = extentOf(ref, map, runs[runs.size() - 2], runtime);
    params.block_y = std::min<int64_t>(128 / params.block_x, nextPowerOfTwo(n_outer));
    params.split_grid_y = ceilDiv(n_outer, params.block_y) > kMaxGridY;
  }
  return params;
}

// Why the schedule of `runs` would leave a buffer across serial loops (see
// serialLoopBufferReason): runs outside the three bound to blocks, and the
// BIDy run when split_grid_y folds part of it into a serial loop.
std::string serialLoopReason(const Fusion& fusion, const DimensionMap& map,
                             const std::vector<std::vector<int64_t>>& runs, bool split_grid_y) {
  std::string reason = serialLoopBufferReason(
      fusion, map, serialRunDims(runs), "its dimension run is outside the three bound to blocks");
  if (reason.empty() && split_grid_y && runs.size() >= 2) {
    reason = serialLoopBufferReason(fusion, map, runs[runs.size() - 2],
                                    "part of the blocks past gridDim.y's limit");
  }
  return reason;
}

}  // namespace

std::string PointwiseParams::toString() const {
  std::ostringstream os;
  os << "PointwiseParams{vector_width=" << vector_width << ", block=(" << block_x << ", "
     << block_y << "), split_grid_y=" << (split_grid_y ? "true" : "false")
     << (outer_run_on_grid_x ? ", outer_run_on_grid_x" : "")
     << ", vectorized_inputs=" << scheduler_utils::toString(vectorized_inputs)
     << ", vectorized_outputs=" << scheduler_utils::toString(vectorized_outputs) << "}";
  return os.str();
}

std::unique_ptr<HeuristicParams> PointwiseParams::clone() const {
  return std::make_unique<PointwiseParams>(*this);
}

std::string pointwiseRejectReason(const Fusion& fusion, const RuntimeInfo* runtime) {
  if (fusion.outputs().empty()) return "the fusion has no outputs";
  for (const Expr* expr : fusion.exprs()) {
    if (expr->type() == ExprType::Reduction) {
      return "it has a reduction (" + expr->toString() + ")";
    }
  }
  TensorView* ref = pointwiseReference(fusion);
  DimensionMap map(fusion, ref, DimensionMap::Reshapes::Upstream);
  if (!map.problem().empty()) return map.problem();
  auto runs = map.mergeableRuns(iteratingDims(ref));
  const bool split_grid_y =
      runtime != nullptr && computeParams(fusion, ref, map, runs, *runtime).split_grid_y;
  return serialLoopReason(fusion, map, runs, split_grid_y);
}

PointwiseParams pointwiseHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  std::string reason = pointwiseRejectReason(fusion, &runtime);
  SMELT_CHECK(reason.empty(), "pointwise scheduler cannot take this fusion: ", reason);
  TensorView* ref = pointwiseReference(fusion);
  DimensionMap map(fusion, ref, DimensionMap::Reshapes::Upstream);
  return computeParams(fusion, ref, map, map.mergeableRuns(iteratingDims(ref)), runtime);
}

void schedulePointwise(Fusion& fusion, const PointwiseParams& params) {
  FusionGuard guard(&fusion);
  std::string reason = pointwiseRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "pointwise scheduler cannot take this fusion: ", reason);
  SMELT_CHECK(params.vector_width >= 1 && params.block_x >= 1 && params.block_y >= 1,
              "pointwise scheduler: vector width and block sizes must be positive in ",
              params.toString());
  TensorView* ref = pointwiseReference(fusion);
  {
    DimensionMap map(fusion, ref, DimensionMap::Reshapes::Upstream);
    reason = serialLoopReason(fusion, map, map.mergeableRuns(iteratingDims(ref)), params.split_grid_y);
    SMELT_CHECK(reason.empty(), "pointwise scheduler cannot take this fusion with ",
                params.toString(), ": ", reason);
  }

  std::vector<TensorView*> vectorized = cacheInputsAndOutputs(
      fusion, params.vectorized_inputs, params.vectorized_outputs, {}, "pointwise");

  DimensionMap map(fusion, ref, DimensionMap::Reshapes::Upstream);
  auto runs = map.mergeableRuns(iteratingDims(ref));
  if (!runs.empty()) {
    std::vector<int64_t> positions = mergeGroups(ref, map, runs);
    const int64_t inner = positions.back();
    const bool outer_on_x = params.outer_run_on_grid_x && runs.size() >= 4;
    if (params.vector_width > 1) ref->split(inner, params.vector_width);
    ref->split(inner, params.block_x);
    // With outer_on_x, the inner run's block loop (one iteration) stays serial.
    if (!outer_on_x) ref->axis(inner)->parallelize(ParallelType::BIDx);
    ref->axis(inner + 1)->parallelize(ParallelType::TIDx);
    if (runs.size() >= 2) {
      const int64_t outer = positions[positions.size() - 2];
      if (params.block_y > 1) {
        ref->split(outer, params.block_y);
        ref->axis(outer + 1)->parallelize(ParallelType::TIDy);
      }
      if (params.split_grid_y) ref->split(outer, kMaxGridY, /*inner_split=*/false);
      ref->axis(outer)->parallelize(ParallelType::BIDy);
    }
    // A third run on BIDz rather than a serial loop: a tensor read by two
    // outputs' loop nests is not inlined, so its buffer would span the loop.
    if (runs.size() >= 3) ref->axis(positions[positions.size() - 3])->parallelize(ParallelType::BIDz);
    if (outer_on_x) ref->axis(positions[positions.size() - 4])->parallelize(ParallelType::BIDx);
  }
  propagateSchedule(ref);
  vectorizeInnermost(vectorized, params.vector_width);
  inlineMost(&fusion);
}

}  // namespace smelt
