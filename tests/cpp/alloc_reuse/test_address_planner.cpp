#include <gtest/gtest.h>

#include "alloc_reuse/plan_test_util.h"
#include "fusion/device_limits.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {
namespace {

using testing::constantAddresses;
using testing::constantTotal;
using testing::makeBuffer;

const int64_t kSm90 = DeviceLimits::sm90().max_shared_memory_per_block;

AddressPlan planChecked(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                        const PlannerOptions& options = {}) {
  AddressPlan plan = planAddresses(buffers, conflicts, options);
  verifyPlan(buffers, conflicts, plan, kSm90);
  return plan;
}

TEST(AddressPlanner, EmptyInputGivesEmptyPlan) {
  AddressPlan plan = planChecked({}, ConflictGraph(0));
  EXPECT_EQ(constantTotal(plan), 0);
  EXPECT_TRUE(plan.optimal);
}

TEST(AddressPlanner, ShortLivedBuffersShareTheGapAboveALongLivedOne) {
  std::vector<Buffer> buffers = {makeBuffer("long", 64, 0, 10, 0), makeBuffer("early", 32, 0, 2, 1),
                                 makeBuffer("late", 32, 4, 10, 2)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 96);
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{0, 64, 64}));
  EXPECT_EQ(plan.lower_bound_bytes, 96);
  EXPECT_TRUE(plan.lower_bound_reached);
  EXPECT_EQ(plan.no_reuse_bytes.constant(), 128);
}

TEST(AddressPlanner, LargerAlignmentGoesBelow) {
  // A 128-byte-aligned buffer at 0 leaves no padding; on top of the 100-byte
  // buffer it would start at 128.
  std::vector<Buffer> buffers = {makeBuffer("x", 100, 0, 4, 0),
                                 makeBuffer("tma", 64, 0, 4, 1, /*alignment=*/128)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 164);
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{64, 0}));
}

TEST(AddressPlanner, EveryAddressHonoursItsAlignment) {
  std::vector<Buffer> buffers = {makeBuffer("a", 20, 0, 9, 0, 16), makeBuffer("b", 36, 0, 9, 1, 32),
                                 makeBuffer("c", 12, 0, 9, 2, 64), makeBuffer("d", 4, 0, 9, 3, 256)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  auto addresses = constantAddresses(plan);
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(addresses[i] % buffers[i].alignment, 0) << buffers[i].name;
  }
  EXPECT_GE(constantTotal(plan), plan.lower_bound_bytes);
}

TEST(AddressPlanner, ExplicitConflictsBeyondIntervalsAreRespected) {
  // Disjoint in time but not separated by a barrier: the caller says conflict.
  std::vector<Buffer> buffers = {makeBuffer("x", 64, 0, 1, 0), makeBuffer("y", 64, 2, 3, 1)};
  ConflictGraph conflicts(2);
  conflicts.addConflict(0, 1);
  AddressPlan plan = planChecked(buffers, conflicts);
  EXPECT_EQ(constantTotal(plan), 128);
  EXPECT_EQ(plan.lower_bound_bytes, 128);
}

TEST(AddressPlanner, LowerBoundIsMaxLiveBytesForIntervals) {
  std::vector<Buffer> buffers = {makeBuffer("a", 100, 0, 5, 0), makeBuffer("b", 50, 3, 8, 1),
                                 makeBuffer("c", 70, 6, 9, 2), makeBuffer("d", 10, 9, 9, 3)};
  // Live sets: {a,b}=150 at 3..5, {b,c}=120 at 6..8, {c,d}=80 at 9.
  EXPECT_EQ(lowerBoundBytes(buffers, conflictsFromIntervals(buffers)), 150);
}

