// Shared-memory planning on the acceptance-case kernels of smem_cases.md
// (A1-A9, B1-B3, C1, D1; both hazard modes): one benchmark per case and mode
// timing the lowering with its plan_shared_memory pass (hand-built kernels:
// the pass alone), with the plan's figures as counters; after the runs, the
// same figures as a markdown table: bytes planned by the default planner vs
// the lower bound vs the two baselines (TVM-style free list, linear scan) vs
// nvFuser's stack allocator vs no reuse, and the barriers promoteReuse
// inserted. --plans_out=DIR also writes each plan's report there
// (<case>_<hazards>.txt, .json, .svg).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "lower/alloc_reuse/baseline_planners.h"
#include "common/case_corpus.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/alloc_reuse/verify.h"

namespace {

using smelt::SmemHazards;
using smelt::alloc_reuse::AddressPlan;
using smelt::alloc_reuse::Buffer;
using smelt::alloc_reuse::ConflictGraph;
using smelt::cases::CaseKernel;
using smelt::cases::CasePlanFigures;
using smelt::cases::hazardsName;

struct BaselineFigures {
  int64_t free_list = 0;
  int64_t linear_scan = 0;
};

// The baselines on exactly the buffers and hazard conflicts the default
// planner planned (after its promoteReuse barriers, so they profit from them
// too: the comparison isolates address assignment). Each plan goes through
// the verifier of the real plans; an invalid one stops the benchmark.
BaselineFigures baselineFigures(const smelt::alloc_reuse::SharedMemoryPlan& plan) {
  const std::vector<Buffer>& buffers = plan.buffers;
  const ConflictGraph& conflicts = plan.conflicts;
  const int64_t limit = smelt::alloc_reuse::SharedMemoryLimits().limitBytes(90);
  auto total = [&](const AddressPlan& baseline) {
    smelt::alloc_reuse::verifyPlan(buffers, conflicts, baseline, limit);
    return *baseline.total_bytes.constant();
  };
  return {total(smelt::baselines::planFreeListAddresses(buffers, conflicts)),
          total(smelt::baselines::planLinearScanAddresses(buffers, conflicts))};
}

// Where --plans_out=DIR asks for each plan's report (text, JSON, SVG).
std::string g_plans_out;

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  SMELT_CHECK(file.good(), "bench_case_plans: cannot write ", path);
}

struct CaseRow {
  CasePlanFigures plan;
  BaselineFigures baselines;
  // At nvFuser's 128 B minimum alignment: the default planner (tensors),
  // its lower bound, and the stack allocator (Conservative); -1: symbolic.
  int64_t best_128 = -1, lower_bound_128 = -1, stack_128 = -1;
  std::string status;  // the default plan's status at 16 B
};

// Computed once per case and mode (lowering is the slow part), shared by the
// counters and the table; writes the reports when asked.
const CaseRow& caseRow(const CaseKernel& kernel, SmemHazards hazards) {
  static std::map<std::pair<std::string, SmemHazards>, CaseRow> rows;
  auto key = std::make_pair(kernel.name, hazards);
  if (auto it = rows.find(key); it != rows.end()) return it->second;
  smelt::testing::PlannedKernel planned = kernel.plan(hazards);
  const smelt::alloc_reuse::SharedMemoryPlan& plan = planned.plan();
  if (!g_plans_out.empty()) {
    const std::string stem = g_plans_out + "/" + kernel.name + "_" + hazardsName(hazards);
    writeFile(stem + ".txt", plan.report_text);
    writeFile(stem + ".json", plan.report_json);
    if (!plan.report_svg.empty()) writeFile(stem + ".svg", plan.report_svg);
  }
  CaseRow row{smelt::cases::planFigures(kernel, hazards), baselineFigures(plan)};
  row.status = smelt::alloc_reuse::planStatusName(plan.plan);
  smelt::testing::PlannedKernel wide = kernel.plan(hazards, smelt::SmemAllocator::Best, 128);
  row.best_128 = wide.tensorBytes();
  row.lower_bound_128 = wide.lowerBound();
  row.stack_128 =
      kernel.plan(SmemHazards::Conservative, smelt::SmemAllocator::Stack, 128).tensorBytes();
  return rows.emplace(key, row).first->second;
}

// "1792 (+768)": bytes, and what they cost over the default planner's total.
std::string withLoss(int64_t bytes, int64_t planned) {
  std::string cell = std::to_string(bytes);
  if (bytes != planned) {
    cell += bytes > planned ? " (+" : " (";
    cell += std::to_string(bytes - planned) + ")";
  }
  return cell;
}

void planCase(benchmark::State& state, const CaseKernel* kernel, SmemHazards hazards) {
  for (auto _ : state) {
    smelt::testing::PlannedKernel planned = kernel->plan(hazards);
    benchmark::DoNotOptimize(planned.kernel);
  }
  const CaseRow& row = caseRow(*kernel, hazards);
  const CasePlanFigures& f = row.plan;
  state.counters["tensors_B"] = static_cast<double>(f.tensor_bytes);
  state.counters["total_B"] = static_cast<double>(f.total_bytes);
  state.counters["lower_bound_B"] = static_cast<double>(f.lower_bound);
  state.counters["stack_B"] = static_cast<double>(f.stack_bytes);
  state.counters["no_reuse_B"] = static_cast<double>(f.no_reuse_bytes);
  state.counters["barriers"] = f.inserted_barriers;
  state.counters["free_list_B"] = static_cast<double>(row.baselines.free_list);
  state.counters["linear_scan_B"] = static_cast<double>(row.baselines.linear_scan);
}

void printTable() {
  std::printf(
      "\n| case | hazards | planned (tensors) | planned (total) | lower bound | status | free list (TVM) "
      "| linear scan | stack (nvFuser) | no reuse | barriers inserted | planned @128 B | lower bound "
      "@128 B | stack @128 B |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const CaseKernel& kernel : smelt::cases::caseKernels()) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      const CaseRow& row = caseRow(kernel, hazards);
      const CasePlanFigures& f = row.plan;
      std::printf("| %s | %s | %lld | %lld | %lld%s | %s | %s | %s | %lld | %lld | %d | %lld | %lld | %lld |\n",
                  kernel.name.c_str(), hazardsName(hazards),
                  static_cast<long long>(f.tensor_bytes), static_cast<long long>(f.total_bytes),
                  static_cast<long long>(f.lower_bound),
                  f.total_bytes == f.lower_bound ? " (reached)" : "", row.status.c_str(),
                  withLoss(row.baselines.free_list, f.total_bytes).c_str(),
                  withLoss(row.baselines.linear_scan, f.total_bytes).c_str(),
                  static_cast<long long>(f.stack_bytes), static_cast<long long>(f.no_reuse_bytes),
                  f.inserted_barriers, static_cast<long long>(row.best_128),
                  static_cast<long long>(row.lower_bound_128), static_cast<long long>(row.stack_128));
    }
  }
}

// Removes --plans_out=DIR from the arguments (Google Benchmark rejects it).
void takePlansOut(int& argc, char** argv) {
  const std::string flag = "--plans_out=";
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind(flag, 0) == 0) {
      g_plans_out = arg.substr(flag.size());
      std::filesystem::create_directories(g_plans_out);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
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
  takePlansOut(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  printTable();
  benchmark::Shutdown();
  return 0;
}
