// The scatter scheduler: a fusion computing one scatter (ScatterOp, ir.h)
// and, inside its loops, element-wise producers of its index and src. The
// kernel loops over the index's shape: the innermost iteration axis split
// into [BIDx, TIDx], the next one on BIDy (a serial loop taking what passes
// gridDim.y's limit), outer ones serial loops. Axes are not merged: an
// expanded index (index_add, embedding backward) has broadcast axes, which
// a merged loop would not iterate. The producers are inlined into the
// loops. The output's other elements are the copy of self the runtime makes
// before the launch, so self must be an input of the fusion, and no
// consumer of the output may run in the scatter's loops (its writes land at
// data-dependent positions): the segmenter puts consumers in later kernels.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct ScatterParams : HeuristicParams {
  int64_t block_x = 128;  // threads per block along the innermost axis
  // The next axis has more than gridDim.y's 65535 positions: BIDy takes
  // 65535 and a serial loop the rest.
  bool split_grid_y = false;

  SchedulerType type() const override { return SchedulerType::Scatter; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

// Why the scatter scheduler cannot take this (unscheduled) fusion; empty if
// it can.
std::string scatterRejectReason(const Fusion& fusion);
ScatterParams scatterHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
void scheduleScatter(Fusion& fusion, const ScatterParams& params);

}  // namespace smelt
