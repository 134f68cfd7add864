// Evaluates a fusion with ATen on CPU: the reference that simulated and GPU
// results are compared with.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "fusion/fusion.h"

namespace smelt::testing {

at::ScalarType toScalarType(DataType dtype);

// One tensor per fusion input (scalars as 0-dim tensors); returns one tensor
// per fusion output.
std::vector<at::Tensor> evaluateWithATen(Fusion& fusion, const std::vector<at::Tensor>& inputs);

}  // namespace smelt::testing
