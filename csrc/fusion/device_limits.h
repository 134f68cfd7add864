// The resources of each GPU architecture smelt targets, in one table keyed
// by compute capability: what the schedulers choose tiles against, what the
// shared-memory planner and verifier check totals against, and what every
// launch (real or simulated) is checked against. Nothing else writes these
// figures down; override a copy's fields to model a smaller target.
#pragma once

#include <cstdint>
#include <vector>

namespace smelt {

// The widest global, shared or local access one thread makes (LDG.128), on
// every architecture smelt targets.
constexpr int64_t kMaxAccessBytes = 16;

struct DeviceLimits {
  int arch = 0;  // compute capability, major * 10 + minor
  // Shared memory: the most one block may use (with the opt-in above 48 KiB),
  // an SM's total, and the share the driver reserves for each resident block.
  int64_t max_shared_memory_per_block = 0;
  int64_t shared_memory_per_sm = 0;
  int64_t reserved_shared_memory_per_block = 0;
  int64_t max_threads_per_block = 0;
  int64_t max_threads_per_sm = 0;
  int64_t max_blocks_per_sm = 0;
  // Streaming multiprocessors of the architecture's data-center part (the
  // grid a kernel must reach to use them all).
  int64_t sm_count = 0;
  int64_t max_block[3] = {0, 0, 0};  // blockDim.x/y/z
  int64_t max_grid[3] = {0, 0, 0};   // gridDim.x/y/z
  // Registers: per thread (ptxas's cap), the file one block may use, and the
  // per-warp allocation granularity.
  int64_t max_registers_per_thread = 0;
  int64_t registers_per_block = 0;
  int64_t register_allocation_unit = 0;

  // The entry for `arch`. An architecture the table lacks gets the nearest
  // lower entry (sm_87 and sm_89 get sm_86's, anything from 9.0 on sm_90's),
  // with `arch` set to what was asked; below the lowest entry (sm_75) is a
  // smelt::Error naming the architecture.
  static DeviceLimits forArch(int arch);
  static DeviceLimits sm80() { return forArch(80); }  // A100
  static DeviceLimits sm90() { return forArch(90); }  // H100/H200
  // The table itself, lowest architecture first.
  static const std::vector<DeviceLimits>& table();
};

}  // namespace smelt
