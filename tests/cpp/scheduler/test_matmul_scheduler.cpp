// The matmul scheduler (scheduler/matmul/): every layout and dtype, with and
// without the shared-memory epilogue, through the CPU simulator with race
// detection against ATen (odd sizes included); planned totals and barrier
// counts; NVRTC for every variant with ptxas shared memory equal to the plan;
// the heuristics and selection; the operand-reuse decision of cases D1 and D2
// at fusion level; errors.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/expect_error.h"
#include "fusion/ops.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/main_loop_guards.h"
#include "runtime/executor_test_util.h"
#include "scheduler/matmul/matmul_scheduler.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler_test_util.h"

namespace smelt {
namespace {

using sim::testing::expectKernelCorrect;
using smelt::testing::expectCompilesWithPlannedSharedMemory;
using smelt::testing::toScalarType;

enum class Epilogue { None, BiasRelu, PlusA };

// out = a @ b, or relu(a @ b + bias[N]), or a @ b + a (square), with
// concrete extents.
void buildMatmul(int64_t m, int64_t n, int64_t k, DataType dtype, Epilogue epilogue = Epilogue::None) {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({m, k}, dtype);
  TensorView* b = makeConcreteTensor({k, n}, dtype);
  fusion->addInput(a);
  fusion->addInput(b);
  TensorView* c = matmul(a, b);
  if (epilogue == Epilogue::BiasRelu) {
    TensorView* bias = makeConcreteTensor({n}, dtype);
    fusion->addInput(bias);
    c = relu(add(c, broadcast(bias, {true, false})));
  } else if (epilogue == Epilogue::PlusA) {
    c = add(c, a);
  }
  fusion->addOutput(c);
}

// Inputs stored as the layout says (a transposed operand is a strided view).
std::vector<at::Tensor> layoutInputs(Fusion& fusion, MatmulLayout layout, uint64_t seed = 0) {
  at::manual_seed(seed);
  std::vector<at::Tensor> inputs;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const TensorView* tv = fusion.inputs()[i]->asTensor();
    std::vector<int64_t> shape;
    for (const IterDomain* id : tv->logicalNoReductions()) shape.push_back(*id->extent().constant());
    bool transposed = (i == 0 && !aIsKContiguous(layout)) || (i == 1 && !bIsNContiguous(layout));
    at::Tensor t = transposed ? at::randn({shape[1], shape[0]}, at::kDouble).t()
                              : at::randn(shape, at::kDouble);
    inputs.push_back(t.to(toScalarType(tv->dtype())));
  }
  return inputs;
}

// Contiguous inputs as `layout` stores them (sizes are the logical ones).
RuntimeInfo runtimeFor(const Fusion& fusion, MatmulLayout layout) {
  std::vector<InputInfo> infos;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const TensorView* tv = fusion.inputs()[i]->asTensor();
    std::vector<int64_t> sizes;
    for (const IterDomain* id : tv->logicalNoReductions()) sizes.push_back(*id->extent().constant());
    bool transposed = (i == 0 && !aIsKContiguous(layout)) || (i == 1 && !bIsNContiguous(layout));
    infos.push_back(transposed ? InputInfo::tensor(tv->dtype(), sizes, {1, sizes[0]})
                               : InputInfo::contiguous(tv->dtype(), sizes));
  }
  return RuntimeInfo(fusion, infos);
}

int countSyncs(const kir::Kernel& kernel, bool inserted_for_reuse_only = false) {
  int n = 0;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    auto* sync = dynamic_cast<const kir::BlockSync*>(s);
    if (sync != nullptr && (!inserted_for_reuse_only || sync->inserted_for_reuse)) ++n;
  });
  return n;
}

const kir::Buffer* bufferNamed(const kir::Kernel& kernel, const std::string& name) {
  for (const auto& b : kernel.buffers) {
    if (b->name == name) return b.get();
  }
  return nullptr;
}

int64_t plannedTotal(const kir::Kernel& kernel) {
  return *kernel.smem_plan->plan.total_bytes.constant();
}

// Small tiles so the simulation stays fast: 32 x 32 x 8, 4 x 4 per thread
// (8 x 8 threads), 3 stages.
MatmulParams smallParams(MatmulLayout layout, bool smem_epilogue) {
  MatmulParams p;
  p.block_m = 32;
  p.block_n = 32;
  p.block_k = 8;
  p.thread_m = 4;
  p.thread_n = 4;
  p.stages = 3;
  p.smem_epilogue = smem_epilogue;
  p.layout = layout;
  return p;
}

std::string layoutName(const ::testing::TestParamInfo<MatmulLayout>& info) {
  return toString(info.param);
}

double tolerance(DataType dtype) { return dtype == DataType::Float ? 1e-4 : 2e-2; }

// One test per layout (each test is a process: torch loads once per layout),
// covering every dtype with and without the shared epilogue.
class MatmulLayoutTest : public ::testing::TestWithParam<MatmulLayout> {};

