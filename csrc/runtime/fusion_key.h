// The part of a kernel-cache key that describes a fusion: its math and
// schedule (Fusion::toString: every expression, tensor names, memory types,
// dtypes, logical and loop domains with extents and parallel types, splits
// and merges, compute positions, promoteReuse), plus what that text leaves
// out but code generation depends on: the declared contiguity of the tensor
// inputs, and the dtype and exact value of every scalar.
#pragma once

#include <string>

#include "fusion/fusion.h"

namespace smelt {

// Identical for fusions built and scheduled the same way; different whenever
// the generated kernel could differ.
std::string fusionCacheKey(const Fusion& fusion);

}  // namespace smelt
