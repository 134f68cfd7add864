// The tensor-core matmul kernel (lower/tensor_core_matmul.h): fragment
// layouts, the simulator's warp-collective ldmatrix/mma and cp.async
// semantics, every operand layout and type against ATen, epilogues, the
// shared-memory epilogue with operand reuse, mutations the simulator must
// catch, and NVRTC compiles for sm_80 and sm_90 with ptxas figures.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>
#include <set>

#include "codegen/cuda_codegen.h"
#include "fusion/error.h"
#include "fusion/mma_fragment.h"
#include "fusion/ops.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/bank_conflicts.h"
#include "lower/kir_rewrite.h"
#include "lower/tensor_core_matmul.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/matmul/matmul_scheduler.h"
#include "common/tensor_core_fusions.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt {
namespace {

using sim::testing::atenReference;
using sim::testing::firstFinding;
using namespace smelt::testing::tensor_core;

// ---- fragment layouts ----

// Every element of each operand tile is held by exactly one (lane, index).
TEST(MmaFragment, EachOperandElementHasOneOwner) {
  auto covers = [](int64_t rows, int64_t cols, int64_t per_lane,
                   const std::function<mma::RowCol(int64_t, int64_t)>& at) {
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t lane = 0; lane < mma::kWarpSize; ++lane) {
      for (int64_t i = 0; i < per_lane; ++i) {
        mma::RowCol rc = at(lane, i);
        EXPECT_TRUE(rc.row >= 0 && rc.row < rows && rc.col >= 0 && rc.col < cols);
        EXPECT_TRUE(seen.insert({rc.row, rc.col}).second) << lane << " " << i;
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), rows * cols);
  };
  covers(16, 16, 8, mma::aElement);
  covers(16, 8, 4, mma::bElement);
  covers(16, 8, 4, mma::cElement);
  covers(8, 8, 2, [](int64_t l, int64_t e) { return mma::ldmatrixElement(l, e, false); });
  covers(8, 8, 2, [](int64_t l, int64_t e) { return mma::ldmatrixElement(l, e, true); });
  // The PTX ISA's figures: lane 5 holds a0 at (1, 2), a7 at (9, 11); b3 of
  // lane 6 is (k 13, n 1); c2 of lane 31 is (15, 6).
  EXPECT_EQ(mma::aElement(5, 0).row, 1);
  EXPECT_EQ(mma::aElement(5, 0).col, 2);
  EXPECT_EQ(mma::aElement(5, 7).row, 9);
  EXPECT_EQ(mma::aElement(5, 7).col, 11);
  EXPECT_EQ(mma::bElement(6, 3).row, 13);
  EXPECT_EQ(mma::bElement(6, 3).col, 1);
  EXPECT_EQ(mma::cElement(31, 2).row, 15);
  EXPECT_EQ(mma::cElement(31, 2).col, 6);
}

// The simulator's first finding for the kernel against ATen ("" when clean).
std::string simulateCase(TcFusion& f, const kir::Kernel& kernel) {
  sim::testing::Reference ref = atenReference(*f.fusion, f.inputs, 2e-2, 2e-2);
  return firstFinding(kernel, ref);
}


// ---- simulated against ATen ----

class TensorCoreLayouts : public ::testing::TestWithParam<std::tuple<int, DataType>> {};

TEST_P(TensorCoreLayouts, MatchesATen) {
  Case c;
  c.a_k_contiguous = std::get<0>(GetParam()) & 1;
  c.b_k_contiguous = std::get<0>(GetParam()) & 2;
  c.dtype = std::get<1>(GetParam());
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  EXPECT_EQ(simulateCase(f, kernel), "") << layoutName(c) << "\n" << kernel.toString();
}

INSTANTIATE_TEST_SUITE_P(AllLayoutsAndTypes, TensorCoreLayouts,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values(DataType::Half, DataType::BFloat16)));

TEST(TensorCoreMatmul, BiasReluEpilogue) {
  Case c;
  c.epilogue = Epilogue::BiasRelu;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  EXPECT_EQ(simulateCase(f, kernel), "");
}

