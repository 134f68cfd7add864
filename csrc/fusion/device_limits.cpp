#include "fusion/device_limits.h"

#include "fusion/error.h"

namespace smelt {

namespace {

// What every architecture since sm_70 shares; each entry changes the rest.
DeviceLimits common(int arch) {
  DeviceLimits d;
  d.arch = arch;
  d.reserved_shared_memory_per_block = 1024;
  d.max_threads_per_block = 1024;
  d.max_block[0] = 1024;
  d.max_block[1] = 1024;
  d.max_block[2] = 64;
  d.max_grid[0] = 2147483647;
  d.max_grid[1] = 65535;
  d.max_grid[2] = 65535;
  d.max_registers_per_thread = 255;
  d.registers_per_block = 65536;
  d.register_allocation_unit = 256;
  return d;
}

DeviceLimits entry(int arch, int64_t smem_per_block, int64_t smem_per_sm, int64_t threads_per_sm,
                   int64_t blocks_per_sm, int64_t sm_count) {
  DeviceLimits d = common(arch);
  d.sm_count = sm_count;
  d.max_shared_memory_per_block = smem_per_block;
  d.shared_memory_per_sm = smem_per_sm;
  d.max_threads_per_sm = threads_per_sm;
  d.max_blocks_per_sm = blocks_per_sm;
  return d;
}

}  // namespace

const std::vector<DeviceLimits>& DeviceLimits::table() {
  static const std::vector<DeviceLimits> entries = {
      entry(75, 65536, 65536, 1024, 16, 40),     // T4: 64 KiB
      entry(80, 166912, 167936, 2048, 32, 108),  // A100: 163 / 164 KiB
      entry(86, 101376, 102400, 1536, 16, 84),   // RTX 30xx, sm_87/89 too: 99 / 100 KiB
      entry(90, 232448, 233472, 2048, 32, 132),  // H100/H200 SXM: 227 / 228 KiB
  };
  return entries;
}

DeviceLimits DeviceLimits::forArch(int arch) {
  const std::vector<DeviceLimits>& entries = table();
  SMELT_CHECK(arch >= entries.front().arch, "no device limits known for sm_", arch, "; the lowest is sm_",
              entries.front().arch);
  auto it = entries.rbegin();
  while (it->arch > arch) ++it;
  DeviceLimits d = *it;
  d.arch = arch;
  return d;
}

}  // namespace smelt
