// Fusion::clone and copySubgraph: both copy values in creation order (so
// numbering stays), each tensor with the axes and transforms between its
// logical and loop domains, then the chosen expressions.
#include "fusion/clone.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "fusion/error.h"
#include "fusion/transform_replay.h"

namespace smelt {

Val* CloneMap::operator()(const Val* val) const {
  auto it = vals.find(val);
  SMELT_INTERNAL_CHECK(it != vals.end(), "value ", val->toString(), " was not copied");
  return it->second;
}

TensorView* CloneMap::operator()(const TensorView* tv) const {
  return (*this)(static_cast<const Val*>(tv))->asTensor();
}

class GraphCopier {
 public:
  GraphCopier(const Fusion& src, Fusion& dst, CloneMap& map, ExtentRewrite rewrite)
      : src_(src), dst_(dst), map_(map), rewrite_(std::move(rewrite)) {
    dst_.next_tensor_number_ = src_.next_tensor_number_;
    dst_.next_scalar_number_ = src_.next_scalar_number_;
    dst_.next_iter_domain_id_ = src_.next_iter_domain_id_;
  }

  // Copies `vals` (in the source's creation order), then `exprs` (likewise).
  // Tensors in `new_inputs` become plain inputs: their logical domain without
  // reduction axes, unscheduled, contiguous.
  void copy(const std::unordered_set<const Val*>& vals,
            const std::unordered_set<const Expr*>& exprs,
            const std::unordered_set<const Val*>& new_inputs = {}) {
    new_inputs_ = new_inputs;
    for (const auto& v : src_.vals_) {
      if (vals.count(v.get())) copyVal(v.get());
    }
    for (const auto& e : src_.exprs_) {
      if (!exprs.count(e.get())) continue;
      std::vector<Val*> ins;
      std::vector<Val*> outs;
      for (const Val* in : e->inputs()) ins.push_back(map_(in));
      for (const Val* out : e->outputs()) outs.push_back(map_(out));
      e->cloneWith(dst_, ins, outs);
    }
  }

  void setInputsAndOutputs(const std::vector<const Val*>& inputs,
                           const std::vector<const Val*>& outputs) {
    for (const Val* in : inputs) dst_.inputs_.push_back(map_(in));
    for (const Val* out : outputs) dst_.outputs_.push_back(map_(out));
    dst_.graphChanged();
  }

 private:
  IntExpr rewritten(const IntExpr& e) const { return rewrite_ ? rewrite_(e) : e; }

  IterDomain* copyId(const IterDomain* id) {
    auto it = map_.ids.find(id);
    if (it != map_.ids.end()) return it->second;
    dst_.iter_domains_.push_back(
        std::make_unique<IterDomain>(id->id(), rewritten(id->extent()), id->iterType()));
    IterDomain* copy = dst_.iter_domains_.back().get();
    if (id->hasExpandedExtent()) copy->setExpandedExtent(rewritten(id->expandedExtent()));
    copy->parallel_type_ = id->parallelType();
    map_.ids[id] = copy;
    return copy;
  }

  std::vector<IterDomain*> copyIds(const std::vector<IterDomain*>& ids) {
    std::vector<IterDomain*> result;
    for (const IterDomain* id : ids) result.push_back(copyId(id));
    return result;
  }

  void copyVal(const Val* val) {
    if (const TensorView* tv = val->asTensor()) {
      copyTensor(tv);
      return;
    }
    const auto* scalar = static_cast<const Scalar*>(val);
    std::unique_ptr<Scalar> copy =
        scalar->isConstant() ? std::make_unique<Scalar>(&dst_, scalar->dtype(), scalar->value())
                             : std::make_unique<Scalar>(&dst_, scalar->dtype(), scalar->symbol());
    map_.vals[val] = copy.get();
    dst_.vals_.push_back(std::move(copy));
  }

