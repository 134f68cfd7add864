#include "runtime/input_validation.h"

#include <cstring>
#include <unordered_map>

#include "fusion/error.h"
#include "fusion/transform_replay.h"

namespace smelt {

namespace {

// Union-find over the logical axes of every tensor of a fusion.
class AxisClasses {
 public:
  const IterDomain* root(const IterDomain* id) {
    parent_.try_emplace(id, id);
    while (parent_[id] != id) id = parent_[id];
    return id;
  }
  void unite(const IterDomain* a, const IterDomain* b) {
    const IterDomain* ra = root(a);
    const IterDomain* rb = root(b);
    if (ra != rb) parent_[rb] = ra;
  }

 private:
  std::unordered_map<const IterDomain*, const IterDomain*> parent_;
};

}  // namespace

std::vector<bool> contiguityOf(const at::Tensor& t) {
  std::vector<bool> flags(t.dim(), true);
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    flags[d] = t.stride(d) == expected;
    expected = t.stride(d) * t.size(d);
  }
  return flags;
}

InputValidator::InputValidator(const Fusion& fusion) {
  // Axes that must have equal sizes: those an op maps onto each other (plain
  // broadcasts excepted: they have size 1 against any size), and input axes
  // sharing a symbolic extent.
  AxisClasses classes;
  std::unordered_map<std::string, const IterDomain*> by_symbol;
  for (const Val* in : fusion.inputs()) {
    const TensorView* tv = in->asTensor();
    if (tv == nullptr) continue;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      if (id->isBroadcast() || id->extent().kind() != IntExpr::Kind::Symbol) continue;
      auto [it, inserted] = by_symbol.try_emplace(id->extent().symbolName(), id);
      if (!inserted) classes.unite(it->second, id);
    }
  }
  for (const Expr* expr : fusion.exprs()) {
    const TensorView* out = expr->output();
    for (const TensorView* producer : expr->tensorInputs()) {
      for (const auto& [p, c] : pairwiseLogicalMap(producer, out)) {
        if (!p->isBroadcast() && !c->isBroadcast()) classes.unite(p, c);
      }
    }
  }
  // A class with a constant extent anywhere (e.g. a concrete input or a
  // full() of fixed shape) fixes the size of its input axes.
  std::unordered_map<const IterDomain*, int64_t> class_extent;  // by class root
  for (const TensorView* tv : fusion.allTensors()) {
    for (const IterDomain* id : tv->logicalDomain()) {
      if (id->isBroadcast()) continue;
      if (auto c = id->loopExtent().constant()) class_extent.emplace(classes.root(id), *c);
    }
  }

  std::unordered_map<const IterDomain*, int64_t> dense;  // class root -> 0..n-1 over input axes
  for (const Val* in : fusion.inputs()) {
    InputSpec spec;
    spec.dtype = in->dtype();
    const TensorView* tv = in->asTensor();
    if (tv == nullptr) {
      spec.name = in->toString();
      specs_.push_back(std::move(spec));
      continue;
    }
    spec.is_tensor = true;
    spec.name = tv->name();
    const std::vector<IterDomain*> axes = tv->logicalNoReductions();
    for (size_t d = 0; d < axes.size(); ++d) {
      const IterDomain* id = axes[d];
      InputAxisSpec axis;
      axis.contiguous = d < tv->contiguity().size() ? tv->contiguity()[d] : true;
      if (id->isBroadcast()) {
        axis.broadcast = true;
        axis.extent = id->isPlainBroadcast() ? std::optional<int64_t>(1) : id->loopExtent().constant();
      } else {
        const IterDomain* cls = classes.root(id);
        axis.size_class = dense.try_emplace(cls, static_cast<int64_t>(dense.size())).first->second;
        auto fixed = class_extent.find(cls);
        if (fixed != class_extent.end()) axis.extent = fixed->second;
      }
      spec.axes.push_back(axis);
    }
    specs_.push_back(std::move(spec));
  }
  num_classes_ = static_cast<int64_t>(dense.size());
}

std::string InputValidator::describe(size_t input) const {
  return errorMessage("input ", input, " (", specs_[input].name, ")");
}