// Odd M, N, K (none divides the tiles) through the simulator in every thread
// order; the plan total is the estimate's no-reuse figure and the barriers
// are: one per K iteration (circular buffer) and the epilogue tile's RAW.
TEST_P(MatmulLayoutTest, EveryDtypeSimulatesCorrectlyWithPlannedSharedMemory) {
  const MatmulLayout layout = GetParam();
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16}) {
    for (bool smem_epilogue : {false, true}) {
      SCOPED_TRACE(::testing::Message() << dtype << (smem_epilogue ? ", smem epilogue" : ""));
      const MatmulParams params = smallParams(layout, smem_epilogue);
      Fusion fusion;
      FusionGuard guard(&fusion);
      buildMatmul(37, 29, 43, dtype);
      scheduleMatmul(&fusion, params);
      expectKernelCorrect(fusion, layoutInputs(fusion, layout), tolerance(dtype), tolerance(dtype));

      Fusion again;
      FusionGuard guard_again(&again);
      buildMatmul(37, 29, 43, dtype);
      scheduleMatmul(&again, params);
      GpuLower lower(&again);
      const kir::Kernel& kernel = lower.run();
      EXPECT_EQ(plannedTotal(kernel), estimateSmem(params, dtype, dtype).no_reuse_bytes);
      EXPECT_EQ(countSyncs(kernel), smem_epilogue ? 2 : 1) << kernel.toString();
    }
  }
}

// NVRTC compiles every variant (with a bias + relu epilogue) for sm_90; with
// the shared array declared static, ptxas reports exactly the planned bytes.
TEST_P(MatmulLayoutTest, EveryDtypeCompilesWithPtxasSharedMemoryEqualToPlan) {
  const MatmulLayout layout = GetParam();
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16}) {
    for (bool smem_epilogue : {false, true}) {
      SCOPED_TRACE(::testing::Message() << dtype << (smem_epilogue ? ", smem epilogue" : ""));
      Fusion fusion;
      FusionGuard guard(&fusion);
      buildMatmul(37, 29, 43, dtype, Epilogue::BiasRelu);
      scheduleMatmul(&fusion, smallParams(layout, smem_epilogue));
      expectCompilesWithPlannedSharedMemory(fusion, "matmul");
    }
  }
}

// Automatic scheduling of an unscheduled relu(a @ b + bias) with symbolic
// extents and odd sizes (37 x 29 x 43), operands stored as the layout says:
// the executor cache selects the matmul scheduler, whose heuristics read the
// layout from the strides; the kernel simulates with race detection and
// matches ATen; it compiles with NVRTC with ptxas shared memory equal to the
// plan.
TEST_P(MatmulLayoutTest, EveryDtypeIsSelectedAutomaticallyThroughTheCache) {
  const MatmulLayout layout = GetParam();
  const int64_t m = 37, n = 29, k = 43;
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16}) {
    SCOPED_TRACE(::testing::Message() << dtype);
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard guard(fusion.get());
      TensorView* a = makeContigTensor(2, dtype);
      TensorView* b = makeContigTensor(2, dtype);
      TensorView* bias = makeContigTensor(1, dtype);
      fusion->addInput(a);
      fusion->addInput(b);
      fusion->addInput(bias);
      fusion->addOutput(relu(add(matmul(a, b), broadcast(bias, {true, false}))));
    }
    FusionExecutorCache cache(std::move(fusion));
    const at::ScalarType type = toScalarType(dtype);
    auto stored = [&](int64_t rows, int64_t cols, bool transposed) {
      return transposed ? smelt::testing::randn({cols, rows}, type).t()
                        : smelt::testing::randn({rows, cols}, type);
    };
    const std::vector<at::Tensor> inputs = {stored(m, k, !aIsKContiguous(layout)),
                                            stored(k, n, !bIsNContiguous(layout)),
                                            smelt::testing::randn({n}, type)};
    const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
    Fusion& complete = const_cast<Fusion&>(cache.fusion());
    smelt::testing::expectOutputsMatch(complete, outputs,
                                       smelt::testing::evaluateWithATen(complete, inputs),
                                       cache.lastRun().toString());
    ASSERT_EQ(cache.lastRun().segments.size(), 1u) << cache.lastRun().toString();
    const SegmentRun& run = cache.lastRun().segments[0];
    EXPECT_EQ(run.scheduler, SchedulerType::Matmul);
    EXPECT_NE(run.params.find("layout: " + toString(layout)), std::string::npos) << run.params;
    EXPECT_TRUE(cache.lastExecutor(0).simulationReport().clean())
        << cache.lastExecutor(0).simulationReport().toString();
    expectCompilesWithPlannedSharedMemory(cache.lastExecutor(0).kernel(), "matmul_selected");
  }
}