// Guards that hold for every index are dropped (simplify_predicates): with
// static sizes the tiles divide, the epilogue computes and stores without
// compares, and only the copies of tiles past K (the pipeline's prefetch)
// keep theirs. Sizes the tiles do not divide keep the epilogue's guards.
TEST(TensorCoreMatmul, StaticSizesTheTilesDivideNeedNoEpilogueGuards) {
  auto guards = [](const kir::Kernel& kernel, bool divides) {
    std::pair<int, int> computes_and_copies{0, 0};
    kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
      if (auto* c = dynamic_cast<const kir::Compute*>(s); c && !c->predicate.alwaysTrue()) {
        ++computes_and_copies.first;
      }
      if (auto* copy = dynamic_cast<const kir::CpAsync*>(s); copy && !copy->predicate.alwaysTrue()) {
        if (divides) {
          EXPECT_EQ(copy->predicate.terms.size(), 1u) << copy->predicate.toString();
        }
        ++computes_and_copies.second;
      }
    });
    return computes_and_copies;
  };
  Case c;
  c.epilogue = Epilogue::BiasRelu;
  c.m = 64;
  c.n = 64;
  c.k = 96;
  c.static_sizes = true;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  EXPECT_EQ(simulateCase(f, kernel), "");
  const auto [computes, copies] = guards(kernel, true);
  EXPECT_EQ(computes, 0) << kernel.toString();
  EXPECT_GT(copies, 0) << kernel.toString();  // the K tiles the main loop prefetches past the end

  Case ragged = c;
  ragged.m = 40;
  ragged.n = 24;
  TcFusion g = makeFusion(ragged);
  kir::Kernel guarded = lowerTensorCoreMatmul(g.fusion.get(), g.operands, smallParams(ragged));
  EXPECT_EQ(simulateCase(g, guarded), "");
  EXPECT_GT(guards(guarded, false).first, 0) << guarded.toString();
}

TEST(TensorCoreMatmul, GeluEpilogueBFloat16) {
  Case c;
  c.dtype = DataType::BFloat16;
  c.epilogue = Epilogue::Gelu;
  c.a_k_contiguous = false;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  EXPECT_EQ(simulateCase(f, kernel), "");
}

// The C_s tile staged in shared memory: without promotion it gets bytes of
// its own; with it, the planner puts it over the (drained) operand tiles and
// inserts the barrier that makes that safe.
TEST(TensorCoreMatmul, SharedEpilogueWithAndWithoutPromotion) {
  for (bool promote : {false, true}) {
    Case c;
    c.epilogue = Epilogue::BiasRelu;
    TcFusion f = makeFusion(c);
    TensorCoreMatmulParams p = smallParams(c);
    p.smem_epilogue = true;
    p.promote_reuse = promote;
    kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, p);
    EXPECT_EQ(simulateCase(f, kernel), "") << "promote " << promote;
    const int64_t operands = 2 * (2 * 32 * 32 * 2);  // A_s + B_s: 2 stages of 32 x 32 halves
    const int64_t c_tile = 32 * 32 * 4;
    EXPECT_EQ(kernel.smem_plan->plan.total_bytes.constant(),
              promote ? std::max(operands, c_tile) : operands + c_tile);
    // With promotion the planner inserts one barrier, after the copies are
    // drained (the last wait_group 0) and before C_s is first written.
    const kir::ProgramPositions positions = kir::numberPositions(kernel.body);
    int64_t inserted = -1, drain = -1, first_c_write = -1;
    int inserted_count = 0;
    kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
      const int64_t at = positions.start.at(stmt);
      if (auto* sync = dynamic_cast<const kir::BlockSync*>(stmt); sync && sync->inserted_for_reuse) {
        inserted = at;
        ++inserted_count;
      }
      if (dynamic_cast<const kir::CpAsyncWait*>(stmt)) drain = at;
      auto* c = dynamic_cast<const kir::Compute*>(stmt);
      if (c && c->out.buffer->name == "C_s" && first_c_write < 0) first_c_write = at;
    });
    EXPECT_EQ(inserted_count, promote ? 1 : 0);
    if (promote) {
      EXPECT_LT(drain, inserted);
      EXPECT_LT(inserted, first_c_write);
    }
  }
}

