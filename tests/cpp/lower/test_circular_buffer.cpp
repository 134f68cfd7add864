// Circular buffering (lower/circular_buffer.cpp) on the tiled GEMM of case B1
// with 2-4 stages, and the reduction init nest of register tiles (loop_nest): the kernel IR (allocation, prologue, slots, one barrier
// per iteration), the simulator against ATen with race detection in every
// thread order, the barrier's necessity, the planner's view of the tiles'
// lifetime, NVRTC with ptxas shared memory equal to the plan, and errors.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "common/expect_error.h"
#include "common/smem_case_fusions.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "runtime/nvrtc_compiler.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt {
namespace {

std::vector<std::string> syncReasons(const kir::StmtList& body) {
  std::vector<std::string> reasons;
  kir::forEachStmt(body, [&](const kir::Stmt* s, int) {
    if (auto* sync = dynamic_cast<const kir::BlockSync*>(s)) reasons.push_back(sync->reason);
  });
  return reasons;
}

const kir::Buffer* bufferNamed(const kir::Kernel& kernel, const std::string& name) {
  for (const auto& b : kernel.buffers) {
    if (b->name == name) return b.get();
  }
  return nullptr;
}

// The loop whose body starts with the circular buffer's barrier.
const kir::ForLoop* mainLoop(const kir::Kernel& kernel) {
  const kir::ForLoop* found = nullptr;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
    auto* loop = dynamic_cast<const kir::ForLoop*>(s);
    if (loop == nullptr || loop->body.empty()) return;
    auto* sync = dynamic_cast<const kir::BlockSync*>(loop->body.front().get());
    if (sync != nullptr && sync->reason.find("circular buffer") != std::string::npos) found = loop;
  });
  return found;
}

// Case B1's GEMM (32 x 32 tiles, K = 96: three K tiles) with 3 stages: Asub
// and Bsub hold 3 tiles, the prologue loads tiles 0 and 1, iteration i1 loads
// tile i1 + 2 into slot (i1 + 2) % 3 and reads slot i1 % 3 after the one
// barrier at the top of the iteration.
TEST(CircularBuffer, GemmKernelIr) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm(64, 64, 96, 0, 3);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  const std::string load_a = "Asub[((i0 * 1024) + ((threadIdx.y * 32) + threadIdx.x))] = set(T0[((((blockIdx.y * 32) + threadIdx.y) * 96) + ((i0 * 32) + threadIdx.x))])";
  EXPECT_EQ(kernel.toString(),
            "0: for blockIdx.y in 0..2 (BIDy) trivial\n"
            "1:   for blockIdx.x in 0..2 (BIDx) trivial\n"
            "2:     alloc T6 Local float[1]\n"
            "3:     T6[0] = 0.0\n"
            "4:     alloc Asub Shared float[3072]\n"
            "5:     alloc Bsub Shared float[3072]\n"
            "6:     for i0 in 0..2\n"
            "7:       for threadIdx.y in 0..32 (TIDy) trivial\n"
            "8:         for threadIdx.x in 0..32 (TIDx) trivial\n"
            "9:           " + load_a + "\n"
            "10:       for threadIdx.y in 0..32 (TIDy) trivial\n"
            "11:         for threadIdx.x in 0..32 (TIDx) trivial\n"
            "12:           for threadIdx.y in 0..32 (TIDy) trivial\n"
            "13:             Bsub[((i0 * 1024) + ((threadIdx.x * 32) + threadIdx.y))] = set(T1[((((i0 * 32) + threadIdx.y) * 64) + ((blockIdx.x * 32) + threadIdx.x))])\n"
            "14:     end for i0\n"
            "15:     for i1 in 0..3\n"
            "16:       __syncthreads()  // RAW/WAR Asub, Bsub (circular buffer, 3 stages)\n"
            "17:       for threadIdx.y in 0..32 (TIDy) trivial\n"
            "18:         for threadIdx.x in 0..32 (TIDx) trivial\n"
            "19:           if ((i1 + 2) < 3) Asub[((((i1 + 2) % 3) * 1024) + ((threadIdx.y * 32) + threadIdx.x))] = set(T0[((((blockIdx.y * 32) + threadIdx.y) * 96) + (((i1 + 2) * 32) + threadIdx.x))])\n"
            "20:         for threadIdx.x in 0..32 (TIDx) trivial\n"
            "21:           for threadIdx.y in 0..32 (TIDy) trivial\n"
            "22:             if ((i1 + 2) < 3) Bsub[((((i1 + 2) % 3) * 1024) + ((threadIdx.x * 32) + threadIdx.y))] = set(T1[(((((i1 + 2) * 32) + threadIdx.y) * 64) + ((blockIdx.x * 32) + threadIdx.x))])\n"
            "23:           for i2 in 0..32\n"
            "24:             alloc T3 Local float[1]\n"
            "25:             T3[0] = broadcast(Asub[(((i1 % 3) * 1024) + ((threadIdx.y * 32) + i2))])\n"
            "26:             alloc T2 Local float[1]\n"
            "27:             T2[0] = broadcast(Bsub[(((i1 % 3) * 1024) + ((threadIdx.x * 32) + i2))])\n"
            "28:             alloc T4 Local float[1]\n"
            "29:             T4[0] = mul(T3[0], T2[0])\n"
            "30:             T6[0] = sum(T6[0], T4[0])\n"
            "31:           end for i2\n"
            "32:     end for i1\n"
            "33:     for threadIdx.y in 0..32 (TIDy) trivial\n"
            "34:       for threadIdx.x in 0..32 (TIDx) trivial\n"
            "35:         alloc Csub Shared float[1024]\n"
            "36:         Csub[((threadIdx.y * 32) + threadIdx.x)] = set(T6[0])\n"
            "37:         T5[((((blockIdx.y * 32) + threadIdx.y) * 64) + ((blockIdx.x * 32) + threadIdx.x))] = set(Csub[((threadIdx.y * 32) + threadIdx.x)])\n");
  const kir::Buffer* a_sub = bufferNamed(kernel, "Asub");
  ASSERT_EQ(a_sub->shape.size(), 3u);
  EXPECT_EQ(a_sub->shape[0].constant(), 3);
  EXPECT_EQ(a_sub->bytes().constant(), 12288);
}