// The heuristic schedule on size-1 extents and on operands whose rows are
// padded (slices of wider tensors: leading dimension > K or > N), through
// the cache (simulated with race detection, against ATen).
TEST(MatmulScheduler, SelectedForSizeOneAndPaddedOperands) {
  struct Operands {
    at::Tensor a, b;
  };
  const Operands cases[] = {
      {smelt::testing::randn({1, 1}), smelt::testing::randn({1, 1})},
      {smelt::testing::randn({1, 43}), smelt::testing::randn({43, 29})},
      {smelt::testing::randn({37, 5}), smelt::testing::randn({5, 1})},
      {smelt::testing::randn({37, 64}).slice(1, 0, 43), smelt::testing::randn({43, 40}).slice(1, 3, 32)},
  };
  for (const Operands& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.a.sizes() << " @ " << c.b.sizes());
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard guard(fusion.get());
      TensorView* a = makeContigTensor(2);
      TensorView* b = makeContigTensor(2);
      fusion->addInput(a);
      fusion->addInput(b);
      fusion->addOutput(matmul(a, b));
    }
    FusionExecutorCache cache(std::move(fusion));
    const std::vector<at::Tensor> outputs = cache.runFusionWithInputs({c.a, c.b});
    EXPECT_EQ(cache.lastRun().segments.at(0).scheduler, SchedulerType::Matmul);
    EXPECT_TRUE(at::allclose(outputs[0], at::matmul(c.a, c.b), 1e-4, 1e-4))
        << cache.lastRun().toString();
  }
}

// A user override of the matmul parameters through the cache: small tiles,
// the shared epilogue tile and promoted operand reuse; the kernel is
// compiled for the changed parameters, its plan overlays C_s on the operand
// tiles (max(3 x (1,152 + 1,024), 4,096) = 6,528 B for fp32: A is K-contiguous, its rows
// padded by one word), and it
// simulates without races against ATen.
TEST(MatmulScheduler, UserOverrideThroughTheCache) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    buildMatmul(37, 29, 43, DataType::Float, Epilogue::BiasRelu);
  }
  FusionExecutorCache cache(std::move(fusion));
  cache.setHeuristicOverride([](HeuristicParams& params) {
    auto& p = dynamic_cast<MatmulParams&>(params);
    const MatmulLayout layout = p.layout;
    p = smallParams(layout, true);
    p.promote_operand_reuse = true;
  });
  Fusion& complete = const_cast<Fusion&>(cache.fusion());
  const std::vector<at::Tensor> inputs = layoutInputs(complete, MatmulLayout::TT);
  smelt::testing::expectOutputsMatch(complete, cache.runFusionWithInputs(inputs),
                                     smelt::testing::evaluateWithATen(complete, inputs));
  const SegmentRun& run = cache.lastRun().segments.at(0);
  EXPECT_EQ(run.scheduler, SchedulerType::Matmul);
  EXPECT_NE(run.params.find("block tile (m, n, k): 32 x 32 x 8"), std::string::npos) << run.params;
  EXPECT_NE(run.params.find("promote operand reuse: yes"), std::string::npos) << run.params;
  const kir::Kernel& kernel = cache.lastExecutor(0).kernel();
  EXPECT_EQ(plannedTotal(kernel), 6528);
  EXPECT_EQ(*bufferNamed(kernel, "C_s")->address->constant(), 0);
  EXPECT_EQ(countSyncs(kernel, true), 1);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, MatmulLayoutTest,
                         ::testing::Values(MatmulLayout::TT, MatmulLayout::TN, MatmulLayout::NT,
                                           MatmulLayout::NN),
                         layoutName);

// Tiny and prime extents, one stage (load, barrier, use, barrier) and two.
TEST(MatmulScheduler, OddShapesAndStageCounts) {
  struct Shape {
    int64_t m, n, k, stages;
  };
  for (Shape shape : {Shape{1, 1, 1, 3}, Shape{5, 3, 2, 2}, Shape{17, 31, 7, 1}, Shape{33, 8, 61, 2}}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildMatmul(shape.m, shape.n, shape.k, DataType::Float);
    MatmulParams params = smallParams(MatmulLayout::TT, true);
    params.stages = shape.stages;
    scheduleMatmul(&fusion, params);
    SCOPED_TRACE(::testing::Message() << shape.m << "x" << shape.n << "x" << shape.k << ", "
                                      << shape.stages << " stages");
    expectKernelCorrect(fusion, layoutInputs(fusion, MatmulLayout::TT), 1e-4, 1e-4);
  }
}