  void copyTensor(const TensorView* tv) {
    if (new_inputs_.count(tv)) {
      auto copy = std::make_unique<TensorView>(&dst_, tv->number(), tv->dtype(),
                                               copyIds(tv->logicalNoReductions()),
                                               MemoryType::Global);
      copy->setName(tv->name());
      map_.vals[tv] = copy.get();
      dst_.vals_.push_back(std::move(copy));
      return;
    }
    // A reshape's root and view transforms first: its logical axes are
    // their outputs.
    std::vector<IterDomain*> root = copyIds(tv->rootDomain());
    std::vector<IterDomain*> logical = copyIds(tv->logicalDomain());
    auto copy = std::make_unique<TensorView>(&dst_, tv->number(), tv->dtype(), logical,
                                             tv->memoryType());
    TensorView* raw = copy.get();
    map_.vals[tv] = raw;
    dst_.vals_.push_back(std::move(copy));
    if (tv->hasViewTransforms()) raw->setRootDomain(root);
    if (tv->loopRoot() != tv->logicalDomain()) raw->setIterationDomain(copyIds(tv->loopRoot()));
    std::vector<const IdTransform*> transforms = viewTransforms(tv);
    for (const IdTransform* t : transformHistory(tv)) transforms.push_back(t);
    for (const IdTransform* t : transforms) {
      IdTransform transform{t->kind, copyIds(t->inputs), copyIds(t->outputs),
                            t->kind == IdTransform::Kind::Split ? rewritten(t->factor) : t->factor,
                            t->inner_split};
      for (IterDomain* out : transform.outputs) out->owner_ = raw;
      dst_.newTransform(std::move(transform));
    }
    raw->setName(tv->name());
    raw->setLoopDomain(copyIds(tv->loopDomain()));
    raw->setContiguity(tv->contiguity());
    raw->setComputePosition(tv->computePosition());
    if (tv->shouldPromoteReuse()) raw->promoteReuse();
    raw->circularBuffer(tv->circularBufferStages());
    raw->padRows(tv->paddedRowElements(), tv->rowPadding());
  }

  const Fusion& src_;
  Fusion& dst_;
  CloneMap& map_;
  // A copy: Fusion::clone passes a temporary (ASan found the reference to
  // it dangling).
  const ExtentRewrite rewrite_;
  std::unordered_set<const Val*> new_inputs_;
};

std::unique_ptr<Fusion> Fusion::clone(CloneMap* map) const {
  auto copy = std::make_unique<Fusion>();
  CloneMap local;
  CloneMap& m = map ? *map : local;
  std::unordered_set<const Val*> vals;
  for (const auto& v : vals_) vals.insert(v.get());
  std::unordered_set<const Expr*> exprs;
  for (const auto& e : exprs_) exprs.insert(e.get());
  GraphCopier copier(*this, *copy, m, {});
  copier.copy(vals, exprs);
  copier.setInputsAndOutputs({inputs_.begin(), inputs_.end()}, {outputs_.begin(), outputs_.end()});
  return copy;
}

std::unique_ptr<Fusion> copySubgraph(const Fusion& src, const std::vector<const Expr*>& exprs,
                                     const std::vector<const Val*>& inputs,
                                     const std::vector<const Val*>& outputs, CloneMap* map,
                                     const ExtentRewrite& rewrite_extent) {
  std::unordered_set<const Val*> vals(inputs.begin(), inputs.end());
  std::unordered_set<const Val*> computed;
  for (const Expr* e : exprs) {
    vals.insert(e->inputs().begin(), e->inputs().end());
    vals.insert(e->outputs().begin(), e->outputs().end());
    computed.insert(e->outputs().begin(), e->outputs().end());
  }
  for (const Expr* e : exprs) {
    for (const Val* in : e->inputs()) {
      bool is_input = std::find(inputs.begin(), inputs.end(), in) != inputs.end();
      const TensorView* tv = in->asTensor();
      SMELT_CHECK(tv == nullptr || is_input || computed.count(in), "copySubgraph: ",
                  e->toString(), " reads ", tv ? tv->name() : in->toString(),
                  ", which is neither an input nor computed by the copied expressions");
    }
  }
  for (const Val* out : outputs) {
    SMELT_CHECK(computed.count(out), "copySubgraph: output ", out->toString(),
                " is not computed by the copied expressions");
  }
  auto copy = std::make_unique<Fusion>();
  CloneMap local;
  CloneMap& m = map ? *map : local;
  GraphCopier copier(src, *copy, m, rewrite_extent);
  std::unordered_set<const Val*> new_inputs;
  for (const Val* in : inputs) {
    if (in->asTensor() != nullptr && in->definition() != nullptr) new_inputs.insert(in);
  }
  copier.copy(vals, {exprs.begin(), exprs.end()}, new_inputs);
  for (const Val* in : inputs) copy->addInput(m(in));
  for (const Val* out : outputs) copy->addOutput(m(out));
  return copy;
}

}  // namespace smelt
