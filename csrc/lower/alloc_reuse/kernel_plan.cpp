#include "lower/alloc_reuse/kernel_plan.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/hazards.h"
#include "lower/alloc_reuse/liveness.h"
#include "lower/alloc_reuse/plan_report.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"
#include "lower/passes.h"

namespace smelt::alloc_reuse {

namespace {

std::vector<const kir::Buffer*> plannedBuffers(const Liveness& live) {
  std::vector<const kir::Buffer*> result;
  for (const BufferLiveness& b : live.buffers) {
    if (b.buffer->memory == MemoryType::Shared && b.buffer->alias_of == nullptr && b.outer.valid()) {
      result.push_back(b.buffer);
    }
  }
  return result;
}

std::vector<Buffer> abstractBuffers(const Liveness& live,
                                    const std::vector<const kir::Buffer*>& planned) {
  std::vector<Buffer> result;
  for (const kir::Buffer* kb : planned) {
    const BufferLiveness& b = live.of(kb);
    Buffer a;
    a.name = kb->name;
    a.dtype = toString(kb->dtype);
    a.bytes = kb->bytes();
    a.alignment = kb->alignment;
    a.first_write = b.outer.first;
    a.last_read = b.outer.last;
    a.creation_order = b.creation_order;
    result.push_back(std::move(a));
  }
  return result;
}

ConflictGraph induced(const ConflictGraph& graph, const std::vector<size_t>& subset) {
  ConflictGraph result(subset.size());
  for (size_t i = 0; i < subset.size(); ++i) {
    for (size_t j = i + 1; j < subset.size(); ++j) {
      if (graph.conflicts(subset[i], subset[j])) result.addConflict(i, j);
    }
  }
  return result;
}

// The lowest aligned constant offset where buffer i overlaps no placed
// buffer it conflicts with (all of them constant).
int64_t lowestFreeOffset(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                         const std::vector<bool>& placed, const std::vector<IntExpr>& addresses,
                         size_t i) {
  const int64_t bytes = *buffers[i].bytes.constant();
  std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end)
  for (size_t j : conflicts.neighbors(i)) {
    if (!placed[j]) continue;
    int64_t begin = *addresses[j].constant();
    taken.push_back({begin, begin + *buffers[j].bytes.constant()});
  }
  std::sort(taken.begin(), taken.end());
  int64_t offset = 0;
  for (const auto& [begin, end] : taken) {
    if (offset + bytes <= begin) break;
    offset = std::max(offset, alignUp(IntExpr(end), buffers[i].alignment).constant().value());
  }
  return offset;
}

AddressPlan assignAddresses(const std::vector<Buffer>& buffers,
                            const std::vector<const kir::Buffer*>& planned,
                            const ConflictGraph& conflicts, const Liveness& live,
                            SmemAllocator allocator) {
  bool symbolic = std::any_of(buffers.begin(), buffers.end(),
                              [](const Buffer& b) { return !b.bytes.isConstant(); });
  std::vector<size_t> main;  // planned by the allocator; the rest are workspaces
  for (size_t i = 0; i < planned.size(); ++i) {
    if (symbolic || planned[i]->tv != nullptr) main.push_back(i);
  }
  std::vector<Buffer> main_buffers;
  std::vector<Buffer> kernel_scope;  // as nvFuser's allocator sees them
  for (size_t i : main) {
    main_buffers.push_back(buffers[i]);
    Buffer b = buffers[i];
    const LiveInterval& span = live.of(planned[i]).kernel_scope;
    b.first_write = span.first;
    b.last_read = span.last;
    kernel_scope.push_back(b);
  }
  // Valid under `conflicts`: kernel-scope intervals contain the outer ones,
  // and the syncs it needs between them are a subset of ours.
  AddressPlan stack = planStackAddresses(kernel_scope, live.sync_positions, live.end_position);
  AddressPlan sub = stack;
  if (allocator == SmemAllocator::Best) {
    PlannerOptions options;
    options.baseline = &stack;
    sub = planAddresses(main_buffers, induced(conflicts, main), options);
  }

  AddressPlan plan;
  plan.addresses.assign(buffers.size(), IntExpr(0));
  plan.stacked_on.assign(buffers.size(), AddressPlan::kNotStacked);
  std::vector<bool> placed(buffers.size(), false);
  for (size_t k = 0; k < main.size(); ++k) {
    plan.addresses[main[k]] = sub.addresses[k];
    if (sub.stacked_on[k] != AddressPlan::kNotStacked) {
      plan.stacked_on[main[k]] = static_cast<int>(main[static_cast<size_t>(sub.stacked_on[k])]);
    }
    placed[main[k]] = true;
  }
  bool workspaces = false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (placed[i]) continue;
    plan.addresses[i] = lowestFreeOffset(buffers, conflicts, placed, plan.addresses, i);
    placed[i] = true;
    workspaces = true;
  }
  plan.strategy = sub.strategy + (workspaces ? " + workspaces at the lowest free offset" : "");
  plan.attempts = sub.attempts;
  plan.notes = sub.notes;
  plan.symbolic = sub.symbolic;
  plan.total_bytes = planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  plan.lower_bound_bytes = lowerBoundBytes(buffers, conflicts);
  auto total = plan.total_bytes.constant();
  plan.lower_bound_reached = total && *total <= plan.lower_bound_bytes;
  plan.optimal = plan.lower_bound_reached || (sub.optimal && !workspaces);
  return plan;
}

