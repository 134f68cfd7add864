// The matmul scheduler's tensor-core path: FusionExecutorCache on CPU tensors
// (the simulator with race detection, against ATen) for every layout and
// type, odd M and N, the epilogues with and without the shared-memory
// epilogue and promotion; the scheduler's choice and the reasons it falls
// back to CUDA cores; forcing tensor cores where they cannot run; the MmaOp
// in the IR (printing, cloning, the cache key); NVRTC for sm_80 and sm_90 on
// the default configurations through FusionExecutor.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/tensor_core_fusions.h"
#include "fusion/clone.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/lower.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/fusion_key.h"
#include "scheduler/matmul/matmul_scheduler.h"
#include "scheduler/registry.h"

namespace smelt {
namespace {

using namespace smelt::testing::tensor_core;

bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

int countMma(const kir::Kernel& kernel) {
  int n = 0;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) { n += s->kind() == kir::StmtKind::Mma; });
  return n;
}

// The case's unscheduled fusion through FusionExecutorCache on its CPU
// inputs, `adjust` applied to the matmul parameters; the output must match
// ATen's evaluation of the fusion.
struct CacheRun {
  std::unique_ptr<FusionExecutorCache> cache;
  std::string params;
};

CacheRun runThroughCache(TcFusion f, const std::function<void(MatmulParams&)>& adjust = {}) {
  const std::vector<at::Tensor> expected = smelt::testing::evaluateWithATen(*f.fusion, f.inputs);
  CacheRun run;
  run.cache = std::make_unique<FusionExecutorCache>(std::move(f.fusion));
  if (adjust) {
    run.cache->setHeuristicOverride([adjust](HeuristicParams& p) { adjust(dynamic_cast<MatmulParams&>(p)); });
  }
  const std::vector<at::Tensor> outputs = run.cache->runFusionWithInputs(f.inputs);
  EXPECT_EQ(run.cache->lastRun().segments.size(), 1u) << run.cache->lastRun().toString();
  run.params = run.cache->lastRun().segments.at(0).params;
  smelt::testing::expectOutputsMatch(const_cast<Fusion&>(run.cache->fusion()), outputs, expected,
                                     run.params);
  EXPECT_TRUE(run.cache->lastExecutor(0).simulationReport().clean());
  return run;
}

// ---- the executor path, simulated against ATen ----

// M = 40 and N = 24 are not multiples of the 64 x 32 block tile; K = 48 is
// a multiple of 8. The scheduler picks tensor cores by itself (sm_90 is the
// target without a GPU) and the kernel holds the mma.sync statements. One
// test for the 8 cases (each test is a process that loads torch).
TEST(TensorCoreThroughTheCache, EveryLayoutAndTypeMatchesATen) {
  for (int layout = 0; layout < 4; ++layout) {
    for (DataType dtype : {DataType::Half, DataType::BFloat16}) {
      Case c;
      c.a_k_contiguous = layout & 1;
      c.b_k_contiguous = layout & 2;
      c.dtype = dtype;
      SCOPED_TRACE(layoutName(c) + " " + toString(dtype));
      CacheRun run = runThroughCache(makeFusion(c));
      EXPECT_TRUE(contains(run.params, "tensor cores: yes (block 64x32x32")) << run.params;
      EXPECT_TRUE(contains(run.params, std::string("A ") + (c.a_k_contiguous ? "K" : "M") +
                                           "-contiguous, B " + (c.b_k_contiguous ? "K" : "N") +
                                           "-contiguous"))
          << run.params;
      // One Mma statement, in the unrolled loops over a warp's 2 m16 x 4 n8 tiles.
      EXPECT_EQ(countMma(run.cache->lastExecutor(0).kernel()), 1);
      EXPECT_TRUE(contains(run.cache->lastExecutor(0).cudaSource(), "mma.sync.aligned.m16n8k16"));
    }
  }
}

