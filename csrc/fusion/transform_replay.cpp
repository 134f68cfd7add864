#include "fusion/transform_replay.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <unordered_set>

#include "fusion/error.h"
#include "fusion/fusion.h"

namespace smelt {

IdMap pairwiseLogicalMap(const TensorView* producer, const TensorView* consumer) {
  const Expr* def = consumer->definition();
  SMELT_INTERNAL_CHECK(def != nullptr);
  const auto& ins = def->inputs();
  SMELT_INTERNAL_CHECK(std::find(ins.begin(), ins.end(), producer) != ins.end(),
                       producer->name(), " is not a producer of ", consumer->name());
  std::vector<IterDomain*> p_axes = producer->logicalNoReductions();
  // A reshape's input maps onto its output's root domain.
  const auto& c_axes = consumer->rootDomain();
  IdMap map;
  if (def->type() == ExprType::Scatter) {
    // The index and src iterate like the output's iteration domain; self is
    // copied into the output before the kernel and maps onto no loop.
    if (producer == static_cast<const ScatterOp*>(def)->self()) return map;
    const auto& iteration = consumer->loopRoot();
    for (size_t d = 0; d < p_axes.size(); ++d) map[p_axes[d]] = iteration.at(d);
    return map;
  }
  if (def->type() == ExprType::Broadcast) {
    const auto& is_new = static_cast<const BroadcastOp*>(def)->isNewAxis();
    size_t p = 0;
    for (size_t c = 0; c < c_axes.size(); ++c) {
      if (!is_new[c]) map[p_axes.at(p++)] = c_axes[c];
    }
    return map;
  }
  if (def->type() == ExprType::Permute) {
    const auto& dims = static_cast<const PermuteOp*>(def)->dims();
    for (size_t c = 0; c < c_axes.size(); ++c) map[p_axes.at(dims[c])] = c_axes[c];
    return map;
  }
  if (def->type() == ExprType::Squeeze) {
    const auto& squeezed = static_cast<const SqueezeOp*>(def)->isSqueezed();
    size_t c = 0;
    for (size_t p = 0; p < p_axes.size(); ++p) {
      if (!squeezed[p]) map[p_axes[p]] = c_axes.at(c++);
    }
    return map;
  }
  if (def->type() == ExprType::Mma) {  // a [(B,) M, K] and b [(B,) K, N] onto [(B,) M, rK, N]
    const bool is_a = producer == static_cast<const MmaOp*>(def)->a();
    const size_t b = p_axes.size() - 2;
    if (b == 1) map[p_axes.at(0)] = c_axes.at(0);
    map[p_axes.at(b)] = c_axes.at(b + (is_a ? 0 : 1));
    map[p_axes.at(b + 1)] = c_axes.at(b + (is_a ? 1 : 2));
    return map;
  }
  if (def->type() == ExprType::IndexSelect) {
    // The index's axes are the output's at dim..; the table's others around
    // them; the table's dimension `dim` is read at the index's values.
    const auto* select = static_cast<const IndexSelectOp*>(def);
    const int64_t dim = select->dim();
    if (select->mode() == IndexSelectMode::Along) {  // same shapes, dim read at the index
      for (int64_t d = 0; d < static_cast<int64_t>(p_axes.size()); ++d) {
        if (producer == select->index() || d != dim) map[p_axes[d]] = c_axes.at(d);
      }
      return map;
    }
    const int64_t k = static_cast<int64_t>(select->index()->logicalNoReductions().size());
    if (producer == select->index()) {
      for (int64_t j = 0; j < k; ++j) map[p_axes.at(j)] = c_axes.at(dim + j);
      return map;
    }
    for (int64_t d = 0; d < static_cast<int64_t>(p_axes.size()); ++d) {
      if (d != dim) map[p_axes[d]] = c_axes.at(d < dim ? d : d + k - 1);
    }
    return map;
  }
  if (p_axes.empty()) return map;  // a rank-0 producer maps to nothing
  SMELT_INTERNAL_CHECK(p_axes.size() == c_axes.size(), "rank mismatch between ",
                       producer->name(), " and ", consumer->name());
  const PadOp* pad = def->type() == ExprType::Pad ? static_cast<const PadOp*>(def) : nullptr;
  for (size_t i = 0; i < p_axes.size(); ++i) {
    if (pad != nullptr && pad->widths()[i] != std::pair<int64_t, int64_t>{0, 0}) continue;
    map[p_axes[i]] = c_axes[i];
  }
  return map;
}

IdMap invert(const IdMap& map) {
  IdMap inverse;
  for (const auto& [from, to] : map) inverse[to] = const_cast<IterDomain*>(from);
  return inverse;
}

namespace {

// Whether `t` is one of its tensor's view transforms (root to logical), whose
// splits divide exactly (reshape checks that at definition or at run time).
bool isViewTransform(const IdTransform* t, const TensorView* tv) {
  if (tv == nullptr || !tv->hasViewTransforms()) return false;
  std::vector<const IterDomain*> pending(tv->logicalDomain().begin(), tv->logicalDomain().end());
  while (!pending.empty()) {
    const IdTransform* def = pending.back()->definition();
    pending.pop_back();
    if (def == nullptr) continue;
    if (def == t) return true;
    pending.insert(pending.end(), def->inputs.begin(), def->inputs.end());
  }
  return false;
}

// merge(outer, inner) of the two pieces of one split of x iterates exactly
// like x when the split divides: a view split, or one whose pieces' extents
// multiply to x's (a schedule that re-merges what a reshape split, or its
// replay on the reshape's producers). Else id.
const IterDomain* unsplitExact(const IterDomain* id) {
  const IdTransform* merge = id->definition();
  if (merge == nullptr || merge->kind != IdTransform::Kind::Merge) return id;
  const IdTransform* split = merge->inputs[0]->definition();
  if (split == nullptr || split->kind != IdTransform::Kind::Split ||
      split->outputs != merge->inputs) {
    return id;
  }
  // The merged extent is outer * inner: equal to the whole's, the split divides.
  const IterDomain* whole = split->inputs[0];
  const bool divides =
      isViewTransform(split, id->owner()) || id->extent().sameAs(whole->extent());
  return divides ? unsplitExact(whole) : id;
}

bool sameLoopStructure(const IterDomain* a, const IterDomain* b, const IdMap& logical_map);

}  // namespace

bool loopAxesMapped(const IterDomain* a, const IterDomain* b, const IdMap& logical_map) {
  if (sameLoopStructure(a, b, logical_map)) return true;
  const IterDomain* a_whole = unsplitExact(a);
  const IterDomain* b_whole = unsplitExact(b);
  return (a_whole != a && loopAxesMapped(a_whole, b, logical_map)) ||
         (b_whole != b && loopAxesMapped(a, b_whole, logical_map));
}

namespace {

// loopAxesMapped without undoing view splits at a and b themselves.
bool sameLoopStructure(const IterDomain* a, const IterDomain* b, const IdMap& logical_map) {
  auto it = logical_map.find(a);
  if (it != logical_map.end() && it->second == b) return true;
  const IdTransform* ta = a->definition();
  const IdTransform* tb = b->definition();
  // merge(bcast, x) on one side is the same loop as x on the other side.
  auto forwarded = [&](const IdTransform* t, const IterDomain* other, bool t_is_a) {
    if (t == nullptr || t->kind != IdTransform::Kind::Merge) return false;
    for (int side = 0; side < 2; ++side) {
      const IterDomain* dropped = t->inputs[side];
      const IterDomain* kept = t->inputs[1 - side];
      if (!dropped->isPlainBroadcast()) continue;
      if (t_is_a ? loopAxesMapped(kept, other, logical_map)
                 : loopAxesMapped(other, kept, logical_map)) {
        return true;
      }
    }
    return false;
  };
  if (ta == nullptr || tb == nullptr || ta->kind != tb->kind) {
    return forwarded(ta, b, true) || forwarded(tb, a, false);
  }
  if (ta->kind == IdTransform::Kind::Split) {
    if (!ta->factor.sameAs(tb->factor) || ta->inner_split != tb->inner_split) return false;
    size_t ia = a == ta->outputs[0] ? 0 : 1;
    size_t ib = b == tb->outputs[0] ? 0 : 1;
    return ia == ib && loopAxesMapped(ta->inputs[0], tb->inputs[0], logical_map);
  }
  // A merge drops a broadcast input (its extent is the other input's): where
  // the counterpart iterates that input, its merged loop is longer and splits
  // its index differently, so the two are different loops unless one of them
  // is itself a broadcast (indexless) axis.
  const bool iterates_differently =
      !a->isBroadcast() && !b->isBroadcast() &&
      (ta->inputs[0]->isBroadcast() != tb->inputs[0]->isBroadcast() ||
       ta->inputs[1]->isBroadcast() != tb->inputs[1]->isBroadcast());
  if (!iterates_differently && loopAxesMapped(ta->inputs[0], tb->inputs[0], logical_map) &&
      loopAxesMapped(ta->inputs[1], tb->inputs[1], logical_map)) {
    return true;
  }
  return forwarded(ta, b, true) || forwarded(tb, a, false);
}

}  // namespace

std::vector<int64_t> matchLoopAxes(const TensorView* producer, const TensorView* consumer) {
  IdMap map = pairwiseLogicalMap(producer, consumer);
  std::vector<int64_t> match;
  int64_t c = 0;
  for (int64_t p = 0; p < producer->nDims(); ++p) {
    const IterDomain* p_axis = producer->axis(p);
    if (p_axis->parallelType() == ParallelType::Vectorize) break;
    while (c < consumer->nDims() && consumer->axis(c)->isBroadcast() &&
           !loopAxesMapped(p_axis, consumer->axis(c), map)) {
      ++c;
    }
    if (c == consumer->nDims()) break;
    ParallelType c_type = consumer->axis(c)->parallelType();
    ParallelType p_type = p_axis->parallelType();
    // A producer axis the user bound differently cannot run in this loop.
    bool parallel_conflict = p_type != ParallelType::Serial && p_type != c_type;
    if (c_type == ParallelType::Vectorize || parallel_conflict ||
        !loopAxesMapped(p_axis, consumer->axis(c), map)) {
      break;
    }
    match.push_back(c++);
  }
  return match;
}

namespace {

// The transforms between `from` and `to` (each derived from `from`), in an
// order where each comes after the ones producing its inputs.
std::vector<const IdTransform*> transformsBetween(const std::vector<IterDomain*>& from,
                                                  const std::vector<IterDomain*>& to) {
  std::unordered_set<const IterDomain*> start(from.begin(), from.end());
  std::vector<const IdTransform*> order;
  std::unordered_set<const IdTransform*> seen;
  std::function<void(const IterDomain*)> visit = [&](const IterDomain* id) {
    const IdTransform* t = id->definition();
    if (start.count(id) || t == nullptr || seen.count(t)) return;
    seen.insert(t);
    for (const IterDomain* in : t->inputs) visit(in);
    order.push_back(t);
  };
  for (const IterDomain* id : to) visit(id);
  return order;
}

// A view transform of `target` of the same kind as `t` (and the same factor
// for a split) whose inputs are `inputs`, or nullptr.
const IdTransform* matchingViewTransform(const TensorView* target, const IdTransform* t,
                                         const std::vector<IterDomain*>& inputs) {
  for (const IdTransform* view : viewTransforms(target)) {
    if (view->kind != t->kind || view->inputs != inputs) continue;
    if (t->kind == IdTransform::Kind::Merge ||
        (view->factor.sameAs(t->factor) && view->inner_split == t->inner_split)) {
      return view;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<const IdTransform*> transformHistory(const TensorView* tv) {
  return transformsBetween(tv->loopRoot(), tv->loopDomain());
}

std::vector<const IdTransform*> viewTransforms(const TensorView* tv) {
  if (!tv->hasViewTransforms()) return {};
  return transformsBetween(tv->rootDomain(), tv->logicalDomain());
}

int64_t replayLike(TensorView* target, const TensorView* source, const IdMap& source_to_target) {
  Fusion* fusion = target->fusion();
  IdMap s2t = source_to_target;
  std::vector<IterDomain*> leaves = target->loopRoot();
  auto leafPosition = [&](IterDomain* id) {
    return std::find(leaves.begin(), leaves.end(), id);
  };
  // A source axis mapped onto the target's root (the target is a reshape's
  // output) follows the target's view transforms where the source repeats them.
  auto followView = [&](const IdTransform* t) {
    std::vector<IterDomain*> inputs;
    for (const IterDomain* in : t->inputs) {
      auto it = s2t.find(in);
      if (it == s2t.end()) return false;
      inputs.push_back(it->second);
    }
    const IdTransform* view = matchingViewTransform(target, t, inputs);
    if (view == nullptr) return false;
    for (size_t k = 0; k < t->outputs.size(); ++k) s2t[t->outputs[k]] = view->outputs[k];
    return true;
  };
  std::vector<const IdTransform*> history = viewTransforms(source);
  for (const IdTransform* t : transformHistory(source)) history.push_back(t);
  for (const IdTransform* t : history) {
    if (followView(t)) continue;
    if (t->kind == IdTransform::Kind::Split) {
      auto it = s2t.find(t->inputs[0]);
      if (it == s2t.end() || leafPosition(it->second) == leaves.end()) continue;
      IterDomain* in = it->second;
      IterType type = in->iterType();
      // A view split divides its extent (the reshape checks it): repeated on
      // an axis of that extent, its pieces keep their exact extents.
      const bool exact = type != IterType::Broadcast && isViewTransform(t, source) &&
                         in->extent().sameAs(t->inputs[0]->extent());
      IntExpr outer_extent = type == IterType::Broadcast ? IntExpr(1)
                             : exact                  ? t->outputs[0]->extent()
                             : t->inner_split         ? ceilDiv(in->extent(), t->factor)
                                                      : t->factor;
      IntExpr inner_extent = type == IterType::Broadcast ? IntExpr(1)
                             : exact                  ? t->outputs[1]->extent()
                             : t->inner_split         ? t->factor
                                                      : ceilDiv(in->extent(), t->factor);
      IterDomain* outer = fusion->newIterDomain(outer_extent, type);
      IterDomain* inner = fusion->newIterDomain(inner_extent, type);
      outer->owner_ = inner->owner_ = target;
      fusion->newTransform({IdTransform::Kind::Split, {in}, {outer, inner}, t->factor,
                            t->inner_split});
      auto pos = leaves.erase(leafPosition(in));
      leaves.insert(pos, {outer, inner});
      s2t[t->outputs[0]] = outer;
      s2t[t->outputs[1]] = inner;
      continue;
    }
    auto outer_it = s2t.find(t->inputs[0]);
    auto inner_it = s2t.find(t->inputs[1]);
    bool has_outer = outer_it != s2t.end() && leafPosition(outer_it->second) != leaves.end();
    bool has_inner = inner_it != s2t.end() && leafPosition(inner_it->second) != leaves.end();
    if (has_outer && has_inner) {
      IterDomain* o = outer_it->second;
      IterDomain* i = inner_it->second;
      IterType type = (o->isBroadcast() && i->isBroadcast()) ? IterType::Broadcast
                      : o->isReduction() || i->isReduction() ? IterType::Reduction
                                                             : IterType::Iteration;
      IntExpr extent = o->isBroadcast() ? i->extent()
                       : i->isBroadcast() ? o->extent()
                                          : o->extent() * i->extent();
      IterDomain* merged = fusion->newIterDomain(extent, type);
      merged->owner_ = target;
      fusion->newTransform({IdTransform::Kind::Merge, {o, i}, {merged}, IntExpr(), true});
      *leafPosition(o) = merged;
      leaves.erase(leafPosition(i));
      s2t[t->outputs[0]] = merged;
    } else if (has_outer && t->inputs[1]->isPlainBroadcast()) {
      s2t[t->outputs[0]] = outer_it->second;
    } else if (has_inner && t->inputs[0]->isPlainBroadcast()) {
      s2t[t->outputs[0]] = inner_it->second;
    }
  }
  std::vector<IterDomain*> loop;
  int64_t mapped_prefix = 0;
  bool prefix_open = true;
  for (IterDomain* s_axis : source->loopDomain()) {
    auto it = s2t.find(s_axis);
    bool mapped = it != s2t.end() && leafPosition(it->second) != leaves.end() &&
                  std::find(loop.begin(), loop.end(), it->second) == loop.end();
    if (!mapped) {
      prefix_open = false;
      continue;
    }
    if (prefix_open) ++mapped_prefix;
    IterDomain* t_axis = it->second;
    if (s_axis->parallelType() != ParallelType::Vectorize) {
      t_axis->parallel_type_ = s_axis->parallelType();
    }
    loop.push_back(t_axis);
  }
  for (IterDomain* leaf : leaves) {
    if (std::find(loop.begin(), loop.end(), leaf) == loop.end()) loop.push_back(leaf);
  }
  target->setLoopDomain(std::move(loop));
  return mapped_prefix;
}

void propagateSchedule(TensorView* reference) {
  Fusion* fusion = reference->fusion();
  struct Edge {
    size_t mapped_axes;
    TensorView* from;
    TensorView* to;
    IdMap map;  // from's logical axes -> to's
  };
  std::unordered_set<const TensorView*> visited{reference};
  std::vector<Edge> frontier;
  // The mapped axes whose loop structure the replay carries over: a plain
  // broadcast axis of `from` carries none (its splits, made for extent 1,
  // cut an iterating axis of `to` into loops no other tensor has:
  // where(x > max(x), ...) reached from the broadcast max rather than from
  // its sibling x; x.sum(1, keepdim=True) / y reached from the broadcast sum
  // rather than from y, leaving the reduced dimension unsplit).
  auto informative = [](const IdMap& map) {
    size_t n = 0;
    for (const auto& entry : map) {
      const IterDomain* from_axis = entry.first;
      if (!from_axis->isBroadcast() || from_axis->hasExpandedExtent()) ++n;
    }
    return n;
  };
  auto addEdges = [&](TensorView* from) {
    if (Expr* def = from->definition()) {
      for (TensorView* producer : def->tensorInputs()) {
        IdMap map = invert(pairwiseLogicalMap(producer, from));
        frontier.push_back({informative(map), from, producer, std::move(map)});
      }
    }
    for (TensorView* consumer : fusion->consumersOf(from)) {
      IdMap map = pairwiseLogicalMap(from, consumer);
      frontier.push_back({informative(map), from, consumer, std::move(map)});
    }
  };
  addEdges(reference);
  while (!frontier.empty()) {
    // The earliest-found edge among those that map the most axes.
    auto best = frontier.begin();
    for (auto it = frontier.begin(); it != frontier.end(); ++it) {
      if (it->mapped_axes > best->mapped_axes) best = it;
    }
    Edge edge = std::move(*best);
    frontier.erase(best);
    if (visited.count(edge.to)) continue;
    visited.insert(edge.to);
    replayLike(edge.to, edge.from, edge.map);
    addEdges(edge.to);
  }
}

std::vector<int64_t> inlinedLoopAxes(const TensorView* tv, const TensorView* consumer) {
  std::vector<int64_t> match = matchLoopAxes(tv, consumer);
  // Reachable from the API: a tensor re-scheduled or re-parallelized after
  // computeAt/inlineAt no longer matches the loops it was inlined into.
  SMELT_CHECK(tv->computePosition() <= static_cast<int64_t>(match.size()), "tensor ", tv->name(),
              " is computed at position ", tv->computePosition(), " but its axis ", match.size(), " (",
              tv->axis(static_cast<int64_t>(match.size()))->toString(), ") no longer maps to a loop of its consumer ",
              consumer->name(), " (was it split, merged, reordered or parallelized after computeAt/inlineAt?)");
  return match;
}

LoopOwners::LoopOwners(const Fusion& fusion, const TensorView* deciding)
    : fusion_(&fusion), tensors_(fusion.allTensors()), deciding_(deciding) {
  for (const TensorView* tv : tensors_) {
    first_slot_[tv] = static_cast<int64_t>(parent_.size());
    for (int64_t k = 0; k < tv->nDims(); ++k) parent_.push_back(static_cast<int64_t>(parent_.size()));
  }
  for (const TensorView* tv : tensors_) {
    if (computePosition(tv) == 0) continue;
    const std::vector<TensorView*> consumers = fusion.consumersOf(tv);
    SMELT_INTERNAL_CHECK(!consumers.empty(), tv->name(), " is inlined but has no consumer");
    for (const TensorView* consumer : consumers) {
      const std::vector<int64_t> match = inlinedLoopAxes(tv, consumer);
      for (int64_t k = 0; k < computePosition(tv); ++k) {
        const int64_t a = find(slot(tv, k)), b = find(slot(consumer, match[k]));
        parent_[std::max(a, b)] = std::min(a, b);
      }
    }
  }
  assignOwners();
}

void LoopOwners::assignOwners() {
  // A class is owned by its first owning member in the fusion's order whose
  // axis iterates (a plain broadcast axis runs once).
  owner_.assign(parent_.size(), {nullptr, -1});
  for (bool broadcasts : {false, true}) {
    for (const TensorView* tv : tensors_) {
      for (int64_t k = computePosition(tv); k < tv->nDims(); ++k) {
        auto& owner = owner_[find(slot(tv, k))];
        if (owner.first == nullptr && tv->axis(k)->isPlainBroadcast() == broadcasts) owner = {tv, k};
      }
    }
  }
}

void LoopOwners::inlineDecidingAxis(int64_t axis,
                                    const std::vector<std::pair<const TensorView*, int64_t>>& consumer_axes) {
  SMELT_INTERNAL_CHECK(deciding_ != nullptr && axis == deciding_position_, "inlineDecidingAxis: axis ", axis,
                       " is not the next one of the tensor being inlined");
  deciding_position_ = axis + 1;
  const int64_t mine = slot(deciding_, axis);
  for (const auto& [consumer, consumer_axis] : consumer_axes) {
    const int64_t a = find(mine), b = find(slot(consumer, consumer_axis));
    parent_[std::max(a, b)] = std::min(a, b);
  }
  assignOwners();
}

bool LoopOwners::runsAsOneLoop(const TensorView* tv, int64_t axis) const {
  const int64_t loop = find(slot(tv, axis));
  std::unordered_set<const TensorView*> inside;
  std::vector<const TensorView*> reducing;  // tensors that reduce over the loop
  const auto [owner, owner_axis] = this->owner(tv, axis);
  for (const TensorView* t : tensors_) {
    for (int64_t k = 0; k < t->nDims(); ++k) {
      if (find(slot(t, k)) != loop) continue;
      inside.insert(t);
      if (t->axis(k)->isReduction()) reducing.push_back(t);
      if (k < computePosition(t)) continue;
      // The loops joined must be bound alike, run as many times (a plain
      // broadcast axis's loop runs once: joined into a longer loop, what it
      // computes would be computed again each time) and be nested in the
      // same loop.
      const IterDomain* id = t->axis(k);
      const IterDomain* owned = owner->axis(owner_axis);
      const auto trips = [](const IterDomain* d) { return d->isPlainBroadcast() ? IntExpr(1) : d->loopExtent(); };
      if (id->parallelType() != owned->parallelType() || !trips(id).sameAs(trips(owned))) return false;
      const int64_t parent = k == 0 ? -1 : find(slot(t, k - 1));
      if (parent != (owner_axis == 0 ? -1 : find(slot(owner, owner_axis - 1)))) return false;
    }
  }
  // Tensors a value of the loop reaches only after the loop has run.
  std::vector<const TensorView*> after;
  std::unordered_set<const TensorView*> seen;
  for (const TensorView* t : inside) {
    for (const TensorView* c : fusion_->consumersOf(t)) {
      if (!inside.count(c) && seen.insert(c).second) after.push_back(c);
    }
  }
  for (const TensorView* t : reducing) {
    for (const TensorView* c : fusion_->consumersOf(t)) {
      if (seen.insert(c).second) after.push_back(c);
    }
  }
  while (!after.empty()) {
    const TensorView* t = after.back();
    after.pop_back();
    if (inside.count(t)) return false;
    for (const TensorView* c : fusion_->consumersOf(t)) {
      if (seen.insert(c).second) after.push_back(c);
    }
  }
  return true;
}

int64_t LoopOwners::computePosition(const TensorView* tv) const {
  return tv == deciding_ ? deciding_position_ : tv->computePosition();
}

int64_t LoopOwners::slot(const TensorView* tv, int64_t axis) const {
  auto it = first_slot_.find(tv);
  SMELT_INTERNAL_CHECK(it != first_slot_.end() && axis >= 0 && axis < tv->nDims(), "no loop axis ", axis,
                       " of ", tv->name(), " in this fusion");
  return it->second + axis;
}

int64_t LoopOwners::find(int64_t slot) const {
  while (parent_[slot] != slot) slot = parent_[slot] = parent_[parent_[slot]];
  return slot;
}

std::pair<const TensorView*, int64_t> LoopOwners::owner(const TensorView* tv, int64_t axis) const {
  const auto& owner = owner_[find(slot(tv, axis))];
  SMELT_INTERNAL_CHECK(owner.first != nullptr, "the loop of axis ", axis, " of ", tv->name(),
                       " has no owner (every tensor sharing it is inlined further)");
  return owner;
}

std::pair<const TensorView*, int64_t> loopOwner(const TensorView* tv, int64_t axis) {
  return LoopOwners(*tv->fusion()).owner(tv, axis);
}

void inlineMost(Fusion* fusion) {
  // Consumers first, so each producer sees its consumers' final loops.
  std::vector<TensorView*> tensors = fusion->allTensors();
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    if (!(*it)->isFusionInput()) (*it)->inlineMost();
  }
}

}  // namespace smelt
