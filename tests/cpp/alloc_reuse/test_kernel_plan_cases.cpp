// The acceptance cases of shared/cases/smem_cases.md (A1-A9, B1, B2, C1),
// lowered from real fusions through GpuLower: totals, addresses, barrier
// counts and aliases of the plan_shared_memory pass in both hazard modes and
// both allocators. `stack` + `conservative` must give nvFuser's figures; the
// default planner must never be worse and is better where the table says so.
#include <gtest/gtest.h>

#include <tuple>

#include "common/case_corpus.h"
#include "common/planned_kernel.h"
#include "common/smem_case_fusions.h"

namespace smelt::alloc_reuse {
namespace {

using smelt::testing::PlannedKernel;
using smelt::testing::lowerWith;

constexpr SmemHazards kPrecise = SmemHazards::Precise;
constexpr SmemHazards kConservative = SmemHazards::Conservative;
constexpr SmemAllocator kBest = SmemAllocator::Best;
constexpr SmemAllocator kStack = SmemAllocator::Stack;

// ---- A1 SimpleCase ----

TEST(KernelPlanCases, A1UnscheduledConservativeNoReuse) {
  cases::SimpleCase c{};
  auto build = [&] { c = cases::buildSimpleCase(); };
  PlannedKernel stack = lowerWith(build, kConservative, kStack);
  EXPECT_EQ(stack.tensorBytes(), 52);
  EXPECT_EQ(stack.address(c.a), 32);
  EXPECT_EQ(stack.address(c.b), 0);
  EXPECT_EQ(stack.insertedBarriers(), 0);
  PlannedKernel best = lowerWith(build, kConservative, kBest);
  EXPECT_EQ(best.tensorBytes(), 52);
  EXPECT_EQ(best.insertedBarriers(), 0);
}

TEST(KernelPlanCases, A1BlockReductionIsABarrier) {
  cases::SimpleCase c{};
  auto build = [&] {
    c = cases::buildSimpleCase();
    c.sum->axis(0)->parallelize(ParallelType::TIDx);
  };
  for (SmemAllocator allocator : {kStack, kBest}) {
    for (SmemHazards hazards : {kConservative, kPrecise}) {
      PlannedKernel k = lowerWith(build, hazards, allocator);
      EXPECT_EQ(k.tensorBytes(), 24);
      EXPECT_EQ(k.address(c.a), 0);
      EXPECT_EQ(k.address(c.b), 0);
      EXPECT_EQ(k.insertedBarriers(), 0);
      // The barrier before the reduction (thread 0 wrote the Global tv2 that
      // every thread reads) also frees A's bytes for its workspace.
      EXPECT_EQ(k.totalBytes(), 24);
    }
  }
}

TEST(KernelPlanCases, A1PreciseOneThreadReusesWithoutBarrier) {
  cases::SimpleCase c{};
  PlannedKernel k = lowerWith([&] { c = cases::buildSimpleCase(); }, kPrecise);
  EXPECT_EQ(k.tensorBytes(), 24);
  EXPECT_EQ(k.address(c.a), 0);
  EXPECT_EQ(k.address(c.b), 0);
  EXPECT_EQ(k.insertedBarriers(), 0);
}

// ---- A2 NeedsReorderedPush, A3 PromoteReuse ----

TEST(KernelPlanCases, A2NeedsReorderedPush) {
  cases::NeedsReorderedPush c{};
  auto plain = [&] { c = cases::buildNeedsReorderedPush(); };
  PlannedKernel stack = lowerWith(plain, kConservative, kStack);
  EXPECT_EQ(stack.tensorBytes(), 84);
  EXPECT_EQ(stack.address(c.a), 64);
  EXPECT_EQ(stack.address(c.b), 32);
  EXPECT_EQ(stack.address(c.c), 0);
  EXPECT_EQ(lowerWith(plain, kConservative, kBest).tensorBytes(), 84);
  EXPECT_EQ(lowerWith(plain, kPrecise, kBest).tensorBytes(), 56);

  auto reduced = [&] {
    c = cases::buildNeedsReorderedPush();
    c.sum->axis(0)->parallelize(ParallelType::TIDx);
  };
  PlannedKernel stack_reduced = lowerWith(reduced, kConservative, kStack);
  EXPECT_EQ(stack_reduced.tensorBytes(), 56);
  EXPECT_EQ(stack_reduced.address(c.a), 32);
  EXPECT_EQ(stack_reduced.address(c.b), 0);
  EXPECT_EQ(stack_reduced.address(c.c), 32);
  EXPECT_EQ(lowerWith(reduced, kConservative, kBest).tensorBytes(), 56);
}

TEST(KernelPlanCases, A3PromoteReuseInsertsOneBarrierConservatively) {
  cases::NeedsReorderedPush c{};
  auto build = [&] {
    c = cases::buildNeedsReorderedPush();
    c.a->promoteReuse();
  };
  for (SmemAllocator allocator : {kStack, kBest}) {
    PlannedKernel k = lowerWith(build, kConservative, allocator);
    EXPECT_EQ(k.tensorBytes(), 56);
    EXPECT_EQ(k.insertedBarriers(), 1);
    const ReuseBarrier& r = k.plan().reuse_barriers.at(0);
    ASSERT_NE(r.inserted, nullptr);
    EXPECT_EQ(r.next, k.buffer(c.c));
    // After A's last read, before C's first write.
    kir::ProgramPositions pos = kir::numberPositions(k.kernel->body);
    const kir::Buffer* a = k.buffer(c.a);
    const kir::Buffer* cc = k.buffer(c.c);
    size_t ia = 0, ic = 0;
    for (size_t i = 0; i < k.plan().planned.size(); ++i) {
      if (k.plan().planned[i] == a) ia = i;
      if (k.plan().planned[i] == cc) ic = i;
    }
    int64_t at = pos.start.at(r.inserted);
    EXPECT_GT(at, k.plan().buffers[ia].last_read);
    EXPECT_LT(at, k.plan().buffers[ic].first_write);
  }
}

TEST(KernelPlanCases, A3PreciseNeedsNoBarrier) {
  PlannedKernel k = lowerWith(
      [] { cases::buildNeedsReorderedPush().a->promoteReuse(); }, kPrecise);
  EXPECT_EQ(k.tensorBytes(), 56);
  EXPECT_EQ(k.insertedBarriers(), 0);
}

// ---- A4 PromoteReuseMultipleDownstream ----

TEST(KernelPlanCases, A4WithoutPromotionNoReuse) {
  auto build = [] { cases::buildPromoteReuseMultipleDownstream(); };
  EXPECT_EQ(lowerWith(build, kConservative, kStack).tensorBytes(), 108);
  EXPECT_LE(lowerWith(build, kConservative, kBest).tensorBytes(), 108);
}

TEST(KernelPlanCases, A4PromotionBeatsNvFuser) {
  auto build = [] { cases::buildPromoteReuseMultipleDownstream().tv0->promoteReuse(); };
  PlannedKernel stack = lowerWith(build, kConservative, kStack);
  EXPECT_EQ(stack.tensorBytes(), 80);
  EXPECT_EQ(stack.insertedBarriers(), 1);
  PlannedKernel best = lowerWith(build, kConservative, kBest);
  EXPECT_EQ(best.tensorBytes(), 68);
  EXPECT_EQ(best.insertedBarriers(), 1);
  EXPECT_EQ(best.lowerBound(), 68);
}

// ---- A5 MultiplePromoteReuse ----

TEST(KernelPlanCases, A5WithoutPromotionBestPacking) {
  auto build = [] { cases::buildMultiplePromoteReuse(); };
  EXPECT_EQ(lowerWith(build, kConservative, kStack).tensorBytes(), 156);
  EXPECT_EQ(lowerWith(build, kConservative, kBest).tensorBytes(), 148);
}

TEST(KernelPlanCases, A5TwoPromotionsBeatNvFuser) {
  auto build = [] {
    cases::MultiplePromote c = cases::buildMultiplePromoteReuse();
    c.tv0->promoteReuse();
    c.tv4->promoteReuse();
  };
  PlannedKernel stack = lowerWith(build, kConservative, kStack);
  EXPECT_EQ(stack.tensorBytes(), 80);
  EXPECT_EQ(stack.insertedBarriers(), 2);
  PlannedKernel best = lowerWith(build, kConservative, kBest);
  EXPECT_EQ(best.tensorBytes(), 68);
  EXPECT_EQ(best.insertedBarriers(), 2);
  // Only the 8- and 9-float buffers still conflict.
  int conflicts = 0;
  const ConflictGraph& g = best.plan().conflicts;
  for (size_t i = 0; i < g.size(); ++i) conflicts += static_cast<int>(g.neighbors(i).size());
  EXPECT_EQ(conflicts, 2);
}

// ---- A6 SkippedSyncInterval ----

TEST(KernelPlanCases, A6BarrierInsideTrivialThreadLoopBeforeNextNest) {
  cases::SkippedSync c{};
  auto build = [&] {
    c = cases::buildSkippedSyncInterval();
    c.tv0->promoteReuse();
  };
  for (SmemAllocator allocator : {kStack, kBest}) {
    for (SmemHazards hazards : {kConservative, kPrecise}) {
      PlannedKernel k = lowerWith(build, hazards, allocator);
      EXPECT_EQ(k.insertedBarriers(), 1);
      EXPECT_EQ(k.address(c.tv0), 0);
      EXPECT_EQ(k.address(c.tv2), 0);
      EXPECT_EQ(k.tensorBytes(), 960);
      // The barrier is the first statement of a trivial TIDx loop, followed
      // by tv2's (non-trivial) loop nest.
      bool found = false;
      kir::forEachStmt(k.kernel->body, [&](const kir::Stmt* s, int) {
        auto* loop = dynamic_cast<const kir::ForLoop*>(s);
        if (loop == nullptr || loop->body.size() < 2) return;
        auto* sync = dynamic_cast<const kir::BlockSync*>(loop->body[0].get());
        if (sync == nullptr || !sync->inserted_for_reuse) return;
        auto* next = dynamic_cast<const kir::ForLoop*>(loop->body[1].get());
        found = loop->trivial && loop->parallel_type == ParallelType::TIDx && next != nullptr &&
                !next->trivial;
      });
      EXPECT_TRUE(found) << k.kernel->toString();
    }
  }
}

// ---- A7-A9 aliasing ----

TEST(KernelPlanCases, A7SharedAliasAcrossVectorizationFactors) {
  cases::VectorChain c{};
  for (SmemHazards hazards : {kPrecise, kConservative}) {
    PlannedKernel k = lowerWith([&] { c = cases::buildSmemVectorizationChain(); }, hazards);
    EXPECT_EQ(k.aliasOf(c.tv3), k.buffer(c.tv1));
    EXPECT_EQ(k.address(c.tv3), k.address(c.tv1));
    EXPECT_EQ(k.tensorBytes(), 64);
    EXPECT_EQ(k.noReuseBytes(), 128);
  }
}

class A8RegisterAlias : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(A8RegisterAlias, AliasesExactlyWhenNarrowerVectors) {
  auto [vf1, vf2] = GetParam();
  cases::VectorChain c{};
  PlannedKernel k =
      lowerWith([&] { c = cases::buildRegisterVectorizationChain(vf1, vf2); }, kPrecise);
  if (vf2 <= vf1) {
    EXPECT_EQ(k.aliasOf(c.tv3), k.buffer(c.tv1));
  } else {
    EXPECT_EQ(k.aliasOf(c.tv3), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(KernelPlanCases, A8RegisterAlias,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Values(1, 2, 4)));

TEST(KernelPlanCases, A9ExpandBetweenAliases) {
  for (bool concrete : {true, false}) {
    cases::ExpandChain c{};
    PlannedKernel k = lowerWith([&] { c = cases::buildExpandBetweenAliases(concrete); }, kPrecise);
    EXPECT_EQ(k.aliasOf(c.tv3), k.buffer(c.tv1)) << (concrete ? "concrete" : "symbolic");
    ASSERT_TRUE(k.buffer(c.tv3)->address.has_value());
    EXPECT_TRUE(k.buffer(c.tv3)->address->sameAs(*k.buffer(c.tv1)->address));
  }
}

// ---- B1, B2 tiled GEMM ----

TEST(KernelPlanCases, B1TiledGemmReusesOperandTileForEpilogue) {
  cases::TiledGemm c{};
  for (SmemHazards hazards : {kPrecise, kConservative}) {
    PlannedKernel k = lowerWith([&] { c = cases::buildTiledGemm(); }, hazards);
    EXPECT_EQ(k.tensorBytes(), 8192);
    EXPECT_EQ(k.noReuseBytes(), 12288);
    // The K loop's own barrier already follows the operand tiles' last reads.
    EXPECT_EQ(k.insertedBarriers(), 0);
  }
}

TEST(KernelPlanCases, B2BatchLoopAroundGemmKeepsReuse) {
  // Touches are attributed inside the batch loop: the operand tiles die
  // before the epilogue tile is written in every iteration. What the batch
  // loop adds is its back edge: the next iteration's tile loads overwrite
  // Csub's bytes. Precise: Csub aliases Asub, whose loads overwrite only what
  // the same thread read of Csub — no barrier. Conservative: one back-edge
  // barrier, which promoteReuse on Csub inserts; without it no reuse.
  cases::TiledGemm c{};
  PlannedKernel precise = lowerWith([&] { c = cases::buildTiledGemm(64, 64, 64, 3); }, kPrecise);
  EXPECT_EQ(precise.tensorBytes(), 8192);
  EXPECT_EQ(precise.noReuseBytes(), 12288);
  EXPECT_EQ(precise.aliasOf(c.c_sub), precise.buffer(c.a_sub));
  EXPECT_EQ(precise.insertedBarriers(), 0);

  PlannedKernel promoted = lowerWith(
      [&] {
        c = cases::buildTiledGemm(64, 64, 64, 3);
        c.c_sub->promoteReuse();
      },
      kConservative);
  EXPECT_EQ(promoted.tensorBytes(), 8192);
  EXPECT_EQ(promoted.insertedBarriers(), 1);
  EXPECT_NE(promoted.plan().report_text.find("promoteReuse Csub -> Asub (next iteration)"),
            std::string::npos)
      << promoted.plan().report_text;

  PlannedKernel plain =
      lowerWith([&] { c = cases::buildTiledGemm(64, 64, 64, 3); }, kConservative);
  EXPECT_EQ(plain.tensorBytes(), 12288);
  EXPECT_EQ(plain.insertedBarriers(), 0);

  // nvFuser's allocator sees every tile live across the whole batch loop.
  PlannedKernel stack = lowerWith(
      [&] {
        c = cases::buildTiledGemm(64, 64, 64, 3);
        c.c_sub->promoteReuse();
      },
      kConservative, kStack);
  EXPECT_EQ(stack.tensorBytes(), 12288);
  EXPECT_EQ(stack.insertedBarriers(), 0);
}

// ---- B3 as a scheduled fusion (slice-K GEMM) ----

// The three phases are separated by the barriers the kernel needs anyway (the
// K loop's WAR barrier, the RAW barriers before the cross-warp sum and before
// the output reads C_tile), so the planner overlaps them for free: the total
// is the K loop's A_tiles + B_tiles, red_buf and C_tile take their bytes.
TEST(KernelPlanCases, B3SliceKPhasesShareBytes) {
  for (SmemHazards hazards : {kPrecise, kConservative}) {
    cases::SliceKGemm c{};
    PlannedKernel k = lowerWith([&] { c = cases::buildSliceKGemm(); }, hazards);
    const int64_t tile = 4 * 16 * 16 * 4;  // [W, M, k_tile] floats
    EXPECT_EQ(k.noReuseBytes(), tile + tile + tile + 16 * 16 * 4);
    EXPECT_EQ(k.tensorBytes(), 2 * tile);
    EXPECT_EQ(k.lowerBound(), 2 * tile);
    EXPECT_EQ(k.insertedBarriers(), 0);
    EXPECT_EQ(k.address(c.a_tiles) + k.address(c.b_tiles), tile);  // one at 0, one above it
    EXPECT_LT(k.address(c.red_buf), 2 * tile);
    EXPECT_LT(k.address(c.c_tile), 2 * tile);
  }
}


// ---- C1 allocation under block binding ----

TEST(KernelPlanCases, C1BlockSliceAllocation) {
  cases::PersistentSlice c{};
  PlannedKernel k = lowerWith([&] { c = cases::buildPersistentRnnSlice(); }, kPrecise);
  EXPECT_EQ(k.buffer(c.w_shared)->bytes().constant(), 32768);
  EXPECT_EQ(k.tensorBytes(), 32768);
}

// ---- Every case: never worse than the stack allocator, lower bound reached ----

TEST(KernelPlanCases, BestNeverWorseThanStack) {
  for (const cases::CaseKernel& c : cases::caseKernels()) {
    for (SmemHazards hazards : {kPrecise, kConservative}) {
      PlannedKernel best = c.plan(hazards, kBest);
      PlannedKernel stack = c.plan(hazards, kStack);
      EXPECT_LE(best.tensorBytes(), stack.tensorBytes()) << c.name;
      EXPECT_GE(best.totalBytes(), best.lowerBound()) << c.name;
    }
  }
}

// Monotone by construction: on every case kernel with constant sizes, the
// default planner needs no more bytes in Precise mode than in Conservative
// mode, nor there more than nvFuser's stack allocator; at nvFuser's 128 B
// alignment too. The optimal claim holds only with the bound reached or
// without any alias choice.
TEST(KernelPlanCases, PreciseNeverWorseThanConservativeNorThanStack) {
  int checked = 0;
  for (const cases::CaseKernel& c : cases::caseKernels()) {
    for (int64_t alignment : {16, 128}) {
      PlannedKernel precise = c.plan(kPrecise, kBest, alignment);
      PlannedKernel conservative = c.plan(kConservative, kBest, alignment);
      PlannedKernel stack = c.plan(kConservative, kStack, alignment);
      if (precise.totalBytes() < 0 || conservative.totalBytes() < 0 || stack.totalBytes() < 0) {
        continue;  // symbolic sizes
      }
      EXPECT_LE(precise.totalBytes(), conservative.totalBytes()) << c.name << " @" << alignment;
      EXPECT_LE(conservative.tensorBytes(), stack.tensorBytes()) << c.name << " @" << alignment;
      EXPECT_LE(precise.lowerBound(), precise.totalBytes()) << c.name << " @" << alignment;
      // The stack allocator proves nothing: optimal only at the bound.
      EXPECT_EQ(stack.plan().plan.optimal, stack.plan().plan.lower_bound_reached) << c.name;
      for (const PlannedKernel* p : {&precise, &conservative, &stack}) {
        const AddressPlan& plan = p->plan().plan;
        if (plan.optimal && !plan.lower_bound_reached) {
          // Proved by the exhausted search or by the alignment-padded bound.
          bool proved = false;
          for (const PlanAttempt& a : plan.attempts) proved = proved || a.strategy.find("exact") != std::string::npos;
          for (const std::string& n : plan.notes) proved = proved || n.find("alignment padding") != std::string::npos;
          EXPECT_TRUE(proved) << c.name << " " << plan.strategy;
        }
        for (const auto& b : p->kernel->buffers) {
          if (b->memory == MemoryType::Shared) {
            EXPECT_GE(b->alignment, alignment) << c.name;
          }
        }
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

// Where every planned buffer's size is a multiple of its alignment, no
// padding is forced and the plan must reach the lower bound (the most bytes
// live at one program point).
TEST(KernelPlanCases, LowerBoundReachedWhereSizesAreAligned) {
  std::vector<std::string> checked;
  for (const cases::CaseKernel& c : cases::caseKernels()) {
    for (SmemHazards hazards : {kPrecise, kConservative}) {
      cases::CasePlanFigures f = cases::planFigures(c, hazards);
      if (!f.sizes_aligned) continue;
      EXPECT_EQ(f.total_bytes, f.lower_bound) << c.name;
      checked.push_back(c.name);
    }
  }
  // A7, A9, B1, B2, B2_promoted, B3, B3_slice_k, C1, D1, D1_promoted in both modes.
  EXPECT_EQ(checked.size(), 20u) << ::testing::PrintToString(checked);
}

}  // namespace
}  // namespace smelt::alloc_reuse
