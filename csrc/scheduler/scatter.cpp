#include "scheduler/scatter.h"

#include <sstream>

#include "fusion/error.h"
#include "fusion/transform_replay.h"

namespace smelt {

namespace {

// Expressions whose element [p] reads only element [p] of their inputs (or
// broadcasts of them): they can run in the scatter's loop over the index.
bool isElementwise(const Expr* expr) {
  switch (expr->type()) {
    case ExprType::Full: case ExprType::Iota: case ExprType::Unary: case ExprType::Binary:
    case ExprType::Where: case ExprType::Set: case ExprType::Broadcast: case ExprType::Expand:
      return true;
    default:
      return false;
  }
}

const ScatterOp* theScatter(const Fusion& fusion) {
  const ScatterOp* found = nullptr;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->type() != ExprType::Scatter) continue;
    if (found != nullptr) return nullptr;
    found = static_cast<const ScatterOp*>(expr);
  }
  return found;
}

}  // namespace

std::string ScatterParams::toString() const {
  std::ostringstream os;
  os << "ScatterParams{block_x=" << block_x << "}";
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
    if (expr != scatter && !isElementwise(expr)) {
      return "the producer " + expr->toString() + " of the scatter is not element-wise";
    }
  }
  return "";
}

ScatterParams scatterHeuristics(const Fusion& fusion, const RuntimeInfo&) {
  const std::string reason = scatterRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "scatter scheduler cannot take this fusion: ", reason);
  return ScatterParams{};
}

void scheduleScatter(Fusion& fusion, const ScatterParams& params) {
  FusionGuard guard(&fusion);
  const std::string reason = scatterRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "scatter scheduler cannot take this fusion: ", reason);
  SMELT_CHECK(params.block_x >= 1, "scatter scheduler: block_x must be positive in ",
              params.toString());
  TensorView* out = theScatter(fusion)->output();
  while (out->nDims() > 1) out->merge(0);
  out->split(0, params.block_x);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(out);
  inlineMost(&fusion);
}

}  // namespace smelt
