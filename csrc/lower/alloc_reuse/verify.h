// Independent check of a shared-memory plan (docs/planning.md §7), run after every
// planner, and the per-block shared-memory limits of the devices we target.
//
// Guarantees: verifyPlan() returns only if
// - no two conflicting buffers overlap in bytes: numerically when both
//   addresses and sizes are constant; otherwise one must provably lie above
//   the other through the plan's stacked_on links (each link is re-derived as
//   alignUp(below.address + below.bytes, alignment) and must match), or sit
//   above a constant address no lower than the other's constant end;
// - every constant address is a multiple of its buffer's alignment (symbolic
//   addresses are aligned by their verified stacked_on link);
// - a constant total covers every buffer and fits `device_limit_bytes`.
// Otherwise it throws smelt::Error listing the offending buffers with sizes,
// addresses, lifetimes and the total.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::alloc_reuse {

void verifyPlan(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                const AddressPlan& plan, int64_t device_limit_bytes);

// Per-block shared-memory limits by compute capability (major * 10 + minor):
// DeviceLimits::forArch's max_shared_memory_per_block (fusion/device_limits.h)
// unless overridden here with setLimit.
class SharedMemoryLimits {
 public:
  void setLimit(int compute_capability, int64_t bytes);
  bool knows(int compute_capability) const;
  // Throws smelt::Error naming the architecture when it is unknown.
  int64_t limitBytes(int compute_capability) const;

 private:
  std::map<int, int64_t> overrides_;
};

}  // namespace smelt::alloc_reuse
