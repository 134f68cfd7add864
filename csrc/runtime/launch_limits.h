// The limits a CUDA launch must respect (block and grid dimensions, threads,
// registers and shared memory per block), checked by FusionExecutor before
// every launch and every simulated run, so a kernel the GPU would refuse
// (CUDA_ERROR_INVALID_VALUE, ..._OUT_OF_RESOURCES) is a smelt::Error naming
// the limit instead — on machines without a GPU too.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/device_limits.h"

namespace smelt {

struct LaunchResources {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t shared_memory_bytes = 0;
  int64_t registers_per_thread = 0;  // ptxas's count (0: unknown)
};

// Throws smelt::Error naming `kernel`, the launch and the exceeded limit of
// `limits` (DeviceLimits::forArch of the kernel's architecture).
void checkLaunchLimits(const std::string& kernel, const LaunchResources& launch, const DeviceLimits& limits);

}  // namespace smelt