TEST(AddressPlanner, LowerBoundOfGeneralConflictsIsAClique) {
  // A 4-cycle a-b-c-d-a: the heaviest clique is an edge, not the whole cycle.
  std::vector<Buffer> buffers = {makeBuffer("a", 10, 0, 0, 0), makeBuffer("b", 20, 1, 1, 1),
                                 makeBuffer("c", 30, 2, 2, 2), makeBuffer("d", 40, 3, 3, 3)};
  ConflictGraph conflicts(4);
  conflicts.addConflict(0, 1);
  conflicts.addConflict(1, 2);
  conflicts.addConflict(2, 3);
  conflicts.addConflict(3, 0);
  EXPECT_EQ(lowerBoundBytes(buffers, conflicts), 70);
}

TEST(AddressPlanner, StopsAtTheLowerBound) {
  std::vector<Buffer> buffers = {makeBuffer("a", 64, 0, 3, 0), makeBuffer("b", 64, 4, 7, 1)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  ASSERT_EQ(plan.attempts.size(), 1u);
  EXPECT_EQ(plan.attempts[0].total_bytes, 64);
  EXPECT_TRUE(plan.optimal);
}

// Every greedy ordering ends at 224 B; the exact search places the six
// buffers at the max-live bound (t=3: b, a, f; t=5: b, a, e; t=6: b, c, e).
std::vector<Buffer> greedyMissesTheBound() {
  return {makeBuffer("a", 48, 3, 5, 0), makeBuffer("b", 64, 3, 6, 1), makeBuffer("c", 96, 6, 6, 2),
          makeBuffer("d", 80, 0, 2, 3), makeBuffer("e", 48, 5, 6, 4), makeBuffer("f", 96, 2, 3, 5)};
}

TEST(AddressPlanner, ExactSearchReachesTheBoundTheHeuristicsMiss) {
  const std::vector<Buffer> buffers = greedyMissesTheBound();
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 208);
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{64, 0, 64, 0, 160, 112}));
  EXPECT_EQ(plan.lower_bound_bytes, 208);
  EXPECT_TRUE(plan.lower_bound_reached);
  EXPECT_TRUE(plan.optimal);
  EXPECT_EQ(planStatusName(plan), "bound reached");
  EXPECT_EQ(plan.strategy, "exact");
  for (const PlanAttempt& attempt : plan.attempts) {
    if (attempt.strategy != "exact") {
      EXPECT_GE(attempt.total_bytes, 224) << attempt.strategy;
    }
  }
}

TEST(AddressPlanner, ExactSearchCanBeDisabled) {
  const std::vector<Buffer> buffers = greedyMissesTheBound();
  PlannerOptions options;
  options.exact_search_max_buffers = 0;
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers), options);
  for (const PlanAttempt& attempt : plan.attempts) EXPECT_NE(attempt.strategy, "exact");
  EXPECT_EQ(constantTotal(plan), 224);
  EXPECT_FALSE(plan.optimal);
  EXPECT_EQ(planStatusName(plan), "heuristic");
}

TEST(AddressPlanner, AlignmentPaddingProvesAnOptimumAboveMaxLive) {
  // Pairwise conflicting, 16-byte aligned: every buffer under another takes
  // its size rounded up to 16 B, so no layout is below 32 + 32 + 36 = 100 B
  // (max live: 96 B); a greedy layout reaches it, no search needed.
  std::vector<Buffer> buffers = {makeBuffer("a", 28, 0, 5, 0), makeBuffer("b", 32, 0, 5, 1),
                                 makeBuffer("c", 36, 0, 5, 2)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 100);
  EXPECT_EQ(plan.lower_bound_bytes, 96);
  EXPECT_FALSE(plan.lower_bound_reached);
  EXPECT_TRUE(plan.optimal);
  EXPECT_EQ(planStatusName(plan), "optimal");
  for (const PlanAttempt& attempt : plan.attempts) EXPECT_NE(attempt.strategy, "exact");
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("no layout is below 100 B"), std::string::npos) << plan.notes[0];
}

