// The scan scheduler: a fusion computing one scan (ScanOp, ir.h) with
// element-wise producers and consumers. Each thread scans one row: the scan
// axis is a serial loop, innermost, run in order, its running value in a
// register (kir::ScanInit before the loop, a combine and store per
// iteration); of the other axes the innermost is split into [BIDx, TIDx],
// the next bound to BIDy (a serial loop taking what passes gridDim.y's
// limit), outer ones serial loops. Axes are not merged (a producer's
// broadcast axes would not iterate in a merged loop). Producers and
// consumers are inlined into the scan loop, so the work is linear in the
// extent. A 1-D scan runs on one thread.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct ScanParams : HeuristicParams {
  int64_t block_x = 128;  // threads per block along the innermost other axis
  // The next axis has more than gridDim.y's 65535 positions: BIDy takes
  // 65535 and a serial loop the rest.
  bool split_grid_y = false;

  SchedulerType type() const override { return SchedulerType::Scan; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

// Why the scan scheduler cannot take this (unscheduled) fusion; empty if it
// can.
std::string scanRejectReason(const Fusion& fusion);
ScanParams scanHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
void scheduleScan(Fusion& fusion, const ScanParams& params);

}  // namespace smelt
