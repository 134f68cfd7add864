// Kernels produced by the real lowering (GpuLower) for the acceptance-case
// fusions and a few small schedules, simulated and compared with ATen.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/smem_case_fusions.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt::sim::testing {
namespace {

TEST(SimulatorLowered, PointwiseWithNonDivisibleSplit) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPointwiseNonDivisible();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, InnerReductionWithBlockReduce) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildRowSumBlockReduce();
  expectKernelCorrect(fusion, randomInputs(fusion), 1e-5, 1e-4);
}

TEST(SimulatorLowered, CaseA1SimpleCase) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSimpleCase();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseA2NeedsReorderedPush) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildNeedsReorderedPush();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseA4PromoteReuseMultipleDownstream) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPromoteReuseMultipleDownstream();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseA5MultiplePromoteReuse) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildMultiplePromoteReuse();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseA6SkippedSyncInterval) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSkippedSyncInterval();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseA7SmemVectorizationChain) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSmemVectorizationChain();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseA9ExpandBetweenAliases) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildExpandBetweenAliases(true);
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, CaseB1TiledGemm) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm();
  expectKernelCorrect(fusion, randomInputs(fusion), 1e-4, 1e-4);
}

TEST(SimulatorLowered, CaseC1PersistentSlice) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPersistentRnnSlice();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Every BlockSync of a statement list, as (list, index) so a test can take it out.
void collectSyncs(kir::StmtList& list, std::vector<std::pair<kir::StmtList*, size_t>>& out) {
  for (size_t i = 0; i < list.size(); ++i) {
    kir::Stmt* s = list[i].get();
    if (s->kind() == kir::StmtKind::BlockSync) out.emplace_back(&list, i);
    if (auto* loop = dynamic_cast<kir::ForLoop*>(s)) collectSyncs(loop->body, out);
    if (auto* ite = dynamic_cast<kir::IfThenElse*>(s)) {
      collectSyncs(ite->then_body, out);
      collectSyncs(ite->else_body, out);
    }
  }
}

// Removes each barrier of the lowered kernel in turn (existing and inserted
// for reuse alike): the simulator must report a race or produce a wrong
// result every time, except for the barriers named in `redundant`, which
// another barrier already covers. Returns how many barriers were tried.
size_t expectEveryBarrierNeeded(Fusion& fusion, const std::set<std::string>& redundant = {}) {
  std::vector<at::Tensor> inputs = randomInputs(fusion);
  std::vector<at::Tensor> expected = smelt::testing::evaluateWithATen(fusion, inputs);
  GpuLower lower(&fusion);
  // The kernel is owned (non-const) by `lower`; each mutation is undone below.
  auto& kernel = const_cast<kir::Kernel&>(lower.run());
  std::vector<std::pair<kir::StmtList*, size_t>> syncs;
  collectSyncs(kernel.body, syncs);
  for (auto [list, index] : syncs) {
    std::unique_ptr<kir::Stmt> taken = std::move((*list)[index]);
    const std::string reason = static_cast<const kir::BlockSync*>(taken.get())->reason;
    list->erase(list->begin() + static_cast<std::ptrdiff_t>(index));
    SimResult r = simulate(kernel, inputs);
    bool wrong = false;
    for (size_t i = 0; i < expected.size(); ++i) {
      wrong = wrong || !at::allclose(r.outputs[i].to(at::kDouble), expected[i].to(at::kDouble),
                                     1e-4, 1e-4);
    }
    EXPECT_TRUE(!r.report.clean() || wrong || redundant.count(reason))
        << "removing the barrier \"" << reason << "\" went unnoticed:\n" << kernel.toString();
    list->insert(list->begin() + static_cast<std::ptrdiff_t>(index), std::move(taken));
  }
  return syncs.size();
}

TEST(SimulatorLowered, RemovingAnyBarrierIsCaught) {
  size_t tried = 0;
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::buildTiledGemm();
    // One RAW barrier after both staging copies, one WAR barrier: both needed.
    tried += expectEveryBarrierNeeded(fusion);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::buildSkippedSyncInterval();
    tried += expectEveryBarrierNeeded(fusion);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::buildPromoteReuseMultipleDownstream();
    tried += expectEveryBarrierNeeded(fusion);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::buildMultiplePromoteReuse();
    tried += expectEveryBarrierNeeded(fusion);
  }
  EXPECT_GE(tried, 2u);  // B1's RAW and WAR barriers
  RecordProperty("barriers_removed", static_cast<int>(tried));
}

}  // namespace
}  // namespace smelt::sim::testing
