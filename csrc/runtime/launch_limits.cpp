#include "runtime/launch_limits.h"

#include "fusion/error.h"
#include "fusion/symbols.h"

namespace smelt {

namespace {

const char* const kAxis[3] = {"x", "y", "z"};

int64_t roundUp(int64_t value, int64_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

void checkLaunchLimits(const std::string& kernel, const LaunchResources& launch, const DeviceLimits& limits) {
  const std::string what = errorMessage("kernel ", kernel, " launched with grid (", launch.grid[0], ", ",
                                        launch.grid[1], ", ", launch.grid[2], ") and block (", launch.block[0],
                                        ", ", launch.block[1], ", ", launch.block[2], ")");
  int64_t threads = 1;
  for (int d = 0; d < 3; ++d) {
    SMELT_CHECK(launch.block[d] <= limits.max_block[d], what, ": ", blockDimSymbol(d), " = ", launch.block[d],
                " exceeds the limit of ", limits.max_block[d], "; split the axis bound to TID", kAxis[d]);
    SMELT_CHECK(launch.grid[d] <= limits.max_grid[d], what, ": ", gridDimSymbol(d), " = ", launch.grid[d],
                " exceeds the limit of ", limits.max_grid[d], "; split the axis bound to BID", kAxis[d],
                d == 0 ? "" : " or bind it to BIDx");
    threads *= launch.block[d];
  }
  SMELT_CHECK(threads <= limits.max_threads_per_block, what, ": ", threads,
              " threads per block exceed the limit of ", limits.max_threads_per_block);
  SMELT_CHECK(launch.shared_memory_bytes <= limits.max_shared_memory_per_block, what, ": it needs ",
              launch.shared_memory_bytes, " bytes of shared memory per block, more than the device's ",
              limits.max_shared_memory_per_block, " bytes");
  const int64_t warps = (threads + 31) / 32;
  const int64_t registers =
      warps * roundUp(launch.registers_per_thread * 32, limits.register_allocation_unit);
  SMELT_CHECK(registers <= limits.registers_per_block, what, ": ", launch.registers_per_thread,
              " registers per thread (ptxas) for ", threads, " threads need ", registers,
              " registers per block, more than the ", limits.registers_per_block,
              " available; launch fewer threads per block");
}

}  // namespace smelt
