// Evaluates a fusion op by op with ATen, on the inputs' device. The runtime
// uses it for segments that only move data (as views, below) and for inputs
// with an empty dimension (no kernel is launched: the
// results are empty, or reductions over an empty dimension such as sum,
// whose value is its identity, 0, as torch's); the tests use it as the
// reference simulated and GPU results are compared with.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "fusion/fusion.h"

namespace smelt {

// One tensor per fusion input (scalars as 0-dim tensors); returns one
// contiguous tensor per fusion output. An op ATen refuses (max over an
// empty dimension has no identity) is a smelt::Error naming it.
std::vector<at::Tensor> evaluateWithATen(const Fusion& fusion, const std::vector<at::Tensor>& inputs);

// Whether every op of the fusion only moves data: copies, broadcasts,
// expands, permutes, squeezes and reshapes.
bool movesDataOnly(const Fusion& fusion);

// For a fusion that only moves data: its outputs as views of `inputs` (ATen
// views, no copy), when each is contiguous, as the executor would allocate
// it; std::nullopt when a reshape needs a copy or an output is strided. The
// runtime runs such a segment without a kernel.
std::optional<std::vector<at::Tensor>> outputsAsViews(const Fusion& fusion,
                                                      const std::vector<at::Tensor>& inputs);

// Whether a tensor input has a dimension of extent 0.
bool hasEmptyInput(const Fusion& fusion, const std::vector<at::Tensor>& inputs);

}  // namespace smelt
