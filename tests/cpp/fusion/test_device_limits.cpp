// DeviceLimits: the one table of per-architecture resources, its lookup
// (nearest lower entry, an error below the lowest) and the published figures.
#include <gtest/gtest.h>

#include "common/expect_error.h"
#include "fusion/device_limits.h"

namespace smelt {
namespace {

TEST(DeviceLimits, TableHoldsThePublishedFigures) {
  const DeviceLimits sm90 = DeviceLimits::sm90();
  EXPECT_EQ(sm90.arch, 90);
  EXPECT_EQ(sm90.max_shared_memory_per_block, 232448);  // 227 KiB
  EXPECT_EQ(sm90.shared_memory_per_sm, 233472);         // 228 KiB
  EXPECT_EQ(sm90.max_threads_per_sm, 2048);
  EXPECT_EQ(sm90.max_blocks_per_sm, 32);
  const DeviceLimits sm80 = DeviceLimits::sm80();
  EXPECT_EQ(sm80.arch, 80);
  EXPECT_EQ(sm80.max_shared_memory_per_block, 166912);  // 163 KiB
  EXPECT_EQ(sm80.shared_memory_per_sm, 167936);         // 164 KiB
  const DeviceLimits sm86 = DeviceLimits::forArch(86);
  EXPECT_EQ(sm86.max_shared_memory_per_block, 101376);  // 99 KiB
  EXPECT_EQ(sm86.shared_memory_per_sm, 102400);
  EXPECT_EQ(sm86.max_threads_per_sm, 1536);
  EXPECT_EQ(sm86.max_blocks_per_sm, 16);
  const DeviceLimits sm75 = DeviceLimits::forArch(75);
  EXPECT_EQ(sm75.max_shared_memory_per_block, 65536);
  EXPECT_EQ(sm75.max_threads_per_sm, 1024);
  // What every entry shares.
  for (const DeviceLimits& d : DeviceLimits::table()) {
    EXPECT_EQ(d.max_threads_per_block, 1024) << "sm_" << d.arch;
    EXPECT_EQ(d.max_block[0], 1024);
    EXPECT_EQ(d.max_block[2], 64);
    EXPECT_EQ(d.max_grid[0], 2147483647);
    EXPECT_EQ(d.max_grid[1], 65535);
    EXPECT_EQ(d.max_registers_per_thread, 255);
    EXPECT_EQ(d.registers_per_block, 65536);
    EXPECT_EQ(d.register_allocation_unit, 256);
    EXPECT_EQ(d.reserved_shared_memory_per_block, 1024);
    EXPECT_LE(d.max_shared_memory_per_block, d.shared_memory_per_sm);
  }
}

TEST(DeviceLimits, UnlistedArchitecturesTakeTheNearestLowerEntry) {
  std::vector<int> archs;
  for (const DeviceLimits& d : DeviceLimits::table()) archs.push_back(d.arch);
  EXPECT_EQ(archs, (std::vector<int>{75, 80, 86, 90}));
  for (int arch : {87, 89}) {
    const DeviceLimits d = DeviceLimits::forArch(arch);
    EXPECT_EQ(d.arch, arch);
    EXPECT_EQ(d.max_shared_memory_per_block, 101376) << "sm_" << arch;
  }
  const DeviceLimits sm100 = DeviceLimits::forArch(100);
  EXPECT_EQ(sm100.arch, 100);
  EXPECT_EQ(sm100.max_shared_memory_per_block, 232448);
  EXPECT_EQ(DeviceLimits::forArch(79).max_shared_memory_per_block, 65536);
}

TEST(DeviceLimits, BelowTheLowestEntryIsAnErrorNamingTheArchitecture) {
  EXPECT_SMELT_ERROR(DeviceLimits::forArch(70), "no device limits known for sm_70", "the lowest is sm_75");
  EXPECT_SMELT_ERROR(DeviceLimits::forArch(0), "sm_0");
}

}  // namespace
}  // namespace smelt
