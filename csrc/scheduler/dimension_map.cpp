#include <algorithm>
#include <functional>
#include <unordered_set>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "scheduler/utils.h"

// DimensionMap (utils.h): how every tensor of a fusion sees the reference
// tensor's dimensions, and why a fusion cannot run in the reference's loops.
namespace smelt::scheduler_utils {

namespace {

// Labels each logical axis of every tensor with the logical axis of
// `reference` it corresponds to, following the producer-consumer axis maps of
// every op until nothing changes. `conflict` is called for a pair of mapped
// axes that carry different labels (each keeps its own).
using LabelConflict = std::function<void(const IterDomain*, const IterDomain*, int64_t, int64_t)>;
// Without `through_broadcasts`, labels pass only between iterated axes (a
// broadcast axis takes no label and passes none on).
std::unordered_map<const IterDomain*, int64_t> labelAxes(const Fusion& fusion,
                                                         const TensorView* reference,
                                                         const LabelConflict& conflict,
                                                         bool through_broadcasts = true) {
  std::unordered_map<const IterDomain*, int64_t> labels;
  const auto& axes = reference->logicalDomain();
  for (size_t d = 0; d < axes.size(); ++d) labels[axes[d]] = static_cast<int64_t>(d);
  const std::vector<Expr*> exprs = fusion.exprs();
  for (bool changed = true; changed;) {
    changed = false;
    for (Expr* expr : exprs) {
      TensorView* out = expr->output();
      for (TensorView* in : expr->tensorInputs()) {
        for (const auto& [p, c] : pairwiseLogicalMap(in, out)) {
          if (!through_broadcasts && (p->isPlainBroadcast() || c->isPlainBroadcast())) continue;
          auto pl = labels.find(p);
          auto cl = labels.find(c);
          if (pl != labels.end() && cl != labels.end()) {
            if (pl->second != cl->second) conflict(p, c, pl->second, cl->second);
          } else if (pl != labels.end()) {
            labels[c] = pl->second;
            changed = true;
          } else if (cl != labels.end()) {
            labels[p] = cl->second;
            changed = true;
          }
        }
      }
    }
  }
  return labels;
}

// Where a reshape's view axes come from: the input dimensions (positions in
// its logical domain) under each axis of the view, and the groups of input
// dimensions its merges combine (dimensions it only splits or passes through
// are in no group).
struct ViewOrigins {
  std::unordered_map<const IterDomain*, std::vector<int64_t>> under;
  std::vector<std::vector<int64_t>> merged_groups;
};

ViewOrigins viewOrigins(const Expr* reshape) {
  const TensorView* in = reshape->input(0)->asTensor();
  const TensorView* out = reshape->output();
  ViewOrigins origins;
  const IdMap to_root = pairwiseLogicalMap(in, out);
  const auto& in_axes = in->logicalDomain();
  for (size_t d = 0; d < in_axes.size(); ++d) {
    auto it = to_root.find(in_axes[d]);
    if (it != to_root.end()) origins.under[it->second] = {static_cast<int64_t>(d)};
  }
  for (const IdTransform* t : viewTransforms(out)) {
    std::vector<int64_t> dims;
    for (const IterDomain* input : t->inputs) {
      const std::vector<int64_t>& part = origins.under[input];
      dims.insert(dims.end(), part.begin(), part.end());
    }
    std::sort(dims.begin(), dims.end());
    for (const IterDomain* output : t->outputs) origins.under[output] = dims;
    if (t->kind == IdTransform::Kind::Merge) origins.merged_groups.push_back(dims);
  }
  return origins;
}

// The tensors `reshape`'s input is computed from (itself included).
std::unordered_set<const TensorView*> upstreamOf(const std::vector<Expr*>& exprs, const Expr* reshape) {
  std::unordered_set<const TensorView*> upstream{reshape->input(0)->asTensor()};
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    if (!upstream.count((*it)->output())) continue;
    for (const TensorView* producer : (*it)->tensorInputs()) upstream.insert(producer);
  }
  return upstream;
}


}  // namespace

