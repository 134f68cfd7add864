// Window ops (pad, slice, and cat's padded inputs) read their input at
// shifted positions, so a computed input cannot run in the window's loops
// (its element c is not the window's element c): the scheduler's dimension
// map finds such an input unlabeled and segmentation would make it a
// segment output, one more kernel and a round trip through global memory.
//
// recomputeWindowInputs rewrites each window over a computed input into
// the input's producers evaluated at the shifted positions: elementwise
// ops, permutes, broadcasts and iotas are rebuilt on the window's extents
// over their own operands read through the same widths, down to fusion
// inputs and tensors that cannot be recomputed (reductions, reshapes,
// expands), which a pad then reads (directly from memory for an input).
// A crop is the recomputed tensor itself; a pad selects its value outside
// the input's window (iota bounds and where). Nested windows compose into
// one. Elementwise work is repeated per window (cat's inputs each run over
// the joined extent), which costs arithmetic, never memory traffic.
#pragma once

#include <cstdint>

#include "fusion/fusion.h"

namespace smelt {

// Rewrites `fusion` in place; returns how many windows it rewrote.
int64_t recomputeWindowInputs(Fusion& fusion);

}  // namespace smelt
