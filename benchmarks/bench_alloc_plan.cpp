// Planning time of the shared-memory address planner, nvFuser's stack
// allocator and the two baselines (TVM-style free list, linear scan) on seeded
// random buffer sets; counters report the plan quality.
#include <benchmark/benchmark.h>

#include <random>

#include "baseline_planners.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/stack_allocator.h"

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

}  // namespace
