// The scatter scheduler: a fusion computing one scatter (ScatterOp, ir.h)
// and, inside its loops, element-wise producers of its index and src. The
// kernel loops over the index's shape: the scatter's iteration axes merged
// into one, split into [BIDx, TIDx]; the producers are inlined into that
// loop. The output's other elements are the copy of self the runtime makes
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
  int64_t block_x = 128;  // threads per block over the merged index positions

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
