// Planning time of the shared-memory address planner, nvFuser's stack
// allocator and the two baselines (TVM-style free list, linear scan) on seeded
// random buffer sets; counters report the plan quality.
//
// After the timed runs, a quality table over kernel-like buffer sets
// (kernel_like_sets.h: phased and unphased lifetimes, aligned and unaligned
// sizes, 8-128 buffers), in both hazard modes: how often the default planner
// reaches the max-live lower bound (or proves an optimum above it), its mean
// and worst excess over the bound, time per plan, and the same excess for the
// baselines. The default planner runs as the kernel planner does: the stack
// plan is its baseline, and in Precise mode the Conservative plan too.
// SMELT_BENCH_SETS (default 100) sets per row; --quality_only skips the timed
// benchmarks.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "lower/alloc_reuse/baseline_planners.h"
#include "kernel_like_sets.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"

namespace {

using smelt::alloc_reuse::Buffer;

struct Workload {
  std::vector<Buffer> buffers;
  std::vector<int64_t> syncs;
  int64_t end = 0;
};

// n buffers over 4n positions, lifetimes up to a quarter of the kernel, one
// barrier every ~10 positions, sizes 16 B .. 16 KiB, a few 128-byte aligned.
Workload makeWorkload(size_t n) {
  std::mt19937_64 rng(12345 + n);
  const int64_t positions = static_cast<int64_t>(4 * n);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Workload w;
  for (size_t i = 0; i < n; ++i) {
    Buffer b;
    b.name = "b" + std::to_string(i);
    b.dtype = "float";
    b.bytes = 16 * uniform(1, 1024);
    b.alignment = uniform(0, 7) == 0 ? 128 : 16;
    b.first_write = uniform(0, positions - 1);
    b.last_read = std::min(positions - 1, b.first_write + uniform(0, positions / 4));
    b.creation_order = static_cast<int64_t>(i);
    w.buffers.push_back(std::move(b));
  }
  for (int64_t p = 0; p < positions; ++p) {
    if (uniform(0, 9) == 0) w.syncs.push_back(p);
  }
  w.end = positions;
  return w;
}

void reportPlan(benchmark::State& state, const smelt::alloc_reuse::AddressPlan& plan) {
  const double total = static_cast<double>(*plan.total_bytes.constant());
  state.counters["total_B"] = total;
  state.counters["lower_bound_B"] = static_cast<double>(plan.lower_bound_bytes);
  state.counters["total/lower_bound"] = total / static_cast<double>(plan.lower_bound_bytes);
  state.counters["no_reuse/total"] =
      static_cast<double>(*plan.no_reuse_bytes.constant()) / total;
}

// A planner that takes the buffers and their conflicts (with barriers).
template <auto planner>
void BM_PlanWithConflicts(benchmark::State& state) {
  Workload w = makeWorkload(static_cast<size_t>(state.range(0)));
  auto conflicts = smelt::alloc_reuse::conflictsFromBarriers(w.buffers, w.syncs);
  smelt::alloc_reuse::AddressPlan plan;
  for (auto _ : state) {
    plan = planner(w.buffers, conflicts);
    benchmark::DoNotOptimize(plan);
  }
  reportPlan(state, plan);
}

smelt::alloc_reuse::AddressPlan planDefault(const std::vector<Buffer>& buffers,
                                            const smelt::alloc_reuse::ConflictGraph& conflicts) {
  return smelt::alloc_reuse::planAddresses(buffers, conflicts);
}

void BM_PlanAddresses(benchmark::State& state) { BM_PlanWithConflicts<planDefault>(state); }
BENCHMARK(BM_PlanAddresses)->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_ConflictsAndPlan(benchmark::State& state) {
  Workload w = makeWorkload(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto conflicts = smelt::alloc_reuse::conflictsFromBarriers(w.buffers, w.syncs);
    benchmark::DoNotOptimize(smelt::alloc_reuse::planAddresses(w.buffers, conflicts));
  }
}
BENCHMARK(BM_ConflictsAndPlan)->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_StackAllocator(benchmark::State& state) {
  Workload w = makeWorkload(static_cast<size_t>(state.range(0)));
  smelt::alloc_reuse::AddressPlan plan;
  for (auto _ : state) {
    plan = smelt::alloc_reuse::planStackAddresses(w.buffers, w.syncs, w.end);
    benchmark::DoNotOptimize(plan);
  }
  reportPlan(state, plan);
}
BENCHMARK(BM_StackAllocator)->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_FreeList(benchmark::State& state) {
  BM_PlanWithConflicts<smelt::baselines::planFreeListAddresses>(state);
}
BENCHMARK(BM_FreeList)->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_LinearScan(benchmark::State& state) {
  BM_PlanWithConflicts<smelt::baselines::planLinearScanAddresses>(state);
}
BENCHMARK(BM_LinearScan)->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// Kernel-like sets: the default planner's heuristic path (no exact search)
// and the full planner, one fixed set per size.

using smelt::alloc_reuse::AddressPlan;
using smelt::alloc_reuse::ConflictGraph;
using smelt::alloc_reuse::PlannerOptions;

smelt::bench::KernelLikeSet fixedKernelLikeSet(size_t n, bool phased) {
  std::mt19937_64 rng(777 + n + (phased ? 1 : 0));
  return smelt::bench::kernelLikeSet(rng, n, phased, true);
}

void BM_KernelLikeHeuristic(benchmark::State& state) {
  auto set = fixedKernelLikeSet(static_cast<size_t>(state.range(0)), state.range(1) != 0);
  ConflictGraph conflicts = smelt::alloc_reuse::conflictsFromBarriers(set.buffers, set.barriers);
  PlannerOptions options;
  options.exact_search_max_buffers = 0;
  AddressPlan plan;
  for (auto _ : state) {
    plan = smelt::alloc_reuse::planAddresses(set.buffers, conflicts, options);
    benchmark::DoNotOptimize(plan);
  }
  reportPlan(state, plan);
}
BENCHMARK(BM_KernelLikeHeuristic)
    ->ArgsProduct({{8, 32, 64, 128}, {0, 1}})
    ->ArgNames({"buffers", "phased"})
    ->Unit(benchmark::kMicrosecond);

void BM_KernelLikeFull(benchmark::State& state) {
  auto set = fixedKernelLikeSet(static_cast<size_t>(state.range(0)), state.range(1) != 0);
  ConflictGraph conflicts = smelt::alloc_reuse::conflictsFromBarriers(set.buffers, set.barriers);
  AddressPlan plan;
  for (auto _ : state) {
    plan = smelt::alloc_reuse::planAddresses(set.buffers, conflicts);
    benchmark::DoNotOptimize(plan);
  }
  reportPlan(state, plan);
}
BENCHMARK(BM_KernelLikeFull)
    ->ArgsProduct({{8, 32, 64, 128}, {0, 1}})
    ->ArgNames({"buffers", "phased"})
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// The quality table.

int64_t totalOf(const AddressPlan& plan) { return *plan.total_bytes.constant(); }

struct Excess {
  double sum = 0, worst = 0;
  int count = 0;
  void add(int64_t total, int64_t bound) {
    const double e = bound > 0 ? static_cast<double>(total - bound) / static_cast<double>(bound) : 0;
    sum += e;
    worst = std::max(worst, e);
    ++count;
  }
  std::string text() const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "+%.2f%% / +%.1f%%", count ? 100 * sum / count : 0.0, 100 * worst);
    return buf;
  }
};

