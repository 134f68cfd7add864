// The persistent (normalization) scheduler: reductions whose results are
// broadcast back and combined with the reduced tensor again (softmax, layer
// norm, RMS norm), all in one kernel. Each block owns `block_y` rows (TIDy);
// a row is split into [persistent_batch (serial), TIDx, vector], so each
// thread keeps persistent_batch * vector_width elements of every tensor that
// is needed both before and after a reduction (the persistent buffers) in
// registers, or, for rows too long for registers, in shared memory, where
// the planner lets buffers whose lifetimes end share bytes (the buffer read
// for the last time while another is first written by the same thread needs
// no barrier). Reductions are block reductions over TIDx; the broadcast back
// is free (every thread holds the block reduction's result).
//
// Reduced dimensions must form one mergeable run. Rows longer than fit the
// shared-memory budget are rejected; selection then splits the fusion into
// reduction and pointwise kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct PersistentParams : HeuristicParams {
  int64_t vector_width = 1;      // elements per vectorized access of listed tensors
  int64_t persistent_batch = 1;  // serial chunks of vector_width elements per thread
  int64_t block_y = 1;           // rows per block (TIDy)
  bool shared_memory = false;    // persistent buffers in shared memory instead of registers
  std::vector<int64_t> vectorized_inputs;   // positions in fusion->inputs()
  std::vector<int64_t> vectorized_outputs;  // positions in fusion->outputs()

  SchedulerType type() const override { return SchedulerType::Persistent; }
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override;
};

// Why the persistent scheduler cannot take this fusion; empty if it can.
// Without `runtime` only the structure is checked; with it, also that a row
// fits registers or shared memory.
std::string persistentRejectReason(const Fusion& fusion, const RuntimeInfo* runtime = nullptr);
PersistentParams persistentHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
void schedulePersistent(Fusion& fusion, const PersistentParams& params);

// Tensors of a scheduled fusion that keep their part of a row across the
// loop nests of the reductions (their allocation spans the persistent batch
// axis).
std::vector<TensorView*> persistentBuffers(const Fusion& fusion);

}  // namespace smelt