bool readThroughASplitAndBeside(const Fusion& fusion, const std::vector<Expr*>& exprs,
                                const TensorView* tv) {
  const auto& axes = tv->logicalDomain();
  const auto plain = [](const IterDomain* id) { return id->isPlainBroadcast(); };
  if (std::all_of(axes.begin(), axes.end(), plain)) return false;  // one value
  for (const Expr* reshape : exprs) {
    if (reshape->type() != ExprType::Reshape) continue;
    const std::vector<const IdTransform*> view = viewTransforms(reshape->output());
    if (std::none_of(view.begin(), view.end(),
                     [](const IdTransform* t) { return t->kind == IdTransform::Kind::Split; })) {
      continue;
    }
    const std::unordered_set<const TensorView*> upstream = upstreamOf(exprs, reshape);
    if (!upstream.count(tv)) continue;
    if (tv->isFusionOutput()) return true;
    for (const TensorView* consumer : fusion.consumersOf(tv)) {
      if (!upstream.count(consumer) && consumer != reshape->output()) return true;
    }
  }
  return false;
}

std::vector<std::pair<const TensorView*, std::string>> partiallyMergedByReshapes(
    const Fusion& fusion) {
  std::vector<std::pair<const TensorView*, std::string>> result;
  const std::vector<Expr*> exprs = fusion.exprs();
  for (const Expr* reshape : exprs) {
    if (reshape->type() != ExprType::Reshape) continue;
    const TensorView* in = reshape->input(0)->asTensor();
    const std::vector<std::vector<int64_t>> groups = viewOrigins(reshape).merged_groups;
    if (groups.empty()) continue;
    const auto labels = labelAxes(fusion, in, [](const IterDomain*, const IterDomain*, int64_t, int64_t) {});
    const std::unordered_set<const TensorView*> upstream = upstreamOf(exprs, reshape);
    for (const TensorView* tv : fusion.allTensors()) {
      if (!upstream.count(tv)) continue;
      for (const std::vector<int64_t>& group : groups) {
        std::vector<int64_t> iterated, not_iterated;
        for (int64_t d : group) {
          const IterDomain* axis = nullptr;
          for (const IterDomain* id : tv->logicalDomain()) {
            auto it = labels.find(id);
            if (it != labels.end() && it->second == d) axis = id;
          }
          (axis != nullptr && !axis->isBroadcast() ? iterated : not_iterated).push_back(d);
        }
        if (iterated.empty() || not_iterated.empty()) continue;
        result.emplace_back(tv, errorMessage(reshape->output()->name(), " = reshape(", in->name(),
                                             ") merges dimensions ", toString(group), " of ",
                                             in->name(), ", but ", tv->name(), " iterates only ",
                                             toString(iterated), " (it broadcasts or lacks ",
                                             toString(not_iterated), ")"));
        break;
      }
    }
  }
  return result;
}

DimensionMap::DimensionMap(const Fusion& fusion, const TensorView* reference, Reshapes reshapes)
    : ndims_(static_cast<int64_t>(reference->logicalDomain().size())) {
  std::vector<TensorView*> cacheable = cacheableInputs(fusion);
  for (TensorView* tv : fusion.allTensors()) {
    bool cached = std::find(cacheable.begin(), cacheable.end(), tv) != cacheable.end();
    if (!tv->isFusionInput() || cached) tensors_.push_back(tv);
  }
  auto conflict = [&](const IterDomain* a, const IterDomain* b, int64_t label_a, int64_t label_b) {
    if (problem_.empty()) {
      problem_ = errorMessage("axes ", a->toString(), " of ", a->owner()->name(), " and ",
                              b->toString(), " of ", b->owner()->name(),
                              " meet but stand for different dimensions of ",
                              reference->name(), " (", label_a, " and ", label_b, ")");
    }
  };
  labels_ = labelAxes(fusion, reference, conflict);
  std::vector<Expr*> exprs = fusion.exprs();
  // A window reads its input at shifted positions: a computed input's
  // element c is not the one the window's loop computes at c, even where
  // another consumer gives its axes labels (recomputeWindowInputs leaves
  // only inputs that cannot be recomputed, e.g. reshapes, to the segmenter).
  // So does an index_select's table, at loaded positions.
  for (const Expr* expr : exprs) {
    const TensorView* in = readAtOtherPositions(expr);
    if (in != nullptr && !in->isFusionInput() && problem_.empty()) {
      problem_ = errorMessage(expr->output()->name(), " = ", expr->opName(), "(", in->name(),
                              ") reads the computed ", in->name(),
                              " at other positions than its own, so it cannot run in its loops");
    }
  }
  std::unordered_set<const TensorView*> feeds_reshape;
  if (reshapes == Reshapes::MergedDownstream) labelMergedDownstream(fusion, exprs);
  if (reshapes == Reshapes::Upstream) {
    for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
      const Expr* expr = *it;
      if (expr->type() == ExprType::Reshape || feeds_reshape.count(expr->output())) {
        for (const TensorView* in : expr->tensorInputs()) feeds_reshape.insert(in);
      }
    }
    // The propagated schedule replays a reshape's merges onto the tensors
    // computed before it, which must iterate all the merged dimensions or none.
    for (const auto& [tv, why] : partiallyMergedByReshapes(fusion)) {
      const bool computed = std::find(tensors_.begin(), tensors_.end(), tv) != tensors_.end();
      if (computed && problem_.empty()) problem_ = why + ", so it cannot run in the reshape's loops";
    }
    labelThroughReshapes(fusion, exprs);
    // The replay reaches a tensor before a splitting reshape through the
    // split; a second reader (or its own store, as an output) needs the
    // unsplit axis, which no replayed loop gives (x.flatten(2, 3) returned
    // and viewed back as [.., 2, 2]).
    for (const TensorView* tv : tensors_) {
      if (problem_.empty() && !tv->isFusionInput() && readThroughASplitAndBeside(fusion, exprs, tv)) {
        problem_ = errorMessage(tv->name(), " is read through a reshape that splits it and also "
                                "beside it, so it cannot run in the reshape's loops");
      }
    }
  }
  checkAxesCovered(exprs, reference, feeds_reshape);
  checkRegroupingReshapes(fusion, exprs, reference);
  checkDroppedDimensions(exprs, reference);
}