// A batched matmul ([B, M, K] x [B, K, N], torch.bmm) with a per-batch
// epilogue input: the batch on grid z, both operand layouts, one and three
// stages, with and without the shared epilogue tile; the selection takes it
// to the matmul scheduler.
TEST(MatmulScheduler, BatchedOnGridZ) {
  for (bool smem_epilogue : {false, true}) {
    for (int64_t stages : {1, 3}) {
      Fusion fusion;
      FusionGuard guard(&fusion);
      TensorView* a = makeConcreteTensor({3, 21, 13});
      TensorView* b = makeConcreteTensor({3, 13, 37});
      TensorView* c = makeConcreteTensor({3, 21, 37});
      fusion.addInput(a);
      fusion.addInput(b);
      fusion.addInput(c);
      fusion.addOutput(relu(add(matmul(a, b), c)));
      at::manual_seed(5);
      const std::vector<at::Tensor> inputs = {at::randn({3, 13, 21}).transpose(1, 2),
                                              at::randn({3, 13, 37}), at::randn({3, 21, 37})};
      RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
      ASSERT_EQ(selectScheduler(fusion, runtime), SchedulerType::Matmul);
      MatmulParams params = smallParams(matmulLayout(fusion, runtime), smem_epilogue);
      EXPECT_EQ(params.layout, MatmulLayout::NT);
      params.stages = stages;
      scheduleMatmul(&fusion, params);
      SCOPED_TRACE(::testing::Message() << "smem epilogue " << smem_epilogue << ", " << stages
                                        << " stages");
      expectKernelCorrect(fusion, inputs, 1e-4, 1e-4);
      GpuLower lower(&fusion);
      const kir::Kernel& kernel = lower.run();
      EXPECT_NE(generateCuda(kernel, "bmm").find("blockIdx.z"), std::string::npos);
      expectCompilesWithPlannedSharedMemory(kernel, "bmm");
    }
  }
}

// Half operands of a batched matmul on tensor cores: blockIdx.z picks the
// batch of A, B and the epilogue input; register and shared epilogues.
TEST(MatmulScheduler, BatchedOnTensorCores) {
  for (bool smem_epilogue : {false, true}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({2, 48, 32}, DataType::Half);
    TensorView* b = makeConcreteTensor({2, 32, 40}, DataType::Half);
    TensorView* c = makeConcreteTensor({2, 48, 40}, DataType::Half);
    fusion.addInput(a);
    fusion.addInput(b);
    fusion.addInput(c);
    fusion.addOutput(relu(add(matmul(a, b), c)));
    at::manual_seed(6);
    const std::vector<at::Tensor> inputs = {at::randn({2, 48, 32}).to(at::kHalf),
                                            at::randn({2, 40, 32}).to(at::kHalf).transpose(1, 2),
                                            at::randn({2, 48, 40}).to(at::kHalf)};
    RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
    MatmulParams params = matmulHeuristics(fusion, runtime, DeviceLimits::sm90());
    ASSERT_TRUE(params.use_tensor_cores) << params.tensor_core_blocker;
    params.tensor_core.smem_epilogue = smem_epilogue;
    params.tensor_core.promote_reuse = smem_epilogue;
    scheduleMatmul(&fusion, params);
    SCOPED_TRACE(::testing::Message() << "smem epilogue " << smem_epilogue);
    expectKernelCorrect(fusion, inputs, 2e-2, 2e-2);
    GpuLower lower(&fusion);
    const kir::Kernel& kernel = lower.run();
    EXPECT_EQ(kernel.launch.grid[2].toString(), "2");
    expectCompilesWithPlannedSharedMemory(kernel, "bmm_tc");
  }
}

// A pointwise epilogue with its own input runs in the output's loops.
TEST(MatmulScheduler, BiasReluEpilogue) {
  for (bool smem_epilogue : {false, true}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildMatmul(40, 24, 19, DataType::Half, Epilogue::BiasRelu);
    scheduleMatmul(&fusion, smallParams(MatmulLayout::NT, smem_epilogue));
    expectKernelCorrect(fusion, layoutInputs(fusion, MatmulLayout::NT), 2e-2, 2e-2);
  }
}

// Selection takes a matmul (with a bias + relu epilogue) to the matmul
// scheduler; its heuristics read the layout from the strides. Symbolic
// extents, 64^3.
TEST(MatmulScheduler, SelectedForSymbolicMatmulWithEpilogue) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(2);
  TensorView* bias = makeContigTensor(1);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addInput(bias);
  fusion.addOutput(relu(add(matmul(a, b), broadcast(bias, {true, false}))));
  const std::vector<at::Tensor> inputs = {smelt::testing::randn({64, 64}),
                                          smelt::testing::randn({64, 64}).t(),
                                          smelt::testing::randn({64})};
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  EXPECT_EQ(selectScheduler(fusion, runtime), SchedulerType::Matmul);
  std::unique_ptr<HeuristicParams> params = scheduleFusion(fusion, runtime);
  const auto& matmul_params = paramsAs<MatmulParams>(*params);
  EXPECT_EQ(matmul_params.layout, MatmulLayout::TN);
  // 64 x 64 tiles would be one block: halved to 16 x 16 (16 blocks).
  EXPECT_EQ(matmul_params.block_m, 16);
  EXPECT_EQ(matmul_params.stages, 2);
  expectKernelCorrect(fusion, inputs, 1e-4, 1e-4);
}

}  // namespace
}  // namespace smelt