// The swizzled tiles need 128-byte alignment: the planner gives it and the
// plan's verification rejects an address that breaks it.
TEST(TensorCoreMatmul, OperandTilesAre128ByteAligned) {
  Case c;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  kir::Buffer* b_smem = nullptr;
  for (const auto& b : kernel.buffers) {
    if (b->memory != MemoryType::Shared) continue;
    EXPECT_EQ(b->alignment, 128) << b->name;
    EXPECT_EQ(*b->address->constant() % 128, 0) << b->name;
    if (b->name == "B_s") b_smem = b.get();
  }
  ASSERT_NE(b_smem, nullptr);
  b_smem->address = *b_smem->address + 64;
  try {
    alloc_reuse::verifyKernelSharedMemory(kernel, SmemHazards::Precise, 232448);
    FAIL() << "expected a misalignment error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("align"), std::string::npos) << e.what();
  }
}

// A block tile of 64 x 32 with 2 warps of 32 x 32 (several m16/n8 tiles per
// warp) and 3 stages.
TEST(TensorCoreMatmul, LargerWarpTilesAndThreeStages) {
  Case c;
  c.m = 72;
  c.n = 40;
  c.k = 112;
  TcFusion f = makeFusion(c);
  TensorCoreMatmulParams p = smallParams(c);
  p.block_m = 64;
  p.warp_m = 32;
  p.warp_n = 32;
  p.stages = 3;
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, p);
  EXPECT_EQ(simulateCase(f, kernel), "");
}

// ---- bank conflicts ----

// The operand paths (cp.async stores, ldmatrix loads) of every layout are
// conflict free with the swizzle, at the addresses the planner gave.
TEST(TensorCoreBankConflicts, SwizzledOperandPathsAreConflictFree) {
  for (int layout = 0; layout < 4; ++layout) {
    for (int64_t block_k : {32, 64}) {
      Case c;
      c.a_k_contiguous = layout & 1;
      c.b_k_contiguous = layout & 2;
      TcFusion f = makeFusion(c);
      TensorCoreMatmulParams p = smallParams(c);
      p.block_k = block_k;
      kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, p);
      const BankConflictReport& report = kernel.smem_plan->bank_conflicts;
      int operand_accesses = 0;
      for (const BankConflictAccess& a : report.accesses) {
        if (a.kind != "cp.async" && a.kind != "ldmatrix") continue;
        ++operand_accesses;
        EXPECT_EQ(a.ways, 1) << layoutName(c) << " block_k " << block_k << "\n" << report.toString();
        EXPECT_EQ(a.wavefronts, a.ideal_wavefronts);
      }
      // cp.async of A and B in the prologue and the loop, ldmatrix of A and B.
      EXPECT_EQ(operand_accesses, 6) << report.toString();
      EXPECT_TRUE(report.unevaluated_positions.empty()) << report.toString();
    }
  }
}

// Without the swizzle, 64-byte rows (block_k 32 halves) put rows r and
// r + 2 of an ldmatrix phase in the same banks: 4-way conflicts; 128-byte
// rows (block_k 64, or a 64-wide M/N tile) put all 8 rows there: 8-way. The
// cp.async stores of consecutive chunks stay conflict free.
TEST(TensorCoreBankConflicts, UnswizzledTilesReportTheExpectedConflicts) {
  for (int64_t block_k : {32, 64}) {
    Case c;  // TT: A K-contiguous (rows of block_k), B N-contiguous (rows of block_n = 32)
    TcFusion f = makeFusion(c);
    TensorCoreMatmulParams p = smallParams(c);
    p.block_k = block_k;
    p.swizzle = false;
    kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, p);
    const BankConflictReport& report = kernel.smem_plan->bank_conflicts;
    for (const BankConflictAccess& a : report.accesses) {
      if (a.kind == "cp.async") {
        EXPECT_EQ(a.ways, 1) << report.toString();
      }
      if (a.kind == "ldmatrix") {
        const int64_t row_bytes = a.buffer == "A_s" ? block_k * 2 : 32 * 2;
        const int64_t expected = row_bytes == 64 ? 4 : 8;
        EXPECT_EQ(a.ways, expected) << a.buffer << " block_k " << block_k << "\n" << report.toString();
        // One ldmatrix phase per matrix, each taking `ways` wavefronts.
        EXPECT_EQ(a.wavefronts, a.ideal_wavefronts * expected);
      }
    }
    EXPECT_EQ(report.conflicted(), 2) << report.toString();
  }
}