// Every axis of every scheduled tensor stands for one dimension of the
// reference (or is a broadcast, a squeezed axis, or an input of a reshape).
// An axis a squeeze removes has extent 1: read at index 0, it needs no
// loop (a squeeze alone in its segment, after a scatter's kernel).
void DimensionMap::checkAxesCovered(const std::vector<Expr*>& exprs, const TensorView* reference,
                                    const std::unordered_set<const TensorView*>& feeds_reshape) {
  std::unordered_set<const IterDomain*> squeezed;
  for (const Expr* expr : exprs) {
    if (expr->type() != ExprType::Squeeze) continue;
    const auto& is_squeezed = static_cast<const SqueezeOp*>(expr)->isSqueezed();
    const std::vector<IterDomain*> axes = expr->input(0)->asTensor()->logicalNoReductions();
    for (size_t d = 0; d < axes.size() && d < is_squeezed.size(); ++d) {
      if (is_squeezed[d]) squeezed.insert(axes[d]);
    }
  }
  for (const TensorView* tv : tensors_) {
    std::vector<bool> seen(ndims_, false);
    for (const IterDomain* id : tv->logicalDomain()) {
      auto it = labels_.find(id);
      if (it == labels_.end()) {
        if (merged_dims_.count(id)) continue;
        bool plain_broadcast = id->isPlainBroadcast() || squeezed.count(id) > 0;
        // A cached input becomes a computed tensor scheduled like the others.
        if (!plain_broadcast && !feeds_reshape.count(tv) && problem_.empty()) {
          problem_ = errorMessage("axis ", id->toString(), " of ", tv->name(),
                                  " does not correspond to a dimension of ", reference->name());
        }
        continue;
      }
      if (seen[it->second] && problem_.empty()) {
        problem_ = errorMessage("tensor ", tv->name(), " has two axes standing for dimension ",
                                it->second, " of ", reference->name());
      }
      seen[it->second] = true;
    }
  }
}