struct Row {
  int sets = 0, at_bound = 0, proved_above = 0, worse_than_baseline = 0, not_monotone = 0;
  Excess planner, heuristic, free_list, linear_scan, stack;
  double time_ms_sum = 0, time_ms_max = 0, heuristic_ms_sum = 0, heuristic_ms_max = 0;
};

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The default planner as the kernel planner runs it: stack plan as baseline;
// in Precise mode (interval conflicts) the Conservative plan as well.
// `ms`: the time of the mode's own planAddresses call (the Conservative plan
// a Precise plan starts from is a plan of its own, timed in its row).
AddressPlan planChain(const smelt::bench::KernelLikeSet& set, bool precise, const PlannerOptions& base,
                      const AddressPlan& stack, double* ms = nullptr) {
  PlannerOptions options = base;
  options.baseline = &stack;
  ConflictGraph strict = smelt::alloc_reuse::conflictsFromBarriers(set.buffers, set.barriers);
  ConflictGraph conflicts = strict;
  AddressPlan conservative;
  if (precise) {
    conservative = smelt::alloc_reuse::planAddresses(set.buffers, strict, options);
    options.baseline = &conservative;
    conflicts = smelt::alloc_reuse::conflictsFromIntervals(set.buffers);
  }
  const auto start = std::chrono::steady_clock::now();
  AddressPlan plan = smelt::alloc_reuse::planAddresses(set.buffers, conflicts, options);
  if (ms != nullptr) *ms = msSince(start);
  return plan;
}

