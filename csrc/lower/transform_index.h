// Index arithmetic through a tensor's splits and merges:
//   loop indices -> logical indices (to address a consumer's element), and
//   logical indices -> loop indices (to find that element in a producer's
//   allocation, which is laid out over its loop axes).
// Broadcast axes always have index 0.
#pragma once

#include <unordered_map>
#include <vector>

#include "fusion/ir.h"
#include "lower/kir.h"

namespace smelt {

using IndexMap = std::unordered_map<const IterDomain*, IntExpr>;

// The value of a loop's index: its variable, the thread/block index it is
// bound to, or 0 when it runs once.
IntExpr loopIndexValue(const kir::ForLoop& loop);

// Logical-axis indices of `tv` given the index of each of its loop axes
// (and root-axis indices, for a reshape's output). Broadcast axes have index
// 0, expanded ones too unless `iterate_expanded` (then they have the index
// the loops iterate over them, as iteration axes do).
IndexMap logicalIndices(const TensorView* tv, const std::vector<IntExpr>& loop_indices,
                        bool iterate_expanded = false);

// Loop-axis indices of `tv` given indices of its logical axes (axes absent
// from the map, e.g. reduction axes, count as 0).
std::vector<IntExpr> loopIndicesFromLogical(const TensorView* tv, const IndexMap& logical);

// True when the logical axis `id` of `tv` reaches the loop domain through a
// split that may overrun its extent (non-divisible or symbolic), so accesses
// need a bounds predicate on it.
bool needsBoundsCheck(const TensorView* tv, const IterDomain* id);

// The stride of dimension `d` of tv->logicalNoReductions() of a Global
// tensor, as index math uses it: a constant where the runtime guarantees it,
// else the kernel parameter "T<n>.stride[d]". Constant for a fusion input or
// output when `d` and every stepped (non-broadcast) dimension inside it are
// declared contiguous and those inner dimensions have constant extents: the
// product of those extents (1 for the innermost stepped dimension, whatever
// the extents). The runtime checks an input's strides against its declared
// contiguity and allocates outputs contiguously (an expanded dimension is
// stored once, stride 0, and never stepped).
IntExpr globalStride(const TensorView* tv, int64_t d);

}  // namespace smelt
