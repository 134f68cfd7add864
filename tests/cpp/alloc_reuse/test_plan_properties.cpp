// Seeded random property tests: every plan verifies, never undercuts the
// lower bound, the default planner never loses to nvFuser's stack allocator on
// the same input, the exact search never loses to the heuristics and agrees
// with brute force on tiny sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "alloc_reuse/plan_test_util.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/plan_report.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {
namespace {

using testing::constantTotal;
using testing::makeBuffer;

constexpr int64_t kUnlimited = int64_t{1} << 40;

struct RandomCase {
  std::vector<Buffer> buffers;
  std::vector<int64_t> syncs;
  int64_t end = 0;
};

struct CaseShape {
  size_t min_buffers = 1;
  size_t max_buffers = 12;
  int64_t positions = 40;
  int64_t max_words = 64;  // sizes are 4 * [1, max_words] bytes
  double sync_probability = 0.2;
};

RandomCase randomCase(std::mt19937_64& rng, const CaseShape& shape) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  static const int64_t kAlignments[] = {16, 16, 16, 16, 32, 64, 128};
  RandomCase c;
  const size_t n = static_cast<size_t>(
      uniform(static_cast<int64_t>(shape.min_buffers), static_cast<int64_t>(shape.max_buffers)));
  for (size_t i = 0; i < n; ++i) {
    int64_t first = uniform(0, shape.positions - 1);
    int64_t last = std::min(shape.positions - 1, first + uniform(0, shape.positions / 3));
    c.buffers.push_back(makeBuffer("b" + std::to_string(i), 4 * uniform(1, shape.max_words), first,
                                   last, static_cast<int64_t>(i), kAlignments[uniform(0, 6)]));
  }
  std::bernoulli_distribution sync(shape.sync_probability);
  for (int64_t p = 0; p < shape.positions; ++p) {
    if (sync(rng)) c.syncs.push_back(p);
  }
  c.end = shape.positions;
  return c;
}

// Smallest total over every aligned offset assignment below `limit`.
int64_t bruteForceOptimum(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                          int64_t limit) {
  const size_t n = buffers.size();
  std::vector<int64_t> offset(n, 0);
  int64_t best = limit;
  std::function<void(size_t, int64_t)> place = [&](size_t i, int64_t total) {
    if (total >= best) return;
    if (i == n) {
      best = total;
      return;
    }
    const int64_t size = *buffers[i].bytes.constant();
    for (int64_t o = 0; o + size < best; o += buffers[i].alignment) {
      bool ok = true;
      for (size_t j = 0; j < i && ok; ++j) {
        if (conflicts.conflicts(i, j)) {
          ok = o + size <= offset[j] || offset[j] + *buffers[j].bytes.constant() <= o;
        }
      }
      if (!ok) continue;
      offset[i] = o;
      place(i + 1, std::max(total, o + size));
    }
  };
  place(0, 0);
  return best;
}

TEST(PlanProperties, SmallSetsVerifyBeatTheStackAndRespectTheBound) {
  std::mt19937_64 rng(20240611);
  int exact_improved = 0;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    RandomCase c = randomCase(rng, CaseShape{});
    ConflictGraph conflicts = conflictsFromBarriers(c.buffers, c.syncs);
    AddressPlan best = planAddresses(c.buffers, conflicts);
    AddressPlan stack = planStackAddresses(c.buffers, c.syncs, c.end);
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, best, kUnlimited)) << iteration;
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, stack, kUnlimited)) << iteration;
    ASSERT_GE(constantTotal(best), best.lower_bound_bytes) << iteration;
    ASSERT_LE(constantTotal(best), constantTotal(stack))
        << iteration << "\n" << planReportText(c.buffers, best) << planReportText(c.buffers, stack);
    ASSERT_EQ(best.lower_bound_bytes, stack.lower_bound_bytes) << iteration;

    PlannerOptions heuristic_only;
    heuristic_only.exact_search_max_buffers = 0;
    AddressPlan heuristic = planAddresses(c.buffers, conflicts, heuristic_only);
    ASSERT_LE(constantTotal(best), constantTotal(heuristic)) << iteration;
    if (constantTotal(best) < constantTotal(heuristic)) ++exact_improved;

    // Stops at the first strategy that reaches the bound.
    for (size_t k = 0; k + 1 < best.attempts.size(); ++k) {
      ASSERT_GT(best.attempts[k].total_bytes, best.lower_bound_bytes) << iteration;
    }
    ASSERT_EQ(best.lower_bound_reached, constantTotal(best) == best.lower_bound_bytes);
  }
  RecordProperty("exact_search_improvements", exact_improved);
}

