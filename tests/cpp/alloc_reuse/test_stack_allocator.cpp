#include <gtest/gtest.h>

#include "alloc_reuse/plan_test_util.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {
namespace {

using testing::constantAddresses;
using testing::constantTotal;
using testing::makeBuffer;

TEST(StackAllocator, WithoutSyncsEverythingIsPushedAtTheEnd) {
  std::vector<Buffer> buffers = {makeBuffer("a", 16, 0, 1, 0), makeBuffer("b", 16, 2, 3, 1)};
  AddressPlan plan = planStackAddresses(buffers, {}, 4);
  // Pushed by last read descending: b at the bottom.
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{16, 0}));
  EXPECT_EQ(plan.strategy, "stack");
}

TEST(StackAllocator, SyncWithOnlyLiveWaitingBuffersPopsNothing) {
  std::vector<Buffer> buffers = {makeBuffer("x", 16, 0, 3, 0), makeBuffer("y", 16, 0, 1, 1),
                                 makeBuffer("z", 16, 3, 9, 2), makeBuffer("w", 16, 5, 9, 3)};
  AddressPlan plan = planStackAddresses(buffers, {2, 4}, 10);
  // Sync 2: waiting {x, y}, y dead: push x (0) then y (16); pop y.
  // Sync 4: x is dead, but the waiting set {z} is all live: no pop, so x
  // keeps its bytes. End: push w (later created, ties on last read) then z.
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{0, 16, 32, 16}));
  EXPECT_EQ(constantTotal(plan), 48);
  verifyPlan(buffers, conflictsFromBarriers(buffers, {2, 4}), plan, 1 << 20);
}

TEST(StackAllocator, TiesOnLastReadPutTheLaterCreatedBufferLower) {
  std::vector<Buffer> buffers = {makeBuffer("first", 16, 0, 5, 0), makeBuffer("second", 48, 0, 5, 1)};
  AddressPlan plan = planStackAddresses(buffers, {}, 6);
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{48, 0}));
}

TEST(StackAllocator, FirstWriteAtTheSyncWaitsThroughIt) {
  // "y" is first written by the synchronizing expression at 4: it is in the
  // waiting set when the sync is handled, live, so "x" is not popped there.
  std::vector<Buffer> buffers = {makeBuffer("x", 16, 0, 2, 0), makeBuffer("y", 16, 4, 6, 1)};
  AddressPlan plan = planStackAddresses(buffers, {3, 4}, 7);
  // Sync 3 pushed and popped x; y reuses its bytes.
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{0, 0}));
  AddressPlan late = planStackAddresses(buffers, {4}, 7);
  // Only sync 4: y, first written there, already waits: {x, y} with x dead
  // is pushed (y first), then x is popped.
  EXPECT_EQ(constantAddresses(late), (std::vector<int64_t>{16, 0}));
}

TEST(StackAllocator, AlignsEachPushToTheNewBuffersAlignment) {
  std::vector<Buffer> buffers = {makeBuffer("a", 20, 0, 9, 0), makeBuffer("b", 8, 0, 8, 1, 128),
                                 makeBuffer("c", 4, 0, 7, 2, 4)};
  AddressPlan plan = planStackAddresses(buffers, {}, 10);
  EXPECT_EQ(constantAddresses(plan), (std::vector<int64_t>{0, 128, 136}));
  EXPECT_EQ(constantTotal(plan), 140);
}

TEST(StackAllocator, SymbolicSizesGiveAddressExpressions) {
  IntExpr n = IntExpr::symbol("T2.size[0]");
  std::vector<Buffer> buffers = {makeBuffer("s", n * 4, 0, 9, 0), makeBuffer("t", 24, 1, 5, 1),
                                 makeBuffer("u", 8, 7, 8, 2)};
  AddressPlan plan = planStackAddresses(buffers, {6}, 10);
  // Sync 6: waiting {s, t}, t dead: push s (0) then t; pop t. u lands on s.
  EXPECT_EQ(plan.addresses[0].constant(), 0);
  EXPECT_TRUE(plan.addresses[1].sameAs(alignUp(n * 4, 16)));
  EXPECT_TRUE(plan.addresses[2].sameAs(alignUp(n * 4, 16)));
  EXPECT_EQ(plan.stacked_on, (std::vector<int>{-1, 0, 0}));
  EXPECT_TRUE(plan.symbolic);
  EXPECT_EQ(plan.total_bytes.evaluate({{"T2.size[0]", 3}}), 16 + 24);
  verifyPlan(buffers, conflictsFromBarriers(buffers, {6}), plan, 1 << 20);
}

TEST(StackAllocator, RejectsPositionsAfterTheEnd) {
  std::vector<Buffer> buffers = {makeBuffer("late", 16, 0, 12, 0)};
  EXPECT_THROW(planStackAddresses(buffers, {}, 10), Error);
  EXPECT_THROW(planStackAddresses({}, {11}, 10), Error);
}

}  // namespace
}  // namespace smelt::alloc_reuse
