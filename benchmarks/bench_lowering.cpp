// Full lowering (GpuLower::run, every pass including plan_shared_memory) of
// the GEMM-shaped case fusions that `smelt demo` lowers: B1, B2 (plain and
// with Csub promoted), D1 as the gallery builds it (3-stage operand tiles
// promoted for the epilogue tile) and the B3 slice-K fusion, in both hazard
// modes. The access footprints behind the Precise mode's thread-private
// proofs dominate these kernels' lowering time.
#include <benchmark/benchmark.h>

#include <functional>

#include "common/planned_kernel.h"
#include "common/smem_case_fusions.h"

namespace smelt {
namespace {

void lowerCase(benchmark::State& state, const std::function<void()>& build,
               SmemHazards hazards) {
  for (auto _ : state) {
    testing::PlannedKernel planned = testing::lowerWith(build, hazards);
    benchmark::DoNotOptimize(planned.kernel);
  }
}

void buildB1() { cases::buildTiledGemm(); }
void buildB2() { cases::buildTiledGemm(64, 64, 64, 2); }
void buildB2Promoted() { cases::buildTiledGemm(64, 64, 64, 2).c_sub->promoteReuse(); }
void buildD1() {
  cases::TiledGemm gemm = cases::buildTiledGemm(64, 64, 64, 0, 3);
  gemm.a_sub->promoteReuse();
  gemm.b_sub->promoteReuse();
}
void buildB3SliceK() { cases::buildSliceKGemm(); }

#define SMELT_LOWERING_BENCHMARK(name, build)                                       \
  BENCHMARK_CAPTURE(lowerCase, name##_precise, build, SmemHazards::Precise)         \
      ->Unit(benchmark::kMillisecond);                                              \
  BENCHMARK_CAPTURE(lowerCase, name##_conservative, build, SmemHazards::Conservative) \
      ->Unit(benchmark::kMillisecond)

SMELT_LOWERING_BENCHMARK(B1, buildB1);
SMELT_LOWERING_BENCHMARK(B2, buildB2);
SMELT_LOWERING_BENCHMARK(B2_promoted, buildB2Promoted);
SMELT_LOWERING_BENCHMARK(D1, buildD1);
SMELT_LOWERING_BENCHMARK(B3_slice_k, buildB3SliceK);

}  // namespace
}  // namespace smelt