Row qualityRow(size_t lo, size_t hi, bool phased, bool aligned, bool precise, int sets) {
  Row row;
  std::mt19937_64 rng(1000003 * lo + 7919 * hi + (phased ? 2 : 0) + (aligned ? 1 : 0));
  for (int k = 0; k < sets; ++k) {
    const size_t n = std::uniform_int_distribution<size_t>(lo, hi)(rng);
    smelt::bench::KernelLikeSet set = smelt::bench::kernelLikeSet(rng, n, phased, aligned);
    ConflictGraph conflicts = precise ? smelt::alloc_reuse::conflictsFromIntervals(set.buffers)
                                      : smelt::alloc_reuse::conflictsFromBarriers(set.buffers, set.barriers);
    AddressPlan stack = smelt::alloc_reuse::planStackAddresses(set.buffers, set.barriers, set.end);

    double ms = 0, heuristic_ms = 0;
    AddressPlan plan = planChain(set, precise, PlannerOptions{}, stack, &ms);
    PlannerOptions heuristic_options;
    heuristic_options.exact_search_max_buffers = 0;
    AddressPlan heuristic = planChain(set, precise, heuristic_options, stack, &heuristic_ms);

    AddressPlan free_list = smelt::baselines::planFreeListAddresses(set.buffers, conflicts);
    AddressPlan linear = smelt::baselines::planLinearScanAddresses(set.buffers, conflicts);
    const int64_t limit = std::numeric_limits<int64_t>::max();
    smelt::alloc_reuse::verifyPlan(set.buffers, conflicts, plan, limit);
    smelt::alloc_reuse::verifyPlan(set.buffers, conflicts, heuristic, limit);
    const int64_t bound = plan.lower_bound_bytes;
    const int64_t total = totalOf(plan);
    ++row.sets;
    if (total <= bound) ++row.at_bound;
    else if (plan.optimal) ++row.proved_above;
    if (total > totalOf(free_list) || total > totalOf(linear) || total > totalOf(stack)) {
      ++row.worse_than_baseline;
    }
    if (precise) {
      AddressPlan conservative = planChain(set, false, PlannerOptions{}, stack);
      if (total > totalOf(conservative) || totalOf(conservative) > totalOf(stack)) ++row.not_monotone;
    } else if (total > totalOf(stack)) {
      ++row.not_monotone;
    }
    row.planner.add(total, bound);
    row.heuristic.add(totalOf(heuristic), bound);
    row.free_list.add(totalOf(free_list), bound);
    row.linear_scan.add(totalOf(linear), bound);
    row.stack.add(totalOf(stack), bound);
    row.time_ms_sum += ms;
    row.time_ms_max = std::max(row.time_ms_max, ms);
    row.heuristic_ms_sum += heuristic_ms;
    row.heuristic_ms_max = std::max(row.heuristic_ms_max, heuristic_ms);
  }
  return row;
}

void printQualityTable(int sets) {
  std::printf(
      "\n| buffers | lifetimes | sizes | hazards | sets | at bound | proved above | planner excess "
      "mean / worst | time/plan mean / max (ms) | heuristic only: excess | heuristic time mean / max "
      "(ms) | free list | linear scan | stack (nvFuser) | worse than a baseline | not monotone |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const std::pair<size_t, size_t> ranges[] = {{8, 16}, {17, 32}, {33, 64}, {65, 128}, {128, 128}};
  for (auto [lo, hi] : ranges) {
    for (bool phased : {true, false}) {
      for (bool aligned : {true, false}) {
        for (bool precise : {true, false}) {
          Row r = qualityRow(lo, hi, phased, aligned, precise, sets);
          std::printf(
              "| %zu-%zu | %s | %s | %s | %d | %d (%.1f%%) | %d | %s | %.3f / %.3f | %s | %.3f / %.3f | "
              "%s | %s | %s | %d | %d |\n",
              lo, hi, phased ? "phased" : "unphased", aligned ? "16 B multiples" : "unaligned",
              precise ? "precise" : "conservative", r.sets, r.at_bound,
              100.0 * (r.at_bound + r.proved_above) / r.sets, r.proved_above,
              r.planner.text().c_str(), r.time_ms_sum / r.sets, r.time_ms_max,
              r.heuristic.text().c_str(), r.heuristic_ms_sum / r.sets, r.heuristic_ms_max,
              r.free_list.text().c_str(), r.linear_scan.text().c_str(), r.stack.text().c_str(),
              r.worse_than_baseline, r.not_monotone);
          std::fflush(stdout);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quality_only = false;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quality_only") == 0) {
      quality_only = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!quality_only) benchmark::RunSpecifiedBenchmarks();
  const char* sets = std::getenv("SMELT_BENCH_SETS");
  printQualityTable(sets != nullptr && *sets != '\0' ? std::atoi(sets) : 100);
  benchmark::Shutdown();
  return 0;
}
