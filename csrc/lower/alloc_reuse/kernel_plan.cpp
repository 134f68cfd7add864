#include "lower/alloc_reuse/kernel_plan.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/apply_plan.h"
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
    if (b.buffer->memory == MemoryType::Shared && live.aliasOf(b.buffer) == nullptr &&
        b.outer.valid()) {
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

// Addresses of `planned` under `conflicts`. Best: the default planner with
// the stack allocator's plan of the same buffers as a baseline, and in
// Precise mode also the plan under Conservative conflicts on the same kernel
// (valid here: Precise only removes conflicts), so Precise never needs more
// bytes than Conservative, nor Conservative more than Stack. `optimal` is
// left to the caller, which knows the true lower bound.
AddressPlan assignAddresses(const std::vector<Buffer>& buffers,
                            const std::vector<const kir::Buffer*>& planned,
                            const ConflictGraph& conflicts, const Liveness& live,
                            const kir::Kernel& kernel, SmemHazards hazards,
                            SmemAllocator allocator, bool& proved) {
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
    ConflictGraph main_conflicts = induced(conflicts, main);
    PlannerOptions options;
    options.baseline = &stack;
    AddressPlan conservative;
    if (hazards == SmemHazards::Precise && !symbolic) {
      std::vector<const kir::Buffer*> main_planned;
      for (size_t i : main) main_planned.push_back(planned[i]);
      ConflictGraph strict = sharedConflicts(live, kernel, main_planned, SmemHazards::Conservative);
      conservative = planAddresses(main_buffers, strict, options);
      conservative.strategy = "conservative " + conservative.strategy;
      options.baseline = &conservative;
    }
    sub = planAddresses(main_buffers, main_conflicts, options);
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
  // The stack allocator's own claim is about kernel-scope conflicts: no proof here.
  proved = allocator == SmemAllocator::Best && sub.optimal && !workspaces;
  return plan;
}

// One choice of which Shared alias decisions to apply, planned on the
// liveness view with those aliases (no change to the kernel).
struct Candidate {
  std::vector<AliasDecision> shared_aliases;
  Liveness live;
  std::vector<const kir::Buffer*> planned;
  std::vector<Buffer> buffers;
  ConflictGraph conflicts;
  AddressPlan plan;
  bool proved = false;  // optimal for its own conflicts
};

Candidate planWithAliases(const kir::Kernel& kernel, const Liveness& own,
                          const std::vector<AliasDecision>& local_aliases,
                          const std::vector<AliasDecision>& shared_aliases, SmemHazards hazards,
                          SmemAllocator allocator) {
  std::vector<AliasDecision> all = local_aliases;
  all.insert(all.end(), shared_aliases.begin(), shared_aliases.end());
  Candidate c;
  c.shared_aliases = shared_aliases;
  c.live = own.withAliases(aliasMapWith(kernel, all));
  c.planned = plannedBuffers(c.live);
  c.buffers = abstractBuffers(c.live, c.planned);
  c.conflicts = sharedConflicts(c.live, kernel, c.planned, hazards);
  c.plan = assignAddresses(c.buffers, c.planned, c.conflicts, c.live, kernel, hazards, allocator,
                           c.proved);
  return c;
}

// The lower bound on the true conflicts: every accessed Shared buffer on its
// own (no alias stretches a lifetime), under the mode's hazards, where the
// pairs an alias decision could place at one address do not count as
// conflicting (an alias may share bytes the conflict rule alone forbids).
int64_t trueLowerBound(const kir::Kernel& kernel, const Liveness& own,
                       const std::vector<AliasDecision>& local_aliases,
                       const std::vector<AliasDecision>& shared_candidates, SmemHazards hazards) {
  Liveness live = own.withAliases(aliasMapWith(kernel, local_aliases));
  std::vector<const kir::Buffer*> planned = plannedBuffers(live);
  std::vector<Buffer> buffers = abstractBuffers(live, planned);
  ConflictGraph conflicts = sharedConflicts(live, kernel, planned, hazards);
  ConflictGraph relaxed(planned.size());
  auto index = [&](const kir::Buffer* b) {
    auto it = std::find(planned.begin(), planned.end(), b);
    return it == planned.end() ? planned.size() : static_cast<size_t>(it - planned.begin());
  };
  std::vector<std::pair<size_t, size_t>> skip;
  for (const AliasDecision& d : shared_candidates) skip.push_back({index(d.base), index(d.alias)});
  for (size_t i = 0; i < planned.size(); ++i) {
    for (size_t j : conflicts.neighbors(i)) {
      if (j <= i) continue;
      bool alias_pair = std::any_of(skip.begin(), skip.end(), [&](const auto& pr) {
        return (pr.first == i && pr.second == j) || (pr.first == j && pr.second == i);
      });
      if (!alias_pair) relaxed.addConflict(i, j);
    }
  }
  return lowerBoundBytes(buffers, relaxed);
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

bool samePair(const AliasDecision& a, const AliasDecision& b) {
  return a.alias == b.alias && a.base == b.base;
}

// The Shared alias sets to compare (docs/planning.md §2: an alias is kept
// only when it costs no bytes): the mode's own, its in-place ones only, none,
// and in Precise mode the ones Conservative mode would take.
struct AliasChoices {
  std::vector<AliasDecision> found;  // the mode's decisions, Local and Shared
  std::vector<AliasDecision> local;
  std::vector<std::vector<AliasDecision>> shared_options;
  std::vector<AliasDecision> candidates;  // every pair any option aliases
};

AliasChoices aliasChoices(const kir::Kernel& kernel, const Liveness& live, SmemHazards hazards,
                          SmemAllocator allocator) {
  AliasChoices choices;
  choices.found = findAliases(kernel, live, hazards);
  std::vector<AliasDecision> shared;
  for (const AliasDecision& d : choices.found) {
    (d.alias->memory == MemoryType::Shared ? shared : choices.local).push_back(d);
  }
  choices.shared_options = {shared};
  if (allocator == SmemAllocator::Best && !shared.empty()) {
    std::vector<AliasDecision> inner;
    for (const AliasDecision& d : shared) {
      if (d.rule == "inner") inner.push_back(d);
    }
    choices.shared_options.push_back(inner);
    choices.shared_options.push_back({});
    if (hazards == SmemHazards::Precise) {
      std::vector<AliasDecision> strict;
      for (const AliasDecision& d : findAliases(kernel, live, SmemHazards::Conservative)) {
        if (d.alias->memory == MemoryType::Shared) strict.push_back(d);
      }
      choices.shared_options.push_back(strict);
    }
  }
  choices.candidates = shared;
  for (const auto& option : choices.shared_options) {
    for (const AliasDecision& d : option) {
      bool known = std::any_of(choices.candidates.begin(), choices.candidates.end(),
                               [&](const AliasDecision& c) { return samePair(c, d); });
      if (!known) choices.candidates.push_back(d);
    }
  }
  return choices;
}

bool sameAliases(const std::vector<AliasDecision>& a, const std::vector<AliasDecision>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), samePair);
}

