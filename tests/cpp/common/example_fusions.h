// Unscheduled fusions that the tests and benchmarks of the automatic
// schedulers (selection, segmentation, FusionExecutorCache) share. Header
// only, over the fusion ops alone, so benchmarks built without the test
// libraries include it too.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "fusion/fusion.h"
#include "fusion/ops.h"

namespace smelt::examples {

// torch.softmax(x, 1) of a 2-D x: a row maximum, exp, a row sum and a divide
// (the normalization scheduler's fusion).
inline TensorView* rowSoftmax(TensorView* x) {
  TensorView* e = exp(sub(x, broadcast(max(x, {1}), {false, true})));
  return div(e, broadcast(sum(e, {1}), {false, true}));
}

// A tensor of fixed extents whose extent-1 dimensions are broadcasts, as
// FusionDefinition.define_tensor makes them and as a segment passes on a
// broadcast result (makeConcreteTensor makes every dimension iterate).
inline TensorView* makeBroadcastingTensor(const std::vector<int64_t>& shape) {
  Fusion* fusion = Fusion::current();
  std::vector<IterDomain*> axes;
  for (int64_t extent : shape) {
    axes.push_back(fusion->newIterDomain(extent, extent == 1 ? IterType::Broadcast : IterType::Iteration));
  }
  return fusion->newTensor(DataType::Float, std::move(axes), MemoryType::Global);
}

// The extent of logical dimension `d` of `tv`, as a reshape entry (what
// Tensor.size(d) denotes in Python).
inline IntExpr sizeOf(const TensorView* tv, size_t d) { return tv->logicalNoReductions().at(d)->loopExtent(); }

// A fusion of contiguous inputs of the given ranks (symbolic extents) and
// the one output `build` makes of them (built with the fusion active).
inline std::unique_ptr<Fusion> fusionOf(
    const std::vector<int64_t>& input_ranks,
    const std::function<TensorView*(const std::vector<TensorView*>& inputs)>& build) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  std::vector<TensorView*> inputs;
  for (int64_t rank : input_ranks) {
    inputs.push_back(makeContigTensor(rank));
    fusion->addInput(inputs.back());
  }
  fusion->addOutput(build(inputs));
  return fusion;
}

// rowSoftmax of a contiguous 2-D input as a fusion of its own.
inline std::unique_ptr<Fusion> rowSoftmaxFusion() {
  return fusionOf({2}, [](const std::vector<TensorView*>& in) { return rowSoftmax(in[0]); });
}

}  // namespace smelt::examples
