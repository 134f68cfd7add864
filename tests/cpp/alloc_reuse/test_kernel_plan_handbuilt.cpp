// Cases B3 and D1 of smem_cases.md as hand-built kernel IR
// (common/handbuilt_case_kernels.h), planned by the same pass GpuLower runs,
// plus a loop back-edge hazard that only kernel IR inside a serial loop can
// show.
#include <gtest/gtest.h>

#include "common/handbuilt_case_kernels.h"
#include "common/planned_kernel.h"

namespace smelt::alloc_reuse {
namespace {

using namespace kir_testing;
using smelt::testing::planHandBuilt;
using smelt::testing::PlannedKernel;

TEST(KernelPlanHandBuilt, D1WithoutPromotionStacksAllThree) {
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    PlannedKernel k = planHandBuilt(cases::buildMatmulEpilogueKernel(false),
                                    SmemHazards::Conservative, allocator);
    EXPECT_EQ(k.totalBytes(), 114688);
    EXPECT_EQ(k.insertedBarriers(), 0);
  }
}

TEST(KernelPlanHandBuilt, D1PromotedOperandsLeaveEpilogueAtZero) {
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    for (SmemHazards hazards : {SmemHazards::Conservative, SmemHazards::Precise}) {
      PlannedKernel k = planHandBuilt(cases::buildMatmulEpilogueKernel(true), hazards, allocator);
      EXPECT_EQ(k.totalBytes(), 65536);
      EXPECT_EQ(k.address("C_s"), 0);
      // One barrier serves both operand tiles.
      EXPECT_EQ(k.insertedBarriers(), 1);
    }
  }
}

// The K loop closes with its WAR barrier, after the tiles' last reads: every
// thread passes it in the final iteration, so the tiles' bytes are free for
// red_buf. The stack allocator only sees the tiles live to the loop's end and
// stacks all four (197,120 B).
TEST(KernelPlanHandBuilt, B3StreamKFitsInTheReductionBuffer) {
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    PlannedKernel k =
        planHandBuilt(cases::buildStreamKKernel(), SmemHazards::Conservative, allocator);
    EXPECT_EQ(k.noReuseBytes(), 199168);
    EXPECT_EQ(k.totalBytes(), allocator == SmemAllocator::Best ? 131072 : 197120);
  }
}

// Two buffers allocated inside a serial loop live again in its next
// iteration: a barrier between them in program order is not enough, the back
// edge needs one too.
TEST(KernelPlanHandBuilt, LoopBackEdgeNeedsItsOwnBarrier) {
  for (bool back_edge_barrier : {false, true}) {
    auto t = std::make_unique<TestKernel>();
    FusionGuard guard(t->fusion.get());
    const Expr* copy = set(makeConcreteTensor({128}))->definition();
    kir::Buffer* x = t->sharedTensor("X", DataType::Float, 128);
    kir::Buffer* y = t->sharedTensor("Y", DataType::Float, 128);
    kir::Buffer* acc = t->local("acc", DataType::Float, 1);
    t->launch(1, 1, 128, 1);
    allocate(t->kernel.body, acc);
    kir::StmtList& thread = loop(t->kernel.body, "threadIdx.x", 128, ParallelType::TIDx)->body;
    kir::StmtList& body = loop(thread, "i0", 4)->body;
    allocate(body, x);
    compute(body, copy, at(x, tx()), {});
    sync(body, "RAW X");
    compute(body, copy, at(acc, 0), {read(x, 127 - tx())});
    sync(body, "between X and Y");
    allocate(body, y);
    compute(body, copy, at(y, tx()), {read(acc, 0)});
    sync(body, "RAW Y");
    compute(body, copy, at(acc, 0), {read(y, 127 - tx())});
    if (back_edge_barrier) sync(body, "back edge");
    PlannedKernel k = planHandBuilt(std::move(t), SmemHazards::Conservative);
    EXPECT_EQ(k.address("X") == k.address("Y"), back_edge_barrier);
    EXPECT_EQ(k.totalBytes(), back_edge_barrier ? 512 : 1024);
  }
}

}  // namespace
}  // namespace smelt::alloc_reuse
