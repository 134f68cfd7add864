// Lowering: golden kernel IR for small schedules, trivial-loop flags,
// allocation sizes, barrier placement, errors, and the acceptance-case fusions.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "common/smem_case_fusions.h"
#include "common/small_schedules.h"
#include "common/expect_error.h"
#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "lower/lower.h"
#include "lower/passes.h"
#include "lower/sync_analysis.h"

namespace smelt {
namespace {

// Lowers the active fusion and returns its kernel IR text.
std::string lowered(Fusion& fusion, LowerOptions options = {}) {
  GpuLower lower(&fusion, options);
  return lower.run().toString();
}

const kir::Buffer* bufferNamed(const kir::Kernel& kernel, const std::string& name) {
  for (const auto& b : kernel.buffers) {
    if (b->name == name) return b.get();
  }
  return nullptr;
}

std::vector<std::string> syncReasons(const kir::Kernel& kernel) {
  std::vector<std::string> reasons;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    if (auto* sync = dynamic_cast<const kir::BlockSync*>(s)) reasons.push_back(sync->reason);
  });
  return reasons;
}

TEST(LoweringGolden, PointwiseWithNonDivisibleSplit) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPointwiseNonDivisible();
  EXPECT_EQ(lowered(fusion),
            "0: for blockIdx.x in 0..8 (BIDx) trivial\n"
            "1:   for threadIdx.x in 0..128 (TIDx) trivial\n"
            "2:     alloc T2 Local float[1]\n"
            "3:     if ((((blockIdx.x * 128) + threadIdx.x) / 100) < 10) T2[0] = add(T0[((blockIdx.x * 128) + threadIdx.x)], T1[((blockIdx.x * 128) + threadIdx.x)])\n"
            "4:     if ((((blockIdx.x * 128) + threadIdx.x) / 100) < 10) T3[((blockIdx.x * 128) + threadIdx.x)] = relu(T2[0])\n");
}

TEST(LoweringGolden, InnerReductionWithBlockReduce) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildRowSumBlockReduce();
  EXPECT_EQ(lowered(fusion),
            "0: for blockIdx.x in 0..8 (BIDx) trivial\n"
            "1:   alloc T2 Local float[1]\n"
            "2:   T2[0] = 0.0\n"
            "3:   for i0 in 0..4\n"
            "4:     for threadIdx.x in 0..128 (TIDx) trivial\n"
            "5:       if (((i0 * 128) + threadIdx.x) < 500) T2[0] = sum(T2[0], T0[((blockIdx.x * 500) + ((i0 * 128) + threadIdx.x))])\n"
            "6:   end for i0\n"
            "7:   T2[0] = block_sum<TIDx>(T2[0])\n"
            "8:   if (threadIdx.x == 0) T1[blockIdx.x] = set(T2[0])\n");
}

TEST(LoweringGolden, OuterReductionAcrossThreads) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildOuterReduction();
  EXPECT_EQ(lowered(fusion),
            "0: T1[threadIdx.x] = 0.0\n"
            "1: for i0 in 0..64\n"
            "2:   for threadIdx.x in 0..32 (TIDx) trivial\n"
            "3:     T1[threadIdx.x] = sum(T1[threadIdx.x], T0[((i0 * 32) + threadIdx.x)])\n"
            "4: end for i0\n");
}

TEST(LoweringGolden, BroadcastAndPad) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildBroadcastAndPad();
  EXPECT_EQ(lowered(fusion),
            "0: for i0 in 0..4\n"
            "1:   alloc T1 Local float[1]\n"
            "2:   T1[0] = 0.0\n"
            "3:   for i1 in 0..6\n"
            "4:     T1[0] = sum(T1[0], T0[((i0 * 6) + i1)])\n"
            "5:   end for i1\n"
            "6:   for i2 in 0..8\n"
            "7:     alloc T3 Local float[1]\n"
            "8:     T3[0] = pad((i2 >= 1 && i2 < 7 ? T0[((i0 * 6) + (i2 - 1))] : 2.0))\n"
            "9:     alloc T2 Local float[1]\n"
            "10:     T2[0] = broadcast(T1[0])\n"
            "11:     T4[((i0 * 8) + i2)] = add(T3[0], T2[0])\n"
            "12:   end for i2\n"
            "13: end for i0\n");
}