// Stage counts 2-4 against K tile counts below, at and above them (the
// prologue's loads of missing tiles are guarded), with a non-divisible K.
TEST(CircularBuffer, GemmSimulatesCorrectlyWithoutRaces) {
  struct Config {
    int64_t stages, k;
  };
  for (Config c : {Config{2, 200}, Config{3, 32}, Config{3, 64}, Config{4, 96}}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::buildTiledGemm(32, 32, c.k, 0, c.stages);
    SCOPED_TRACE(::testing::Message() << c.stages << " stages, K = " << c.k);
    sim::testing::expectKernelCorrect(fusion, sim::testing::randomInputs(fusion), 1e-4, 1e-4);
  }
}

// The one barrier per iteration is needed: without it the simulator reports
// a race (a tile read before another thread's load of it, or overwritten
// while another thread still reads it).
TEST(CircularBuffer, RemovingTheIterationBarrierRaces) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm(32, 32, 128, 0, 3);
  std::vector<at::Tensor> inputs = sim::testing::randomInputs(fusion);
  GpuLower lower(&fusion);
  auto& kernel = const_cast<kir::Kernel&>(lower.run());
  const kir::ForLoop* loop = mainLoop(kernel);
  ASSERT_NE(loop, nullptr);
  EXPECT_TRUE(sim::simulate(kernel, inputs).report.clean());
  auto& body = const_cast<kir::ForLoop*>(loop)->body;
  body.erase(body.begin());
  sim::SimReport report = sim::simulate(kernel, inputs).report;
  ASSERT_FALSE(report.races.empty());
  std::set<sim::RaceKind> kinds;
  for (const sim::RaceReport& race : report.races) kinds.insert(race.kind);
  EXPECT_TRUE(kinds.count(sim::RaceKind::RAW)) << report.toString();
}

// A one-stage tile gets the syncs pass's RAW and WAR barriers instead.
TEST(CircularBuffer, OneStageKeepsRawAndWarBarriers) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm(64, 64, 96, 0, 1);
  GpuLower lower(&fusion);
  std::vector<std::string> reasons = syncReasons(lower.run().body);
  EXPECT_EQ(reasons, (std::vector<std::string>{"RAW Asub", "WAR Asub"}));
}

