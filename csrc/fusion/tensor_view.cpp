// TensorView: construction, printing and the scheduling primitives. Every
// primitive validates its arguments and throws smelt::Error naming the tensor
// and axis on misuse.
#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>
#include <sstream>
#include <unordered_set>

#include "fusion/error.h"
#include "fusion/fusion.h"
#include "fusion/ir.h"
#include "fusion/transform_replay.h"

namespace smelt {

TensorView::TensorView(Fusion* fusion, int64_t number, DataType dtype,
                       std::vector<IterDomain*> logical, MemoryType memory_type)
    : Val(fusion, Kind::Tensor, dtype),
      number_(number),
      name_("T" + std::to_string(number)),
      logical_(std::move(logical)),
      loop_(logical_),
      contiguity_(logical_.size(), true),
      memory_type_(memory_type) {
  for (IterDomain* id : logical_) adopt(id);
}

void TensorView::adopt(IterDomain* id) { id->owner_ = this; }

TensorView* TensorView::setName(const std::string& name) {
  SMELT_CHECK(!name.empty(), "setName: tensor ", name_, " cannot get an empty name");
  for (char c : name) {
    SMELT_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '_', "setName(\"", name,
                "\"): tensor ", name_, " needs a C identifier (letters, digits, '_')");
  }
  name_ = name;
  return this;
}

std::string TensorView::toString() const {
  std::ostringstream os;
  const char* mem = memory_type_ == MemoryType::Global   ? "g"
                    : memory_type_ == MemoryType::Shared ? "s"
                                                         : "l";
  os << name_ << "_" << mem << "_" << dtype() << "[";
  for (size_t i = 0; i < loop_.size(); ++i) os << (i ? ", " : "") << loop_[i]->toString();
  os << "]";
  if (compute_position_ > 0) os << " ca_pos(" << compute_position_ << ")";
  return os.str();
}

std::vector<IterDomain*> TensorView::logicalNoReductions() const {
  std::vector<IterDomain*> result;
  for (IterDomain* id : logical_) {
    if (!id->isReduction()) result.push_back(id);
  }
  return result;
}

int64_t TensorView::normalizeAxis(int64_t axis, const char* what) const {
  int64_t n = nDims();
  int64_t normalized = axis < 0 ? axis + n : axis;
  SMELT_CHECK(normalized >= 0 && normalized < n, what, ": axis ", axis,
              " is out of range for tensor ", name_, " with ", n, " loop axes");
  return normalized;
}

IterDomain* TensorView::axis(int64_t i) const { return loop_.at(normalizeAxis(i, "axis")); }

bool TensorView::hasReduction() const {
  return std::any_of(logical_.begin(), logical_.end(),
                     [](IterDomain* id) { return id->isReduction(); });
}

TensorView* TensorView::setContiguity(std::vector<bool> contiguity) {
  SMELT_CHECK(contiguity.size() == logical_.size(), "setContiguity: tensor ", name_, " has ",
              logical_.size(), " dimensions but ", contiguity.size(), " flags were given");
  contiguity_ = std::move(contiguity);
  return this;
}

TensorView* TensorView::setMemoryType(MemoryType mtype) {
  if (isFusionInput() || isFusionOutput()) {
    SMELT_CHECK(mtype == MemoryType::Global, "setMemoryType(", mtype, "): tensor ", name_,
                " is a fusion ", isFusionInput() ? "input" : "output",
                " and must stay in Global memory; use cacheAfter/cacheBefore for a copy");
  }
  memory_type_ = mtype;
  if (mtype != MemoryType::Shared) {
    promote_reuse_ = false;
    circular_buffer_stages_ = 1;
    padded_row_elements_ = 0;
    row_padding_ = 0;
  }
  return this;
}