TEST(PlanProperties, ExactSearchMatchesBruteForceOnTinySets) {
  std::mt19937_64 rng(7);
  CaseShape shape;
  shape.max_buffers = 4;
  shape.max_words = 16;
  shape.positions = 10;
  for (int iteration = 0; iteration < 300; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    ConflictGraph conflicts = conflictsFromBarriers(c.buffers, c.syncs);
    AddressPlan plan = planAddresses(c.buffers, conflicts);
    ASSERT_TRUE(plan.optimal) << iteration;
    int64_t optimum = bruteForceOptimum(c.buffers, conflicts, constantTotal(plan) + 1);
    ASSERT_EQ(constantTotal(plan), optimum) << iteration;
    ASSERT_LE(plan.lower_bound_bytes, optimum) << iteration;
  }
}

// Sets whose buffers mostly live briefly around a few long-lived ones: once
// the search has placed the long-lived buffers, the rest fall apart into
// groups that conflict with no other group, and the exact search solves the
// groups one after another. Its proved optima must still be brute force's.
TEST(PlanProperties, ExactSearchOfIndependentGroupsMatchesBruteForce) {
  std::mt19937_64 rng(20261127);
  CaseShape shape;
  shape.min_buffers = 6;
  shape.max_buffers = 7;
  shape.max_words = 12;
  shape.positions = 14;
  shape.sync_probability = 0.0;
  int searched = 0, split = 0;
  for (int iteration = 0; iteration < 600; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    ConflictGraph conflicts = conflictsFromIntervals(c.buffers);
    AddressPlan plan = planAddresses(c.buffers, conflicts);
    ASSERT_TRUE(plan.optimal) << iteration;
    if (plan.strategy.find("exact") != std::string::npos) ++searched;
    for (const std::string& note : plan.notes) {
      if (note.find("exact search:") == 0 && note.find(" 0 split") == std::string::npos) ++split;
    }
    int64_t optimum = bruteForceOptimum(c.buffers, conflicts, constantTotal(plan) + 1);
    ASSERT_EQ(constantTotal(plan), optimum) << iteration << "\n" << planReportText(c.buffers, plan);
  }
  // The heuristics settle most sets; enough of them must reach the search,
  // and split.
  EXPECT_GE(searched, 10);
  EXPECT_GE(split, 5);
  RecordProperty("exact_searches", searched);
  RecordProperty("searches_split", split);
}

TEST(PlanProperties, ArbitraryConflictGraphsVerifyAndBoundHolds) {
  std::mt19937_64 rng(99);
  CaseShape shape;
  shape.max_buffers = 5;
  shape.max_words = 16;
  for (int iteration = 0; iteration < 300; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    ConflictGraph conflicts(c.buffers.size());
    std::bernoulli_distribution edge(0.5);
    for (size_t i = 0; i < c.buffers.size(); ++i) {
      for (size_t j = i + 1; j < c.buffers.size(); ++j) {
        if (edge(rng)) conflicts.addConflict(i, j);
      }
    }
    AddressPlan plan = planAddresses(c.buffers, conflicts);
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, plan, kUnlimited)) << iteration;
    int64_t optimum = bruteForceOptimum(c.buffers, conflicts, constantTotal(plan) + 1);
    ASSERT_EQ(constantTotal(plan), optimum) << iteration;
    ASSERT_LE(plan.lower_bound_bytes, optimum) << iteration;
  }
}

TEST(PlanProperties, LargeSetsVerifyAndBeatTheStack) {
  std::mt19937_64 rng(4242);
  CaseShape shape;
  shape.min_buffers = 20;
  shape.max_buffers = 150;
  shape.positions = 400;
  shape.max_words = 2048;
  shape.sync_probability = 0.05;
  for (int iteration = 0; iteration < 60; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    ConflictGraph conflicts = conflictsFromBarriers(c.buffers, c.syncs);
    AddressPlan best = planAddresses(c.buffers, conflicts);
    AddressPlan stack = planStackAddresses(c.buffers, c.syncs, c.end);
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, best, kUnlimited)) << iteration;
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, stack, kUnlimited)) << iteration;
    ASSERT_GE(constantTotal(best), best.lower_bound_bytes) << iteration;
    ASSERT_LE(constantTotal(best), constantTotal(stack)) << iteration;
  }
}

