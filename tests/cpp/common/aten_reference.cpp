#include "common/aten_reference.h"

#include <string>

#include "fusion/error.h"
#include "runtime/aten_dtype.h"
#include "runtime/aten_evaluator.h"

namespace smelt::testing {

at::ScalarType toScalarType(DataType dtype) { return toAtenType(dtype); }

std::vector<at::Tensor> randomInputs(Fusion& fusion, uint64_t seed, int64_t symbolic_extent,
                                     at::Device device) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Val* v : fusion.inputs()) {
    std::vector<int64_t>& shape = shapes.emplace_back();
    const TensorView* tv = v->asTensor();
    if (tv == nullptr) continue;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      auto extent = id->extent().constant();
      SMELT_CHECK(extent || symbolic_extent > 0, "randomInputs: ", tv->name(),
                  " has a symbolic extent and no size was given for it");
      shape.push_back(extent.value_or(symbolic_extent));
    }
  }
  return randomInputs(fusion, shapes, seed, device);
}

std::vector<at::Tensor> randomInputs(Fusion& fusion, const std::vector<std::vector<int64_t>>& shapes,
                                     uint64_t seed, at::Device device) {
  SMELT_CHECK(shapes.size() == fusion.inputs().size(), "randomInputs: ", shapes.size(),
              " shapes for ", fusion.inputs().size(), " fusion inputs");
  at::manual_seed(seed);
  std::vector<at::Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const TensorView* tv = fusion.inputs()[i]->asTensor();
    if (tv == nullptr) {
      inputs.push_back(at::scalar_tensor(1.5, at::kDouble));
      continue;
    }
    inputs.push_back(at::randn(shapes[i], at::kDouble).to(toScalarType(tv->dtype())).to(device));
  }
  return inputs;
}

std::vector<at::Tensor> evaluateWithATen(Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  return smelt::evaluateWithATen(fusion, inputs);
}

}  // namespace smelt::testing