// The tiles are live to the end of the main loop: the epilogue tile cannot
// take their bytes without a barrier after the loop, which promoteReuse adds.
TEST(CircularBuffer, TilesLiveToTheEndOfTheMainLoop) {
  for (bool promote : {false, true}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::TiledGemm gemm = cases::buildTiledGemm(64, 64, 96, 0, 3);
    // Csub read by other threads than its writers (a transposed store).
    gemm.output->axis(2)->parallelize(ParallelType::Serial);
    gemm.output->axis(3)->parallelize(ParallelType::TIDy);
    gemm.output->axis(2)->parallelize(ParallelType::TIDx);
    gemm.c_sub->inlineAt(2);
    if (promote) {
      gemm.a_sub->promoteReuse();
      gemm.b_sub->promoteReuse();
    }
    LowerOptions options;
    options.smem_hazards = SmemHazards::Conservative;
    GpuLower lower(&fusion, options);
    const kir::Kernel& kernel = lower.run();
    const kir::Buffer* c_sub = bufferNamed(kernel, "Csub");
    EXPECT_EQ(*kernel.smem_plan->plan.total_bytes.constant(), promote ? 24576 : 28672);
    // Promoted, Csub shares bytes with a tile; otherwise it has its own.
    auto overlaps = [](const kir::Buffer* x, const kir::Buffer* y) {
      int64_t xa = *x->address->constant(), ya = *y->address->constant();
      return xa < ya + *y->bytes().constant() && ya < xa + *x->bytes().constant();
    };
    EXPECT_EQ(overlaps(c_sub, bufferNamed(kernel, "Asub")) ||
                  overlaps(c_sub, bufferNamed(kernel, "Bsub")),
              promote);
    sim::testing::expectKernelCorrect(fusion, sim::testing::randomInputs(fusion), 1e-4, 1e-4,
                                      options);
  }
}

// NVRTC compiles the pipelined GEMM; ptxas's shared memory is the plan's.
TEST(CircularBuffer, CompilesWithPtxasSharedMemoryEqualToPlan) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm(64, 64, 96, 0, 3);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  CodegenOptions fixed;
  fixed.static_shared_memory = true;
  const CompiledKernel compiled = compileCuda(generateCuda(kernel, "pipelined", fixed), "pipelined");
  EXPECT_EQ(compiled.ptxas.static_smem_bytes, *sharedMemoryBytes(kernel).constant());
  EXPECT_EQ(compiled.ptxas.static_smem_bytes, 28672);
}

TEST(CircularBuffer, Errors) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor({8});
    fusion.addInput(x);
    TensorView* y = set(x);
    fusion.addOutput(set(y));
    EXPECT_SMELT_ERROR(y->circularBuffer(2), "circularBuffer(2)", y->name().c_str(), "Local");
    y->setMemoryType(MemoryType::Shared)->circularBuffer(2);
    EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "circularBuffer", y->name().c_str(), "position 0");
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::TiledGemm gemm = cases::buildTiledGemm(64, 64, 96, 0, 3);
    gemm.b_sub->circularBuffer(2);
    EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "Asub (3 stages)", "Bsub (2 stages)",
                       "share a main loop");
  }
}

// A register tile accumulated over a serial reduction loop (the matmul
// scheduler's thread tile): the iteration axes run inside the reduction loop,
// so the init gets its own copies of them, just outside it.
TEST(ReductionInitNest, RegisterTileInsideTheReductionLoop) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 10});
  fusion.addInput(x);
  TensorView* s = sum(x, {1});  // [6, r10]
  fusion.addOutput(s);
  TensorView* acc = s->cacheBefore();
  acc->split(0, 3);                  // [2, 3, r10]
  acc->reorder({{2, 1}, {1, 2}});    // [2, r10, 3]
  acc->axis(0)->parallelize(ParallelType::TIDx);
  s->split(0, 3)->axis(0)->parallelize(ParallelType::TIDx);
  acc->inlineAt(1);
  GpuLower lower(&fusion);
  EXPECT_EQ(lower.run().toString(),
            "0: for threadIdx.x in 0..2 (TIDx) trivial\n"
            "1:   alloc T2 Local float[3]\n"
            "2:   for i0 in 0..3\n"
            "3:     T2[i0] = 0.0\n"
            "4:   end for i0\n"
            "5:   for i1 in 0..10\n"
            "6:     for i2 in 0..3\n"
            "7:       T2[i2] = sum(T2[i2], T0[((((threadIdx.x * 3) + i2) * 10) + i1)])\n"
            "8:     end for i2\n"
            "9:   end for i1\n"
            "10:   for i3 in 0..3\n"
            "11:     T1[((threadIdx.x * 3) + i3)] = set(T2[i3])\n"
            "12:   end for i3\n");
  sim::testing::expectKernelCorrect(fusion, sim::testing::randomInputs(fusion));
}

}  // namespace
}  // namespace smelt