// A reshape regrouping a computed tensor that the reference's dimensions
// reach on both sides through iterated axes (log_softmax(x, 0) read as is
// and as .view(2, 6).t() beside it): one register copy cannot serve both
// groupings, and the labels of the regrouped axes (through the other path)
// are not theirs. (Labels a broadcast passes on say nothing about
// elements: where(x > m, m, x).view(3, 2) / m.)
void DimensionMap::checkRegroupingReshapes(const Fusion& fusion, const std::vector<Expr*>& exprs,
                                           const TensorView* reference) {
  const auto iterated_labels = labelAxes(
      fusion, reference, [](const IterDomain*, const IterDomain*, int64_t, int64_t) {},
      /*through_broadcasts=*/false);
  for (const Expr* expr : exprs) {
    if (expr->type() != ExprType::Reshape) continue;
    const TensorView* in = expr->input(0)->asTensor();
    if (std::find(tensors_.begin(), tensors_.end(), in) == tensors_.end()) continue;
    const auto& logical = expr->output()->logicalDomain();
    const auto& root = expr->output()->rootDomain();
    auto regrouped = [&](const IterDomain* id, const std::vector<IterDomain*>& other) {
      return std::find(other.begin(), other.end(), id) == other.end() && iterated_labels.count(id);
    };
    const bool labelled_before = std::any_of(root.begin(), root.end(),
                                             [&](const IterDomain* id) { return regrouped(id, logical); });
    const bool labelled_after = std::any_of(logical.begin(), logical.end(),
                                            [&](const IterDomain* id) { return regrouped(id, root); });
    if (labelled_before && labelled_after && problem_.empty()) {
      problem_ = errorMessage(expr->output()->name(), " = reshape(", in->name(), ") regroups ",
                              in->name(), ", which is also read without the reshape");
    }
  }
}

// An op whose output lacks a dimension its computed input iterates (a
// squeeze of an extent-1 axis) reads that input outside the loop the
// schedule binds for the dimension.
void DimensionMap::checkDroppedDimensions(const std::vector<Expr*>& exprs,
                                          const TensorView* reference) {
  for (const Expr* expr : exprs) {
    for (const TensorView* in : expr->tensorInputs()) {
      if (std::find(tensors_.begin(), tensors_.end(), in) == tensors_.end()) continue;
      for (const IterDomain* id : in->logicalNoReductions()) {
        const std::optional<int64_t> dim = dimOf(id);
        if (dim && !id->isBroadcast() && !covers(expr->output(), *dim) && problem_.empty()) {
          problem_ = errorMessage(expr->output()->name(), " = ", expr->toString(), " drops dimension ",
                                  *dim, " of ", reference->name(), " that ", in->name(), " iterates");
        }
      }
    }
  }
}

std::optional<int64_t> DimensionMap::dimOf(const IterDomain* id) const {
  auto it = labels_.find(id);
  if (it == labels_.end()) return std::nullopt;
  return it->second;
}

IterDomain* DimensionMap::axisOf(const TensorView* tv, int64_t dim) const {
  for (IterDomain* id : tv->logicalDomain()) {
    if (dimOf(id) == dim) return id;
  }
  return nullptr;
}

DimensionMap::Role DimensionMap::role(const TensorView* tv, int64_t dim) const {
  const IterDomain* id = axisOf(tv, dim);
  return id == nullptr ? Role::Absent : roleOf(id);
}

void DimensionMap::labelThroughReshapes(const Fusion& fusion, const std::vector<Expr*>& exprs) {
  for (const Expr* reshape : exprs) {
    if (reshape->type() != ExprType::Reshape) continue;
    const ViewOrigins origins = viewOrigins(reshape);
    const auto in_labels = labelAxes(fusion, reshape->input(0)->asTensor(),
                                     [](const IterDomain*, const IterDomain*, int64_t, int64_t) {});
    const std::unordered_set<const TensorView*> upstream = upstreamOf(exprs, reshape);
    for (const IterDomain* piece : reshape->output()->logicalDomain()) {
      const std::optional<int64_t> dim = dimOf(piece);
      auto origin = origins.under.find(piece);
      if (!dim || origin == origins.under.end()) continue;
      const std::vector<int64_t>& merged = origin->second;
      for (const TensorView* tv : tensors_) {
        if (!upstream.count(tv) || axisOf(tv, *dim) != nullptr) continue;
        std::vector<Role> roles;
        for (const IterDomain* id : tv->logicalDomain()) {
          auto label = in_labels.find(id);
          if (label != in_labels.end() &&
              std::find(merged.begin(), merged.end(), label->second) != merged.end()) {
            roles.push_back(roleOf(id));
          }
        }
        if (!roles.empty()) upstream_roles_[{tv, *dim}] = mergedRole(roles);
      }
    }
  }
}

