// Transformation: writes a decided shared-memory plan into the kernel, once.
// Everything before it (kernel_plan.cpp) reads the kernel and values derived
// from one liveness computation; this is the only step that changes the kernel.
//
// Guarantees of applySharedMemoryPlan():
// - each planned barrier is inserted right before its statement, in the
//   order given (two before one statement keep that order);
// - every buffer's alias_of is the alias map's entry (nullptr when absent);
// - `planned[i]` gets `addresses[i]`; then every Shared alias gets its base's
//   address, and any other Shared buffer still without one gets 0 (never
//   accessed: it touches no byte).
#pragma once

#include <vector>

#include "lower/alloc_reuse/barrier_planning.h"
#include "lower/alloc_reuse/liveness.h"

namespace smelt::alloc_reuse {

void applySharedMemoryPlan(kir::Kernel& kernel, std::vector<PlannedBarrier> barriers,
                           const AliasMap& aliases, const std::vector<const kir::Buffer*>& planned,
                           const std::vector<IntExpr>& addresses);

}  // namespace smelt::alloc_reuse