// ---- mutations the simulator must catch ----

template <typename T>
std::vector<T*> statementsOf(kir::Kernel& kernel) {
  std::vector<T*> result;
  for (auto& stmt : kernel.body) {
    kir::forEachInTree(*stmt, [&](kir::Stmt& s) {
      if (auto* t = dynamic_cast<T*>(&s)) result.push_back(t);
    });
  }
  return result;
}

TEST(TensorCoreMutations, UnswizzledStoresUnderSwizzledLoadsGiveWrongResults) {
  Case c;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  TensorCoreMatmulParams plain = smallParams(c);
  plain.swizzle = false;
  kir::Kernel unswizzled = lowerTensorCoreMatmul(f.fusion.get(), f.operands, plain);
  auto copies = statementsOf<kir::CpAsync>(kernel);
  auto plain_copies = statementsOf<kir::CpAsync>(unswizzled);
  ASSERT_EQ(copies.size(), plain_copies.size());
  for (size_t i = 0; i < copies.size(); ++i) copies[i]->dst.index = plain_copies[i]->dst.index;
  EXPECT_NE(simulateCase(f, kernel).find("wrong result"), std::string::npos);
}

TEST(TensorCoreMutations, FlippedLdmatrixTransposeGivesWrongResults) {
  for (int which : {0, 1}) {  // the A load, the B load
    Case c;
    TcFusion f = makeFusion(c);
    kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
    auto loads = statementsOf<kir::LdMatrix>(kernel);
    ASSERT_EQ(loads.size(), 2u);
    loads[which]->transpose = !loads[which]->transpose;
    EXPECT_NE(simulateCase(f, kernel).find("wrong result"), std::string::npos) << which;
  }
}

TEST(TensorCoreMutations, AccumulatorFragmentIndexOffByOneIsCaught) {
  Case c;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  auto mmas = statementsOf<kir::Mma>(kernel);
  ASSERT_EQ(mmas.size(), 1u);
  // B's fragment of the neighbouring n8 tile.
  mmas[0]->b.index = (mmas[0]->b.index + mma::kBElementsPerLane) % (2 * mma::kBElementsPerLane);
  EXPECT_NE(simulateCase(f, kernel), "");
}

// The kinds of error the simulator reports for the kernel (races aside).
std::set<sim::SimError::Kind> errorKinds(TcFusion& f, const kir::Kernel& kernel) {
  sim::SimResult result = sim::simulate(kernel, f.inputs);
  std::set<sim::SimError::Kind> kinds;
  for (const sim::SimError& e : result.report.errors) kinds.insert(e.kind);
  return kinds;
}

TEST(TensorCoreMutations, ReadingBeforeTheWaitIsAnInFlightError) {
  Case c;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  EXPECT_TRUE(errorKinds(f, kernel).empty());
  auto waits = statementsOf<kir::CpAsyncWait>(kernel);
  ASSERT_EQ(waits.size(), 2u);  // in the K loop, and the drain after it
  waits[0]->pending = 1;        // lets tile k still be in flight when it is read
  EXPECT_TRUE(errorKinds(f, kernel).count(sim::SimError::Kind::AsyncCopyInFlight));
  // It is also a race: the copy lands after other threads read the bytes.
  EXPECT_NE(simulateCase(f, kernel).find("race"), std::string::npos);
}

