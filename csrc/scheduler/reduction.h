// The reduction scheduler: reductions over the same dimensions (any number
// of them reduced, with element-wise ops before and after; several are
// siblings sharing one loop nest, such as layer-norm backward's dw and db)
// whose results are not broadcast back. The reference is the first
// reduction tensor (a register tensor: a reduced output is cached first, so
// one thread writes each result); the others follow its schedule.
//
// Inner (row) reductions, the reduced dimensions innermost in memory: rows
// are spread over blocks (BIDx), `block_y` rows per block on TIDy when rows
// are short; the reduced extent is split into [serial, TIDx, vector] so each
// thread accumulates vector-wide loads from a register cache of the input,
// then the block reduces over TIDx through shared memory.
// Outer (column) reductions, the reduced dimensions outside the iterated
// ones: iterated elements go to [BIDx, TIDx, vector] (coalesced along the
// row), the reduced extent to [serial, TIDy], reduced over TIDy when
// block_y > 1. Where the inputs allow, each thread accumulates a vector of
// columns from vector-wide (16-byte) loads: the vector axis iterates inside
// the serial reduction loop, and the block reductions run in a loop of their
// own after it. A block then spans kOuterVectorColumns columns (Triton's
// column sum takes 64 too) with the rest of its threads on TIDy.
//
// Mergeable runs of dimensions are merged as in the pointwise scheduler;
// outer runs of reduced dimensions become serial loops, the iterated run
// before the innermost one goes to BIDy.
//
// Grid split: a kernel reduces each row (column) within one block, so a few
// very long rows, or very long columns of a narrow tensor, leave most SMs
// idle. For such fusions the heuristics set `grid_split`, and the segmenter
// (segmenter.h) runs the fusion as two kernels instead. Inner: the partial
// kernel reduces every row as P chunks of N / P elements (its inputs
// regrouped from [.., R, N] to [.., R * P, N / P]); the final kernel reduces
// the [.., R, P] partial results. Outer: the partial kernel reduces every
// P-th row into P partial rows (inputs regrouped from [N, C, ..] to
// [N / P, P * C, ..]; row j * P + p goes to partial row p); the final kernel
// reduces the [P, C, ..] partial rows. Both regroupings are reshapes of a
// contiguous tensor (no copy). P is the largest divisor of N that is at most
// grid_split (gridSplitChunks, segmenter.h), chosen per launch; a prime N gets P = 1
// (correct, not faster). scheduleReduction itself never splits.
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
  // Elements per vectorized load of the inputs listed in vectorized_inputs
  // (1: none); must divide the innermost reduced run (inner reductions) or
  // the innermost iterated run (outer reductions).
  int64_t vector_width = 1;
  // Inner: threads reducing one row. Outer: threads across the row.
  int64_t block_x = 128;
  // Inner: rows per block. Outer: threads splitting the reduced extent.
  int64_t block_y = 1;
  std::vector<int64_t> vectorized_inputs;  // positions in fusion->inputs()
  // Split each row (column) into at most this many chunks reduced by
  // separate blocks, in two kernels (see above); 1: no split. Printed only
  // when > 1.
  int64_t grid_split = 1;

  SchedulerType type() const override { return SchedulerType::Reduction; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

// Why the reduction scheduler cannot take this (unscheduled) fusion; empty if
// it can.
std::string reductionRejectReason(const Fusion& fusion);
// Why the fusion's reduction cannot be split across blocks by segmentation;
// empty if it can: one reduction of the innermost or of the outermost
// dimension alone, rank >= 2, every tensor input read before the reduction
// of the reduction's full shape with symbolic extents in the two regrouped
// dimensions (the kernels run on regrouped tensors), the reduction's input
// and output of one dtype (the final kernel reads the partial results as
// its input).
std::string gridSplitRejectReason(const Fusion& fusion);
// The reduction scheduler's grid split (registry.h): grid_split of its
// heuristics after `override_params`; throws smelt::Error when that asks to
// split a fusion gridSplitRejectReason refuses.
int64_t reductionGridSplitChunks(const Fusion& fusion, const RuntimeInfo& runtime,
                                 const ParamsOverride& override_params);
// When the heuristics split: the kernel would have fewer blocks than SMs
// (132 on an H200) and reduces kGridSplitMinRow elements or more per row
// (column); grid_split aims at two blocks per SM with chunks of at least
// kGridSplitMinChunk elements.
constexpr int64_t kGridSplitMinRow = 32768;
// Columns per block of a vectorized outer reduction.
constexpr int64_t kOuterVectorColumns = 64;
constexpr int64_t kGridSplitMinChunk = 4096;

ReductionParams reductionHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
void scheduleReduction(Fusion& fusion, const ReductionParams& params);

}  // namespace smelt
