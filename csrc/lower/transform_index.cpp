#include "lower/transform_index.h"

#include <algorithm>
#include <optional>
#include <string>

#include "fusion/error.h"
#include "fusion/symbols.h"
#include "fusion/transform_replay.h"

namespace smelt {

IntExpr loopIndexValue(const kir::ForLoop& loop) {
  if (loop.extent.constant() == 1) return 0;
  return IntExpr::symbol(loop.index);
}

namespace {
IntExpr lookup(const IndexMap& map, const IterDomain* id, bool iterate_expanded = false) {
  if (id->isBroadcast() && !(iterate_expanded && id->hasExpandedExtent())) return 0;
  auto it = map.find(id);
  return it == map.end() ? IntExpr(0) : it->second;
}
}  // namespace

IndexMap logicalIndices(const TensorView* tv, const std::vector<IntExpr>& loop_indices,
                        bool iterate_expanded) {
  SMELT_INTERNAL_CHECK(static_cast<int64_t>(loop_indices.size()) == tv->nDims());
  auto indexless = [&](const IterDomain* id) {
    return id->isBroadcast() && !(iterate_expanded && id->hasExpandedExtent());
  };
  IndexMap index;
  for (int64_t k = 0; k < tv->nDims(); ++k) index[tv->axis(k)] = loop_indices[k];
  // Back through the schedule to the logical axes, then through a reshape's
  // view transforms to the root axes its input maps onto.
  std::vector<const IdTransform*> history = viewTransforms(tv);
  for (const IdTransform* t : transformHistory(tv)) history.push_back(t);
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    const IdTransform* t = *it;
    if (t->kind == IdTransform::Kind::Split) {
      const IterDomain* outer = t->outputs[0];
      const IterDomain* inner = t->outputs[1];
      index[t->inputs[0]] = lookup(index, outer, iterate_expanded) * inner->loopExtent() +
                            lookup(index, inner, iterate_expanded);
    } else {
      const IterDomain* outer = t->inputs[0];
      const IterDomain* inner = t->inputs[1];
      IntExpr merged = lookup(index, t->outputs[0], iterate_expanded);
      if (indexless(outer)) {
        index[inner] = merged;
      } else if (indexless(inner)) {
        index[outer] = merged;
      } else {
        index[outer] = merged / inner->loopExtent();
        index[inner] = merged % inner->loopExtent();
      }
    }
  }
  for (const IterDomain* id : tv->logicalDomain()) {
    if (indexless(id)) index[id] = 0;
  }
  return index;
}

std::vector<IntExpr> loopIndicesFromLogical(const TensorView* tv, const IndexMap& logical) {
  IndexMap index = logical;
  for (const IdTransform* t : transformHistory(tv)) {
    if (t->kind == IdTransform::Kind::Split) {
      IntExpr in = lookup(index, t->inputs[0]);
      IntExpr inner_extent = t->outputs[1]->extent();
      index[t->outputs[0]] = in / inner_extent;
      index[t->outputs[1]] = in % inner_extent;
    } else {
      const IterDomain* outer = t->inputs[0];
      const IterDomain* inner = t->inputs[1];
      index[t->outputs[0]] = outer->isBroadcast()   ? lookup(index, inner)
                             : inner->isBroadcast() ? lookup(index, outer)
                                                    : lookup(index, outer) * inner->extent() +
                                                          lookup(index, inner);
    }
  }
  std::vector<IntExpr> result;
  for (const IterDomain* id : tv->loopDomain()) result.push_back(lookup(index, id));
  return result;
}

bool needsBoundsCheck(const TensorView* tv, const IterDomain* id) {
  if (id->isBroadcast()) return false;
  std::vector<const IdTransform*> history = transformHistory(tv);
  std::vector<const IterDomain*> frontier{id};
  for (const IdTransform* t : history) {
    bool touches = std::any_of(t->inputs.begin(), t->inputs.end(), [&](const IterDomain* in) {
      return std::find(frontier.begin(), frontier.end(), in) != frontier.end();
    });
    if (!touches) continue;
    if (t->kind == IdTransform::Kind::Split) {
      auto extent = t->inputs[0]->extent().constant();
      auto factor = t->factor.constant();
      if (!extent || !factor || *extent % *factor != 0) return true;
    }
    frontier.insert(frontier.end(), t->outputs.begin(), t->outputs.end());
  }
  return false;
}

IntExpr globalStride(const TensorView* tv, int64_t d) {
  const IntExpr parameter = IntExpr::symbol(strideSymbol(tv, d));
  if (!tv->isFusionInput() && !tv->isFusionOutput()) return parameter;
  const std::vector<IterDomain*> dims = tv->logicalNoReductions();
  const std::vector<bool>& contiguity = tv->contiguity();
  auto declared = [&](int64_t e) { return e >= static_cast<int64_t>(contiguity.size()) || contiguity[e]; };
  // A broadcast dimension keeps the argument (an expanded one has stride 0).
  if (d >= static_cast<int64_t>(dims.size()) || dims[d]->isBroadcast() || !declared(d)) return parameter;
  int64_t stride = 1;
  for (int64_t e = static_cast<int64_t>(dims.size()) - 1; e > d; --e) {
    if (dims[e]->isBroadcast()) continue;
    const std::optional<int64_t> extent = dims[e]->extent().constant();
    if (!declared(e) || !extent) return parameter;
    stride *= *extent;
  }
  return stride;
}

}  // namespace smelt