TensorView* TensorView::split(int64_t axis, IntExpr factor, bool inner_split) {
  int64_t pos = normalizeAxis(axis, "split");
  auto c = factor.constant();
  SMELT_CHECK(!c || *c > 0, "split: factor ", factor, " for tensor ", name_, " axis ", axis,
              " must be positive");
  IterDomain* in = loop_[pos];
  Fusion* f = fusion();
  IterType type = in->iterType();
  bool bcast = type == IterType::Broadcast;
  IntExpr outer_extent = bcast ? IntExpr(1) : inner_split ? ceilDiv(in->extent(), factor) : factor;
  IntExpr inner_extent = bcast ? IntExpr(1) : inner_split ? factor : ceilDiv(in->extent(), factor);
  IterDomain* outer = f->newIterDomain(outer_extent, type);
  IterDomain* inner = f->newIterDomain(inner_extent, type);
  adopt(outer);
  adopt(inner);
  f->newTransform({IdTransform::Kind::Split, {in}, {outer, inner}, factor, inner_split});
  loop_[pos] = outer;
  loop_.insert(loop_.begin() + pos + 1, inner);
  return this;
}

TensorView* TensorView::merge(int64_t axis_outer, int64_t axis_inner) {
  int64_t po = normalizeAxis(axis_outer, "merge");
  int64_t pi = normalizeAxis(axis_inner, "merge");
  SMELT_CHECK(po != pi, "merge: tensor ", name_, " cannot merge axis ", po, " with itself");
  IterDomain* o = loop_[po];
  IterDomain* i = loop_[pi];
  SMELT_CHECK(o->isReduction() == i->isReduction() || o->isBroadcast() || i->isBroadcast(),
              "merge: tensor ", name_, " axes ", po, " (", o->toString(), ") and ", pi, " (",
              i->toString(), ") mix an iteration and a reduction axis; merge them separately");
  SMELT_CHECK(!o->hasExpandedExtent() && !i->hasExpandedExtent(), "merge: tensor ", name_,
              " axes ", po, " and ", pi, " include an expanded broadcast; merge is not supported there");
  IterType type = (o->isBroadcast() && i->isBroadcast()) ? IterType::Broadcast
                  : (o->isReduction() || i->isReduction()) ? IterType::Reduction
                                                           : IterType::Iteration;
  IntExpr extent = o->isBroadcast()   ? i->extent()
                   : i->isBroadcast() ? o->extent()
                                      : o->extent() * i->extent();
  Fusion* f = fusion();
  IterDomain* merged = f->newIterDomain(extent, type);
  adopt(merged);
  f->newTransform({IdTransform::Kind::Merge, {o, i}, {merged}, IntExpr(), true});
  int64_t first = std::min(po, pi);
  int64_t second = std::max(po, pi);
  loop_.erase(loop_.begin() + second);
  loop_[first] = merged;
  return this;
}

TensorView* TensorView::reorder(const std::unordered_map<int64_t, int64_t>& old_to_new) {
  int64_t n = nDims();
  std::vector<IterDomain*> result(n, nullptr);
  std::set<int64_t> taken_old;
  for (const auto& [old_axis, new_axis] : old_to_new) {
    int64_t o = normalizeAxis(old_axis, "reorder");
    int64_t p = normalizeAxis(new_axis, "reorder");
    SMELT_CHECK(taken_old.insert(o).second, "reorder: tensor ", name_, " axis ", old_axis,
                " is named twice");
    SMELT_CHECK(result[p] == nullptr, "reorder: tensor ", name_, " gets two axes at position ",
                new_axis);
    result[p] = loop_[o];
  }
  size_t next = 0;
  for (int64_t o = 0; o < n; ++o) {
    if (taken_old.count(o)) continue;
    while (result[next] != nullptr) ++next;
    result[next] = loop_[o];
  }
  loop_ = std::move(result);
  return this;
}

void TensorView::setLoopDomain(std::vector<IterDomain*> loop) {
  for (IterDomain* id : loop) adopt(id);
  loop_ = std::move(loop);
}