// Without the drain after the K loop the last prefetch is still in flight:
// at the kernel's end, and (with the C_s tile reusing the operand bytes)
// when C_s is written over it.
TEST(TensorCoreMutations, MissingDrainIsReported) {
  for (bool promote : {false, true}) {
    Case c;
    TcFusion f = makeFusion(c);
    TensorCoreMatmulParams p = smallParams(c);
    p.smem_epilogue = promote;
    p.promote_reuse = promote;
    kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, p);
    auto waits = statementsOf<kir::CpAsyncWait>(kernel);
    waits[1]->pending = 1;
    EXPECT_EQ(errorKinds(f, kernel), std::set{sim::SimError::Kind::AsyncCopyInFlight});
    if (promote) {
      sim::SimResult result = sim::simulate(kernel, f.inputs);
      bool c_write_flagged = false;
      for (const sim::SimError& e : result.report.errors) c_write_flagged |= e.buffer == "C_s";
      EXPECT_TRUE(c_write_flagged) << result.report.toString();
    }
  }
}

TEST(TensorCoreMutations, MissingBarrierIsARace) {
  Case c;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  auto syncs = statementsOf<kir::BlockSync>(kernel);
  ASSERT_FALSE(syncs.empty());
  auto where = kir::locate(kernel.body, syncs[0]);
  ASSERT_TRUE(where.has_value());
  where->first->erase(where->first->begin() + static_cast<std::ptrdiff_t>(where->second));
  EXPECT_NE(simulateCase(f, kernel).find("race"), std::string::npos);
}

TEST(TensorCoreMutations, MmaUnderADivergentBranchIsADivergentWarp) {
  Case c;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  auto mmas = statementsOf<kir::Mma>(kernel);
  auto where = kir::locate(kernel.body, mmas[0]);
  ASSERT_TRUE(where.has_value());
  auto branch = std::make_unique<kir::IfThenElse>();
  branch->predicate.terms = {{IntExpr::symbol("threadIdx.x") % 32,
                              kir::Predicate::Term::Kind::LessThan, IntExpr(16)}};
  branch->then_body.push_back(std::move((*where->first)[where->second]));
  (*where->first)[where->second] = std::move(branch);
  EXPECT_NE(simulateCase(f, kernel).find("divergent-warp"), std::string::npos);
}

// ---- NVRTC ----

// Every layout and type compiles for sm_80 and sm_90 with no spills, and the
// static shared memory ptxas counts is the planned total.
TEST(TensorCoreNvrtc, EveryVariantCompilesForSm80AndSm90) {
  for (int layout = 0; layout < 4; ++layout) {
    for (DataType t : {DataType::Half, DataType::BFloat16}) {
      for (bool smem_epilogue : {false, true}) {
        Case c;
        c.dtype = t;
        c.a_k_contiguous = layout & 1;
        c.b_k_contiguous = layout & 2;
        c.epilogue = Epilogue::BiasRelu;
        TcFusion f = makeFusion(c);
        TensorCoreMatmulParams p = smallParams(c);
        p.block_m = p.block_n = 64;
        p.warp_m = p.warp_n = 32;
        p.smem_epilogue = smem_epilogue;
        p.promote_reuse = smem_epilogue;
        kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, p);
        CodegenOptions options;
        options.static_shared_memory = true;
        const std::string source = generateCuda(kernel, "tc_matmul", options);
        for (int arch : {80, 90}) {
          NvrtcOptions nvrtc;
          nvrtc.arch = arch;
          CompiledKernel compiled = compileCuda(source, "tc_matmul", nvrtc);
          EXPECT_EQ(compiled.ptxas.spill_store_bytes, 0) << layoutName(c) << " sm_" << arch;
          EXPECT_EQ(compiled.ptxas.spill_load_bytes, 0) << layoutName(c) << " sm_" << arch;
          EXPECT_EQ(compiled.ptxas.stack_frame_bytes, 0) << layoutName(c) << " sm_" << arch;
          EXPECT_NO_THROW(checkPtxasSharedMemory(
              compiled, *kernel.smem_plan->plan.total_bytes.constant(),
              kernel.smem_plan->report_text));
        }
      }
    }
  }
}