namespace smelt {
namespace {

// Cases D1/D2: fp16 operands, fp32 epilogue tile C_s, 8 x 8 per thread.
MatmulParams caseParams(int64_t block_m, int64_t block_n, int64_t block_k, int64_t stages,
                        bool promote) {
  MatmulParams p;
  p.block_m = block_m;
  p.block_n = block_n;
  p.block_k = block_k;
  p.thread_m = 8;
  p.thread_n = block_n / 16;
  p.stages = stages;
  p.smem_epilogue = true;
  p.promote_operand_reuse = promote;
  p.pad_k_contiguous_tiles = false;  // nvFuser's tiles are unpadded
  return p;
}

struct Planned {
  int64_t total = 0;
  int64_t no_reuse = 0;
  int reuse_barriers = 0;
  int barriers = 0;
  int64_t c_address = -1;
  // The promoteReuse barrier lies after the K loop (the drain point) and
  // before the first write of C_s.
  bool reuse_barrier_after_main_loop = false;
};

Planned planMatmul(const MatmulParams& params, Epilogue epilogue = Epilogue::None) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  // K = 2048: the planner's access footprints give up on the K loop at once
  // (lowering stays fast). `a @ b + a` needs N = K.
  buildMatmul(512, epilogue == Epilogue::PlusA ? 2048 : 512, 2048, DataType::Half, epilogue);
  scheduleMatmul(&fusion, params);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  Planned p;
  p.total = plannedTotal(kernel);
  p.no_reuse = *kernel.smem_plan->plan.no_reuse_bytes.constant();
  p.reuse_barriers = countSyncs(kernel, true);
  p.barriers = countSyncs(kernel);
  const kir::Buffer* c_smem = bufferNamed(kernel, "C_s");
  p.c_address = *c_smem->address->constant();
  const kir::ProgramPositions positions = kir::numberPositions(kernel.body);
  int64_t main_loop_end = -1;
  int64_t reuse_barrier = -1;
  int64_t first_c_write = -1;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(s);
    if (loop != nullptr && !loop->trivial && !loop->body.empty() &&
        loop->body.front()->kind() == kir::StmtKind::BlockSync) {
      main_loop_end = positions.loop_end.at(loop);
    }
    auto* sync = dynamic_cast<const kir::BlockSync*>(s);
    if (sync != nullptr && sync->inserted_for_reuse) reuse_barrier = positions.start.at(s);
    auto* compute = dynamic_cast<const kir::Compute*>(s);
    if (compute != nullptr && compute->out.buffer == c_smem && first_c_write < 0) {
      first_c_write = positions.start.at(s);
    }
  });
  p.reuse_barrier_after_main_loop = main_loop_end < reuse_barrier && reuse_barrier < first_c_write;
  return p;
}

// D1: BM = BN = 128, BK = 32, 3 stages: A_s and B_s 24,576 B each, C_s 65,536 B.
TEST(MatmulCaseD1, OperandTilesStackWithoutPromotion) {
  Planned p = planMatmul(caseParams(128, 128, 32, 3, false));
  EXPECT_EQ(p.total, 114688);
  EXPECT_EQ(p.no_reuse, 114688);
  EXPECT_EQ(p.reuse_barriers, 0);
  EXPECT_EQ(p.barriers, 2);  // the K loop's, C_s's RAW
}

TEST(MatmulCaseD1, PromotedOperandTilesLeaveTheEpilogueTileAtZero) {
  Planned p = planMatmul(caseParams(128, 128, 32, 3, true));
  EXPECT_EQ(p.total, 65536);
  EXPECT_EQ(p.no_reuse, 114688);
  EXPECT_EQ(p.c_address, 0);
  EXPECT_EQ(p.reuse_barriers, 1);  // one barrier serves both operand tiles
  EXPECT_TRUE(p.reuse_barrier_after_main_loop);
  EXPECT_EQ(p.barriers, 3);
}

TEST(MatmulCaseD1, TheSchedulerPromotesBecauseReuseRaisesBlocksPerSm) {
  OperandReuseDecision d = decideOperandReuse(caseParams(128, 128, 32, 3, false), DataType::Half,
                                              DataType::Half, false, DeviceLimits::sm90());
  EXPECT_TRUE(d.promote);
  EXPECT_EQ(d.smem.no_reuse_bytes, 114688);
  EXPECT_EQ(d.smem.reuse_bytes, 65536);
  EXPECT_EQ(d.blocks_per_sm_without, 2);
  EXPECT_EQ(d.blocks_per_sm_with, 3);
  EXPECT_EQ(d.reason, "raises blocks per SM from 2 to 3 (114688 B -> 65536 B)");
}

