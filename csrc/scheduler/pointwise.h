// The pointwise scheduler: fusions without reductions. The reference is the
// output with the most iteration axes. Its dimensions are grouped into runs
// that every tensor sees alike (a broadcast in one tensor next to a real axis
// in another ends a run, since merging them would be a different loop per
// tensor); each run is merged into one axis. The innermost run is split into
// [BIDx, TIDx, vector], the next one into [BIDy, TIDy] (BIDy folded into a
// serial loop past gridDim.y's limit), the third is bound to BIDz, further
// ones stay serial loops outside (declined where a buffer would span them:
// scheduler_utils::serialLoopBufferReason).
// Inputs are read through register caches, vectorized where their layout and
// alignment allow; vectorized outputs are written from register caches.
// Non-divisible extents are predicated by lowering.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct PointwiseParams : HeuristicParams {
  // Elements per vectorized access (1: no vectorization). Must divide the
  // innermost run's extent.
  int64_t vector_width = 1;
  int64_t block_x = 128;  // threads along the innermost run
  int64_t block_y = 1;    // threads along the next run (when the innermost is short)
  // The next run has more than 65535 blocks' worth: BIDy takes 65535 and a
  // serial loop the rest.
  bool split_grid_y = false;
  // The innermost run fits one block (gridDim.x would be 1): the fourth run
  // from the inside takes blockIdx.x instead of a serial loop in every thread
  // (runs the IR cannot merge, e.g. an index over [H, W] beside [N, C]).
  bool outer_run_on_grid_x = false;
  // Positions in fusion->inputs() / outputs() of the tensors accessed
  // vector_width elements at a time (each must pass canVectorize).
  std::vector<int64_t> vectorized_inputs;
  std::vector<int64_t> vectorized_outputs;

  SchedulerType type() const override { return SchedulerType::Pointwise; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

// Why the pointwise scheduler cannot take this (unscheduled) fusion; empty if
// it can. With `runtime`, also for the sizes of that launch.
std::string pointwiseRejectReason(const Fusion& fusion, const RuntimeInfo* runtime = nullptr);
PointwiseParams pointwiseHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
// Schedules the unscheduled `fusion`; throws smelt::Error if it is rejected
// or the parameters do not fit it.
void schedulePointwise(Fusion& fusion, const PointwiseParams& params);

}  // namespace smelt