// Bias + ReLU in registers, through the C_s tile, and with C_s taking the
// operand tiles' bytes (promoted after the drained pipeline): 2 stages x
// (64 + 32) x 32 halves = 12288 B of operand tiles, 64 x 32 floats = 8192 B
// of C_s; GELU (bf16) in registers.
TEST(TensorCoreThroughTheCache, EpiloguesWithAndWithoutSharedEpilogueAndPromotion) {
  for (Epilogue epilogue : {Epilogue::BiasRelu, Epilogue::Gelu}) {
    // GELU in registers only: the shared-epilogue variants are the same for it.
    for (int variant = 0; variant < (epilogue == Epilogue::Gelu ? 1 : 3); ++variant) {
      SCOPED_TRACE(::testing::Message() << "epilogue " << static_cast<int>(epilogue) << ", variant "
                                        << variant);
      Case c;
      c.epilogue = epilogue;
      c.dtype = epilogue == Epilogue::Gelu ? DataType::BFloat16 : DataType::Half;
      CacheRun run = runThroughCache(makeFusion(c), [variant](MatmulParams& p) {
        p.tensor_core.smem_epilogue = variant > 0;
        p.tensor_core.promote_reuse = variant == 2;
      });
      ASSERT_TRUE(contains(run.params, "tensor cores: yes")) << run.params;
      const int64_t expected_bytes = variant == 0 ? 12288 : variant == 1 ? 12288 + 8192 : 12288;
      EXPECT_EQ(run.cache->lastExecutor(0).launchParams().smem_bytes, expected_bytes);
    }
  }
}

// ---- the scheduler's choice ----

// K = 13 (or N = 20 of an N-contiguous B) cannot be copied in whole
// 16-byte chunks, nor data 2 bytes off 16-byte alignment: CUDA cores,
// saying why; the result is still right. Float operands keep CUDA cores too.
TEST(TensorCoreChoice, FallsBackToCudaCoresAndSaysWhy) {
  Case c;
  c.k = 13;
  CacheRun odd_k = runThroughCache(makeFusion(c));
  EXPECT_TRUE(contains(odd_k.params, "tensor cores: no — K=13 is not a multiple of 8 (operand A (T0) "
                                     "axis 1, its contiguous one"))
      << odd_k.params;
  EXPECT_EQ(countMma(odd_k.cache->lastExecutor(0).kernel()), 0);

  c = Case();
  c.a_k_contiguous = false;  // A stored [K, M]: M = 40 is its contiguous extent, fine
  c.n = 20;                  // B stored [K, N] with N = 20
  CacheRun odd_n = runThroughCache(makeFusion(c));
  EXPECT_TRUE(contains(odd_n.params, "tensor cores: no — N=20 is not a multiple of 8 (operand B (T1) "
                                     "axis 1"))
      << odd_n.params;

  // Rows of 48 halves, but the data starts 2 bytes into an allocation.
  TcFusion shifted = makeFusion(Case());
  shifted.inputs[0] = at::randn({40 * 48 + 1}).to(at::kHalf).narrow(0, 1, 40 * 48).view({40, 48});
  CacheRun misaligned = runThroughCache(std::move(shifted));
  EXPECT_TRUE(contains(misaligned.params, "tensor cores: no — operand A (T0) data is 2-byte aligned; "
                                          "cp.async needs 16"))
      << misaligned.params;

  c = Case();
  c.dtype = DataType::Float;
  CacheRun floats = runThroughCache(makeFusion(c));
  EXPECT_TRUE(contains(floats.params, "tensor cores: no — operands are float and float")) << floats.params;
}

// The target decides too: sm_75 has no mma.sync m16n8k16; sm_80's smaller
// shared memory keeps the same tiles for this shape.
TEST(TensorCoreChoice, FollowsTheTargetArchitecture) {
  TcFusion f = makeFusion(Case());  // symbolic extents: 4096^3 in the infos
  const std::vector<InputInfo> infos = {InputInfo::contiguous(DataType::Half, {4096, 4096}),
                                        InputInfo::contiguous(DataType::Half, {4096, 4096})};
  for (int arch : {75, 80, 90}) {
    RuntimeInfo runtime(*f.fusion, infos, arch);
    MatmulParams p = matmulHeuristics(*f.fusion, runtime, DeviceLimits::forArch(arch));
    EXPECT_EQ(p.use_tensor_cores, arch >= 80) << p.toString();
    if (arch < 80) {
      EXPECT_TRUE(contains(p.toString(), "tensor cores: no — sm_75 has no mma.sync m16n8k16")) << p.toString();
    } else {
      EXPECT_EQ(p.tensor_core.toString(),
                "block 128x128x32, warp 64x32 (8 warps), stages 4, A K-contiguous, B N-contiguous, "
                "swizzle on, smem epilogue off, promote reuse off");
    }
  }
}