// D2: 3 stages of 128 x 128 x 64 fp16 operand tiles plus the 128 x 128 fp32
// epilogue tile: 163,840 B without reuse (one block per SM), 98,304 B with
// (two).
TEST(MatmulCaseD2, PromotionDoublesBlocksPerSm) {
  OperandReuseDecision d = decideOperandReuse(caseParams(128, 128, 64, 3, false), DataType::Half,
                                              DataType::Half, false, DeviceLimits::sm90());
  EXPECT_TRUE(d.promote);
  EXPECT_EQ(d.blocks_per_sm_without, 1);
  EXPECT_EQ(d.blocks_per_sm_with, 2);
  EXPECT_EQ(planMatmul(caseParams(128, 128, 64, 3, false)).total, 163840);
  Planned promoted = planMatmul(caseParams(128, 128, 64, 3, true));
  EXPECT_EQ(promoted.total, 98304);
  EXPECT_EQ(promoted.c_address, 0);
  EXPECT_EQ(promoted.reuse_barriers, 1);
}

// A 128 x 256 block tile: 278,528 B without reuse exceeds sm_90's 232,448 B
// per block; with reuse 147,456 B fit.
TEST(MatmulCaseD2, PromotionRequiredToFit) {
  OperandReuseDecision d = decideOperandReuse(caseParams(128, 256, 64, 3, false), DataType::Half,
                                              DataType::Half, false, DeviceLimits::sm90());
  EXPECT_TRUE(d.promote);
  EXPECT_EQ(d.reason,
            "required to fit: 278528 B without reuse exceeds the 232448 B per-block limit, "
            "147456 B with");
  EXPECT_SMELT_ERROR(planMatmul(caseParams(128, 256, 64, 3, false)), "232448");
  EXPECT_EQ(planMatmul(caseParams(128, 256, 64, 3, true)).total, 147456);
}

// `a @ b + a`: an operand is read after the main loop, so the scheduler never
// promotes the operand tiles' reuse, and refuses a forced promotion.
TEST(MatmulCaseD2, RefusedWhenAnOperandIsUsedAfterTheMainLoop) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildMatmul(512, 2048, 2048, DataType::Half, Epilogue::PlusA);
    EXPECT_EQ(findMatmul(fusion).operand_used_elsewhere, fusion.inputs()[0]);
    MatmulParams heuristic = matmulHeuristics(fusion, runtimeFor(fusion, MatmulLayout::TT));
    EXPECT_FALSE(heuristic.promote_operand_reuse);
  }
  OperandReuseDecision d = decideOperandReuse(caseParams(128, 128, 64, 3, false), DataType::Half,
                                              DataType::Half, true, DeviceLimits::sm90());
  EXPECT_FALSE(d.promote);
  EXPECT_EQ(d.reason, "an operand is used after the main loop");
  Planned refused = planMatmul(caseParams(128, 128, 64, 3, false), Epilogue::PlusA);
  EXPECT_EQ(refused.total, 163840);
  EXPECT_EQ(refused.no_reuse, 163840);
  EXPECT_EQ(refused.reuse_barriers, 0);
  EXPECT_SMELT_ERROR(planMatmul(caseParams(128, 128, 64, 3, true), Epilogue::PlusA),
                     "cannot promote reuse", "T0", "used after the main loop");
}

// The promoted schedules run in the simulator with race detection: the
// epilogue tile's writes into the operand tiles' bytes come after the
// barrier that follows the drained main loop. Small tiles on odd sizes in
// every dtype, and the D2 configuration itself on one 128 x 128 tile with
// two K steps.
TEST(MatmulCaseD2, PromotedSchedulesSimulateWithoutRaces) {
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16}) {
    SCOPED_TRACE(::testing::Message() << dtype);
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildMatmul(37, 29, 43, dtype, Epilogue::BiasRelu);
    MatmulParams params = smallParams(MatmulLayout::NN, true);
    params.promote_operand_reuse = true;
    scheduleMatmul(&fusion, params);
    expectKernelCorrect(fusion, layoutInputs(fusion, MatmulLayout::NN), tolerance(dtype),
                        tolerance(dtype));
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildMatmul(128, 128, 128, DataType::Half);
  scheduleMatmul(&fusion, caseParams(128, 128, 64, 3, true));
  expectKernelCorrect(fusion, layoutInputs(fusion, MatmulLayout::TT), 2e-2, 2e-2);
}

TEST(MatmulCaseD2, PlusAEpilogueSimulatesCorrectly) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildMatmul(36, 36, 36, DataType::Float, Epilogue::PlusA);
  scheduleMatmul(&fusion, smallParams(MatmulLayout::TN, true));
  expectKernelCorrect(fusion, layoutInputs(fusion, MatmulLayout::TN), 1e-4, 1e-4);
}

