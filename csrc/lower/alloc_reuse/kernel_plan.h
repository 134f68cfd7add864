// The shared-memory plan of one kernel (docs/planning.md), as the plan_shared_memory
// pass (smem_addresses.cpp) builds it and stores it in kir::Kernel::smem_plan.
// It decides before it mutates (the shape of Triton's Allocation analysis
// before its Membar transformation):
//   decide: liveness, computed once (liveness.h) -> alias candidates
//     (aliasing.h) -> promoteReuse barriers (barrier_planning.h) -> for each
//     alias set to compare: conflicts (hazards.h) and addresses, all on
//     liveness views (Liveness::withAliases / withBarrierBefore);
//   apply: barriers, aliases and addresses written into the kernel at once
//     (apply_plan.h);
//   check: reports, bank conflicts, and verification on the final kernel.
//
// Guarantees of planKernelSharedMemory():
// - every Shared buffer gets an aligned address; an alias gets its base's
//   address and alias_of; Local aliases get alias_of;
// - addresses: SmemAllocator::Best plans the fusion tensors' buffers with
//   planAddresses() over the hazard conflicts, with the stack allocator's plan
//   of the same buffers as the baseline to beat; SmemAllocator::Stack uses
//   planStackAddresses() as nvFuser would, on kernel-scope intervals
//   (liveness.h), which keeps it valid under the conflicts. Block-op workspaces (which
//   nvFuser keeps outside its allocator) are then placed at the lowest
//   aligned offset free of every conflicting buffer; with symbolic sizes they
//   join the tensors in one plan instead;
// - verification always runs on the final IR (verifyKernelSharedMemory): a
//   smelt::Error lists the buffers when two conflicting ones overlap, an
//   address is misaligned, or the total exceeds the device limit.
// - SMELT_DUMP=smem_plan prints the text report.
#pragma once

#include <string>
#include <vector>

#include "lower/alloc_reuse/aliasing.h"
#include "lower/alloc_reuse/barrier_planning.h"
#include "lower/alloc_reuse/buffer_set.h"
#include "lower/bank_conflicts.h"
#include "lower/lower_context.h"

namespace smelt::alloc_reuse {

struct SharedMemoryPlan {
  SmemHazards hazards = SmemHazards::Precise;
  SmemAllocator allocator = SmemAllocator::Best;
  // Planned buffers (non-alias Shared buffers that are accessed), Allocate
  // order; `buffers[i]` is the abstract form of `planned[i]` (outer interval).
  std::vector<const kir::Buffer*> planned;
  std::vector<Buffer> buffers;
  ConflictGraph conflicts;
  // Addresses of `planned`, total, lower bound, and the no-reuse total of
  // every accessed Shared buffer (aliases included).
  AddressPlan plan;
  // max(address + bytes) over the fusion tensors' buffers (no workspaces): the
  // figure nvFuser's allocator reports.
  IntExpr tensor_bytes;
  std::vector<AliasDecision> aliases;
  std::vector<ReuseBarrier> reuse_barriers;
  std::string report_text;
  std::string report_json;
  std::string report_svg;  // empty when sizes are symbolic
  // Bank conflicts of every shared access at the planned addresses
  // (bank_conflicts.h); SMELT_DUMP=smem_plan prints them after the report.
  BankConflictReport bank_conflicts;
};

void planKernelSharedMemory(LoweringContext& ctx);

// The kernel's aliases once the plan sets `decisions`: they replace those of
// the fusion tensors' Shared and Local buffers; other buffers keep theirs.
AliasMap aliasMapWith(const kir::Kernel& kernel, const std::vector<AliasDecision>& decisions);

// Recomputes liveness and conflicts on `kernel` as it stands and checks the
// Shared addresses written into its buffers (smelt::Error when invalid).
void verifyKernelSharedMemory(const kir::Kernel& kernel, SmemHazards hazards,
                              int64_t device_limit_bytes);

}  // namespace smelt::alloc_reuse