// The option with the fewest bytes (the earliest on ties; the first alone when
// sizes are symbolic), each planned on `live`, the barriers' liveness without
// aliases. `rejected` gets the other totals.
Candidate bestCandidate(const kir::Kernel& kernel, const Liveness& live,
                        const AliasChoices& choices, SmemHazards hazards,
                        SmemAllocator allocator, std::vector<std::string>& rejected) {
  const auto& options = choices.shared_options;
  std::optional<Candidate> best;
  for (size_t k = 0; k < options.size(); ++k) {
    bool seen = false;
    for (size_t j = 0; j < k; ++j) seen = seen || sameAliases(options[j], options[k]);
    if (seen) continue;
    Candidate c = planWithAliases(kernel, live, choices.local, options[k], hazards, allocator);
    auto total = c.plan.total_bytes.constant();
    if (!best) {
      best = std::move(c);
      if (!total) break;  // symbolic: no comparison
      continue;
    }
    auto best_total = best->plan.total_bytes.constant();
    if (total && *total < *best_total) {
      rejected.push_back(std::to_string(best->shared_aliases.size()) + " alias(es): " +
                         std::to_string(*best_total) + " B");
      best = std::move(c);
    } else if (total) {
      rejected.push_back(std::to_string(c.shared_aliases.size()) + " alias(es): " +
                         std::to_string(*total) + " B");
    }
  }
  return std::move(*best);
}

