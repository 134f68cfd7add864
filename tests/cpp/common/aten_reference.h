// Evaluates a fusion with ATen on CPU: the reference that simulated and GPU
// results are compared with.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "fusion/fusion.h"

namespace smelt::testing {

at::ScalarType toScalarType(DataType dtype);

// Random inputs for a fusion, one per fusion input: normal values of the
// input's dtype with its constant extents, `symbolic_extent` for symbolic
// ones (an error when it is not given), on `device`; scalar inputs as the
// 0-dim tensor 1.5 (double, on the CPU).
std::vector<at::Tensor> randomInputs(Fusion& fusion, uint64_t seed = 0, int64_t symbolic_extent = -1,
                                     at::Device device = at::kCPU);
// Random inputs of the given shapes (one per fusion input; scalar inputs
// as above, their shape ignored).
std::vector<at::Tensor> randomInputs(Fusion& fusion, const std::vector<std::vector<int64_t>>& shapes,
                                     uint64_t seed = 0, at::Device device = at::kCPU);

// One tensor per fusion input (scalars as 0-dim tensors); returns one tensor
// per fusion output.
std::vector<at::Tensor> evaluateWithATen(Fusion& fusion, const std::vector<at::Tensor>& inputs);

}  // namespace smelt::testing