// Planned totals of several tile configurations (fp16 operands, fp32
// epilogue tile), without and with promotion, as the estimate predicts.
TEST(MatmulPlan, TotalsForTileConfigurations) {
  struct Config {
    int64_t bm, bn, bk, stages;
    int64_t no_reuse, promoted;
  };
  const Config configs[] = {
      {128, 128, 32, 3, 114688, 65536},  // D1
      {128, 128, 64, 3, 163840, 98304},  // D2
      {64, 64, 32, 2, 32768, 16384},
      {128, 128, 32, 4, 131072, 65536},
      {64, 128, 64, 2, 81920, 49152},
  };
  for (const Config& c : configs) {
    SCOPED_TRACE(::testing::Message() << c.bm << "x" << c.bn << "x" << c.bk << ", " << c.stages
                                      << " stages");
    MatmulParams params = caseParams(c.bm, c.bn, c.bk, c.stages, false);
    const MatmulSmemEstimate estimate = estimateSmem(params, DataType::Half, DataType::Half);
    EXPECT_EQ(estimate.no_reuse_bytes, c.no_reuse);
    EXPECT_EQ(estimate.reuse_bytes, c.promoted);
    EXPECT_EQ(planMatmul(params).total, c.no_reuse);
    params.promote_operand_reuse = true;
    EXPECT_EQ(planMatmul(params).total, c.promoted);
  }
}

// 64^3 would be one 64 x 64 block: the tiles halve to 16 x 16 (16 blocks).
TEST(MatmulHeuristics, SmallCubeShrinksTilesAndTakesAFreeEpilogue) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildMatmul(64, 64, 64, DataType::Float);
  MatmulParams p = matmulHeuristics(fusion, runtimeFor(fusion, MatmulLayout::TT));
  EXPECT_EQ(p.toString(),
            "MatmulParams\n"
            "  block tile (m, n, k): 16 x 16 x 32\n"
            "  thread tile (m, n): 1 x 1 (16 x 16 threads)\n"
            "  stages: 2\n"
            "  smem epilogue: yes\n"
            "  promote operand reuse: no (does not raise blocks per SM (8))\n"
            "  layout: TT\n"
            "  tensor cores: no — operands are float and float; mma.sync m16n8k16 takes Half or "
            "BFloat16\n");
}

TEST(MatmulHeuristics, LargeHalfMatmul) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildMatmul(4096, 4096, 4096, DataType::Half);
  for (MatmulLayout layout : {MatmulLayout::TT, MatmulLayout::TN, MatmulLayout::NT, MatmulLayout::NN}) {
    MatmulParams p = matmulHeuristics(fusion, runtimeFor(fusion, layout));
    EXPECT_EQ(p.layout, layout);
    EXPECT_EQ(p.block_m, 128);
    EXPECT_EQ(p.block_n, 128);
    EXPECT_EQ(p.block_k, 32);
    EXPECT_EQ(p.threads(), 256);
    EXPECT_EQ(p.stages, 3);
    // 65,536 B of epilogue tile would not fit in 49,152 B of operand tiles.
    EXPECT_FALSE(p.smem_epilogue);
    EXPECT_FALSE(p.promote_operand_reuse);
  }
}

TEST(MatmulScheduler, Errors) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor({4, 4});
    fusion.addInput(x);
    fusion.addOutput(relu(x));
    EXPECT_SMELT_ERROR(scheduleMatmul(&fusion, MatmulParams()), "no matmul");
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({8, 8});
    TensorView* b = makeConcreteTensor({8, 8});
    fusion.addInput(a);
    fusion.addInput(b);
    fusion.addOutput(matmul(relu(a), b));
    EXPECT_SMELT_ERROR(scheduleMatmul(&fusion, MatmulParams()), "operand A", "computed in the fusion");
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildMatmul(8, 8, 8, DataType::Float);
    MatmulParams p;
    p.thread_m = 3;
    EXPECT_SMELT_ERROR(scheduleMatmul(&fusion, p), "128 x 128", "3 x 8");
    p = MatmulParams();
    p.thread_m = 1;
    p.thread_n = 1;
    EXPECT_SMELT_ERROR(scheduleMatmul(&fusion, p), "16384 threads");
  }
  {
    // A sum over M and K of a product of broadcasts (fuzz seed 3094368) is
    // no matmul: its M axis would be a reduction bound to BIDy.
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({5, 2});
    TensorView* b = makeConcreteTensor({2, 3});
    fusion.addInput(a);
    fusion.addInput(b);
    TensorView* product = mul(broadcast(a, {false, false, true}), broadcast(b, {true, false, false}));
    fusion.addOutput(sum(product, {0, 1}));
    EXPECT_SMELT_ERROR(scheduleMatmul(&fusion, MatmulParams()), "is not a matmul");
  }
}

// Issue 41: the CUDA-core kernel of a linear's shape (17 x N x K, fp32, every
// layout; an nn.Linear weight arrives as B = W.t(), the TN layout), as the
// heuristics schedule it.
struct LinearCase {
  int64_t m, n, k;
};

std::unique_ptr<Fusion> heuristicMatmul(const LinearCase& c, MatmulLayout layout, MatmulParams* params = nullptr) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  buildMatmul(c.m, c.n, c.k, DataType::Float, Epilogue::BiasRelu);
  const MatmulParams p = matmulHeuristics(*fusion, runtimeFor(*fusion, layout));
  scheduleMatmul(fusion.get(), p);
  if (params != nullptr) *params = p;
  return fusion;
}

