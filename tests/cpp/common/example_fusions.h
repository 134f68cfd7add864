// Unscheduled fusions that the tests and benchmarks of the automatic
// schedulers (selection, segmentation, FusionExecutorCache) share. Header
// only, over the fusion ops alone, so benchmarks built without the test
// libraries include it too.
#pragma once

#include <memory>

#include "fusion/fusion.h"
#include "fusion/ops.h"

namespace smelt::examples {

// torch.softmax(x, 1) of a 2-D x: a row maximum, exp, a row sum and a divide
// (the normalization scheduler's fusion).
inline TensorView* rowSoftmax(TensorView* x) {
  TensorView* e = exp(sub(x, broadcast(max(x, {1}), {false, true})));
  return div(e, broadcast(sum(e, {1}), {false, true}));
}

// rowSoftmax of a contiguous 2-D input as a fusion of its own.
inline std::unique_ptr<Fusion> rowSoftmaxFusion() {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* x = makeContigTensor(2);
  fusion->addInput(x);
  fusion->addOutput(rowSoftmax(x));
  return fusion;
}

}  // namespace smelt::examples
