// The kernel-level analyses on their own (liveness, hazards, aliasing rules,
// footprints), the verification that always runs, and the mutation test:
// deleting any barrier promoteReuse inserted makes the verifier fail.
#include <gtest/gtest.h>

#include "common/handbuilt_case_kernels.h"
#include "common/kir_mutations.h"
#include "common/planned_kernel.h"
#include "common/smem_case_fusions.h"
#include "fusion/ops.h"
#include "lower/alloc_reuse/access_footprint.h"
#include "lower/alloc_reuse/aliasing.h"
#include "lower/alloc_reuse/apply_plan.h"
#include "lower/alloc_reuse/barrier_planning.h"
#include "lower/alloc_reuse/hazards.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/alloc_reuse/liveness.h"

namespace smelt::alloc_reuse {
namespace {

using smelt::testing::PlannedKernel;
using smelt::testing::lowerWith;

// ---- liveness ----

TEST(KernelLiveness, AccessInLoopWidensToThatLoop) {
  cases::SimpleCase c{};
  PlannedKernel k = lowerWith([&] { c = cases::buildSimpleCase(); }, SmemHazards::Precise);
  Liveness live = computeLiveness(*k.kernel);
  const BufferLiveness& a = live.of(k.buffer(c.a));
  // Written at statement 6 in loop [5, 7], read at 9 in loop [8, 10].
  EXPECT_EQ(a.inner.first, 6);
  EXPECT_EQ(a.inner.last, 9);
  EXPECT_EQ(a.outer.first, 5);
  EXPECT_EQ(a.outer.last, 10);
}

TEST(KernelLiveness, TrivialLoopsNeverWiden) {
  cases::SkippedSync c{};
  PlannedKernel k = lowerWith([&] { c = cases::buildSkippedSyncInterval(); },
                              SmemHazards::Precise);
  Liveness live = computeLiveness(*k.kernel);
  const BufferLiveness& t2 = live.of(k.buffer(c.tv2));
  // tv2's first write widens to its serial loop, not to the TIDx loop around it.
  const kir::Stmt* at = live.stmt_at[t2.outer.first];
  auto* loop = dynamic_cast<const kir::ForLoop*>(at);
  ASSERT_NE(loop, nullptr);
  EXPECT_FALSE(loop->trivial);
}

TEST(KernelLiveness, ReductionOutputIsReadWhereWritten) {
  PlannedKernel k = lowerWith(
      [] {
        Fusion* f = Fusion::current();
        TensorView* in = makeConcreteTensor({8});
        f->addInput(in);
        TensorView* s = sum(in, {0});
        s->setMemoryType(MemoryType::Shared);
        f->addOutput(set(s));
      },
      SmemHazards::Precise);
  Liveness live = computeLiveness(*k.kernel);
  for (const BufferLiveness& b : live.buffers) {
    if (b.buffer->memory != MemoryType::Shared) continue;
    for (const BufferAccess& a : b.accesses) {
      if (a.stmt->kind() == kir::StmtKind::ReduceStep) {
        EXPECT_TRUE(a.read && a.write);
      }
    }
  }
}

TEST(KernelLiveness, BatchLoopDoesNotStretchTileLifetimes) {
  cases::TiledGemm c{};
  PlannedKernel k =
      lowerWith([&] { c = cases::buildTiledGemm(64, 64, 64, 3); }, SmemHazards::Conservative);
  Liveness live = computeLiveness(*k.kernel);
  const BufferLiveness& a = live.of(k.buffer(c.a_sub));
  const BufferLiveness& csub = live.of(k.buffer(c.c_sub));
  // The operand tile dies before the epilogue tile is written, although a
  // serial batch loop runs around both.
  EXPECT_LT(a.outer.last, csub.outer.first);
}

// The planner decides on liveness views instead of changing the kernel and
// computing again: the view with the found aliases and the planned barriers
// must be exactly the liveness of the kernel once they are applied. Returns
// how many aliases and barriers that applied.
std::pair<size_t, size_t> expectViewsMatchChangedKernel(kir::Kernel& kernel, SmemHazards hazards,
                                                        SmemAllocator allocator) {
  const Liveness own = ownLiveness(kernel);
  const AliasMap aliases = aliasMapWith(kernel, findAliases(kernel, own, hazards));
  ReuseBarrierPlan barriers =
      planReuseBarriers(kernel, own.withAliases(aliases), hazards, allocator);
  const Liveness predicted = withBarriers(own, barriers.insertions).withAliases(aliases);
  const size_t inserted = barriers.insertions.size();
  applySharedMemoryPlan(kernel, std::move(barriers.insertions), aliases, {}, {});
  const Liveness actual = computeLiveness(kernel);
  EXPECT_EQ(predicted.positions.start, actual.positions.start);
  EXPECT_EQ(predicted.positions.loop_end, actual.positions.loop_end);
  EXPECT_EQ(predicted.positions.count, actual.positions.count);
  EXPECT_EQ(predicted.end_position, actual.end_position);
  EXPECT_EQ(predicted.stmt_at, actual.stmt_at);
  EXPECT_EQ(predicted.parent, actual.parent);
  EXPECT_EQ(predicted.sync_positions, actual.sync_positions);
  EXPECT_EQ(predicted.aliases, actual.aliases);
  EXPECT_EQ(predicted.buffers.size(), actual.buffers.size());
  for (size_t i = 0; i < std::min(predicted.buffers.size(), actual.buffers.size()); ++i) {
    const BufferLiveness& p = predicted.buffers[i];
    const BufferLiveness& a = actual.buffers[i];
    EXPECT_EQ(p.buffer, a.buffer);
    EXPECT_EQ(p.creation_order, a.creation_order);
    for (auto interval :
         {&BufferLiveness::inner, &BufferLiveness::outer, &BufferLiveness::kernel_scope}) {
      EXPECT_EQ((p.*interval).first, (a.*interval).first) << a.buffer->name;
      EXPECT_EQ((p.*interval).last, (a.*interval).last) << a.buffer->name;
    }
  }
  return {aliases.size(), inserted};
}

TEST(KernelLiveness, ViewsEqualTheLivenessOfTheChangedKernel) {
  size_t aliases = 0, barriers = 0;
  auto add = [&](std::pair<size_t, size_t> applied) {
    aliases += applied.first;
    barriers += applied.second;
  };
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      for (bool stream_k : {false, true}) {
        SCOPED_TRACE(stream_k ? "B3" : "D1 promoted");
        auto t = stream_k ? cases::buildStreamKKernel() : cases::buildMatmulEpilogueKernel(true);
        FusionGuard guard(t->fusion.get());
        add(expectViewsMatchChangedKernel(t->kernel, hazards, allocator));
      }
      // B1 lowered and planned, its aliases taken back: the planner's input again.
      SCOPED_TRACE("B1");
      PlannedKernel k = lowerWith([] { cases::buildTiledGemm(); }, hazards, allocator);
      FusionGuard guard(k.fusion.get());
      for (auto& b : k.kernel->buffers) b->alias_of = nullptr;
      add(expectViewsMatchChangedKernel(*k.kernel, hazards, allocator));
    }
  }
  EXPECT_GT(aliases, 0u);   // the alias view is exercised
  EXPECT_GT(barriers, 0u);  // and the barrier view
}