IntExpr tensorBytes(const std::vector<Buffer>& buffers,
                    const std::vector<const kir::Buffer*>& planned, const AddressPlan& plan) {
  std::vector<Buffer> sub;
  std::vector<IntExpr> addresses;
  std::vector<int> stacked_on;
  std::vector<int> index(planned.size(), AddressPlan::kNotStacked);
  for (size_t i = 0; i < planned.size(); ++i) {
    if (planned[i]->tv == nullptr) continue;
    index[i] = static_cast<int>(sub.size());
    sub.push_back(buffers[i]);
    addresses.push_back(plan.addresses[i]);
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    if (planned[i]->tv == nullptr) continue;
    int below = plan.stacked_on[i];
    stacked_on.push_back(below == AddressPlan::kNotStacked ? below
                                                           : index[static_cast<size_t>(below)]);
  }
  return planTotalBytes(sub, addresses, stacked_on);
}

kir::Buffer* mutableBuffer(kir::Kernel& kernel, const kir::Buffer* buffer) {
  for (auto& b : kernel.buffers) {
    if (b.get() == buffer) return b.get();
  }
  SMELT_INTERNAL_CHECK(false, "shared-memory plan: unknown buffer ", buffer->name);
  return nullptr;
}

// The report lists planned buffers, then Shared aliases at their base's
// bytes; the no-reuse total counts every one of them.
void writeReports(SharedMemoryPlan& result, const Liveness& live) {
  std::vector<Buffer> buffers = result.buffers;
  AddressPlan plan = result.plan;
  ReportContext context;
  context.aliased_to.assign(buffers.size(), "");
  for (const AliasDecision& d : result.aliases) {
    if (d.alias->memory != MemoryType::Shared) continue;
    auto base = std::find(result.planned.begin(), result.planned.end(), d.base);
    if (base == result.planned.end()) continue;
    size_t b = static_cast<size_t>(base - result.planned.begin());
    Buffer alias = buffers[b];
    const BufferLiveness& own = live.of(d.alias);
    alias.name = d.alias->name;
    alias.first_write = own.outer.first;
    alias.last_read = own.outer.last;
    alias.creation_order = own.creation_order;
    buffers.push_back(alias);
    plan.addresses.push_back(plan.addresses[b]);
    plan.stacked_on.push_back(AddressPlan::kNotStacked);
    context.aliased_to.push_back(d.base->name + " (" + d.rule + ")");
  }
  result.plan.no_reuse_bytes = noReuseBytes(buffers);
  plan.no_reuse_bytes = result.plan.no_reuse_bytes;
  for (int64_t p : live.sync_positions) {
    auto* sync = dynamic_cast<const kir::BlockSync*>(live.stmt_at[p]);
    if (sync != nullptr && sync->inserted_for_reuse) {
      context.inserted_barriers.push_back({p, sync->reason});
    } else {
      context.barrier_positions.push_back(p);
    }
  }
  result.report_text = planReportText(buffers, plan, context);
  result.report_json = planReportJson(buffers, plan, context);
  if (!plan.symbolic) result.report_svg = planReportSvg(buffers, plan, context);
}

}  // namespace

void planKernelSharedMemory(LoweringContext& ctx) {
  kir::Kernel& kernel = ctx.kernel;
  auto result = std::make_shared<SharedMemoryPlan>();
  result->hazards = ctx.options.smem_hazards;
  result->allocator = ctx.options.smem_allocator;

  result->aliases = findAliases(kernel, computeLiveness(kernel), result->hazards);
  for (const AliasDecision& d : result->aliases) {
    mutableBuffer(kernel, d.alias)->alias_of = d.base;
  }
  result->reuse_barriers = insertReuseBarriers(kernel, result->hazards, result->allocator);

  Liveness live = computeLiveness(kernel);
  result->planned = plannedBuffers(live);
  result->buffers = abstractBuffers(live, result->planned);
  result->conflicts = sharedConflicts(live, kernel, result->planned, result->hazards);
  result->plan =
      assignAddresses(result->buffers, result->planned, result->conflicts, live, result->allocator);
  result->tensor_bytes = tensorBytes(result->buffers, result->planned, result->plan);

  for (size_t i = 0; i < result->planned.size(); ++i) {
    mutableBuffer(kernel, result->planned[i])->address = result->plan.addresses[i];
  }
  for (const auto& b : kernel.buffers) {
    if (b->memory != MemoryType::Shared) continue;
    if (b->alias_of != nullptr) {
      b->address = b->alias_of->address;
    } else if (!b->address) {
      b->address = IntExpr(0);  // never accessed: touches no byte
    }
  }
  writeReports(*result, live);
  result->bank_conflicts = analyzeBankConflicts(kernel);
  kernel.smem_plan = result;
  verifyKernelSharedMemory(kernel, result->hazards, ctx.options.max_shared_memory_bytes);
  if (dumpEnabled("smem_plan")) {
    std::cout << result->report_text << result->bank_conflicts.toString();
  }
}

void verifyKernelSharedMemory(const kir::Kernel& kernel, SmemHazards hazards,
                              int64_t device_limit_bytes) {
  Liveness live = computeLiveness(kernel);
  std::vector<const kir::Buffer*> planned = plannedBuffers(live);
  std::vector<Buffer> buffers = abstractBuffers(live, planned);
  AddressPlan plan;
  for (const kir::Buffer* b : planned) {
    SMELT_CHECK(b->address.has_value(), "shared-memory plan: buffer ", b->name,
                " has no address");
    plan.addresses.push_back(*b->address);
  }
  plan.stacked_on.assign(planned.size(), AddressPlan::kNotStacked);
  if (kernel.smem_plan != nullptr && kernel.smem_plan->planned == planned) {
    plan.stacked_on = kernel.smem_plan->plan.stacked_on;
  }
  plan.total_bytes = planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  verifyPlan(buffers, sharedConflicts(live, kernel, planned, hazards), plan, device_limit_bytes);
}

}  // namespace smelt::alloc_reuse
