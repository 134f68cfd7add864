#include "scheduler/registry.h"

#include "fusion/error.h"
#include "scheduler/chunked_scan.h"
#include "scheduler/matmul/library_matmul.h"
#include "scheduler/matmul/matmul_scheduler.h"
#include "scheduler/normalization.h"
#include "scheduler/pointwise.h"
#include "scheduler/reduction.h"
#include "scheduler/scan.h"
#include "scheduler/scatter.h"

namespace smelt {

namespace {

SchedulerEntry libraryMatmulEntry() {
  SchedulerEntry entry = typedEntry(SchedulerType::LibraryMatmul, libraryMatmulRejectReason,
                                    libraryMatmulHeuristics, scheduleLibraryMatmul);
  entry.seed_growth = libraryMatmulSeedGrowth;
  entry.keeps_its_segments = true;
  return entry;
}

// Declines a matmul the library computes: the segmenter then gives its core
// to the library and the epilogue to the schedulers around it.
std::string matmulSchedulerRejectReason(const Fusion& f, const RuntimeInfo& r) {
  MatmulPattern pattern;
  std::string reason = matmulRejectReason(f, &pattern);
  if (!reason.empty()) return reason;
  const std::string library = libraryTakesMatmul(pattern, r);
  return library.empty() ? "" : "the matmul runs in the library (" + library + ")";
}

SchedulerEntry matmulEntry() {
  SchedulerEntry entry = typedEntry<MatmulParams>(
      SchedulerType::Matmul, matmulSchedulerRejectReason,
      [](const Fusion& f, const RuntimeInfo& r) {
        return matmulHeuristics(f, r, DeviceLimits::forArch(r.targetArch()));
      },
      [](Fusion& f, const MatmulParams& p) { scheduleMatmul(&f, p); });
  // The library takes these seeds too (it is tried first).
  entry.seeds = matmulSeeds;
  entry.keeps_its_segments = true;
  return entry;
}

SchedulerEntry persistentEntry() {
  return typedEntry(
      SchedulerType::Persistent,
      [](const Fusion& f, const RuntimeInfo& r) { return persistentRejectReason(f, &r); },
      persistentHeuristics, schedulePersistent);
}

SchedulerEntry reductionEntry() {
  SchedulerEntry entry = typedEntry(
      SchedulerType::Reduction,
      [](const Fusion& f, const RuntimeInfo&) { return reductionRejectReason(f); },
      reductionHeuristics, scheduleReduction);
  entry.grid_split_chunks = reductionGridSplitChunks;
  return entry;
}

SchedulerEntry pointwiseEntry() {
  return typedEntry(
      SchedulerType::Pointwise,
      [](const Fusion& f, const RuntimeInfo& r) { return pointwiseRejectReason(f, &r); },
      pointwiseHeuristics, schedulePointwise);
}

SchedulerEntry scatterEntry() {
  return typedEntry(
      SchedulerType::Scatter,
      [](const Fusion& f, const RuntimeInfo&) { return scatterRejectReason(f); },
      scatterHeuristics, scheduleScatter);
}

SchedulerEntry scanEntry() {
  SchedulerEntry entry = typedEntry(
      SchedulerType::Scan, [](const Fusion& f, const RuntimeInfo&) { return scanRejectReason(f); },
      scanHeuristics, scheduleScan);
  entry.rewrite = chunkLongScans;
  return entry;
}

// Only the scatter scheduler takes a scatter (the others would run its
// consumers in its loops), only the scan scheduler a scan (the others would
// split or parallelize its axis).
SchedulerEntry withoutScattersOrScans(SchedulerEntry entry) {
  auto reject = std::move(entry.reject_reason);
  entry.reject_reason = [reject](const Fusion& f, const RuntimeInfo& r) -> std::string {
    for (const Expr* expr : f.exprs()) {
      if (expr->type() == ExprType::Scatter) return "it has a scatter (" + expr->toString() + ")";
      if (expr->type() == ExprType::Scan) return "it has a scan (" + expr->toString() + ")";
    }
    return reject(f, r);
  };
  return entry;
}

}  // namespace

const std::vector<SchedulerEntry>& schedulerEntries() {
  // The matmuls first: a matmul is also a reduction.
  // The scatter and the scan last: the others decline every scatter and
  // scan, and they take nothing else.
  static const std::vector<SchedulerEntry> entries = {
      withoutScattersOrScans(libraryMatmulEntry()), withoutScattersOrScans(matmulEntry()),
      withoutScattersOrScans(persistentEntry()), withoutScattersOrScans(reductionEntry()),
      withoutScattersOrScans(pointwiseEntry()), scatterEntry(), scanEntry()};
  return entries;
}

bool keepsItsSegments(SchedulerType type) { return schedulerEntry(type).keeps_its_segments; }

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
