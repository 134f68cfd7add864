#include "scheduler/window_inputs.h"

#include <algorithm>
#include <optional>

#include "fusion/error.h"
#include "fusion/ops.h"

namespace smelt {

namespace {

using Widths = std::vector<std::pair<int64_t, int64_t>>;

bool allZero(const Widths& widths) {
  return std::all_of(widths.begin(), widths.end(),
                     [](const auto& w) { return w.first == 0 && w.second == 0; });
}

bool cropsOnly(const Widths& widths) {
  return std::all_of(widths.begin(), widths.end(),
                     [](const auto& w) { return w.first <= 0 && w.second <= 0; });
}

// The widths of `in`'s axes for an elementwise op whose output gets `widths`:
// an axis `in` broadcasts against the output stays as it is (it reads index 0
// at any position), unless the output's axis is a broadcast too.
Widths operandWidths(const TensorView* in, const TensorView* out, const Widths& widths) {
  const std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  const std::vector<IterDomain*> out_axes = out->logicalNoReductions();
  if (in_axes.size() != out_axes.size()) return Widths(in_axes.size(), {0, 0});  // rank 0
  Widths result(in_axes.size(), {0, 0});
  for (size_t d = 0; d < in_axes.size(); ++d) {
    if (!in_axes[d]->isBroadcast() || out_axes[d]->isBroadcast()) result[d] = widths[d];
  }
  return result;
}

// The output axes of `tv` read through `widths`.
std::vector<IterDomain*> shiftedDomain(Fusion* f, const TensorView* tv, const Widths& widths) {
  std::vector<IterDomain*> axes;
  const std::vector<IterDomain*> logical = tv->logicalNoReductions();
  for (size_t d = 0; d < logical.size(); ++d) {
    const IterDomain* id = logical[d];
    const auto [before, after] = widths[d];
    if (before != 0 || after != 0) {
      axes.push_back(windowAxis(f, id->loopExtent() + before + after));
      continue;
    }
    IterDomain* copy = f->newIterDomain(id->extent(), id->iterType());
    if (id->hasExpandedExtent()) copy->setExpandedExtent(id->expandedExtent());
    axes.push_back(copy);
  }
  return axes;
}

bool isConstant(const Val* v) {
  const auto* s = dynamic_cast<const Scalar*>(v);
  return s != nullptr && s->isConstant();
}

// Whether a tensor defined by `def` can be computed at shifted positions
// from its operands read through widths: elementwise ops, permutes,
// broadcasts (of their existing axes), iotas of constant start and step.
bool recomputable(const Expr* def, const Widths& widths) {
  switch (def->type()) {
    case ExprType::Unary:
    case ExprType::Binary:
    case ExprType::Where:
    case ExprType::Set:
    case ExprType::Full:
    case ExprType::Permute:
    case ExprType::Pad:
      return true;
    case ExprType::Iota:  // shifted along its one axis
      return def->output()->logicalNoReductions().size() == 1 &&
             isConstant(static_cast<const IotaOp*>(def)->start()) &&
             isConstant(static_cast<const IotaOp*>(def)->step());
    case ExprType::Broadcast: {
      const std::vector<bool>& is_new = static_cast<const BroadcastOp*>(def)->isNewAxis();
      for (size_t d = 0; d < is_new.size(); ++d) {
        if (is_new[d] && widths[d] != std::pair<int64_t, int64_t>{0, 0}) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

// The widths of the operand of a permute or broadcast whose output gets `widths`.
Widths layoutOperandWidths(const Expr* def, const Widths& widths) {
  if (def->type() == ExprType::Permute) {
    const std::vector<int64_t>& dims = static_cast<const PermuteOp*>(def)->dims();
    Widths permuted(widths.size(), {0, 0});
    for (size_t i = 0; i < dims.size(); ++i) permuted[dims[i]] = widths[i];
    return permuted;
  }
  const std::vector<bool>& is_new = static_cast<const BroadcastOp*>(def)->isNewAxis();
  Widths kept;
  for (size_t d = 0; d < is_new.size(); ++d) {
    if (!is_new[d]) kept.push_back(widths[d]);
  }
  return kept;
}

// A tensor equal to `tv` read through `widths` (element c is tv[c - before])
// wherever that lies inside `tv`; elsewhere any value. The elementwise
// producers of `tv` are recomputed on the shifted positions, so only fusion
// inputs and tensors that cannot be recomputed (reductions, reshapes) are
// read by a pad; a pad read by the window composes with it.
TensorView* shifted(TensorView* tv, const Widths& widths) {
  if (allZero(widths)) return tv;
  Fusion* f = tv->fusion();
  Expr* def = tv->definition();
  if (def == nullptr || tv->isFusionInput() || !recomputable(def, widths)) {
    return padAxes(tv, widths, 0.0);
  }
  if (def->type() == ExprType::Pad) {
    const auto* inner = static_cast<const PadOp*>(def);
    Widths combined = inner->widths();
    for (size_t d = 0; d < combined.size(); ++d) {
      combined[d].first += widths[d].first;
      combined[d].second += widths[d].second;
    }
    TensorView* in = inner->input(0)->asTensor();
    const double value = static_cast<const Scalar*>(inner->padValue())->value();
    return allZero(combined) ? in : padAxes(in, combined, value);
  }
  std::vector<Val*> inputs;
  if (def->type() == ExprType::Iota) {  // start + (c - before) * step
    const auto* iota_op = static_cast<const IotaOp*>(def);
    const double step = static_cast<const Scalar*>(iota_op->step())->value();
    const double start = static_cast<const Scalar*>(iota_op->start())->value();
    inputs = {constant(start - static_cast<double>(widths[0].first) * step, iota_op->start()->dtype()),
              iota_op->step()};
  }
  for (Val* in : def->type() == ExprType::Iota ? std::vector<Val*>{} : def->inputs()) {
    TensorView* operand = in->asTensor();
    if (operand == nullptr) {
      inputs.push_back(in);
    } else if (def->type() == ExprType::Permute || def->type() == ExprType::Broadcast) {
      inputs.push_back(shifted(operand, layoutOperandWidths(def, widths)));
    } else {
      inputs.push_back(shifted(operand, operandWidths(operand, tv, widths)));
    }
  }
  TensorView* out = f->newTensor(tv->dtype(), shiftedDomain(f, tv, widths));
  def->cloneWith(*f, inputs, {out});
  return out;
}

// `pad`'s output recomputed from its input's producers: a crop is the
// shifted tensor itself; a pad keeps its value outside the input's window.
void recompute(PadOp* pad) {
  TensorView* out = pad->output();
  TensorView* in = pad->input(0)->asTensor();
  Fusion* f = out->fusion();
  FusionGuard guard(f);
  const Widths widths = pad->widths();
  Val* pad_value = pad->padValue();
  TensorView* value = shifted(in, widths);
  f->removeExpr(pad);
  if (cropsOnly(widths)) {
    f->newExpr<LoadStoreOp>(out, value);
    return;
  }
  // In the window: before <= c < before + extent on every padded axis.
  const std::vector<IterDomain*> axes = in->logicalNoReductions();
  TensorView* inside = nullptr;
  for (size_t d = 0; d < widths.size(); ++d) {
    const auto [before, after] = widths[d];
    if (before <= 0 && after <= 0) continue;
    const IntExpr extent = out->logicalNoReductions()[d]->loopExtent();
    std::vector<bool> new_axes(widths.size(), true);
    new_axes[d] = false;
    TensorView* position = broadcast(
        iota(extent, constant(0, DataType::Int), constant(1, DataType::Int), DataType::Int), new_axes);
    auto bound = [&](BinaryOpType op, const IntExpr& limit) {
      const std::optional<int64_t> c = limit.constant();
      SMELT_INTERNAL_CHECK(c.has_value(), "a padded extent is not constant");
      return binaryOp(op, position, constant(static_cast<double>(*c), DataType::Int));
    };
    if (before > 0) {
      TensorView* ge_start = bound(BinaryOpType::Ge, IntExpr(before));
      inside = inside == nullptr ? ge_start : logicalAnd(inside, ge_start);
    }
    if (after > 0) {
      TensorView* lt_stop = bound(BinaryOpType::Lt, axes[d]->loopExtent() + before);
      inside = inside == nullptr ? lt_stop : logicalAnd(inside, lt_stop);
    }
  }
  f->newExpr<WhereOp>(out, inside, value, pad_value);
}

}  // namespace

int64_t recomputeWindowInputs(Fusion& fusion) {
  int64_t count = 0;
  for (Expr* expr : fusion.exprs()) {
    if (expr->type() != ExprType::Pad) continue;
    auto* pad = static_cast<PadOp*>(expr);
    TensorView* in = pad->input(0)->asTensor();
    if (in->isFusionInput() || in->definition() == nullptr ||
        !recomputable(in->definition(), pad->widths())) {
      continue;
    }
    // Positive widths need constant extents for the window's bounds.
    const std::vector<IterDomain*> axes = in->logicalNoReductions();
    bool constant_bounds = true;
    for (size_t d = 0; d < axes.size(); ++d) {
      if (pad->widths()[d].second > 0 && !axes[d]->loopExtent().constant()) constant_bounds = false;
    }
    if (!constant_bounds) continue;
    recompute(pad);
    ++count;
  }
  return count;
}

}  // namespace smelt