// The plan of `best`, with what it was compared to and how close to the
// lower bound it is.
void recordChoice(SharedMemoryPlan& result, Candidate& best,
                  const std::vector<std::string>& rejected, int64_t bound, bool any_candidate) {
  result.planned = std::move(best.planned);
  result.buffers = std::move(best.buffers);
  result.conflicts = std::move(best.conflicts);
  result.plan = std::move(best.plan);
  AddressPlan& plan = result.plan;
  if (!rejected.empty()) {
    std::string note = "alias sets compared: kept " + std::to_string(best.shared_aliases.size()) +
                       " Shared alias(es); others:";
    for (const std::string& r : rejected) note += " " + r + ";";
    plan.notes.push_back(note);
  }
  plan.lower_bound_bytes = bound;
  auto total = plan.total_bytes.constant();
  plan.lower_bound_reached = total && *total <= bound;
  // Proved only on the true conflicts: reaching the bound, or an exhaustive
  // search on conflicts no alias choice could change.
  plan.optimal = plan.lower_bound_reached || (best.proved && !any_candidate);
  result.tensor_bytes = tensorBytes(result.buffers, result.planned, result.plan);
}

}  // namespace

void planKernelSharedMemory(LoweringContext& ctx) {
  kir::Kernel& kernel = ctx.kernel;
  auto result = std::make_shared<SharedMemoryPlan>();
  result->hazards = ctx.options.smem_hazards;
  result->allocator = ctx.options.smem_allocator;
  const int64_t min_alignment = ctx.options.min_shared_alignment;
  SMELT_CHECK(min_alignment > 0 && isPowerOfTwo(min_alignment),
              "LowerOptions::min_shared_alignment must be a positive power of two, got ",
              min_alignment);
  // The alignment floor is part of each buffer's declaration, which every
  // analysis below reads: set before planning, not a planning choice.
  for (auto& b : kernel.buffers) {
    if (b->memory == MemoryType::Shared) b->alignment = std::max(b->alignment, min_alignment);
  }

  // Decide. Liveness is computed once; every decision reads a view of it.
  const Liveness own = ownLiveness(kernel);
  const AliasChoices choices =
      aliasChoices(kernel, own.withAliases(kernelAliases(kernel)), result->hazards,
                   result->allocator);
  ReuseBarrierPlan barriers =
      planReuseBarriers(kernel, own.withAliases(aliasMapWith(kernel, choices.found)),
                        result->hazards, result->allocator);
  result->reuse_barriers = barriers.requests;
  const Liveness with_barriers = withBarriers(own, barriers.insertions);
  std::vector<std::string> rejected;
  Candidate best = bestCandidate(kernel, with_barriers, choices, result->hazards,
                                 result->allocator, rejected);
  const int64_t bound = trueLowerBound(kernel, with_barriers, choices.local, choices.candidates,
                                       result->hazards);
  result->aliases = choices.local;
  result->aliases.insert(result->aliases.end(), best.shared_aliases.begin(),
                         best.shared_aliases.end());
  recordChoice(*result, best, rejected, bound, !choices.candidates.empty());

  // Apply, once; then what reads the final kernel.
  applySharedMemoryPlan(kernel, std::move(barriers.insertions),
                        aliasMapWith(kernel, result->aliases), result->planned,
                        result->plan.addresses);
  writeReports(*result, best.live);
  result->bank_conflicts = analyzeBankConflicts(kernel);
  kernel.smem_plan = result;
  verifyKernelSharedMemory(kernel, result->hazards, ctx.options.max_shared_memory_bytes);
  if (dumpEnabled("smem_plan")) {
    std::cout << result->report_text << result->bank_conflicts.toString();
  }
}

AliasMap aliasMapWith(const kir::Kernel& kernel, const std::vector<AliasDecision>& decisions) {
  AliasMap result;
  for (const auto& b : kernel.buffers) {
    bool decided = b->tv != nullptr &&
                   (b->memory == MemoryType::Shared || b->memory == MemoryType::Local);
    if (!decided && b->alias_of != nullptr) result[b.get()] = b->alias_of;
  }
  for (const AliasDecision& d : decisions) result[d.alias] = d.base;
  return result;
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
  plan.strategy = "addresses in the kernel";
  if (kernel.smem_plan != nullptr) plan.strategy = kernel.smem_plan->plan.strategy;
  if (kernel.smem_plan != nullptr && kernel.smem_plan->planned == planned) {
    plan.stacked_on = kernel.smem_plan->plan.stacked_on;
  }
  plan.total_bytes = planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  verifyPlan(buffers, sharedConflicts(live, kernel, planned, hazards), plan, device_limit_bytes);
}

}  // namespace smelt::alloc_reuse