TEST(LoweringGolden, TiledCopyWithTransposedRead) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSmemTranspose();
  EXPECT_EQ(lowered(fusion),
            "0: alloc T1 Shared float[1024]\n"
            "1: for threadIdx.y in 0..32 (TIDy) trivial\n"
            "2:   for threadIdx.x in 0..32 (TIDx) trivial\n"
            "3:     T1[((threadIdx.y * 32) + threadIdx.x)] = set(T0[((threadIdx.y * 32) + threadIdx.x)])\n"
            "4: __syncthreads()  // RAW T1\n"
            "5: for threadIdx.y in 0..32 (TIDy) trivial\n"
            "6:   for threadIdx.x in 0..32 (TIDx) trivial\n"
            "7:     T2[((threadIdx.x * 32) + threadIdx.y)] = set(T1[((threadIdx.x * 32) + threadIdx.y)])\n");
}

TEST(LoweringLoops, TrivialFlags) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({4, 64, 8});
  fusion.addInput(a);
  TensorView* b = set(a);
  fusion.addOutput(b);
  b->split(2, 4);  // [4, 64, 2, 4]
  b->axis(0)->parallelize(ParallelType::BIDx);
  b->axis(1)->parallelize(ParallelType::TIDx);
  b->axis(3)->parallelize(ParallelType::Vectorize);
  TensorView* one = set(makeConcreteTensor({1, 3}));
  fusion.addOutput(one);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  std::vector<std::pair<std::string, bool>> flags;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    if (auto* loop = dynamic_cast<const kir::ForLoop*>(s)) {
      flags.push_back({loop->index + "/" + loop->extent.toString(), loop->trivial});
    }
  });
  std::vector<std::pair<std::string, bool>> expected = {
      {"blockIdx.x/4", true}, {"threadIdx.x/64", true}, {"i0/2", false},
      {"i1/4", true},         {"i2/1", true},           {"i3/3", false}};
  EXPECT_EQ(flags, expected);
}

TEST(LoweringAllocation, BlockBoundSliceOfCaseC1) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPersistentRnnSlice();
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  const kir::Buffer* w_s = bufferNamed(kernel, "w_s");
  const kir::Buffer* w_l = bufferNamed(kernel, "w_l");
  ASSERT_NE(w_s, nullptr);
  ASSERT_NE(w_l, nullptr);
  EXPECT_EQ(w_s->bytes().constant(), 32768);  // 256/8 x 256 x 4, not 262144
  EXPECT_EQ(w_l->bytes().constant(), 128);    // thread-bound columns excluded too
  EXPECT_EQ(kernel.launch.grid[0].constant(), 8);
  EXPECT_EQ(kernel.launch.block[0].constant(), 256);
}

TEST(LoweringAllocation, ComputeAtPositionsShrinkBuffers) {
  for (int64_t pos : {0, 1, 2}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({6, 10});
    fusion.addInput(a);
    TensorView* t = neg(a);
    TensorView* s = t->setMemoryType(MemoryType::Shared);
    TensorView* l = exp(t);
    TensorView* out = set(l);
    fusion.addOutput(out);
    s->computeAt(out, pos);
    GpuLower lower(&fusion);
    const kir::Kernel& kernel = lower.run();
    int64_t expected = pos == 0 ? 60 : pos == 1 ? 10 : 1;
    EXPECT_EQ(bufferNamed(kernel, s->name())->elements.constant(), expected) << "pos " << pos;
    EXPECT_EQ(bufferNamed(kernel, l->name())->elements.constant(), expected) << "pos " << pos;
  }
}

TEST(LoweringSyncs, TransposeHasExactlyOneRawBarrier) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSmemTranspose();
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  EXPECT_EQ(syncReasons(kernel), std::vector<std::string>{"RAW T1"});
}

TEST(LoweringSyncs, KLoopStagingGetsRawAndWarBarriers) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm();
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  // One RAW barrier serves both tiles: it sits after the Bsub copy, just
  // before the inner K loop reads either tile.
  EXPECT_EQ(syncReasons(kernel), (std::vector<std::string>{"RAW Asub", "WAR Asub"}));
  // The WAR barrier is the last statement of the K loop body.
  bool war_ends_k_loop = false;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(s);
    if (loop == nullptr || loop->trivial || loop->body.empty()) return;
    auto* last = dynamic_cast<const kir::BlockSync*>(loop->body.back().get());
    if (last != nullptr && last->reason == "WAR Asub") war_ends_k_loop = true;
  });
  EXPECT_TRUE(war_ends_k_loop);
}

