// Facts about allocations that the allocation pass decides and the indexing
// pass relies on.
#pragma once

#include <cstdint>
#include <vector>

#include "fusion/ir.h"
#include "lower/lower_context.h"

namespace smelt {

// The loop axes of a Shared or Local tensor that its buffer stores, outermost
// first (the buffer is laid out row-major over them).
std::vector<int64_t> allocatedAxes(const LoweringContext& ctx, const TensorView* tv);

}  // namespace smelt