// ---- hazards ----

TEST(KernelHazards, ModesDisagreeOnlyOnThreadPrivateReuse) {
  cases::SimpleCase c{};
  PlannedKernel k = lowerWith([&] { c = cases::buildSimpleCase(); }, SmemHazards::Precise);
  Liveness live = computeLiveness(*k.kernel);
  const kir::Buffer* a = k.buffer(c.a);
  const kir::Buffer* b = k.buffer(c.b);
  EXPECT_EQ(relate(live, *k.kernel, a, b, SmemHazards::Precise), PairRelation::ThreadPrivate);
  EXPECT_EQ(relate(live, *k.kernel, a, b, SmemHazards::Conservative), PairRelation::NeedsBarrier);
}

TEST(KernelHazards, BlockReductionSeparatesBuffers) {
  cases::SimpleCase c{};
  PlannedKernel k = lowerWith(
      [&] {
        c = cases::buildSimpleCase();
        c.sum->axis(0)->parallelize(ParallelType::TIDx);
      },
      SmemHazards::Conservative);
  Liveness live = computeLiveness(*k.kernel);
  EXPECT_EQ(relate(live, *k.kernel, k.buffer(c.b), k.buffer(c.a), SmemHazards::Conservative),
            PairRelation::BarrierBetween);
}

TEST(KernelHazards, PadReadingWhileWritingIsLiveTogether) {
  cases::NeedsReorderedPush c{};
  PlannedKernel k =
      lowerWith([&] { c = cases::buildNeedsReorderedPush(); }, SmemHazards::Precise);
  Liveness live = computeLiveness(*k.kernel);
  EXPECT_EQ(relate(live, *k.kernel, k.buffer(c.a), k.buffer(c.b), SmemHazards::Precise),
            PairRelation::LiveTogether);
}

