// Axis helpers the op builders share (ops.cpp, ops_layout.cpp); not part of
// the op API (fusion/ops.h).
#pragma once

#include "fusion/fusion.h"

namespace smelt::op_axes {

// The consumer-side copy of a producer's axis for an elementwise op: an
// expanded broadcast becomes a real axis of its expanded extent.
IterDomain* elementwiseAxis(Fusion* f, const IterDomain* id);
// The extent a dimension has for reshaping: 1 for a plain broadcast.
IntExpr viewExtent(const IterDomain* id);

}  // namespace smelt::op_axes
