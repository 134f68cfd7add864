// Shared-memory planning on the acceptance-case kernels of smem_cases.md
// (A1-A9, B1-B3, C1, D1; both hazard modes): one benchmark per case and mode
// timing the lowering with its plan_shared_memory pass (hand-built kernels:
// the pass alone), with the plan's figures as counters; after the runs, the
// same figures as a markdown table: bytes planned by the default planner vs
// the lower bound vs nvFuser's stack allocator vs no reuse, and the barriers
// promoteReuse inserted.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "common/case_corpus.h"

namespace {

using smelt::SmemHazards;
using smelt::cases::CaseKernel;
using smelt::cases::CasePlanFigures;
using smelt::cases::hazardsName;

void planCase(benchmark::State& state, const CaseKernel* kernel, SmemHazards hazards) {
  for (auto _ : state) {
    smelt::testing::PlannedKernel planned = kernel->plan(hazards);
    benchmark::DoNotOptimize(planned.kernel);
  }
  const CasePlanFigures f = smelt::cases::planFigures(*kernel, hazards);
  state.counters["tensors_B"] = static_cast<double>(f.tensor_bytes);
  state.counters["total_B"] = static_cast<double>(f.total_bytes);
  state.counters["lower_bound_B"] = static_cast<double>(f.lower_bound);
  state.counters["stack_B"] = static_cast<double>(f.stack_bytes);
  state.counters["no_reuse_B"] = static_cast<double>(f.no_reuse_bytes);
  state.counters["barriers"] = f.inserted_barriers;
}

void printTable() {
  std::printf(
      "\n| case | hazards | planned (tensors) | planned (total) | lower bound | stack (nvFuser) "
      "| no reuse | barriers inserted |\n|---|---|---|---|---|---|---|---|\n");
  for (const CaseKernel& kernel : smelt::cases::caseKernels()) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      const CasePlanFigures f = smelt::cases::planFigures(kernel, hazards);
      std::printf("| %s | %s | %lld | %lld | %lld%s | %lld | %lld | %d |\n", kernel.name.c_str(),
                  hazardsName(hazards), static_cast<long long>(f.tensor_bytes),
                  static_cast<long long>(f.total_bytes), static_cast<long long>(f.lower_bound),
                  f.total_bytes == f.lower_bound ? " (reached)" : "",
                  static_cast<long long>(f.stack_bytes), static_cast<long long>(f.no_reuse_bytes),
                  f.inserted_barriers);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (const CaseKernel& kernel : smelt::cases::caseKernels()) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      benchmark::RegisterBenchmark(("PlanCase/" + kernel.name + "/" + hazardsName(hazards)).c_str(),
                                   planCase, &kernel, hazards)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  printTable();
  benchmark::Shutdown();
  return 0;
}