// Forcing tensor cores where they cannot run is an error naming the operand
// and axis (or the type), never a wrong kernel; forcing them off works.
TEST(TensorCoreChoice, ForcingThemWhereTheyCannotRunIsAnError) {
  const auto force = [](HeuristicParams& p) { dynamic_cast<MatmulParams&>(p).use_tensor_cores = true; };
  Case c;
  c.k = 13;
  TcFusion odd_k = makeFusion(c);
  FusionExecutorCache odd_k_cache(std::move(odd_k.fusion));
  odd_k_cache.setHeuristicOverride(force);
  EXPECT_SMELT_ERROR(odd_k_cache.runFusionWithInputs(odd_k.inputs), "tensor cores were forced, but K=13 is not a "
                     "multiple of 8", "operand A (T0) axis 1");

  c = Case();
  c.dtype = DataType::Float;
  TcFusion floats = makeFusion(c);
  FusionExecutorCache float_cache(std::move(floats.fusion));
  float_cache.setHeuristicOverride(force);
  EXPECT_SMELT_ERROR(float_cache.runFusionWithInputs(floats.inputs),
                     "tensor cores were forced, but operands are float and float");

  CacheRun off = runThroughCache(makeFusion(Case()), [](MatmulParams& p) { p.use_tensor_cores = false; });
  EXPECT_TRUE(contains(off.params, "tensor cores: no\n")) << off.params;
  EXPECT_EQ(countMma(off.cache->lastExecutor(0).kernel()), 0);
}

// A kernel compiled for K = 48 refuses, before a CUDA launch, inputs whose
// rows cannot be copied in 16-byte chunks, naming the input and the axis.
TEST(TensorCoreChoice, TheKernelChecksItsInputsBeforeALaunch) {
  TcFusion f = makeFusion(Case());
  RuntimeInfo runtime(*f.fusion, inputInfosOf(*f.fusion, f.inputs));
  scheduleMatmul(f.fusion.get(), matmulHeuristics(*f.fusion, runtime));
  FusionExecutor fe;
  fe.compile(f.fusion.get(), f.inputs);
  EXPECT_NO_THROW(fe.prepareLaunch(f.inputs));
  at::Tensor k13 = at::randn({40, 13}).to(at::kHalf);
  EXPECT_SMELT_ERROR(fe.prepareLaunch({k13, at::randn({13, 24}).to(at::kHalf)}),
                     "input 0 (T0) breaks what the kernel's vectorized (or cp.async) accesses assume: "
                     "T0.size[1] % 8 == 0 (T0.size[1] is 13");
}

// ---- the MmaOp in the IR ----

