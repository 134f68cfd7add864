// The limits a CUDA launch must respect (block and grid dimensions, threads,
// registers and shared memory per block), checked by FusionExecutor before
// every launch and every simulated run, so a kernel the GPU would refuse
// (CUDA_ERROR_INVALID_VALUE, ..._OUT_OF_RESOURCES) is a smelt::Error naming
// the limit instead — on machines without a GPU too.
#pragma once

#include <cstdint>
#include <string>

namespace smelt {

// What a launch may use. (The schedulers choose tiles against
// scheduler/matmul's DeviceLimits, per-SM resources included; this is the
// per-launch check, so it has its own name.)
struct LaunchLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_block[3] = {1024, 1024, 64};
  int64_t max_grid[3] = {2147483647, 65535, 65535};
  // Registers are allocated per warp in units of 256 from 64 Ki per block.
  int64_t registers_per_block = 65536;
  int64_t register_allocation_unit = 256;
  int64_t shared_memory_per_block = 232448;
};

// The limits of compute capability `arch` (major*10+minor): shared memory
// from alloc_reuse::SharedMemoryLimits where it knows the architecture, else
// sm_90's; the rest are the same on every architecture since sm_70.
LaunchLimits launchLimits(int arch);

struct LaunchResources {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t shared_memory_bytes = 0;
  int64_t registers_per_thread = 0;  // ptxas's count (0: unknown)
};

// Throws smelt::Error naming `kernel`, the launch and the exceeded limit.
void checkLaunchLimits(const std::string& kernel, const LaunchResources& launch, const LaunchLimits& limits);

}  // namespace smelt
