// The baseline planners of the comparison table (baseline_planners.h): exact
// layouts on small buffer sets that show where each loses bytes, the release
// rule under hazard conflicts, and validity (verifyPlan) on random conflict
// graphs and on every case kernel in both hazard modes.
#include "lower/alloc_reuse/baseline_planners.h"

#include <gtest/gtest.h>

#include <random>

#include "alloc_reuse/plan_test_util.h"
#include "common/case_corpus.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::baselines {
namespace {

using alloc_reuse::AddressPlan;
using alloc_reuse::Buffer;
using alloc_reuse::ConflictGraph;
using alloc_reuse::testing::constantAddresses;
using alloc_reuse::testing::constantTotal;
using alloc_reuse::testing::makeBuffer;

constexpr int64_t kNoLimit = int64_t{1} << 40;

void expectValid(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                 const AddressPlan& plan) {
  EXPECT_NO_THROW(alloc_reuse::verifyPlan(buffers, conflicts, plan, kNoLimit));
  EXPECT_GE(constantTotal(plan), plan.lower_bound_bytes);
}

// A dies before B and C are written. The free list hands A's whole 1024-byte
// block to the 256-byte B (no split) and needs a new block for C; linear scan
// puts C next to B inside A's old bytes and reaches the lower bound.
TEST(BaselinePlanners, FreeListWastesTheRestOfAReusedBlock) {
  std::vector<Buffer> buffers = {makeBuffer("A", 1024, 0, 1, 0), makeBuffer("B", 256, 2, 5, 1),
                                 makeBuffer("C", 768, 3, 5, 2)};
  ConflictGraph conflicts = alloc_reuse::conflictsFromIntervals(buffers);

  AddressPlan free_list = planFreeListAddresses(buffers, conflicts);
  EXPECT_EQ(constantAddresses(free_list), (std::vector<int64_t>{0, 0, 1024}));
  EXPECT_EQ(constantTotal(free_list), 1792);
  expectValid(buffers, conflicts, free_list);

  AddressPlan linear = planLinearScanAddresses(buffers, conflicts);
  EXPECT_EQ(constantAddresses(linear), (std::vector<int64_t>{0, 0, 256}));
  EXPECT_EQ(constantTotal(linear), 1024);
  EXPECT_EQ(linear.lower_bound_bytes, 1024);
  EXPECT_TRUE(linear.lower_bound_reached);
  expectValid(buffers, conflicts, linear);
}

// B outlives A, which sat below it: linear scan cannot fit the 512-byte C in
// A's 256 freed bytes and stacks it above B (1024 B). The free list merges
// A's block into a new 512-byte block laid out after B's and reaches the
// lower bound of 768 B, as the default planner does.
TEST(BaselinePlanners, LinearScanLosesToFragmentation) {
  std::vector<Buffer> buffers = {makeBuffer("A", 256, 0, 1, 0), makeBuffer("B", 256, 0, 3, 1),
                                 makeBuffer("C", 512, 2, 3, 2)};
  ConflictGraph conflicts = alloc_reuse::conflictsFromIntervals(buffers);

  AddressPlan linear = planLinearScanAddresses(buffers, conflicts);
  EXPECT_EQ(constantAddresses(linear), (std::vector<int64_t>{0, 256, 512}));
  EXPECT_EQ(constantTotal(linear), 1024);
  expectValid(buffers, conflicts, linear);

  AddressPlan free_list = planFreeListAddresses(buffers, conflicts);
  EXPECT_EQ(constantAddresses(free_list), (std::vector<int64_t>{256, 0, 256}));
  EXPECT_EQ(constantTotal(free_list), 768);
  expectValid(buffers, conflicts, free_list);

  EXPECT_EQ(constantTotal(alloc_reuse::planAddresses(buffers, conflicts)), 768);
}

// A free block more than kMatchRange times the request is not taken.
TEST(BaselinePlanners, FreeListSkipsBlocksBeyondTheMatchRange) {
  std::vector<Buffer> buffers = {makeBuffer("big", 16 * 17, 0, 0, 0),
                                 makeBuffer("small", 16, 1, 1, 1)};
  ConflictGraph conflicts = alloc_reuse::conflictsFromIntervals(buffers);
  AddressPlan free_list = planFreeListAddresses(buffers, conflicts);
  EXPECT_EQ(constantAddresses(free_list), (std::vector<int64_t>{0, 272}));
  expectValid(buffers, conflicts, free_list);
}

// Disjoint intervals with no barrier between them conflict under the
// conservative hazards: neither baseline may reuse A's bytes for B. With a
// barrier in between both do.
TEST(BaselinePlanners, ReleaseWaitsForConflictsNotJustTheLastRead) {
  std::vector<Buffer> buffers = {makeBuffer("A", 512, 0, 1, 0), makeBuffer("B", 512, 3, 4, 1)};
  for (auto plan : {planFreeListAddresses, planLinearScanAddresses}) {
    ConflictGraph no_barrier = alloc_reuse::conflictsFromBarriers(buffers, {});
    AddressPlan unsynced = plan(buffers, no_barrier);
    EXPECT_EQ(constantTotal(unsynced), 1024);
    expectValid(buffers, no_barrier, unsynced);

    ConflictGraph barrier = alloc_reuse::conflictsFromBarriers(buffers, {2});
    AddressPlan synced = plan(buffers, barrier);
    EXPECT_EQ(constantTotal(synced), 512);
    expectValid(buffers, barrier, synced);
  }
}

// Buffer i is released before the first placement after its own and after
// every conflicting buffer's.
TEST(BaselinePlanners, ReleaseOrderFollowsTheLastConflictingPlacement) {
  std::vector<Buffer> buffers = {makeBuffer("A", 16, 0, 0, 0), makeBuffer("B", 16, 1, 1, 1),
                                 makeBuffer("C", 16, 2, 2, 2), makeBuffer("D", 16, 3, 3, 3)};
  ConflictGraph conflicts(4);
  conflicts.addConflict(0, 2);  // A with C although their intervals are disjoint
  std::vector<size_t> order = programOrder(buffers);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
  std::vector<std::vector<size_t>> released = releaseOrder(order, conflicts);
  ASSERT_EQ(released.size(), 5u);
  EXPECT_TRUE(released[0].empty());
  EXPECT_TRUE(released[1].empty());
  EXPECT_EQ(released[2], (std::vector<size_t>{1}));
  EXPECT_EQ(released[3], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(released[4], (std::vector<size_t>{3}));
}

TEST(BaselinePlanners, AddressesHonourAlignment) {
  std::vector<Buffer> buffers = {makeBuffer("small", 16, 0, 0, 0),
                                 makeBuffer("wide", 128, 0, 0, 1, 128)};
  ConflictGraph conflicts = alloc_reuse::conflictsFromIntervals(buffers);
  for (auto plan : {planFreeListAddresses, planLinearScanAddresses}) {
    AddressPlan p = plan(buffers, conflicts);
    EXPECT_EQ(constantAddresses(p), (std::vector<int64_t>{0, 128}));
    expectValid(buffers, conflicts, p);
  }
}

TEST(BaselinePlanners, SymbolicSizeIsAnError) {
  std::vector<Buffer> buffers = {makeBuffer("n_floats", IntExpr::symbol("n") * 4, 0, 0, 0)};
  ConflictGraph conflicts(1);
  EXPECT_THROW(planFreeListAddresses(buffers, conflicts), Error);
  EXPECT_THROW(planLinearScanAddresses(buffers, conflicts), Error);
}

// Arbitrary (not interval-shaped) conflict graphs: the release rule alone
// keeps both baselines valid.
TEST(BaselinePlanners, ValidOnRandomConflictGraphs) {
  std::mt19937_64 rng(7);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = static_cast<size_t>(uniform(1, 24));
    std::vector<Buffer> buffers;
    for (size_t i = 0; i < n; ++i) {
      const int64_t first = uniform(0, 30);
      buffers.push_back(makeBuffer("b" + std::to_string(i), 16 * uniform(0, 64), first,
                                   first + uniform(0, 10), static_cast<int64_t>(i),
                                   int64_t{16} << uniform(0, 3)));
    }
    ConflictGraph conflicts(n);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        if (uniform(0, 2) == 0) conflicts.addConflict(i, j);
      }
    }
    expectValid(buffers, conflicts, planFreeListAddresses(buffers, conflicts));
    expectValid(buffers, conflicts, planLinearScanAddresses(buffers, conflicts));
  }
}

class BaselinesOnCases
    : public ::testing::TestWithParam<std::tuple<cases::CaseKernel, SmemHazards>> {};

// The same buffers and hazard conflicts as the default planner's plan.
TEST_P(BaselinesOnCases, PlansVerifyAndRespectTheLowerBound) {
  const auto& [kernel, hazards] = GetParam();
  smelt::testing::PlannedKernel planned = kernel.plan(hazards);
  const alloc_reuse::SharedMemoryPlan& plan = planned.plan();
  for (auto baseline : {planFreeListAddresses, planLinearScanAddresses}) {
    AddressPlan p = baseline(plan.buffers, plan.conflicts);
    expectValid(plan.buffers, plan.conflicts, p);
    EXPECT_EQ(p.lower_bound_bytes, planned.lowerBound());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, BaselinesOnCases,
    ::testing::Combine(::testing::ValuesIn(cases::caseKernels()),
                       ::testing::Values(SmemHazards::Precise, SmemHazards::Conservative)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + cases::hazardsName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace smelt::baselines