// The scheduler replaces the broadcast-multiply-sum: the math prints the
// MmaOp with its tiles; a clone keeps them; two tile configurations have
// different cache keys (and kernels), the same one the same key.
TEST(MmaOpIr, PrintedClonedAndKeyedWithItsTiles) {
  auto scheduled = [](int64_t block_k) {
    TcFusion f = makeFusion(Case());
    RuntimeInfo runtime(*f.fusion, inputInfosOf(*f.fusion, f.inputs));
    MatmulParams p = matmulHeuristics(*f.fusion, runtime);
    p.tensor_core.block_k = block_k;
    scheduleMatmul(f.fusion.get(), p);
    return f;
  };
  TcFusion k32 = scheduled(32);
  const std::string math = k32.fusion->mathString();
  EXPECT_TRUE(contains(math, "= mma_m16n8k16(T0, T1) {block 64x32x32, warp 32x32 (2 warps), stages 2"))
      << math;
  EXPECT_FALSE(contains(math, "broadcast")) << math;
  EXPECT_EQ(fusionCacheKey(*k32.fusion->clone()), fusionCacheKey(*k32.fusion));
  TcFusion k64 = scheduled(64);
  EXPECT_NE(fusionCacheKey(*k64.fusion), fusionCacheKey(*k32.fusion));
  FusionExecutor fe32, fe64;
  fe32.compile(k32.fusion.get(), k32.inputs);
  fe64.compile(k64.fusion.get(), k64.inputs);
  EXPECT_NE(fe32.kernelName(), fe64.kernelName());
  EXPECT_TRUE(at::allclose(fe32.run(k32.inputs)[0].to(at::kFloat), fe64.run(k64.inputs)[0].to(at::kFloat),
                           1e-3, 1e-3));
  // tensorCoreMma() checks its operands and tiles.
  FusionGuard guard(k32.fusion.get());
  TensorCoreMatmulParams bad;
  bad.warp_m = 8;
  EXPECT_SMELT_ERROR(tensorCoreMma(k32.fusion->inputs()[0]->asTensor(), k32.fusion->inputs()[1]->asTensor(), bad),
                     "warp tile 8x16");
  // A schedule by hand next to the MmaOp would be ignored: an error.
  k32.fusion->outputs()[0]->asTensor()->split(1, 8);
  EXPECT_SMELT_ERROR(GpuLower(k32.fusion.get()).run(), "is scheduled", "follows its tiles only");
  TensorView* f32 = makeContigTensor(2);
  EXPECT_SMELT_ERROR(tensorCoreMma(f32, k32.fusion->inputs()[1]->asTensor(), {}), "mma: operand", "is float");
}

// ---- NVRTC: the default configurations for sm_80 and sm_90 ----

// The heuristic configuration for 4096^3 and the skinny 16 x 4096 x 4096,
// scheduled and compiled through FusionExecutor for each architecture (the
// executor checks ptxas's shared memory against the plan: none counted for
// the dynamic array); no spills, no stack, the planned bytes are the operand
// tiles'.
TEST(TensorCoreNvrtc, DefaultConfigurationsThroughTheExecutor) {
  for (int arch : {80, 90}) {
    for (int64_t m : {4096, 16}) {
      SCOPED_TRACE(::testing::Message() << "sm_" << arch << ", M = " << m);
      Case c;
      c.epilogue = Epilogue::BiasRelu;
      TcFusion f = makeFusion(c);
      const std::vector<at::Tensor> inputs = {at::empty({m, 4096}, at::kHalf), at::empty({4096, 4096}, at::kHalf),
                                              at::empty({4096}, at::kHalf)};
      RuntimeInfo runtime(*f.fusion, inputInfosOf(*f.fusion, inputs), arch);
      const MatmulParams p = matmulHeuristics(*f.fusion, runtime, DeviceLimits::forArch(arch));
      ASSERT_TRUE(p.use_tensor_cores) << p.toString();
      scheduleMatmul(f.fusion.get(), p);
      FusionExecutor fe;
      ExecutorOptions options;
      options.arch = arch;
      fe.compile(f.fusion.get(), inputs, options);
      const PtxasInfo& ptxas = fe.ptxasInfo();
      EXPECT_EQ(ptxas.spill_store_bytes + ptxas.spill_load_bytes, 0) << p.tensor_core.toString();
      EXPECT_EQ(ptxas.stack_frame_bytes, 0);
      EXPECT_LE(ptxas.registers, DeviceLimits::forArch(arch).max_registers_per_thread);
      EXPECT_EQ(fe.launchParams().smem_bytes, operandTileBytes(p.tensor_core));
      RecordProperty("sm" + std::to_string(arch) + "_m" + std::to_string(m),
                     p.tensor_core.toString() + ": " + std::to_string(ptxas.registers) + " registers, " +
                         std::to_string(fe.launchParams().smem_bytes) + " B shared");
    }
  }
}

}  // namespace
}  // namespace smelt
