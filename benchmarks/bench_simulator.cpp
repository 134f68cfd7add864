// The CPU simulator on the 64x64x64 fp32 tiled matmul of case B1 (the GEMM
// lowered from its fusion: 32x32 Asub/Bsub tiles staged through shared
// memory by a 32x32-thread block, 2x2 blocks), on one core. Target: under
// 2 s with race detection (issue 6). Also without the race detector, and in
// the random thread order.
#include <benchmark/benchmark.h>

#include <vector>

#include "common/planned_kernel.h"
#include "common/smem_case_fusions.h"
#include "runtime/simulator/interpreter.h"

namespace {

using namespace smelt;

sim::TensorArg matrix(std::vector<float>& data) {
  sim::TensorArg arg;
  arg.data = data.data();
  arg.sizes = {64, 64};
  arg.strides = {64, 1};
  return arg;
}

void simulateTiledMatmul(benchmark::State& state, bool detect_races, sim::ThreadOrder order) {
  testing::PlannedKernel gemm =
      testing::lowerWith([] { cases::buildTiledGemm(64, 64, 64); }, SmemHazards::Precise);
  std::vector<float> a(64 * 64), b(64 * 64), c(64 * 64);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 17) * 0.25f;
    b[i] = static_cast<float>(i % 13) * -0.5f;
  }
  sim::SimOptions options;
  options.detect_races = detect_races;
  options.order = order;
  sim::SimReport report;
  for (auto _ : state) {
    report = sim::simulateBuffers(*gemm.kernel, {matrix(a), matrix(b)}, {matrix(c)}, {}, options);
    benchmark::DoNotOptimize(c.data());
  }
  if (!report.clean()) state.SkipWithError(report.toString().c_str());
  state.counters["blocks"] = static_cast<double>(report.blocks_simulated);
}

BENCHMARK_CAPTURE(simulateTiledMatmul, races_forward, true, sim::ThreadOrder::Forward)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulateTiledMatmul, races_random, true, sim::ThreadOrder::Random)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulateTiledMatmul, no_race_detection, false, sim::ThreadOrder::Forward)
    ->Unit(benchmark::kMillisecond);

}  // namespace