// Operand tiles are conflict free whatever the storage order: a K-contiguous
// tile has one word of padding per row, so the K loop's reads of one k of 16
// rows (16-way before) and the tile loads are 1-way; in every layout,
// nothing inside a loop is worse than 2-way. The kernel matches ATen in the
// simulator and NVRTC compiles it with ptxas shared memory equal to the plan.
TEST(MatmulKernelChecks, OperandTilesAreConflictFreeInEveryLayout) {
  for (MatmulLayout layout : {MatmulLayout::TT, MatmulLayout::TN, MatmulLayout::NT, MatmulLayout::NN}) {
    SCOPED_TRACE(toString(layout));
    const LinearCase c{17, 192, 64};
    std::unique_ptr<Fusion> fusion = heuristicMatmul(c, layout);
    {
      FusionGuard guard(fusion.get());
      expectKernelCorrect(*fusion, layoutInputs(*fusion, layout), 1e-4, 1e-4);
    }
    std::unique_ptr<Fusion> again = heuristicMatmul(c, layout);
    FusionGuard guard(again.get());
    GpuLower lower(again.get());
    const kir::Kernel& kernel = lower.run();
    const BankConflictReport& report = kernel.smem_plan->bank_conflicts;
    int64_t operand_accesses = 0;
    for (const BankConflictAccess& a : report.accesses) {
      if (a.buffer == "A_s" || a.buffer == "B_s") {
        ++operand_accesses;
        EXPECT_EQ(a.ways, 1) << report.toString();
      }
      if (a.in_loop) {
        EXPECT_LE(a.ways, 2) << report.toString();
      }
    }
    EXPECT_GE(operand_accesses, 4) << report.toString();  // each tile written and read
    EXPECT_TRUE(report.unevaluated_positions.empty()) << report.toString();
    expectCompilesWithPlannedSharedMemory(*again, "matmul_" + toString(layout));
  }
}

// Full tiles run an unguarded K loop: with N = 192 and 576 (not multiples of
// the tile) and K = 100 (not a multiple of block_k), no statement of the K
// loop is guarded by a tensor bound and no register statement is guarded at
// all; the tile loads read zero past M, N and K instead. Values match ATen.
TEST(MatmulKernelChecks, KLoopIsUnguardedWhenTilesOverhang) {
  for (const LinearCase& c : {LinearCase{17, 192, 768}, LinearCase{17, 576, 192}, LinearCase{17, 192, 100}}) {
    SCOPED_TRACE(::testing::Message() << c.m << " x " << c.n << " x " << c.k);
    std::unique_ptr<Fusion> fusion = heuristicMatmul(c, MatmulLayout::TN);
    FusionGuard guard(fusion.get());
    {
      std::unique_ptr<Fusion> copy = heuristicMatmul(c, MatmulLayout::TN);
      FusionGuard copy_guard(copy.get());
      GpuLower lower(copy.get());
      const kir::Kernel& kernel = lower.run();
      const std::vector<MainLoopGuard> guards = findMainLoopGuards(kernel);
      EXPECT_TRUE(guards.empty()) << guards.front().buffer << " " << guards.front().guard << "\n"
                                  << kernel.toString();
      int64_t zero_filled = 0;
      kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
        const auto* compute = dynamic_cast<const kir::Compute*>(s);
        if (compute != nullptr && compute->out.buffer->memory == MemoryType::Shared &&
            !compute->operands[0].in_bounds.alwaysTrue()) {
          ++zero_filled;
        }
      });
      EXPECT_GE(zero_filled, 2) << kernel.toString();  // A's and B's loads (and prologue copies)
    }
    expectKernelCorrect(*fusion, layoutInputs(*fusion, MatmulLayout::TN), 1e-4, 1e-4);
  }
}

// Small problems fill the GPU: the tiles halve (longer side first) until the
// grid has a block per SM (132 on sm_90) or the tile is 16 x 16.
TEST(MatmulKernelChecks, SmallProblemsGetABlockPerSm) {
  struct Expected {
    LinearCase shape;
    int64_t block_m, block_n;
  };
  for (const Expected& e : {Expected{{17, 768, 192}, 16, 16}, Expected{{17, 192, 768}, 16, 16},
                            Expected{{512, 512, 64}, 32, 32}, Expected{{4096, 4096, 64}, 128, 128}}) {
    SCOPED_TRACE(::testing::Message() << e.shape.m << " x " << e.shape.n);
    MatmulParams p;
    heuristicMatmul(e.shape, MatmulLayout::TN, &p);
    EXPECT_EQ(p.block_m, e.block_m);
    EXPECT_EQ(p.block_n, e.block_n);
    EXPECT_EQ(p.threads(), 256);
  }
}

}  // namespace
}  // namespace smelt