TEST(KernelHazards, DifferentPerThreadBytesAreNotThreadPrivate) {
  cases::SkippedSync c{};
  PlannedKernel k = lowerWith([&] { c = cases::buildSkippedSyncInterval(); },
                              SmemHazards::Precise);
  Liveness live = computeLiveness(*k.kernel);
  std::vector<BufferAccess> reads, writes;
  for (const BufferAccess& a : live.of(k.buffer(c.tv0)).accesses) {
    if (a.read) reads.push_back(a);
  }
  for (const BufferAccess& a : live.of(k.buffer(c.tv2)).accesses) {
    if (a.write) writes.push_back(a);
  }
  EXPECT_FALSE(overwritesFollowOwnReads(live, *k.kernel, reads, writes, {}, true));
  EXPECT_EQ(relate(live, *k.kernel, k.buffer(c.tv0), k.buffer(c.tv2), SmemHazards::Precise),
            PairRelation::NeedsBarrier);
  // Each thread touches its own row of tv2: 48 floats per thread.
  auto fp = footprint(live, *k.kernel, writes, {}, true);
  ASSERT_TRUE(fp.has_value());
  EXPECT_EQ(fp->size(), 5u);
  for (const auto& [thread, elements] : *fp) EXPECT_EQ(elements.size(), 48u);
}

// ---- aliasing rules ----

TEST(KernelAliasing, InPlaceAndDisjointRules) {
  PlannedKernel smem = lowerWith([] { cases::buildSmemVectorizationChain(); },
                                 SmemHazards::Precise);
  ASSERT_EQ(smem.plan().aliases.size(), 1u);
  EXPECT_EQ(smem.plan().aliases[0].rule, "inner");
  PlannedKernel regs = lowerWith([] { cases::buildRegisterVectorizationChain(4, 2); },
                                 SmemHazards::Precise);
  ASSERT_EQ(regs.plan().aliases.size(), 1u);
  EXPECT_EQ(regs.plan().aliases[0].rule, "outer");
}

// ---- verification and report ----

TEST(KernelPlanVerify, OverTheLimitNamesTheBuffers) {
  try {
    lowerWith([] { cases::buildSkippedSyncInterval(); }, SmemHazards::Precise,
              SmemAllocator::Best, 970);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("T2"), std::string::npos) << what;
    EXPECT_NE(what.find("970"), std::string::npos) << what;
  }
}

TEST(KernelPlanVerify, ReportListsInsertedBarriersAndAliases) {
  PlannedKernel k = lowerWith([] { cases::buildSkippedSyncInterval().tv0->promoteReuse(); },
                              SmemHazards::Conservative);
  EXPECT_NE(k.plan().report_text.find("promoteReuse T0 -> T2"), std::string::npos)
      << k.plan().report_text;
  EXPECT_FALSE(k.plan().report_json.empty());
  EXPECT_NE(k.plan().report_svg.find("<svg"), std::string::npos);
  PlannedKernel a7 = lowerWith([] { cases::buildSmemVectorizationChain(); },
                               SmemHazards::Precise);
  EXPECT_NE(a7.plan().report_text.find("T1 (inner)"), std::string::npos)
      << a7.plan().report_text;
}

TEST(KernelPlanVerify, DeletingAnyPromoteReuseBarrierFailsVerification) {
  std::vector<std::function<void()>> builds = {
      [] { cases::buildNeedsReorderedPush().a->promoteReuse(); },
      [] { cases::buildPromoteReuseMultipleDownstream().tv0->promoteReuse(); },
      [] {
        cases::MultiplePromote c = cases::buildMultiplePromoteReuse();
        c.tv0->promoteReuse();
        c.tv4->promoteReuse();
      },
      [] { cases::buildSkippedSyncInterval().tv0->promoteReuse(); },
      [] { cases::buildTiledGemm(64, 64, 64, 2).c_sub->promoteReuse(); },
  };
  int mutants = 0;
  for (size_t b = 0; b < builds.size(); ++b) {
    for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
      // nvFuser's rule never promotes across a loop's back edge (B2).
      if (b == 4 && allocator == SmemAllocator::Stack) continue;
      PlannedKernel k = lowerWith(builds[b], SmemHazards::Conservative, allocator);
      EXPECT_NO_THROW(verifyKernelSharedMemory(*k.kernel, SmemHazards::Conservative, 232448));
      int inserted = 0;
      for (smelt::testing::KernelMutation& m : smelt::testing::kernelMutations(*k.kernel)) {
        auto* sync = dynamic_cast<const kir::BlockSync*>(m.stmt);
        if (sync == nullptr || !sync->inserted_for_reuse) continue;
        ++inserted;
        m.apply();
        EXPECT_THROW(verifyKernelSharedMemory(*k.kernel, SmemHazards::Conservative, 232448),
                     Error)
            << "build " << b << ": " << m.description << "\n"
            << k.kernel->toString();
        m.undo();
        ++mutants;
      }
      EXPECT_GE(inserted, 1) << "build " << b;
    }
  }
  EXPECT_EQ(mutants, 2 * (1 + 1 + 2 + 1) + 1);
}

}  // namespace
}  // namespace smelt::alloc_reuse