void TensorView::setLogicalDomain(std::vector<IterDomain*> logical) {
  for (IterDomain* id : logical) adopt(id);
  root_.clear();
  logical_ = std::move(logical);
  loop_ = logical_;
  contiguity_.assign(logical_.size(), true);
}

void TensorView::setRootDomain(std::vector<IterDomain*> root) {
  for (IterDomain* id : root) adopt(id);
  root_ = std::move(root);
}

void TensorView::setIterationDomain(std::vector<IterDomain*> iteration) {
  for (IterDomain* id : iteration) adopt(id);
  iteration_ = std::move(iteration);
  loop_ = iteration_;
}

void TensorView::setComputePosition(int64_t pos) { compute_position_ = pos; }

int64_t TensorView::maxInlinePosition() const {
  if (isFusionInput()) return 0;
  std::vector<TensorView*> consumers = fusion()->consumersOf(this);
  if (consumers.empty()) return 0;
  std::vector<std::vector<int64_t>> matches;
  int64_t pos = nDims();
  for (TensorView* c : consumers) {
    matches.push_back(matchLoopAxes(this, c));
    pos = std::min(pos, static_cast<int64_t>(matches.back().size()));
  }
  if (pos == 0) return 0;
  if (consumers.size() == 1) {
    // The loops this tensor would run in are its consumer's, transitively:
    // their compute positions must still hold.
    for (const TensorView* c = consumers[0]; c->computePosition() > 0;) {
      const std::vector<TensorView*> next = fusion()->consumersOf(c);
      SMELT_INTERNAL_CHECK(!next.empty(), c->name(), " is inlined but has no consumer");
      for (const TensorView* n : next) inlinedLoopAxes(c, n);
      c = next[0];
    }
    return pos;
  }
  LoopOwners owners(*fusion(), this);
  // Every consumer runs the shared axes in the same loops: consumers in
  // different loops (siblings, such as two reductions of this tensor) have
  // them joined, where the joined loop can still run as one.
  for (int64_t i = 0; i < pos; ++i) {
    std::vector<std::pair<const TensorView*, int64_t>> axes;
    bool same = true;
    for (size_t k = 0; k < consumers.size(); ++k) {
      axes.emplace_back(consumers[k], matches[k][i]);
      same &= owners.owner(consumers[k], matches[k][i]) == owners.owner(consumers[0], matches[0][i]);
    }
    owners.inlineDecidingAxis(i, axes);
    if (!same && !owners.runsAsOneLoop(this, i)) return i;
  }
  return pos;
}

TensorView* TensorView::inlineAt(int64_t pos) {
  int64_t n = nDims();
  int64_t p = pos < 0 ? pos + n + 1 : pos;
  SMELT_CHECK(p >= 0 && p <= n, "inlineAt(", pos, "): position out of range for tensor ", name_,
              " with ", n, " loop axes");
  SMELT_CHECK(!isFusionInput() || p == 0, "inlineAt(", pos, "): tensor ", name_,
              " is a fusion input and is not computed in the kernel");
  int64_t max_pos = maxInlinePosition();
  if (p > max_pos) {
    std::vector<TensorView*> consumers = fusion()->consumersOf(this);
    SMELT_CHECK(!consumers.empty(), "inlineAt(", pos, "): tensor ", name_,
                " has no consumer to share loops with");
    throw Error(errorMessage("inlineAt(", pos, "): axis ", max_pos, " (",
                             axis(max_pos)->toString(), ") of tensor ", name_,
                             " does not map to a shared loop of every consumer (",
                             consumers[0]->toString(), "); the largest legal position is ",
                             max_pos));
  }
  compute_position_ = p;
  return this;
}

TensorView* TensorView::inlineMost() {
  compute_position_ = maxInlinePosition();
  return this;
}

