#include "scheduler/runtime_info.h"

#include "fusion/error.h"
#include "fusion/symbols.h"

namespace smelt {

InputInfo InputInfo::tensor(DataType dtype, std::vector<int64_t> sizes,
                            std::vector<int64_t> strides, int64_t alignment) {
  SMELT_CHECK(sizes.size() == strides.size(), "InputInfo: ", sizes.size(), " sizes but ",
              strides.size(), " strides");
  InputInfo info;
  info.dtype = dtype;
  info.sizes = std::move(sizes);
  info.strides = std::move(strides);
  info.alignment = alignment;
  return info;
}

InputInfo InputInfo::contiguous(DataType dtype, std::vector<int64_t> sizes, int64_t alignment) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * std::max<int64_t>(sizes[d + 1], 1);
  }
  return tensor(dtype, std::move(sizes), std::move(strides), alignment);
}

InputInfo InputInfo::scalar(DataType dtype, double value) {
  InputInfo info;
  info.is_tensor = false;
  info.dtype = dtype;
  info.scalar_value = value;
  return info;
}

int64_t alignmentOf(uint64_t address) {
  int64_t alignment = 16;
  while (alignment > 1 && address % static_cast<uint64_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

std::string toString(MatmulPolicy policy) {
  switch (policy) {
    case MatmulPolicy::Auto: return "auto";
    case MatmulPolicy::Library: return "library";
    case MatmulPolicy::Generated: return "generated";
  }
  return "?";
}

RuntimeInfo::RuntimeInfo(const Fusion& fusion, std::vector<InputInfo> inputs, ExecutionTarget target)
    : fusion_(&fusion), inputs_(std::move(inputs)), target_(target) {
  const auto& vals = fusion.inputs();
  SMELT_CHECK(vals.size() == inputs_.size(), "the fusion takes ", vals.size(), " inputs but ",
              inputs_.size(), " were given");
  for (size_t i = 0; i < vals.size(); ++i) {
    const InputInfo& info = inputs_[i];
    const TensorView* tv = vals[i]->asTensor();
    if (tv == nullptr) {
      SMELT_CHECK(!info.is_tensor, "fusion input ", i, " (", vals[i]->toString(),
                  ") is a scalar but a tensor was given");
      const auto* s = static_cast<const Scalar*>(vals[i]);
      if (!s->isConstant() && !isFloatingType(s->dtype())) {
        bindings_[s->symbol()] = static_cast<int64_t>(info.scalar_value);
      }
      continue;
    }
    SMELT_CHECK(info.is_tensor, "fusion input ", i, " (", tv->name(),
                ") is a tensor but a scalar was given");
    SMELT_CHECK(info.dtype == tv->dtype(), "fusion input ", tv->name(), " has dtype ",
                tv->dtype(), " but a ", info.dtype, " tensor was given");
    std::vector<IterDomain*> dims = tv->logicalNoReductions();
    SMELT_CHECK(info.sizes.size() == dims.size(), "fusion input ", tv->name(), " has rank ",
                dims.size(), " but a tensor of rank ", info.sizes.size(), " was given");
    for (size_t d = 0; d < dims.size(); ++d) {
      bindings_[sizeSymbol(tv, static_cast<int64_t>(d))] = info.sizes[d];
      // An expanded broadcast (a segment input another segment wrote with
      // stride 0) has its expanded extent as size, a plain one size 1.
      const IntExpr extent = dims[d]->isPlainBroadcast()
                                 ? IntExpr(1)
                                 : dims[d]->loopExtent();
      if (auto c = extent.constant()) {
        SMELT_CHECK(*c == info.sizes[d], "fusion input ", tv->name(), " dimension ", d,
                    " has extent ", *c, " but the given tensor has size ", info.sizes[d]);
      } else if (extent.kind() == IntExpr::Kind::Symbol && !bindings_.count(extent.symbolName())) {
        bindings_[extent.symbolName()] = info.sizes[d];
      }
    }
  }
}

const InputInfo* RuntimeInfo::inputInfo(const TensorView* tv) const {
  const auto& vals = fusion_->inputs();
  for (size_t i = 0; i < vals.size(); ++i) {
    if (vals[i] == tv) return &inputs_[i];
  }
  return nullptr;
}

}  // namespace smelt