TEST(AddressPlanner, MixedAlignmentsProveTheOptimumAboveMaxLive) {
  // Pairwise conflicting: y and z need 128-byte-aligned starts and x (100 B)
  // does not fit between them, so the lowest stack of the three is y at 0, z
  // at 128, x on top: 292 B (max live 228 B). The section's bound says so;
  // no search is needed to prove the greedy layout optimal.
  std::vector<Buffer> buffers = {makeBuffer("x", 100, 0, 5, 0), makeBuffer("y", 64, 0, 5, 1, 128),
                                 makeBuffer("z", 64, 0, 5, 2, 128)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 292);
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{192, 0, 128}));
  EXPECT_EQ(plan.lower_bound_bytes, 228);
  EXPECT_FALSE(plan.lower_bound_reached);
  EXPECT_TRUE(plan.optimal);
  EXPECT_EQ(planStatusName(plan), "optimal");
  for (const PlanAttempt& attempt : plan.attempts) EXPECT_EQ(attempt.strategy.find("exact"), std::string::npos);
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("no layout is below 292 B"), std::string::npos) << plan.notes[0];
}

// Five 32-byte buffers in a cycle of conflicts (not interval conflicts): the
// largest clique is two buffers (64 B), but an odd cycle needs three slots,
// so the optimum is 96 B, which only the exhausted search proves.
std::vector<Buffer> oddCycle(ConflictGraph& conflicts) {
  std::vector<Buffer> buffers;
  for (int i = 0; i < 5; ++i) buffers.push_back(makeBuffer("c" + std::to_string(i), 32, 0, 5, i));
  conflicts = ConflictGraph(5);
  for (size_t i = 0; i < 5; ++i) conflicts.addConflict(i, (i + 1) % 5);
  return buffers;
}

TEST(AddressPlanner, ExactSearchProvesTheOptimumAboveAnInfeasibleBound) {
  ConflictGraph conflicts;
  const std::vector<Buffer> buffers = oddCycle(conflicts);
  AddressPlan plan = planChecked(buffers, conflicts);
  EXPECT_EQ(constantTotal(plan), 96);
  EXPECT_EQ(plan.lower_bound_bytes, 64);
  EXPECT_FALSE(plan.lower_bound_reached);
  EXPECT_TRUE(plan.optimal);
  EXPECT_EQ(planStatusName(plan), "optimal");
  EXPECT_EQ(plan.attempts.back().strategy, "exact");
}

TEST(AddressPlanner, SearchOutOfBudgetIsReportedHeuristic) {
  ConflictGraph conflicts;
  const std::vector<Buffer> buffers = oddCycle(conflicts);
  PlannerOptions options;
  options.exact_search_node_budget = 2;
  AddressPlan plan = planChecked(buffers, conflicts, options);
  EXPECT_EQ(constantTotal(plan), 96);  // found, but not proved
  EXPECT_FALSE(plan.optimal);
  EXPECT_EQ(planStatusName(plan), "heuristic");
  EXPECT_EQ(plan.attempts.back().strategy, "exact (budget spent)");
}

TEST(AddressPlanner, EmptyBuffersStayAtZero) {
  std::vector<Buffer> buffers = {makeBuffer("a", 64, 0, 5, 0), makeBuffer("empty", 0, 0, 5, 1, 128),
                                 makeBuffer("b", 48, 2, 7, 2)};
  AddressPlan plan = planChecked(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 112);
  EXPECT_EQ(plan.addresses[1].constant(), 0);
  EXPECT_TRUE(plan.lower_bound_reached);
}

TEST(AddressPlanner, SymbolicSizesStackAboveTheConstantRegion) {
  IntExpr n = IntExpr::symbol("T0.size[0]");
  IntExpr m = IntExpr::symbol("T1.size[0]");
  std::vector<Buffer> buffers = {makeBuffer("k", 40, 0, 9, 0), makeBuffer("s1", n * 4, 1, 3, 1),
                                 makeBuffer("s2", n * 4, 5, 7, 2),
                                 makeBuffer("s3", m * 2, 2, 6, 3)};
  ConflictGraph conflicts = conflictsFromIntervals(buffers);
  AddressPlan plan = planChecked(buffers, conflicts);
  EXPECT_TRUE(plan.symbolic);
  EXPECT_FALSE(plan.notes.empty());
  EXPECT_EQ(plan.addresses[0].constant(), 0);
  EXPECT_EQ(plan.addresses[1].constant(), 48);  // alignUp(40, 16)
  EXPECT_TRUE(plan.addresses[2].sameAs(plan.addresses[1]));  // same size, disjoint in time
  EXPECT_EQ(plan.stacked_on[3], 1);
  EXPECT_TRUE(plan.addresses[3].sameAs(alignUp(IntExpr(48) + n * 4, 16)));
  std::map<std::string, int64_t> values = {{"T0.size[0]", 5}, {"T1.size[0]", 7}};
  EXPECT_EQ(plan.total_bytes.evaluate(values), 48 + 32 + 14);
  EXPECT_EQ(plan.no_reuse_bytes.evaluate(values), 48 + 32 + 32 + 14);
}

