// The reduction scheduler: one reduction (any number of dimensions reduced,
// with element-wise ops before and after it) whose result is not broadcast
// back. The reference is the reduction tensor (a register tensor: a reduced
// output is cached first, so one thread writes each result).
//
// Inner (row) reductions, the reduced dimensions innermost in memory: rows
// are spread over blocks (BIDx), `block_y` rows per block on TIDy when rows
// are short; the reduced extent is split into [serial, TIDx, vector] so each
// thread accumulates vector-wide loads from a register cache of the input,
// then the block reduces over TIDx through shared memory.
// Outer (column) reductions, the reduced dimensions outside the iterated
// ones: iterated elements go to [BIDx, TIDx] (coalesced along the row), the
// reduced extent to [serial, TIDy], reduced over TIDy when block_y > 1.
// Vector loads are not used here: the vector axis would have to iterate
// inside the serial reduction loop, which lowering does not allow.
//
// Mergeable runs of dimensions are merged as in the pointwise scheduler;
// outer runs of reduced dimensions become serial loops, the iterated run
// before the innermost one goes to BIDy. Reductions across blocks are not
// generated: a very long reduction runs in one block per row (lowering has
// no grid reduction; the design for it is a two-kernel split through
// segmentation, not implemented yet).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct ReductionParams : HeuristicParams {
  // A row reduction (see above); fixed by the fusion, printed for clarity.
  bool inner = true;
  // Inner reductions: elements per vectorized load of the inputs listed in
  // vectorized_inputs (1: none); must divide the innermost reduced run.
  int64_t vector_width = 1;
  // Inner: threads reducing one row. Outer: threads across the row.
  int64_t block_x = 128;
  // Inner: rows per block. Outer: threads splitting the reduced extent.
  int64_t block_y = 1;
  std::vector<int64_t> vectorized_inputs;  // positions in fusion->inputs()

  SchedulerType type() const override { return SchedulerType::Reduction; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

// Why the reduction scheduler cannot take this (unscheduled) fusion; empty if
// it can.
std::string reductionRejectReason(const Fusion& fusion);
ReductionParams reductionHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
void scheduleReduction(Fusion& fusion, const ReductionParams& params);

}  // namespace smelt