TensorView* TensorView::computeAt(TensorView* consumer, int64_t pos) {
  SMELT_CHECK(consumer != nullptr && consumer->fusion() == fusion(), "computeAt: tensor ",
              name_, " needs a consumer from the same fusion");
  SMELT_CHECK(consumer != this, "computeAt: tensor ", name_, " cannot be computed at itself");
  int64_t n = consumer->nDims();
  int64_t p = pos < 0 ? pos + n + 1 : pos;
  SMELT_CHECK(p >= 0 && p <= n, "computeAt(", consumer->name(), ", ", pos,
              "): position is past the shared loop depth; consumer ", consumer->name(), " has ",
              n, " loop axes");
  // The tensors on paths from this to consumer, consumer side first.
  std::vector<TensorView*> order = fusion()->allTensors();
  std::unordered_set<const TensorView*> downstream{this};
  for (TensorView* tv : order) {
    Expr* def = tv->definition();
    if (def == nullptr) continue;
    for (TensorView* in : def->tensorInputs()) {
      if (downstream.count(in)) downstream.insert(tv);
    }
  }
  SMELT_CHECK(downstream.count(consumer), "computeAt: tensor ", consumer->name(),
              " does not consume ", name_, " (directly or through other tensors)");
  // Loop depth (in its own axes) at which each tensor on the path is shared.
  std::unordered_map<const TensorView*, int64_t> shared_depth{{consumer, p}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    TensorView* tv = *it;
    if (tv == consumer || !downstream.count(tv)) continue;
    TensorView* target = nullptr;
    for (TensorView* c : fusion()->consumersOf(tv)) {
      if (shared_depth.count(c)) {
        target = c;
        break;
      }
    }
    if (target == nullptr) continue;
    int64_t target_depth = shared_depth.at(target);
    replayLike(tv, target, invert(pairwiseLogicalMap(tv, target)));
    std::vector<int64_t> match = matchLoopAxes(tv, target);
    int64_t own = 0;
    while (own < static_cast<int64_t>(match.size()) && match[own] < target_depth) ++own;
    // Target loops inside the shared depth that tv does not have must be
    // broadcasts (tv is then computed inside them).
    for (int64_t j = 0; j < target_depth; ++j) {
      bool matched = std::find(match.begin(), match.begin() + own, j) != match.begin() + own;
      SMELT_CHECK(matched || target->axis(j)->isBroadcast(), "computeAt(", consumer->name(),
                  ", ", pos, "): axis ", j, " (", target->axis(j)->toString(), ") of ",
                  target->name(), " has no counterpart in ", tv->name(), ", so ", tv->name(),
                  " cannot be computed inside that loop");
    }
    tv->inlineAt(own);
    shared_depth[tv] = own;
  }
  return this;
}

TensorView* TensorView::cacheAfter() {
  SMELT_CHECK(!uses().empty() || isFusionOutput() || isFusionInput(), "cacheAfter: tensor ",
              name_, " has no uses to redirect");
  Fusion* f = fusion();
  std::vector<IterDomain*> logical;
  for (IterDomain* id : logicalNoReductions()) {
    IterDomain* copy = f->newIterDomain(id->extent(), id->iterType());
    if (id->hasExpandedExtent()) copy->setExpandedExtent(id->expandedExtent());
    logical.push_back(copy);
  }
  TensorView* cache = f->newTensor(dtype(), std::move(logical), MemoryType::Local);
  std::vector<Expr*> old_uses = uses();
  for (Expr* use : old_uses) use->replaceInput(this, cache);
  f->newExpr<LoadStoreOp>(cache, this);
  replayLike(cache, this, pairwiseLogicalMap(this, cache));
  return cache;
}

