// Small scheduled fusions that are not cases of the smem table, shared by the
// lowering goldens and the simulator tests: each builds in the active Fusion
// (hold a FusionGuard) and schedules it.
#pragma once

#include "fusion/fusion.h"

namespace smelt::cases {

// sum(a [64, 32], axis 0) with the kept axis on TIDx: each thread sums its
// column serially.
void buildOuterReduction();

// a [4, 6]: pad(a, {1, 1}, 2.0) + broadcast(sum(a, axis 1)), inlined.
void buildBroadcastAndPad();

// A 32x32 Shared tile written by thread (y, x) at [y][x] and read transposed.
struct SmemTranspose {
  TensorView* tile;
  TensorView* out;
};
SmemTranspose buildSmemTranspose();

// A [6, 40] tensor of `dtype` staged through a Shared tile (block per row,
// thread per column), then maximum with a second input, a cast to float and
// a row sum in double.
void buildSharedTileOfType(DataType dtype);

}  // namespace smelt::cases