TEST(TensorCoreNvrtc, EmitsTheTensorCoreInstructions) {
  Case c;
  c.b_k_contiguous = false;
  TcFusion f = makeFusion(c);
  kir::Kernel kernel = lowerTensorCoreMatmul(f.fusion.get(), f.operands, smallParams(c));
  const std::string source = generateCuda(kernel, "tc_matmul");
  for (const char* text : {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                           "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                           "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                           "cp.async.cg.shared.global", "cp.async.commit_group",
                           "smelt::cpAsyncWait<0>", "smelt::ldmatrix<2, true>"}) {
    EXPECT_NE(source.find(text), std::string::npos) << text;
  }
}

// ---- heuristics ----

TEST(TensorCoreHeuristics, TilesWarpsAndStagesFitTheTarget) {
  struct Shape {
    int64_t m, n, k;
  };
  for (const DeviceLimits& target : {DeviceLimits::sm80(), DeviceLimits::sm90()}) {
    for (Shape s : {Shape{4096, 4096, 4096}, Shape{16, 4096, 4096}, Shape{64, 11008, 4096},
                    Shape{4096, 14336, 4096}, Shape{40, 24, 48}, Shape{1024, 1024, 1024}}) {
      TensorCoreMatmulParams p = tensorCoreHeuristics(s.m, s.n, s.k, true, false, target);
      EXPECT_NO_THROW(checkTensorCoreParams(p)) << p.toString();
      EXPECT_LE(operandTileBytes(p), target.max_shared_memory_per_block) << p.toString();
    }
    TensorCoreMatmulParams big = tensorCoreHeuristics(4096, 4096, 4096, true, false, target);
    EXPECT_EQ(big.toString(),
              "block 128x128x32, warp 64x32 (8 warps), stages 4, A K-contiguous, B N-contiguous, "
              "swizzle on, smem epilogue off, promote reuse off");
    // Skinny M keeps a 16-row block; block_k doubles so 128 threads copy whole chunks.
    TensorCoreMatmulParams skinny = tensorCoreHeuristics(16, 4096, 4096, true, true, target);
    EXPECT_EQ(skinny.block_m, 16);
    EXPECT_EQ(skinny.warp_m, 16);
    EXPECT_EQ(skinny.block_k, 64);
    EXPECT_EQ(skinny.threads(), 128);
  }
  // Stages shrink to fit: 128 x 128 x 32 tiles take 16 KiB a stage; with
  // 100000 bytes per SM two blocks get 48976 bytes each: 3 stages (49152)
  // do not fit, 2 do.
  DeviceLimits small = DeviceLimits::sm80();
  small.shared_memory_per_sm = 100000;
  EXPECT_EQ(tensorCoreHeuristics(4096, 4096, 4096, true, false, small).stages, 2);
  EXPECT_THROW(tensorCoreHeuristics(64, 64, 64, true, false, DeviceLimits::forArch(75)), Error);
}

// ---- errors ----

TEST(TensorCoreMatmul, BadParametersAndOperandsAreErrors) {
  TensorCoreMatmulParams p;
  p.warp_m = 8;
  EXPECT_THROW(checkTensorCoreParams(p), Error);
  p = {};
  p.stages = 1;
  EXPECT_THROW(checkTensorCoreParams(p), Error);
  p = {};
  p.block_n = 48;
  EXPECT_THROW(checkTensorCoreParams(p), Error);
  // Float operands have no m16n8k16 form.
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* a = makeContigTensor(2, DataType::Float);
  TensorView* b = makeContigTensor(2, DataType::Float);
  fusion->addInput(a);
  fusion->addInput(b);
  fusion->addOutput(matmul(a, b));
  MatmulPattern pattern = findMatmul(*fusion);
  try {
    lowerTensorCoreMatmul(fusion.get(), {pattern.a, pattern.b, pattern.sum, pattern.output}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Half or BFloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace smelt
