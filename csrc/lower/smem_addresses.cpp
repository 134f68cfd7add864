// Pass smem_addresses (the plan_shared_memory pass): plans shared memory with
// csrc/lower/alloc_reuse/ — liveness, aliasing, promoteReuse barriers,
// conflicts under LowerOptions::smem_hazards, addresses by
// LowerOptions::smem_allocator, verification against
// LowerOptions::max_shared_memory_bytes — and stores the plan in
// kir::Kernel::smem_plan. Guarantees and errors: see alloc_reuse/kernel_plan.h.
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/passes.h"

namespace smelt {

void assignSharedAddresses(LoweringContext& ctx) { alloc_reuse::planKernelSharedMemory(ctx); }

}  // namespace smelt
