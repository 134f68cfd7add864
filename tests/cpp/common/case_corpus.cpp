#include "common/case_corpus.h"

#include "common/handbuilt_case_kernels.h"
#include "common/smem_case_fusions.h"

namespace smelt::cases {

namespace {

CaseKernel fusionCase(std::string name, std::function<void()> build) {
  return {std::move(name), std::move(build), {}};
}

CaseKernel kernelCase(std::string name,
                      std::function<std::unique_ptr<kir_testing::TestKernel>()> build) {
  return {std::move(name), {}, std::move(build)};
}

}  // namespace

const std::vector<CaseKernel>& caseKernels() {
  static const std::vector<CaseKernel> corpus = {
      fusionCase("A1", [] { buildSimpleCase(); }),
      fusionCase("A1_TIDx",
                 [] { buildSimpleCase().sum->axis(0)->parallelize(ParallelType::TIDx); }),
      fusionCase("A2", [] { buildNeedsReorderedPush(); }),
      fusionCase("A2_TIDx",
                 [] { buildNeedsReorderedPush().sum->axis(0)->parallelize(ParallelType::TIDx); }),
      fusionCase("A3", [] { buildNeedsReorderedPush().a->promoteReuse(); }),
      fusionCase("A4", [] { buildPromoteReuseMultipleDownstream(); }),
      fusionCase("A4_promoted", [] { buildPromoteReuseMultipleDownstream().tv0->promoteReuse(); }),
      fusionCase("A5", [] { buildMultiplePromoteReuse(); }),
      fusionCase("A5_promoted",
                 [] {
                   MultiplePromote c = buildMultiplePromoteReuse();
                   c.tv0->promoteReuse();
                   c.tv4->promoteReuse();
                 }),
      fusionCase("A6", [] { buildSkippedSyncInterval(); }),
      fusionCase("A6_promoted", [] { buildSkippedSyncInterval().tv0->promoteReuse(); }),
      fusionCase("A7", [] { buildSmemVectorizationChain(); }),
      fusionCase("A8", [] { buildRegisterVectorizationChain(4, 2); }),
      fusionCase("A9", [] { buildExpandBetweenAliases(true); }),
      fusionCase("B1", [] { buildTiledGemm(); }),
      fusionCase("B2", [] { buildTiledGemm(64, 64, 64, 2); }),
      fusionCase("B2_promoted", [] { buildTiledGemm(64, 64, 64, 2).c_sub->promoteReuse(); }),
      kernelCase("B3", [] { return buildStreamKKernel(); }),
      fusionCase("B3_slice_k", [] { buildSliceKGemm(); }),
      fusionCase("C1", [] { buildPersistentRnnSlice(); }),
      kernelCase("D1", [] { return buildMatmulEpilogueKernel(false); }),
      kernelCase("D1_promoted", [] { return buildMatmulEpilogueKernel(true); }),
  };
  return corpus;
}

CasePlanFigures planFigures(const CaseKernel& kernel, SmemHazards hazards) {
  testing::PlannedKernel best = kernel.plan(hazards);
  CasePlanFigures f;
  f.tensor_bytes = best.tensorBytes();
  f.total_bytes = best.totalBytes();
  f.lower_bound = best.lowerBound();
  f.stack_bytes = kernel.plan(SmemHazards::Conservative, SmemAllocator::Stack).tensorBytes();
  f.no_reuse_bytes = best.noReuseBytes();
  f.inserted_barriers = best.insertedBarriers();
  f.sizes_aligned = !best.plan().buffers.empty();
  for (const alloc_reuse::Buffer& b : best.plan().buffers) {
    auto bytes = b.bytes.constant();
    f.sizes_aligned = f.sizes_aligned && bytes && *bytes % b.alignment == 0;
  }
  return f;
}

}  // namespace smelt::cases