void DimensionMap::labelMergedDownstream(const Fusion& fusion, const std::vector<Expr*>& exprs) {
  for (const Expr* reshape : exprs) {
    if (reshape->type() != ExprType::Reshape) continue;
    const TensorView* out = reshape->output();
    // The reference dimensions under each axis of the view, built up along
    // its merges; a root axis without a label (a broadcast) or a split
    // leaves the reshape to the other rules.
    std::unordered_map<const IterDomain*, std::vector<int64_t>> under;
    bool labelled = true;
    for (const IterDomain* id : out->rootDomain()) {
      const std::optional<int64_t> dim = dimOf(id);
      labelled = labelled && dim.has_value();
      if (dim) under[id] = {*dim};
    }
    const std::vector<const IdTransform*> transforms = viewTransforms(out);
    const bool merges_only = std::all_of(transforms.begin(), transforms.end(), [](const IdTransform* t) {
      return t->kind == IdTransform::Kind::Merge;
    });
    if (!labelled || !merges_only) continue;
    for (const IdTransform* t : transforms) {
      const std::vector<int64_t>& outer = under[t->inputs[0]];
      const std::vector<int64_t>& inner = under[t->inputs[1]];
      // The reference's schedule merges a run left to right, one dimension
      // at a time: merge(merge(d0, d1), d2).
      if (inner.size() != 1 || outer.back() + 1 != inner.front()) {
        if (problem_.empty()) {
          problem_ = errorMessage(out->name(), " = reshape(", reshape->input(0)->asTensor()->name(), ") merges ",
                                  toString(outer), " with ", toString(inner),
                                  " of the reference's dimensions, not in order one at a time");
        }
        return;
      }
      std::vector<int64_t> merged = outer;
      merged.push_back(inner.front());
      under[t->outputs[0]] = merged;
    }
    for (const IterDomain* id : out->logicalDomain()) {
      if (!dimOf(id) && under[id].size() >= 2) merged_dims_[id] = under[id];
    }
  }
  // Axes that meet a merged axis (an operand added after the reshape, the
  // output's cache) stand for the same dimensions.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Expr* expr : exprs) {
      for (const TensorView* in : expr->tensorInputs()) {
        for (const auto& [p, c] : pairwiseLogicalMap(in, expr->output())) {
          const bool has_p = merged_dims_.count(p) > 0;
          const bool has_c = merged_dims_.count(c) > 0;
          if (has_p == has_c) continue;
          if (has_p) merged_dims_[c] = merged_dims_[p];
          if (has_c) merged_dims_[p] = merged_dims_[c];
          changed = true;
        }
      }
    }
  }
  // A tensor iterating a dimension on an axis of its own and again within a
  // merged axis (v * v.view(-1) for v = x.sum(-1, keepdim=True)) pairs every
  // element with every other: no loop of the reference's runs both.
  for (const TensorView* tv : tensors_) {
    for (const IterDomain* merged : tv->logicalDomain()) {
      if (merged->isBroadcast()) continue;
      for (int64_t dim : mergedDims(merged)) {
        const IterDomain* own = axisOf(tv, dim);
        if (own == nullptr || own->isBroadcast() || !problem_.empty()) continue;
        problem_ = errorMessage(tv->name(), " iterates dimension ", dim, " of the reference twice: "
                                "as its axis ", own->toString(), " and within its axis ",
                                merged->toString(), ", which a reshape merged");
      }
    }
  }
}

std::vector<int64_t> DimensionMap::mergedDims(const IterDomain* id) const {
  auto it = merged_dims_.find(id);
  return it == merged_dims_.end() ? std::vector<int64_t>{} : it->second;
}

bool DimensionMap::covers(const TensorView* tv, int64_t dim) const {
  if (axisOf(tv, dim) != nullptr) return true;
  for (const IterDomain* id : tv->logicalDomain()) {
    const std::vector<int64_t> dims = mergedDims(id);
    if (std::find(dims.begin(), dims.end(), dim) != dims.end()) return true;
  }
  return false;
}

std::string DimensionMap::mergedGroupsFitRuns(const std::vector<std::vector<int64_t>>& runs) const {
  for (const auto& [id, group] : merged_dims_) {
    const bool fits = std::any_of(runs.begin(), runs.end(), [&](const std::vector<int64_t>& run) {
      return run.size() >= group.size() && std::equal(group.begin(), group.end(), run.begin());
    });
    if (!fits) {
      return errorMessage("axis ", id->toString(), " of ", id->owner()->name(),
                          " merges dimensions ", toString(group),
                          ", which do not start one of the runs of dimensions the schedule merges");
    }
  }
  return "";
}

