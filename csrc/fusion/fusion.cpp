#include "fusion/fusion.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "fusion/error.h"

namespace smelt {

namespace {
thread_local Fusion* active_fusion = nullptr;
}  // namespace

FusionGuard::FusionGuard(Fusion* fusion) : previous_(active_fusion) { active_fusion = fusion; }
FusionGuard::~FusionGuard() { active_fusion = previous_; }

Fusion* Fusion::current() {
  SMELT_CHECK(active_fusion != nullptr,
              "no active Fusion: create one and hold a FusionGuard before building ops");
  return active_fusion;
}

void Fusion::addInput(Val* val) {
  SMELT_CHECK(val->fusion() == this, "addInput: ", val->toString(), " belongs to another fusion");
  SMELT_CHECK(val->definition() == nullptr, "addInput: ", val->toString(),
              " is computed by an expression and cannot be a fusion input");
  SMELT_CHECK(!isInput(val), "addInput: ", val->toString(), " is already an input");
  if (TensorView* tv = val->asTensor()) {
    SMELT_CHECK(tv->memoryType() == MemoryType::Global, "addInput: tensor ", tv->name(),
                " must be in global memory");
  }
  inputs_.push_back(val);
}

void Fusion::addOutput(Val* val) {
  SMELT_CHECK(val->fusion() == this, "addOutput: ", val->toString(),
              " belongs to another fusion");
  TensorView* tv = val->asTensor();
  SMELT_CHECK(tv != nullptr, "addOutput: ", val->toString(), " is not a tensor");
  SMELT_CHECK(!isOutput(val), "addOutput: ", tv->name(), " is already an output");
  SMELT_CHECK(!isInput(val), "addOutput: ", tv->name(),
              " is a fusion input; add set(input) as the output to copy it");
  tv->setMemoryType(MemoryType::Global);
  outputs_.push_back(val);
  graphChanged();
}

bool Fusion::isInput(const Val* val) const {
  return std::find(inputs_.begin(), inputs_.end(), val) != inputs_.end();
}
bool Fusion::isOutput(const Val* val) const {
  return std::find(outputs_.begin(), outputs_.end(), val) != outputs_.end();
}

void Fusion::removeExpr(Expr* expr) {
  for (Val* in : expr->inputs()) {
    in->uses_.erase(std::remove(in->uses_.begin(), in->uses_.end(), expr), in->uses_.end());
  }
  for (Val* out : expr->outputs()) out->definition_ = nullptr;
  auto it = std::find_if(exprs_.begin(), exprs_.end(),
                         [&](const std::unique_ptr<Expr>& e) { return e.get() == expr; });
  SMELT_INTERNAL_CHECK(it != exprs_.end(), "removeExpr: ", expr->toString(), " is not in the fusion");
  exprs_.erase(it);
  graphChanged();
}

void Fusion::graphChanged() {
  std::lock_guard<std::mutex> lock(order_mutex_);
  order_.reset();
}

std::shared_ptr<const Fusion::ExprOrder> Fusion::exprOrder() const {
  std::lock_guard<std::mutex> lock(order_mutex_);
  if (order_) return order_;
  // Depth-first from the outputs; an expression is emitted after its producers.
  auto result = std::make_shared<ExprOrder>();
  std::vector<Expr*>& order = result->exprs;
  std::unordered_set<const Expr*> done;
  std::vector<std::pair<Expr*, size_t>> stack;
  for (Val* out : outputs_) {
    if (out->definition() == nullptr || done.count(out->definition())) continue;
    stack.push_back({out->definition(), 0});
    while (!stack.empty()) {
      auto& [expr, next_input] = stack.back();
      if (next_input < expr->inputs().size()) {
        Expr* producer = expr->inputs()[next_input++]->definition();
        if (producer != nullptr && !done.count(producer)) stack.push_back({producer, 0});
        continue;
      }
      if (done.insert(expr).second) order.push_back(expr);
      stack.pop_back();
    }
  }
  for (size_t i = 0; i < order.size(); ++i) result->position.emplace(order[i], i);
  order_ = std::move(result);
  return order_;
}

std::vector<Expr*> Fusion::exprs() const { return exprOrder()->exprs; }

std::vector<TensorView*> Fusion::allTensors() const {
  std::vector<TensorView*> result;
  std::unordered_set<const TensorView*> seen;
  auto add = [&](Val* v) {
    TensorView* tv = v->asTensor();
    if (tv != nullptr && seen.insert(tv).second) result.push_back(tv);
  };
  for (Val* in : inputs_) add(in);
  for (Expr* e : exprs()) {
    for (Val* in : e->inputs()) add(in);
    add(e->output());
  }
  return result;
}

std::vector<TensorView*> Fusion::consumersOf(const TensorView* tv) const {
  const std::shared_ptr<const ExprOrder> order = exprOrder();
  std::vector<std::pair<size_t, TensorView*>> found;
  for (const Expr* use : tv->uses()) {
    auto p = order->position.find(use);
    if (p != order->position.end()) found.emplace_back(p->second, use->output());
  }
  std::sort(found.begin(), found.end());
  std::vector<TensorView*> result;
  for (const auto& [position, consumer] : found) result.push_back(consumer);
  return result;
}

std::string Fusion::mathString() const {
  std::ostringstream os;
  os << "Fusion inputs: (";
  for (size_t i = 0; i < inputs_.size(); ++i) os << (i ? ", " : "") << inputs_[i]->toString();
  os << ")\n";
  for (Expr* e : exprs()) os << "  " << e->toString() << "\n";
  os << "Fusion outputs: (";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    os << (i ? ", " : "") << outputs_[i]->asTensor()->name();
  }
  os << ")\n";
  return os.str();
}

std::string Fusion::transformsString() const {
  std::ostringstream os;
  for (TensorView* tv : allTensors()) os << tv->transformsString();
  return os.str();
}

std::string Fusion::toString() const { return mathString() + transformsString(); }

TensorView* Fusion::newTensor(DataType dtype, std::vector<IterDomain*> logical,
                              MemoryType mtype) {
  auto tv = std::make_unique<TensorView>(this, next_tensor_number_++, dtype, std::move(logical),
                                         mtype);
  TensorView* raw = tv.get();
  vals_.push_back(std::move(tv));
  return raw;
}

IterDomain* Fusion::newIterDomain(IntExpr extent, IterType type) {
  iter_domains_.push_back(
      std::make_unique<IterDomain>(next_iter_domain_id_++, std::move(extent), type));
  return iter_domains_.back().get();
}

IdTransform* Fusion::newTransform(IdTransform transform) {
  transforms_.push_back(std::make_unique<IdTransform>(std::move(transform)));
  IdTransform* raw = transforms_.back().get();
  for (IterDomain* out : raw->outputs) out->definition_ = raw;
  return raw;
}

Scalar* Fusion::newConstant(double value, DataType dtype) {
  vals_.push_back(std::make_unique<Scalar>(this, dtype, value));
  return static_cast<Scalar*>(vals_.back().get());
}

Scalar* Fusion::newSymbolicScalar(DataType dtype) {
  vals_.push_back(
      std::make_unique<Scalar>(this, dtype, "s" + std::to_string(next_scalar_number_++)));
  return static_cast<Scalar*>(vals_.back().get());
}

}  // namespace smelt