// Between the exact search's reach and the large sparse sets the heuristics
// alone can lose to the stack allocator on dense inputs; given the stack plan
// as a baseline the planner never does.
TEST(PlanProperties, MidSizeSetsWithTheStackAsBaselineNeverLose) {
  std::mt19937_64 rng(31337);
  CaseShape shape;
  shape.min_buffers = 15;
  shape.max_buffers = 40;
  for (int iteration = 0; iteration < 500; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    ConflictGraph conflicts = conflictsFromBarriers(c.buffers, c.syncs);
    AddressPlan stack = planStackAddresses(c.buffers, c.syncs, c.end);
    PlannerOptions options;
    options.baseline = &stack;
    AddressPlan best = planAddresses(c.buffers, conflicts, options);
    ASSERT_EQ(best.attempts.front().strategy, "baseline:stack");
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, best, kUnlimited)) << iteration;
    ASSERT_LE(constantTotal(best), constantTotal(stack)) << iteration;
    ASSERT_GE(constantTotal(best), best.lower_bound_bytes) << iteration;
  }
}

TEST(PlanProperties, PreciseIntervalConflictsVerify) {
  std::mt19937_64 rng(1);
  CaseShape shape;
  shape.max_buffers = 40;
  for (int iteration = 0; iteration < 300; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    ConflictGraph conflicts = conflictsFromIntervals(c.buffers);
    AddressPlan plan = planAddresses(c.buffers, conflicts);
    ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, plan, kUnlimited)) << iteration;
    ASSERT_GE(constantTotal(plan), plan.lower_bound_bytes) << iteration;
  }
}

// Symbolic plans are proved disjoint by the verifier's stacking argument;
// evaluating them under random sizes must agree.
TEST(PlanProperties, SymbolicPlansAreDisjointForAnySizes) {
  std::mt19937_64 rng(5);
  CaseShape shape;
  shape.max_buffers = 10;
  const std::vector<IntExpr> sizes = {IntExpr::symbol("n") * 4, IntExpr::symbol("m") * 2,
                                      IntExpr::symbol("n") * 4};
  for (int iteration = 0; iteration < 300; ++iteration) {
    RandomCase c = randomCase(rng, shape);
    for (Buffer& b : c.buffers) {
      if (std::bernoulli_distribution(0.4)(rng)) b.bytes = sizes[rng() % sizes.size()];
    }
    ConflictGraph conflicts = conflictsFromBarriers(c.buffers, c.syncs);
    AddressPlan best = planAddresses(c.buffers, conflicts);
    AddressPlan stack = planStackAddresses(c.buffers, c.syncs, c.end);
    for (const AddressPlan* plan : {&best, &stack}) {
      ASSERT_NO_THROW(verifyPlan(c.buffers, conflicts, *plan, kUnlimited)) << iteration;
      std::map<std::string, int64_t> values = {{"n", int64_t(rng() % 50)},
                                               {"m", int64_t(rng() % 50)}};
      const int64_t total = plan->total_bytes.evaluate(values);
      for (size_t i = 0; i < c.buffers.size(); ++i) {
        const int64_t a = plan->addresses[i].evaluate(values);
        const int64_t a_end = a + c.buffers[i].bytes.evaluate(values);
        ASSERT_EQ(a % c.buffers[i].alignment, 0) << iteration;
        ASSERT_LE(a_end, total) << iteration;
        for (size_t j : conflicts.neighbors(i)) {
          const int64_t b = plan->addresses[j].evaluate(values);
          const int64_t b_end = b + c.buffers[j].bytes.evaluate(values);
          const bool empty = a == a_end || b == b_end;
          ASSERT_TRUE(empty || a_end <= b || b_end <= a)
              << iteration << ": " << c.buffers[i].name << " and " << c.buffers[j].name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace smelt::alloc_reuse