TEST(AddressPlanner, BaselinePlanIsKeptWhenNothingBeatsIt) {
  std::vector<Buffer> buffers = {makeBuffer("a", 28, 0, 5, 0), makeBuffer("b", 32, 0, 5, 1),
                                 makeBuffer("c", 36, 0, 5, 2)};
  ConflictGraph conflicts = conflictsFromIntervals(buffers);
  AddressPlan baseline = planAddresses(buffers, conflicts);
  baseline.strategy = "hand";
  PlannerOptions options;
  options.baseline = &baseline;
  AddressPlan plan = planChecked(buffers, conflicts, options);
  EXPECT_EQ(plan.strategy, "baseline:hand");
  EXPECT_EQ(constantTotal(plan), 100);
}

TEST(AddressPlanner, InvalidBaselineIsRejected) {
  std::vector<Buffer> buffers = {makeBuffer("a", 32, 0, 5, 0), makeBuffer("b", 32, 0, 5, 1)};
  ConflictGraph conflicts = conflictsFromIntervals(buffers);
  AddressPlan baseline = planAddresses(buffers, conflicts);
  baseline.addresses = {IntExpr(0), IntExpr(0)};
  PlannerOptions options;
  options.baseline = &baseline;
  EXPECT_THROW(planAddresses(buffers, conflicts, options), Error);
}

TEST(AddressPlanner, RejectsAlignmentThatIsNotAPowerOfTwo) {
  std::vector<Buffer> buffers = {makeBuffer("odd_tile", 64, 0, 1, 0, /*alignment=*/24)};
  try {
    planAddresses(buffers, ConflictGraph(1));
    FAIL() << "expected smelt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("odd_tile"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos) << e.what();
  }
}

TEST(AddressPlanner, RejectsMismatchedConflictGraph) {
  std::vector<Buffer> buffers = {makeBuffer("a", 64, 0, 1, 0)};
  EXPECT_THROW(planAddresses(buffers, ConflictGraph(2)), Error);
}

TEST(ConflictGraph, IsSymmetricAndRefusesSelfConflicts) {
  ConflictGraph g(70);
  g.addConflict(3, 68);
  EXPECT_TRUE(g.conflicts(68, 3));
  EXPECT_FALSE(g.conflicts(3, 4));
  EXPECT_EQ(g.neighbors(3), (std::vector<size_t>{68}));
  EXPECT_THROW(g.addConflict(5, 5), Error);
  EXPECT_THROW(g.conflicts(0, 70), Error);
}

TEST(ConflictGraph, BarrierAtTheLastReadSeparates) {
  // x is read at 5 by a block reduction that synchronizes at 5.
  std::vector<Buffer> buffers = {makeBuffer("x", 16, 0, 5, 0), makeBuffer("y", 16, 6, 8, 1),
                                 makeBuffer("z", 16, 5, 8, 2)};
  ConflictGraph g = conflictsFromBarriers(buffers, {5});
  EXPECT_FALSE(g.conflicts(0, 1));
  EXPECT_TRUE(g.conflicts(0, 2));  // first write at the barrier itself
  EXPECT_EQ(barrierAfterLastRead(6, {2, 5, 9}, 100), 9);
  EXPECT_EQ(barrierAfterLastRead(10, {2, 5, 9}, 100), 100);
}

}  // namespace
}  // namespace smelt::alloc_reuse
