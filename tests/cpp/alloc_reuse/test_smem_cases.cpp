// The acceptance figures of /work/shared/cases/smem_cases.md (A1-A5, B1, B3)
// in abstract form. Positions follow docs/planning.md §1: every expression of the
// unscheduled fusion is one loop nest of three positions (loop start, the
// expression, loop end); an inserted BlockSync takes a position of its own
// and shifts the ones after it.
#include <gtest/gtest.h>

#include "alloc_reuse/plan_test_util.h"
#include "fusion/device_limits.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {
namespace {

using testing::constantAddresses;
using testing::constantTotal;
using testing::makeBuffer;

const int64_t kSm90 = DeviceLimits::sm90().max_shared_memory_per_block;

struct Outcome {
  AddressPlan best;
  AddressPlan stack;
};

// Plans with both allocators under conservative hazards (barrier-separated
// reuse only) and verifies both plans against the same conflicts.
Outcome planBoth(const std::vector<Buffer>& buffers, const std::vector<int64_t>& syncs,
                 int64_t end) {
  ConflictGraph conflicts = conflictsFromBarriers(buffers, syncs);
  Outcome out{planAddresses(buffers, conflicts), planStackAddresses(buffers, syncs, end)};
  verifyPlan(buffers, conflicts, out.best, kSm90);
  verifyPlan(buffers, conflicts, out.stack, kSm90);
  return out;
}

// A1 SimpleCase: A = tv1 (20 B) written by loop 4-6, read by tv2's loop 7-9;
// tv3 = sum at 10-12 (a block reduction at 11 once TIDx-parallel);
// B = tv5 (24 B) written at 16-18, read by tv6 at 19-21.
std::vector<Buffer> a1Buffers() {
  return {makeBuffer("A", 20, 4, 9, 0), makeBuffer("B", 24, 16, 21, 1)};
}

TEST(SmemCases, A1SimpleCaseWithoutBarrierStacksBoth) {
  Outcome out = planBoth(a1Buffers(), {}, 22);
  EXPECT_EQ(constantTotal(out.stack), 52);
  EXPECT_EQ(constantAddresses(out.stack), (std::vector<int64_t>{32, 0}));
  EXPECT_EQ(constantTotal(out.best), 52);
}

TEST(SmemCases, A1SimpleCaseBlockReductionLetsBReuseA) {
  Outcome out = planBoth(a1Buffers(), {11}, 22);
  EXPECT_EQ(constantTotal(out.stack), 24);
  EXPECT_EQ(constantAddresses(out.stack), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(constantTotal(out.best), 24);
}

TEST(SmemCases, A1PreciseModeReusesWithoutBarrier) {
  // One thread: the hazard analysis lets plain interval overlap decide.
  auto buffers = a1Buffers();
  AddressPlan plan = planAddresses(buffers, conflictsFromIntervals(buffers));
  EXPECT_EQ(constantTotal(plan), 24);
}

// A2 NeedsReorderedPush: A (20 B) [1,6]; B (24 B) written by pad at 4,
// last read by tv6 at 21; C (24 B) written at 16, last read at 24.
std::vector<Buffer> a2Buffers() {
  return {makeBuffer("A", 20, 1, 6, 0), makeBuffer("B", 24, 4, 21, 1),
          makeBuffer("C", 24, 16, 24, 2)};
}

TEST(SmemCases, A2NeedsReorderedPush) {
  Outcome plain = planBoth(a2Buffers(), {}, 25);
  EXPECT_EQ(constantTotal(plain.stack), 84);
  EXPECT_EQ(constantAddresses(plain.stack), (std::vector<int64_t>{64, 32, 0}));
  // The block reduction (tv3 at 11) lets the reordered push put A on top of B.
  Outcome reduced = planBoth(a2Buffers(), {11}, 25);
  EXPECT_EQ(constantTotal(reduced.stack), 56);
  EXPECT_EQ(constantAddresses(reduced.stack), (std::vector<int64_t>{32, 0, 32}));
  EXPECT_LE(constantTotal(reduced.best), 56);
  // Precise mode, one thread: only interval overlap matters.
  auto buffers = a2Buffers();
  EXPECT_EQ(constantTotal(planAddresses(buffers, conflictsFromIntervals(buffers))), 56);
}

TEST(SmemCases, A3PromoteReuseBarrierBeforeCsFirstWrite) {
  // promoteReuse(A): L = 6, next first write F = 16 (C); the BlockSync goes
  // right before position 16, so C moves to 17 and its read to 25.
  std::vector<Buffer> buffers = {makeBuffer("A", 20, 1, 6, 0), makeBuffer("B", 24, 4, 22, 1),
                                 makeBuffer("C", 24, 17, 25, 2)};
  Outcome out = planBoth(buffers, {16}, 26);
  EXPECT_EQ(constantTotal(out.stack), 56);
  EXPECT_EQ(constantTotal(out.best), 56);
}

// A4: tv0 (28 B), tv2 (32 B), tv4 (36 B); each op a 3-position loop nest.
TEST(SmemCases, A4WithoutPromotionNothingIsReused) {
  std::vector<Buffer> buffers = {makeBuffer("T0", 28, 1, 6, 0), makeBuffer("T2", 32, 7, 12, 1),
                                 makeBuffer("T4", 36, 13, 18, 2)};
  Outcome out = planBoth(buffers, {}, 19);
  EXPECT_EQ(constantTotal(out.stack), 108);
  EXPECT_EQ(constantAddresses(out.stack), (std::vector<int64_t>{80, 48, 0}));
  // Without barriers all three conflict; the best packing puts the buffer with
  // the most padding (36 B) on top.
  EXPECT_EQ(constantTotal(out.best), 100);
}

TEST(SmemCases, A4PromoteReuseMultipleDownstream) {
  // promoteReuse(T0): BlockSync inserted at 7, before T2's first write.
  std::vector<Buffer> buffers = {makeBuffer("T0", 28, 1, 6, 0), makeBuffer("T2", 32, 8, 13, 1),
                                 makeBuffer("T4", 36, 14, 19, 2)};
  Outcome out = planBoth(buffers, {7}, 20);
  EXPECT_EQ(constantTotal(out.stack), 80);
  EXPECT_EQ(constantAddresses(out.stack), (std::vector<int64_t>{0, 48, 0}));
  EXPECT_EQ(constantTotal(out.best), 68);
  EXPECT_EQ(constantAddresses(out.best), (std::vector<int64_t>{0, 0, 32}));
  EXPECT_TRUE(out.best.lower_bound_reached);
}

// A5: pads of 28, 32, 36, 40 B, each followed by two negations.
TEST(SmemCases, A5WithoutPromotionAllConflict) {
  std::vector<Buffer> buffers = {makeBuffer("T0", 28, 1, 6, 0), makeBuffer("T2", 32, 10, 15, 1),
                                 makeBuffer("T4", 36, 19, 24, 2), makeBuffer("T6", 40, 28, 33, 3)};
  Outcome out = planBoth(buffers, {}, 37);
  EXPECT_EQ(constantTotal(out.stack), 156);
  EXPECT_EQ(constantAddresses(out.stack), (std::vector<int64_t>{128, 96, 48, 0}));
  EXPECT_EQ(constantTotal(out.best), 148);
}

TEST(SmemCases, A5MultiplePromoteReuse) {
  // promoteReuse(T0) inserts a BlockSync at 10, promoteReuse(T4) one at 29.
  std::vector<Buffer> buffers = {makeBuffer("T0", 28, 1, 6, 0), makeBuffer("T2", 32, 11, 16, 1),
                                 makeBuffer("T4", 36, 20, 25, 2), makeBuffer("T6", 40, 30, 35, 3)};
  std::vector<int64_t> syncs = {10, 29};
  ConflictGraph conflicts = conflictsFromBarriers(buffers, syncs);
  EXPECT_TRUE(conflicts.conflicts(1, 2));
  EXPECT_EQ(conflicts.neighbors(0).size() + conflicts.neighbors(3).size(), 0u);
  Outcome out = planBoth(buffers, syncs, 39);
  EXPECT_EQ(constantTotal(out.stack), 80);
  EXPECT_EQ(constantAddresses(out.stack), (std::vector<int64_t>{0, 48, 0, 0}));
  EXPECT_EQ(constantTotal(out.best), 68);
}

// B1: the K loop (1..7) stages Asub/Bsub with barriers at 4 and 6; Csub is
// written at 9 and read at 10.
TEST(SmemCases, B1TiledGemmEpilogueReusesOperandTiles) {
  std::vector<Buffer> buffers = {makeBuffer("Asub", 4096, 1, 7, 0),
                                 makeBuffer("Bsub", 4096, 1, 7, 1),
                                 makeBuffer("Csub", 4096, 9, 10, 2)};
  Outcome with_barrier = planBoth(buffers, {4, 6, 8}, 11);
  EXPECT_EQ(constantTotal(with_barrier.best), 8192);
  EXPECT_EQ(constantTotal(with_barrier.stack), 8192);
  EXPECT_EQ(with_barrier.best.no_reuse_bytes.constant(), 12288);
  // The barriers inside the loop precede the loop's end: no reuse without 8.
  Outcome without = planBoth(buffers, {4, 6}, 11);
  EXPECT_EQ(constantTotal(without.best), 12288);
  EXPECT_EQ(constantTotal(without.stack), 12288);
}

std::vector<Buffer> b3Buffers() {
  return {makeBuffer("A_tiles", 33280, 1, 10, 0), makeBuffer("B_tiles", 32768, 1, 10, 1),
          makeBuffer("red_buf", 131072, 12, 20, 2), makeBuffer("C_tile", 2048, 22, 25, 3)};
}

TEST(SmemCases, B3StreamKPhasesShareBytes) {
  Outcome out = planBoth(b3Buffers(), {11, 21}, 26);
  EXPECT_EQ(constantTotal(out.best), 131072);
  EXPECT_EQ(out.best.lower_bound_bytes, 131072);
  EXPECT_EQ(out.best.no_reuse_bytes.constant(), 199168);
  EXPECT_EQ(constantTotal(out.stack), 131072);
}

TEST(SmemCases, B3WithoutBarriersNeedsEveryByte) {
  Outcome out = planBoth(b3Buffers(), {}, 26);
  EXPECT_EQ(constantTotal(out.best), 199168);
  EXPECT_EQ(constantTotal(out.stack), 199168);
}

}  // namespace
}  // namespace smelt::alloc_reuse
