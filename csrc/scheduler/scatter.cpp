#include "scheduler/scatter.h"

#include <algorithm>
#include <sstream>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "scheduler/utils.h"

namespace smelt {

namespace {

using scheduler_utils::kMaxGridY;

const ScatterOp* theScatter(const Fusion& fusion) {
  return static_cast<const ScatterOp*>(scheduler_utils::onlyExprOf(fusion, ExprType::Scatter));
}

}  // namespace

std::string ScatterParams::toString() const {
  std::ostringstream os;
  os << "ScatterParams{block_x=" << block_x << ", split_grid_y=" << (split_grid_y ? "true" : "false") << "}";
  return os.str();
}

std::unique_ptr<HeuristicParams> ScatterParams::clone() const {
  return std::make_unique<ScatterParams>(*this);
}

std::string scatterRejectReason(const Fusion& fusion) {
  int64_t scatters = 0;
  for (const Expr* expr : fusion.exprs()) scatters += expr->type() == ExprType::Scatter;
  if (scatters != 1) return "it has " + std::to_string(scatters) + " scatters, not one";
  const ScatterOp* scatter = theScatter(fusion);
  const TensorView* out = scatter->output();
  if (!scatter->self()->isFusionInput()) {
    return "the scatter's self " + scatter->self()->name() +
           " is computed in the fusion (its copy must be complete before the scatter writes)";
  }
  if (fusion.outputs().size() != 1 || fusion.outputs()[0] != out || !out->uses().empty()) {
    return "the scatter's output " + out->name() +
           " is not the fusion's only output or has consumers (they run after the scatter)";
  }
  for (const Expr* expr : fusion.exprs()) {
    if (expr != scatter && !scheduler_utils::isElementwise(expr)) {
      return "the producer " + expr->toString() + " of the scatter is not element-wise";
    }
  }
  return "";
}

ScatterParams scatterHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  const std::string reason = scatterRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "scatter scheduler cannot take this fusion: ", reason);
  ScatterParams params;
  const std::vector<IterDomain*>& iteration = theScatter(fusion)->output()->loopRoot();
  const size_t rank = iteration.size();
  params.split_grid_y = rank >= 2 && runtime.extent(iteration[rank - 2]) > kMaxGridY;
  // A block no wider than the innermost extent (rounded up to a power of
  // two, at least a warp): threads past it would only be predicated off (an
  // embedding gradient of width 64 left half of each 128-thread block idle).
  if (rank >= 1) {
    const int64_t row = runtime.extent(iteration[rank - 1]);
    params.block_x = std::clamp<int64_t>(scheduler_utils::nextPowerOfTwo(row), 32, params.block_x);
  }
  return params;
}

void scheduleScatter(Fusion& fusion, const ScatterParams& params) {
  FusionGuard guard(&fusion);
  const std::string reason = scatterRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "scatter scheduler cannot take this fusion: ", reason);
  SMELT_CHECK(params.block_x >= 1, "scatter scheduler: block_x must be positive in ",
              params.toString());
  TensorView* out = theScatter(fusion)->output();
  scheduler_utils::parallelizeRows(out, out->nDims() - 1, params.block_x, params.split_grid_y);
  propagateSchedule(out);
  inlineMost(&fusion);
}

}  // namespace smelt