DimensionMap::Role DimensionMap::mergedRole(const std::vector<Role>& roles) {
  // An expanded piece stands for values that exist only once materialized by
  // the reshape; any iterating piece makes the merge iterate.
  for (Role wanted : {Role::Expanded, Role::Reduction, Role::Iteration}) {
    if (std::find(roles.begin(), roles.end(), wanted) != roles.end()) return wanted;
  }
  return roles.front();
}

DimensionMap::Role DimensionMap::roleOf(const IterDomain* id) {
  if (id->isBroadcast()) return id->hasExpandedExtent() ? Role::Expanded : Role::Broadcast;
  return id->isReduction() ? Role::Reduction : Role::Iteration;
}

DimensionMap::Role DimensionMap::runRole(const TensorView* tv, int64_t dim) const {
  const Role r = role(tv, dim);
  if (r != Role::Absent) return r;
  for (const IterDomain* id : tv->logicalDomain()) {
    const std::vector<int64_t> dims = mergedDims(id);
    if (std::find(dims.begin(), dims.end(), dim) != dims.end()) return roleOf(id);
  }
  auto it = upstream_roles_.find({tv, dim});
  return it == upstream_roles_.end() ? Role::Absent : it->second;
}

std::vector<std::vector<int64_t>> DimensionMap::mergeableRuns(
    const std::vector<int64_t>& dims) const {
  // A tensor without a dimension and one that broadcasts it both have no
  // loop there: [C, 1] before its broadcast to [N, C, H, W] lacks H and
  // broadcasts W, and must not keep H and W apart.
  const auto loopRole = [this](const TensorView* tv, int64_t dim) {
    const Role r = runRole(tv, dim);
    return r == Role::Broadcast ? Role::Absent : r;
  };
  std::vector<std::vector<int64_t>> runs;
  for (int64_t d : dims) {
    bool joins = !runs.empty();
    if (joins) {
      int64_t prev = runs.back().back();
      for (const TensorView* tv : tensors_) {
        Role r = loopRole(tv, d);
        if (r != loopRole(tv, prev) || r == Role::Expanded) {
          joins = false;
          break;
        }
      }
    }
    if (joins) {
      runs.back().push_back(d);
    } else {
      runs.push_back({d});
    }
  }
  return runs;
}

std::vector<int64_t> mergeGroups(TensorView* reference, const DimensionMap& map,
                                 const std::vector<std::vector<int64_t>>& groups) {
  SMELT_INTERNAL_CHECK(reference->loopDomain() == reference->logicalDomain(),
                       reference->name(), " must be unscheduled");
  std::vector<IterDomain*> grouped;
  for (const auto& group : groups) {
    for (int64_t d : group) {
      IterDomain* id = map.axisOf(reference, d);
      SMELT_INTERNAL_CHECK(id != nullptr, reference->name(), " lacks dimension ", d);
      grouped.push_back(id);
    }
  }
  std::vector<IterDomain*> order;
  for (IterDomain* id : reference->loopDomain()) {
    if (std::find(grouped.begin(), grouped.end(), id) == grouped.end()) order.push_back(id);
  }
  const int64_t lead = static_cast<int64_t>(order.size());
  order.insert(order.end(), grouped.begin(), grouped.end());
  std::unordered_map<int64_t, int64_t> old_to_new;
  for (int64_t p = 0; p < reference->nDims(); ++p) {
    auto it = std::find(order.begin(), order.end(), reference->axis(p));
    old_to_new[p] = std::distance(order.begin(), it);
  }
  reference->reorder(old_to_new);
  std::vector<int64_t> starts;
  int64_t start = lead;
  for (const auto& group : groups) {
    starts.push_back(start);
    start += static_cast<int64_t>(group.size());
  }
  for (int64_t g = static_cast<int64_t>(groups.size()) - 1; g >= 0; --g) {
    for (size_t k = 1; k < groups[g].size(); ++k) reference->merge(starts[g]);
  }
  std::vector<int64_t> positions;
  for (size_t g = 0; g < groups.size(); ++g) positions.push_back(lead + static_cast<int64_t>(g));
  return positions;
}

}  // namespace smelt::scheduler_utils
