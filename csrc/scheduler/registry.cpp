#include "scheduler/registry.h"

#include "fusion/error.h"
#include "scheduler/normalization.h"
#include "scheduler/pointwise.h"
#include "scheduler/reduction.h"

namespace smelt {

namespace {

template <typename ParamsT>
std::unique_ptr<HeuristicParams> boxed(ParamsT params) {
  return std::make_unique<ParamsT>(std::move(params));
}

SchedulerEntry persistentEntry() {
  return {SchedulerType::Persistent,
          [](const Fusion& f, const RuntimeInfo& r) { return persistentRejectReason(f, &r); },
          [](const Fusion& f, const RuntimeInfo& r) { return boxed(persistentHeuristics(f, r)); },
          [](Fusion& f, const HeuristicParams& p) {
            schedulePersistent(f, paramsAs<PersistentParams>(p));
          }};
}

SchedulerEntry reductionEntry() {
  return {SchedulerType::Reduction,
          [](const Fusion& f, const RuntimeInfo&) { return reductionRejectReason(f); },
          [](const Fusion& f, const RuntimeInfo& r) { return boxed(reductionHeuristics(f, r)); },
          [](Fusion& f, const HeuristicParams& p) {
            scheduleReduction(f, paramsAs<ReductionParams>(p));
          }};
}

SchedulerEntry pointwiseEntry() {
  return {SchedulerType::Pointwise,
          [](const Fusion& f, const RuntimeInfo&) { return pointwiseRejectReason(f); },
          [](const Fusion& f, const RuntimeInfo& r) { return boxed(pointwiseHeuristics(f, r)); },
          [](Fusion& f, const HeuristicParams& p) {
            schedulePointwise(f, paramsAs<PointwiseParams>(p));
          }};
}

}  // namespace

const std::vector<SchedulerEntry>& schedulerEntries() {
  static const std::vector<SchedulerEntry> entries = {persistentEntry(), reductionEntry(),
                                                      pointwiseEntry()};
  return entries;
}

const SchedulerEntry& schedulerEntry(SchedulerType type) {
  for (const SchedulerEntry& entry : schedulerEntries()) {
    if (entry.type == type) return entry;
  }
  throw Error(errorMessage("no ", toString(type), " scheduler is registered"));
}

std::optional<SchedulerType> selectScheduler(const Fusion& fusion, const RuntimeInfo& runtime,
                                             std::vector<std::string>* rejections) {
  for (const SchedulerEntry& entry : schedulerEntries()) {
    std::string reason = entry.reject_reason(fusion, runtime);
    if (reason.empty()) return entry.type;
    if (rejections != nullptr) rejections->push_back(toString(entry.type) + ": " + reason);
  }
  return std::nullopt;
}

std::unique_ptr<HeuristicParams> scheduleFusion(Fusion& fusion, const RuntimeInfo& runtime) {
  std::vector<std::string> rejections;
  std::optional<SchedulerType> type = selectScheduler(fusion, runtime, &rejections);
  if (!type) {
    std::string reasons;
    for (const std::string& r : rejections) reasons += "\n  " + r;
    throw Error(errorMessage("no scheduler takes this fusion:", reasons, "\n",
                             fusion.mathString()));
  }
  const SchedulerEntry& entry = schedulerEntry(*type);
  std::unique_ptr<HeuristicParams> params = entry.heuristics(fusion, runtime);
  entry.schedule(fusion, *params);
  return params;
}

}  // namespace smelt