TensorView* TensorView::cacheBefore() {
  Expr* def = definition();
  SMELT_CHECK(def != nullptr, "cacheBefore: tensor ", name_,
              " is a fusion input and has no definition to redirect");
  Fusion* f = fusion();
  // The new producer takes over this tensor's domain (reduction axes and
  // schedule included); this tensor becomes a plain copy of it.
  TensorView* producer = f->newTensor(dtype(), logical_, MemoryType::Local);
  if (hasViewTransforms()) producer->setRootDomain(root_);
  producer->setLoopDomain(loop_);
  std::vector<IterDomain*> fresh;
  for (IterDomain* id : logicalNoReductions()) {
    IterDomain* copy = f->newIterDomain(id->extent(), id->iterType());
    if (id->hasExpandedExtent()) copy->setExpandedExtent(id->expandedExtent());
    fresh.push_back(copy);
  }
  setLogicalDomain(std::move(fresh));
  def->replaceOutput(this, producer);
  f->newExpr<LoadStoreOp>(this, producer);
  replayLike(this, producer, pairwiseLogicalMap(producer, this));
  return producer;
}

TensorView* TensorView::promoteReuse(bool enable) {
  SMELT_CHECK(!enable || memory_type_ == MemoryType::Shared, "promoteReuse: tensor ", name_,
              " is in ", memory_type_,
              " memory; only Shared tensors can promote reuse (call setMemoryType(Shared) first)");
  promote_reuse_ = enable;
  return this;
}

TensorView* TensorView::circularBuffer(int64_t stages) {
  SMELT_CHECK(stages >= 1, "circularBuffer(", stages, "): tensor ", name_,
              " needs at least one stage");
  SMELT_CHECK(stages == 1 || memory_type_ == MemoryType::Shared, "circularBuffer(", stages,
              "): tensor ", name_, " is in ", memory_type_,
              " memory; only Shared tensors are circular-buffered (call setMemoryType(Shared) "
              "first)");
  circular_buffer_stages_ = stages;
  return this;
}

TensorView* TensorView::padRows(int64_t row_elements, int64_t padding) {
  const bool off = row_elements == 0 && padding == 0;
  SMELT_CHECK(off || (row_elements > 0 && padding > 0), "padRows(", row_elements, ", ", padding,
              "): tensor ", name_, " needs a positive row length and padding (0, 0 removes it)");
  SMELT_CHECK(off || memory_type_ == MemoryType::Shared, "padRows: tensor ", name_, " is in ",
              memory_type_, " memory; only Shared tensors are padded (call setMemoryType(Shared) "
              "first)");
  padded_row_elements_ = row_elements;
  row_padding_ = padding;
  return this;
}

std::string TensorView::transformsString() const {
  std::ostringstream os;
  os << name_ << " (" << memory_type_ << " " << dtype();
  if (compute_position_ > 0) os << ", computeAt " << compute_position_;
  if (promote_reuse_) os << ", promoteReuse";
  if (circular_buffer_stages_ > 1) os << ", circularBuffer " << circular_buffer_stages_;
  if (row_padding_ > 0) os << ", padRows " << padded_row_elements_ << " + " << row_padding_;
  os << ")\n";
  auto domain = [&](const char* what, const std::vector<IterDomain*>& ids) {
    os << "  " << what << ": [";
    for (size_t i = 0; i < ids.size(); ++i) os << (i ? ", " : "") << ids[i]->toString();
    os << "]\n";
  };
  auto transforms = [&](const std::vector<const IdTransform*>& list) {
    for (const IdTransform* t : list) {
      if (t->kind == IdTransform::Kind::Split) {
        os << "  Split: " << t->inputs[0]->toString() << " by " << t->factor
           << (t->inner_split ? "" : " (nparts)") << " -> " << t->outputs[0]->toString() << ", "
           << t->outputs[1]->toString() << "\n";
      } else {
        os << "  Merge: " << t->inputs[0]->toString() << " and " << t->inputs[1]->toString()
           << " -> " << t->outputs[0]->toString() << "\n";
      }
    }
  };
  if (hasViewTransforms()) {
    domain("root", root_);
    transforms(viewTransforms(this));
  }
  domain("logical", logical_);
  transforms(transformHistory(this));
  os << "  loop: [";
  for (size_t i = 0; i < loop_.size(); ++i) os << (i ? ", " : "") << loop_[i]->toString();
  os << "]\n";
  return os.str();
}

}  // namespace smelt