// B3's slice-K GEMM: one RAW barrier per K step for both tiles and one WAR
// barrier closing the step, then one RAW barrier before the cross-warp sum
// reads red_buf and one before the output reads C_tile transposed. The K
// loop is the only loop the kernel keeps; the thread loops are trivial.
TEST(LoweringSyncs, SliceKGemmSeparatesItsPhases) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSliceKGemm();
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  EXPECT_EQ(syncReasons(kernel), (std::vector<std::string>{"RAW A_tiles", "WAR A_tiles",
                                                           "RAW red_buf", "RAW C_tile"}));
  std::vector<int64_t> serial_extents;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(s);
    if (loop != nullptr && !loop->trivial) serial_extents.push_back(*loop->extent.constant());
  });
  // K steps (32 / 16), the k_tile loop inside, the slices of the cross-warp sum.
  EXPECT_EQ(serial_extents, (std::vector<int64_t>{2, 16, 4}));
  EXPECT_NE(kernel.summary().find("block(16, 16, 4)"), std::string::npos) << kernel.summary();
}

TEST(LoweringSyncs, ThreadPrivateChainNeedsNone) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({128});
  fusion.addInput(a);
  TensorView* s1 = neg(a)->setMemoryType(MemoryType::Shared);
  TensorView* s2 = exp(s1)->setMemoryType(MemoryType::Shared);
  TensorView* out = set(s2);
  fusion.addOutput(out);
  for (TensorView* tv : {s1, s2, out}) tv->axis(0)->parallelize(ParallelType::TIDx);
  GpuLower lower(&fusion);
  EXPECT_TRUE(syncReasons(lower.run()).empty());
}

// Case A1 with its sum on TIDx: thread 0 writes the Global output tv2 that
// every thread then reads in the block reduction; Global memory is shared by
// the block like Shared memory, so the read needs a RAW barrier.
TEST(LoweringSyncs, GlobalOutputReadByOtherThreadsGetsRawBarrier) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSimpleCase().sum->axis(0)->parallelize(ParallelType::TIDx);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  EXPECT_EQ(syncReasons(kernel), std::vector<std::string>{"RAW T2"});
  // Right before the (trivial) thread loop of the block reduction. The
  // reduction's own output needs none: every thread holds the result.
  bool before_reduction = false;
  for (size_t i = 0; i + 1 < kernel.body.size(); ++i) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(kernel.body[i + 1].get());
    before_reduction = before_reduction ||
                       (kernel.body[i]->kind() == kir::StmtKind::BlockSync && loop != nullptr &&
                        loop->body[0]->kind() == kir::StmtKind::BlockReduce);
  }
  EXPECT_TRUE(before_reduction) << kernel.toString();
}

TEST(LoweringErrors, InconsistentParallelizationAcrossComputeAt) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({8, 8});
  fusion.addInput(a);
  TensorView* b = neg(a);
  TensorView* c = exp(b);
  fusion.addOutput(c);
  b->computeAt(c, 1);
  c->axis(0)->parallelize(ParallelType::BIDx);
  b->axis(0)->parallelize(ParallelType::TIDx);
  GpuLower lower(&fusion);
  EXPECT_SMELT_ERROR(lower.run(), "tensor T1", "axis 0", "is TIDx", "T2 axis 0", "BIDx");
}

TEST(LoweringErrors, ConsumerRescheduledAfterComputeAt) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({8, 8});
  fusion.addInput(a);
  TensorView* b = neg(a);
  TensorView* c = exp(b);
  fusion.addOutput(c);
  b->computeAt(c, 2);
  c->split(0, 4);
  GpuLower lower(&fusion);
  EXPECT_SMELT_ERROR(lower.run(), "tensor T1", "computed at position 2", "re-scheduled");
}

TEST(LoweringErrors, SharedTensorOverTheLimit) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({128, 128});
  fusion.addInput(a);
  TensorView* s = set(a)->setMemoryType(MemoryType::Shared);
  fusion.addOutput(set(s));
  LowerOptions static_only;
  static_only.max_shared_memory_bytes = 48 * 1024;  // no dynamic shared memory
  GpuLower lower(&fusion, static_only);
  EXPECT_SMELT_ERROR(lower.run(), "Shared tensor T1", "65536 B", "49152 B");
}

TEST(LoweringErrors, SymbolicRegisterBufferAndGridReduction) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(1);
    fusion.addInput(a);
    fusion.addOutput(set(neg(a)));
    GpuLower lower(&fusion);
    EXPECT_SMELT_ERROR(lower.run(), "Local tensor T1", "T0.size[0]", "constant size");
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({1024});
    fusion.addInput(a);
    TensorView* s = sum(a, {0});
    fusion.addOutput(s);
    s->split(0, 128)->axis(0)->parallelize(ParallelType::BIDx);
    GpuLower lower(&fusion);
    EXPECT_SMELT_ERROR(lower.run(), "tensor T1", "axis 0", "reduction bound to BIDx",
                       "grid reductions");
  }
}