std::optional<c10::Device> InputValidator::validate(const std::vector<at::Tensor>& inputs) const {
  if (inputs.size() != specs_.size()) {
    std::string names;
    for (size_t i = 0; i < specs_.size(); ++i) names += (i ? ", " : "") + specs_[i].name;
    throw Error(errorMessage("the fusion has ", specs_.size(), " inputs (", names, "), got ",
                             inputs.size()));
  }
  std::optional<c10::Device> device;
  size_t device_input = 0;
  std::vector<int64_t> class_sizes(num_classes_, -1);
  std::vector<std::pair<size_t, size_t>> class_origins(num_classes_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    const InputSpec& spec = specs_[i];
    SMELT_CHECK(t.defined(), describe(i), " is an undefined tensor");
    if (!spec.is_tensor) {
      SMELT_CHECK(t.dim() == 0, describe(i), " is a scalar: pass it as a 0-dim tensor, got one of shape ",
                  t.sizes());
      continue;
    }
    SMELT_CHECK(t.scalar_type() == toAtenType(spec.dtype), describe(i), " must be a ", spec.dtype,
                " tensor, got ", t.scalar_type());
    SMELT_CHECK(t.dim() == static_cast<int64_t>(spec.axes.size()), describe(i), " must have rank ",
                spec.axes.size(), ", got a tensor of shape ", t.sizes());
    if (!device) {
      device = t.device();
      device_input = i;
    }
    SMELT_CHECK(t.device() == *device, describe(i), " is on ", t.device().str(), " but ",
                describe(device_input), " is on ", device->str(),
                "; every tensor input must be on the same device");
    checkSizes(i, t, class_sizes, class_origins);
    checkStrides(i, t);
  }
  return device;
}

void InputValidator::checkSizes(size_t input, const at::Tensor& t, std::vector<int64_t>& class_sizes,
                                std::vector<std::pair<size_t, size_t>>& class_origins) const {
  const InputSpec& spec = specs_[input];
  for (size_t d = 0; d < spec.axes.size(); ++d) {
    const InputAxisSpec& axis = spec.axes[d];
    const int64_t size = t.size(static_cast<int64_t>(d));
    // 0 is a size like any other here: the executors launch no kernel for an
    // empty input (runtime/aten_evaluator.h).
    if (axis.extent) {
      SMELT_CHECK(size == *axis.extent, describe(input), " dimension ", d, " must have size ",
                  *axis.extent, axis.broadcast ? " (a broadcast dimension)" : " (fixed by the fusion)",
                  ", got ", size, " (shape ", t.sizes(), ")");
    }
    if (axis.size_class < 0) continue;
    int64_t& bound = class_sizes[axis.size_class];
    if (bound < 0) {
      bound = size;
      class_origins[axis.size_class] = {input, d};
      continue;
    }
    const auto [other, other_dim] = class_origins[axis.size_class];
    SMELT_CHECK(size == bound, describe(input), " dimension ", d, " has size ", size, " but ",
                describe(other), " dimension ", other_dim, " has size ", bound,
                "; the fusion maps these dimensions onto each other, so they must be equal");
  }
}

void InputValidator::checkStrides(size_t input, const at::Tensor& t) const {
  const InputSpec& spec = specs_[input];
  if (t.numel() == 0) return;  // no element is read: any strides will do
  // Walking outwards: the stride a contiguous dimension must have is the
  // stride times size of the nearest inner dimension of size > 1.
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t size = t.size(d);
    const int64_t stride = t.stride(d);
    // Size-1 and (expanded) broadcast dimensions are never stepped through.
    if (size == 1 || spec.axes[d].broadcast) continue;
    if (spec.axes[d].contiguous) {
      SMELT_CHECK(stride == expected, describe(input), " dimension ", d, " has stride ", stride,
                  " but the fusion declares it contiguous, which needs stride ", expected,
                  " (strides ", t.strides(), ", sizes ", t.sizes(),
                  "); pass a contiguous tensor or declare the dimension non-contiguous");
    }
    expected = stride * size;
  }
}

void InputValidator::checkVectorAlignment(size_t input, const at::Tensor& t, int64_t vector_bytes) const {
  if (vector_bytes == 0) return;
  const auto address = reinterpret_cast<uintptr_t>(t.data_ptr());
  SMELT_CHECK(address % vector_bytes == 0, describe(input), " is read with ", vector_bytes,
              "-byte vector loads but its data pointer ", t.data_ptr(), " is not ", vector_bytes,
              "-byte aligned (a view at an offset?); pass an aligned copy (.clone())");
}

void appendShapeKey(std::vector<int64_t>& key, const at::Tensor& t, bool scalar) {
  key.push_back(static_cast<int64_t>(t.scalar_type()));
  key.push_back(t.dim());
  if (scalar) {
    const double value = t.item<double>();
    int64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    key.push_back(bits);
  }
  key.insert(key.end(), t.sizes().begin(), t.sizes().end());
  key.insert(key.end(), t.strides().begin(), t.strides().end());
}

}  // namespace smelt
