// Scheduler selection: every scheduler as an entry with the same three
// functions, tried in order; the first that accepts a fusion schedules it.
//
// Adding a scheduler (the matmul scheduler in scheduler/matmul/ does): give
// it a HeuristicParams struct and a SchedulerType, write a function returning
// its SchedulerEntry (typedEntry builds one from the typed reject, heuristics
// and schedule functions), and list that function in schedulerEntries() in
// registry.cpp, before the schedulers whose patterns it refines (a matmul is
// also a reduction, which the reduction scheduler would otherwise take).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

struct SchedulerEntry {
  SchedulerType type = SchedulerType::Pointwise;
  // Why the scheduler cannot take the unscheduled fusion with these inputs;
  // empty when it can.
  std::function<std::string(const Fusion&, const RuntimeInfo&)> reject_reason;
  std::function<std::unique_ptr<HeuristicParams>(const Fusion&, const RuntimeInfo&)> heuristics;
  // Schedules the unscheduled fusion; throws smelt::Error for parameters of
  // another scheduler or that do not fit the fusion.
  std::function<void(Fusion&, const HeuristicParams&)> schedule;

  // What the segmenter (scheduler/segmenter.h) asks of a scheduler; it
  // knows no scheduler by name. Null hooks: none.
  // Seeds: expression sets made segments of their own before anything
  // merges (a matmul's core), each as its candidates, preferred first. The
  // first candidate a scheduler that keeps its segments takes is kept.
  std::function<std::vector<SeedCandidates>(const Fusion&)> seeds;
  // What this scheduler may take besides a seed it accepted, largest first
  // (a library matmul's epilogue).
  std::function<SeedCandidates(const std::vector<const Expr*>& seed)> seed_growth;
  // The chunks a segment this scheduler took is split into across blocks
  // (its heuristics after `override_params` say; segmenter.h describes the
  // split); 1: not split. Throws smelt::Error when they ask for a split of
  // a segment that cannot be split.
  std::function<int64_t(const Fusion& segment, const RuntimeInfo&, const ParamsOverride&)>
      grid_split_chunks;
  // A fusion to segment in place of the whole one, equivalent and of
  // expressions the schedulers take, where this scheduler's one kernel would
  // leave the GPU idle (the scan scheduler's: scans of few long rows as
  // chunked scans, chunked_scan.h); nullptr: none. Its inputs and outputs
  // stand for the fusion's, in order.
  std::function<std::unique_ptr<Fusion>(const Fusion&, const RuntimeInfo&)> rewrite;
  // A segment of this scheduler is never merged into another scheduler's:
  // a matmul in a segment of another would run as a plain reduction.
  bool keeps_its_segments = false;
};

// An entry from a scheduler's typed functions (its parameters boxed and
// unboxed here).
template <typename ParamsT>
SchedulerEntry typedEntry(SchedulerType type,
                          std::function<std::string(const Fusion&, const RuntimeInfo&)> reject,
                          ParamsT (*heuristics)(const Fusion&, const RuntimeInfo&),
                          void (*schedule)(Fusion&, const ParamsT&)) {
  SchedulerEntry entry;
  entry.type = type;
  entry.reject_reason = std::move(reject);
  entry.heuristics = [heuristics](const Fusion& f,
                                  const RuntimeInfo& r) -> std::unique_ptr<HeuristicParams> {
    return std::make_unique<ParamsT>(heuristics(f, r));
  };
  entry.schedule = [schedule](Fusion& f, const HeuristicParams& p) {
    schedule(f, paramsAs<ParamsT>(p));
  };
  return entry;
}

// Every scheduler, in the order selection tries them.
const std::vector<SchedulerEntry>& schedulerEntries();
// Throws smelt::Error when no scheduler of that type is registered.
const SchedulerEntry& schedulerEntry(SchedulerType type);
// schedulerEntry(type).keeps_its_segments.
bool keepsItsSegments(SchedulerType type);

// The first scheduler that accepts the fusion, or nullopt; `rejections`, if
// given, receives "<scheduler>: <reason>" for each one that declined.
std::optional<SchedulerType> selectScheduler(const Fusion& fusion, const RuntimeInfo& runtime,
                                             std::vector<std::string>* rejections = nullptr);

// Selects a scheduler, computes its heuristics and schedules the fusion.
// Throws smelt::Error listing every scheduler's reason when none accepts.
std::unique_ptr<HeuristicParams> scheduleFusion(Fusion& fusion, const RuntimeInfo& runtime);

}  // namespace smelt