// Every acceptance case lowers, with the shared buffers and sizes it describes.
TEST(LoweringCases, SharedBuffersMatchTheCaseTable) {
  struct Expectation {
    const char* name;
    std::function<void()> build;
    std::vector<std::pair<std::string, int64_t>> shared;  // name, bytes
  };
  std::vector<Expectation> table = {
      {"A1", [] { cases::buildSimpleCase(); }, {{"T1", 20}, {"T5", 24}}},
      {"A2", [] { cases::buildNeedsReorderedPush(); }, {{"T0", 20}, {"T1", 24}, {"T5", 24}}},
      {"A4", [] { cases::buildPromoteReuseMultipleDownstream(); },
       {{"T0", 28}, {"T2", 32}, {"T4", 36}}},
      {"A5", [] { cases::buildMultiplePromoteReuse(); },
       {{"T0", 28}, {"T3", 32}, {"T6", 36}, {"T9", 40}}},
      {"A6", [] { cases::buildSkippedSyncInterval(); }, {{"T0", 20}, {"T2", 960}}},
      {"A7", [] { cases::buildSmemVectorizationChain(); }, {{"T1", 64}, {"T3", 64}}},
      {"A9", [] { cases::buildExpandBetweenAliases(true); },
       {{"T1", 16}, {"T2", 16}, {"T3", 16}}},
      {"B1", [] { cases::buildTiledGemm(); }, {{"Asub", 4096}, {"Bsub", 4096}, {"Csub", 4096}}},
      {"B2", [] { cases::buildTiledGemm(64, 64, 64, 2); },
       {{"Asub", 4096}, {"Bsub", 4096}, {"Csub", 4096}}},
      {"B3", [] { cases::buildSliceKGemm(); },
       {{"A_tiles", 4096}, {"B_tiles", 4096}, {"red_buf", 4096}, {"C_tile", 1024}}},
      {"C1", [] { cases::buildPersistentRnnSlice(); }, {{"w_s", 32768}}},
  };
  for (const Expectation& e : table) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    e.build();
    GpuLower lower(&fusion);
    const kir::Kernel& kernel = lower.run();
    std::vector<std::pair<std::string, int64_t>> shared;
    for (const kir::Buffer* b : kernel.sharedBuffers()) {
      if (b->name.find("_workspace") == std::string::npos) {
        shared.push_back({b->name, *b->bytes().constant()});
      }
    }
    EXPECT_EQ(shared, e.shared) << e.name;
  }
}

TEST(LoweringCases, BatchLoopWrapsTheWholeGemm) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm(64, 64, 64, 3);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  ASSERT_EQ(kernel.body.size(), 1u);
  auto* batch = dynamic_cast<const kir::ForLoop*>(kernel.body[0].get());
  ASSERT_NE(batch, nullptr);
  EXPECT_FALSE(batch->trivial);
  EXPECT_EQ(batch->extent.constant(), 3);
}

// The pass tables of docs/architecture.md §3, each a list of names: a row
// "| <n> | `name` | ..." whose n is 1 starts the next table.
std::vector<std::vector<std::string>> documentedPassTables() {
  std::ifstream doc(SMELT_ARCHITECTURE_DOC);
  EXPECT_TRUE(doc.good()) << "cannot read " << SMELT_ARCHITECTURE_DOC;
  const std::regex row(R"(^\| (\d+) \| `(\w+)` \|)");
  std::vector<std::vector<std::string>> tables;
  std::string line;
  std::smatch match;
  while (std::getline(doc, line)) {
    if (!std::regex_search(line, match, row)) continue;
    if (match[1] == "1") tables.emplace_back();
    tables.back().push_back(match[2]);
  }
  return tables;
}

std::vector<std::string> passNames(const std::vector<LoweringPass>& passes) {
  std::vector<std::string> names;
  for (const LoweringPass& pass : passes) names.emplace_back(pass.name);
  return names;
}

// The docs describe the passes the code runs, in its order.
TEST(PassOrder, ArchitectureDocListsTheCodesPasses) {
  Fusion fusion;
  const std::vector<std::vector<std::string>> tables = documentedPassTables();
  ASSERT_EQ(tables.size(), 2u) << "expected the two pass tables of docs/architecture.md §3";
  EXPECT_EQ(tables[0], passNames(loweringPasses(fusion)));
  EXPECT_EQ(tables[1], passNames(tensorCorePasses()));
}

}  // namespace
}  // namespace smelt
