// The block-level scan (ScanParams::block_scan, lower/block_scan.h): one
// block per row walking it in tiles of threads x items, through the pass
// pipeline, the CPU simulator (values against ATen, race checker clean) and
// NVRTC; the heuristic's choice, the launch shape, the kernel IR's form, the
// shared-memory plan and the bank-conflict analysis.
#include <gtest/gtest.h>

#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/bank_conflicts.h"
#include "lower/lower.h"
#include "ops/pointwise_kernel_checks.h"
#include "ops/scan_fusions.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/simulator/simulator.h"
#include "scheduler/registry.h"
#include "scheduler/scan.h"

namespace smelt {
namespace {

using smelt::testing::evaluateWithATen;

const auto& kCombines = smelt::testing::kScanCombines;

// A scan along the last dimension (the block scan's case).
std::unique_ptr<Fusion> scanFusion(const std::vector<int64_t>& shape, ScanCombine combine,
                                   DataType dtype = DataType::Float,
                                   TensorView* (*prologue)(TensorView*) = nullptr,
                                   TensorView* (*epilogue)(TensorView*) = nullptr) {
  return smelt::testing::scanFusion(shape, -1, combine, dtype, prologue, epilogue);
}

struct LoweredBlockScan {
  std::unique_ptr<Fusion> fusion;
  std::unique_ptr<GpuLower> lower;
  const kir::Kernel* kernel = nullptr;
  ScanParams params;
};

// Schedules with the heuristic's parameters, forced to the block scan with
// `threads` threads (0: the heuristic's) when `force`.
LoweredBlockScan lowerBlockScan(std::unique_ptr<Fusion> fusion, bool force = true, int64_t threads = 0) {
  LoweredBlockScan result;
  result.fusion = std::move(fusion);
  const std::vector<at::Tensor> inputs = smelt::testing::randomInputs(*result.fusion);
  RuntimeInfo runtime(*result.fusion, inputInfosOf(*result.fusion, inputs));
  result.params = scanHeuristics(*result.fusion, runtime);
  if (force) {
    result.params.block_scan = true;
    if (threads > 0) result.params.block_threads = threads;
  }
  scheduleScan(*result.fusion, result.params);
  result.lower = std::make_unique<GpuLower>(result.fusion.get());
  result.kernel = &result.lower->run();
  return result;
}

// Runs the block scan of `fusion` in the simulator (races checked, threads
// in reverse order) against ATen: exact when `tolerance` is 0.
void expectBlockScanMatchesATen(std::unique_ptr<Fusion> fusion, const std::vector<at::Tensor>& inputs,
                                double tolerance = 1e-5, int64_t threads = 64) {
  const std::vector<at::Tensor> expected = evaluateWithATen(*fusion->clone(), inputs);
  const LoweredBlockScan lowered = lowerBlockScan(std::move(fusion), true, threads);
  sim::SimOptions options;
  options.order = sim::ThreadOrder::Reverse;
  const sim::SimResult result = sim::simulate(*lowered.kernel, inputs, {}, {}, options);
  EXPECT_TRUE(result.report.clean()) << result.report.toString();
  ASSERT_EQ(result.outputs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const at::Tensor got = result.outputs[i].to(at::kDouble);
    const at::Tensor want = expected[i].to(at::kDouble);
    EXPECT_EQ(result.outputs[i].scalar_type(), expected[i].scalar_type());
    if (tolerance == 0) {
      EXPECT_TRUE(at::equal(got.nan_to_num(7.5), want.nan_to_num(7.5))) << (got - want).abs().max();
    } else {
      EXPECT_TRUE(at::allclose(got, want, tolerance, tolerance, /*equal_nan=*/true))
          << (got - want).abs().nan_to_num(0).max();
    }
  }
}

at::Tensor nearOne(const std::vector<int64_t>& shape) { return 1.0 + 0.001 * at::randn(shape); }

bool exact(ScanCombine combine) { return combine == ScanCombine::Max || combine == ScanCombine::Min; }

// Extents that leave the last tile partial (a tile is 64 threads x 4 items
// here), down to a single element, in 1-D and [rows, long] scans.
TEST(BlockScanKernels, EveryCombineAtExtentsNotAMultipleOfTheTile) {
  for (ScanCombine combine : kCombines) {
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
             {1}, {31}, {1000}, {4097}, {3, 1000}, {2, 4097}}) {
      SCOPED_TRACE(ScanOp::nameOf(combine) + " of " + std::to_string(shape.back()));
      expectBlockScanMatchesATen(scanFusion(shape, combine), {nearOne(shape)}, exact(combine) ? 0 : 1e-4);
    }
  }
}

TEST(BlockScanKernels, SeventyThousandElementsWithTheHeuristicsBlock) {
  for (ScanCombine combine : {ScanCombine::Add, ScanCombine::Max}) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    const at::Tensor x = at::randn({70000});
    expectBlockScanMatchesATen(scanFusion({70000}, combine), {x}, exact(combine) ? 0 : 1e-3, 0);
  }
}

// NaN in one tile makes the rest of the row NaN (every combine, cummax and
// cummin included); logcumsumexp of -inf stays -inf and +inf takes over.
TEST(BlockScanKernels, NaNAndInfinitiesAcrossTiles) {
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor x = at::randn({4, 1500});
  x[0][700] = std::numeric_limits<float>::quiet_NaN();
  x[1][0] = std::numeric_limits<float>::quiet_NaN();
  x[2][1499] = -inf;
  x[3].fill_(-inf);
  x[3][900] = inf;
  for (ScanCombine combine : kCombines) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    expectBlockScanMatchesATen(scanFusion({4, 1500}, combine), {x}, exact(combine) ? 0 : 1e-3);
  }
}

TEST(BlockScanKernels, IntegerSixteenBitAndBoolScans) {
  const auto longs = at::TensorOptions().dtype(at::kLong);
  for (ScanCombine combine : {ScanCombine::Add, ScanCombine::Max, ScanCombine::Min}) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    expectBlockScanMatchesATen(scanFusion({2, 3000}, combine, DataType::Int), {at::randint(-9, 10, {2, 3000}, longs)},
                               0);
    expectBlockScanMatchesATen(scanFusion({2, 3000}, combine, DataType::Int32),
                               {at::randint(-9, 10, {2, 3000}, longs).to(at::kInt)}, 0);
  }
  // Sums past 2^53 stay exact (the simulator scans integers in int64_t).
  expectBlockScanMatchesATen(scanFusion({2, 3000}, ScanCombine::Add, DataType::Int),
                             {at::randint(int64_t{1} << 49, int64_t{1} << 50, {2, 3000}, longs) | 1}, 0);
  // Products of +-1 stay in range.
  expectBlockScanMatchesATen(scanFusion({2, 700}, ScanCombine::Mul, DataType::Int),
                             {1 - 2 * (at::rand({2, 700}) > 0.99).to(at::kLong)}, 0);
  // 16-bit sums accumulate in float.
  expectBlockScanMatchesATen(scanFusion({2, 3000}, ScanCombine::Add, DataType::Half),
                             {at::rand({2, 3000}).to(at::kHalf)}, 2e-2);
  expectBlockScanMatchesATen(scanFusion({2, 3000}, ScanCombine::LogAddExp, DataType::BFloat16),
                             {at::randn({2, 3000}).to(at::kBFloat16)}, 5e-2);
  for (ScanCombine combine : {ScanCombine::Max, ScanCombine::Min}) {
    expectBlockScanMatchesATen(scanFusion({2, 1200}, combine, DataType::Bool), {at::rand({2, 1200}) > 0.999}, 0);
  }
}

// Rows over grid x and y, and a scan dimension that is not innermost (the
// items are then strided loads; the block scan still takes it).
TEST(BlockScanKernels, ThreeDimensionsAndAnOuterScanDimension) {
  for (int64_t dim : {2, 1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const std::vector<int64_t> shape = dim == 2 ? std::vector<int64_t>{2, 3, 1100} : std::vector<int64_t>{2, 1100, 3};
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard guard(fusion.get());
      TensorView* in = makeConcreteTensor(shape);
      fusion->addInput(in);
      fusion->addOutput(scan(in, dim, ScanCombine::Add));
    }
    expectBlockScanMatchesATen(std::move(fusion), {at::randn(shape)}, 1e-4);
  }
}

// A block-form schedule the passes cannot lower is refused by name.
TEST(BlockScanKernels, ScheduleValidationNamesTheBlockScan) {
  auto lowerWith = [](int64_t threads, bool stage) {
    auto fusion = scanFusion({2, 1000}, ScanCombine::Add);
    FusionGuard guard(fusion.get());
    TensorView* out = fusion->outputs()[0]->asTensor();
    TensorView* items = out->definition()->input(0)->asTensor();
    if (stage) items = items->cacheAfter();
    out->split(1, 4)->split(1, threads);
    out->axis(2)->parallelize(ParallelType::TIDx);
    propagateSchedule(out);
    inlineMost(fusion.get());
    if (stage) items->inlineAt(3);
    GpuLower lower(fusion.get());
    lower.run();
  };
  EXPECT_SMELT_ERROR(lowerWith(48, true), "block scan T1: its TIDx axis");
  EXPECT_SMELT_ERROR(lowerWith(64, false), "block scan T1: its input T0 must be a computed Local tensor");
}

// Producers compute into the items' registers, consumers run in the
// output's item loop: one kernel.
TEST(BlockScanKernels, ProducersAndConsumersStayInlined) {
  expectBlockScanMatchesATen(scanFusion({3, 2000}, ScanCombine::Add, DataType::Float,
                                        [](TensorView* in) { return mul(exp(in), 0.5); },
                                        [](TensorView* out) { return sigmoid(out); }),
                             {at::randn({3, 2000})}, 1e-4);
  // The scan's input also read by its consumer: the items' registers serve both.
  auto reused = std::make_unique<Fusion>();
  {
    FusionGuard guard(reused.get());
    TensorView* x = makeConcreteTensor({2, 1500});
    reused->addInput(x);
    TensorView* e = exp(x);
    reused->addOutput(sub(scan(e, 1, ScanCombine::Max), e));
  }
  expectBlockScanMatchesATen(std::move(reused), {at::randn({2, 1500})}, 1e-6);  // expf vs ATen: an ulp
  LoweredBlockScan lowered = lowerBlockScan(scanFusion({3, 2000}, ScanCombine::Add, DataType::Float,
                                                       [](TensorView* in) { return mul(exp(in), 0.5); },
                                                       [](TensorView* out) { return sigmoid(out); }));
  int64_t global_writes = 0;
  kir::forEachStmt(lowered.kernel->body, [&](const kir::Stmt* s, int) {
    if (const auto* c = dynamic_cast<const kir::Compute*>(s)) global_writes += c->out.buffer->memory == MemoryType::Global;
  });
  EXPECT_EQ(global_writes, 1) << lowered.kernel->toString();
}

// Through FusionExecutorCache: few long rows choose the block scan, many
// rows or short ones the serial scan; the launch has one block per row.
// (Rows long enough to chunk run as chunked scans: test_chunked_scan_kernels.)
TEST(BlockScanKernels, TheHeuristicChoosesTheBlockScanForFewLongRows) {
  auto run = [](std::unique_ptr<Fusion> fusion, const at::Tensor& x) {
    const std::vector<at::Tensor> expected = evaluateWithATen(*fusion->clone(), {x});
    FusionExecutorCache cache(std::move(fusion));
    const std::vector<at::Tensor> got = cache.runFusionWithInputs({x});
    EXPECT_TRUE(at::allclose(got[0], expected[0], 1e-3, 1e-3));
    EXPECT_EQ(got[0].strides(), expected[0].strides());
    EXPECT_EQ(cache.lastRun().segments.size(), 1u);
    return cache.lastRun().segments.at(0);
  };
  // Contiguous rows of a multiple of 4 floats: each thread's items are one
  // 16-byte load.
  SegmentRun segment = run(scanFusion({4, 8192}, ScanCombine::Add), at::randn({4, 8192}));
  EXPECT_EQ(segment.params, "ScanParams{block_scan, block_threads=1024, items_per_thread=4, vectorize_items}");
  EXPECT_EQ(segment.launch.grid[0], 4);
  EXPECT_EQ(segment.launch.block[0], 1024);
  segment = run(scanFusion({30000}, ScanCombine::Add), at::randn({30000}));
  EXPECT_EQ(segment.params, "ScanParams{block_scan, block_threads=1024, items_per_thread=4, vectorize_items}");
  EXPECT_EQ(segment.launch.grid[0], 1);
  segment = run(scanFusion({300, 1500}, ScanCombine::Max), at::randn({300, 1500}));
  EXPECT_EQ(segment.params, "ScanParams{block_scan, block_threads=256, items_per_thread=4, vectorize_items}");
  EXPECT_EQ(segment.launch.grid[0], 300);
  EXPECT_EQ(segment.launch.block[0], 256);
  // 1500 halves are not whole vectors of 8: element loads.
  segment = run(scanFusion({2, 1500}, ScanCombine::Max, DataType::Half), at::randn({2, 1500}).to(at::kHalf));
  EXPECT_EQ(segment.params, "ScanParams{block_scan, block_threads=256, items_per_thread=8}");
  // A row starting 4 bytes past a 16-byte boundary: element loads.
  segment = run(scanFusion({2, 2000}, ScanCombine::Add), at::randn({4001}).slice(0, 1).view({2, 2000}));
  EXPECT_EQ(segment.params, "ScanParams{block_scan, block_threads=512, items_per_thread=4}");
  segment = run(scanFusion({4, 500}, ScanCombine::Add), at::randn({4, 500}));
  EXPECT_EQ(segment.params, "ScanParams{block_x=32}");
  segment = run(scanFusion({40000, 1024}, ScanCombine::Add), at::randn({40000, 1024}));
  EXPECT_EQ(segment.params, "ScanParams{block_x=128}");
}

// ScanInit before the tile loop; in the TIDx loop the input's item loop,
// the BlockScan, then the output's item loop whose step reads `running`.
TEST(BlockScanKernels, KernelIrHasTheBlockScanBetweenTheItemLoops) {
  LoweredBlockScan lowered = lowerBlockScan(scanFusion({2, 5000}, ScanCombine::Add), false);
  ASSERT_TRUE(lowered.params.block_scan);
  const kir::BlockScan* block_scan = nullptr;
  kir::forEachStmt(lowered.kernel->body, [&](const kir::Stmt* s, int) {
    const auto* loop = dynamic_cast<const kir::ForLoop*>(s);
    if (loop == nullptr || loop->parallel_type != ParallelType::TIDx) return;
    // alloc of the items, their loop, the BlockScan, the output's item loop
    ASSERT_EQ(loop->body.size(), 4u) << lowered.kernel->toString();
    EXPECT_EQ(loop->body[0]->kind(), kir::StmtKind::Allocate);
    EXPECT_EQ(loop->body[1]->kind(), kir::StmtKind::ForLoop);
    block_scan = dynamic_cast<const kir::BlockScan*>(loop->body[2].get());
    const auto* items_loop = dynamic_cast<const kir::ForLoop*>(loop->body[3].get());
    ASSERT_NE(block_scan, nullptr);
    ASSERT_NE(items_loop, nullptr);
    const auto* step = dynamic_cast<const kir::Compute*>(items_loop->body.at(0).get());
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(step->operands.at(1).access->buffer, block_scan->running.buffer);
  });
  ASSERT_NE(block_scan, nullptr);
  EXPECT_EQ(block_scan->items, 4);
  EXPECT_EQ(block_scan->warps, 32);  // 2 rows: fewer than SMs, 1024 threads
  EXPECT_EQ(block_scan->items_in.buffer->memory, MemoryType::Local);
  EXPECT_EQ(block_scan->items_in.buffer->elements.constant(), 4);
  // The warp totals are a planned Shared buffer: 32 floats.
  ASSERT_EQ(lowered.kernel->sharedBuffers().size(), 1u);
  EXPECT_EQ(lowered.kernel->sharedBuffers()[0], block_scan->workspace);
  EXPECT_EQ(block_scan->workspace->bytes().constant(), 128);
  EXPECT_EQ(block_scan->workspace->address->constant(), 0);
  EXPECT_NE(lowered.kernel->smem_plan->report_text.find("T1_warp_totals"), std::string::npos)
      << lowered.kernel->smem_plan->report_text;
}

// Lane 31 of each warp writes its total (one lane per warp), and every lane
// reads one total at a time (a broadcast): no access takes two wavefronts.
TEST(BlockScanKernels, WarpTotalsHaveNoBankConflicts) {
  LoweredBlockScan lowered = lowerBlockScan(scanFusion({2, 5000}, ScanCombine::Add), false);
  const BankConflictReport report = analyzeBankConflicts(*lowered.kernel);
  ASSERT_EQ(report.accesses.size(), 2u) << report.toString();
  for (const BankConflictAccess& access : report.accesses) {
    EXPECT_TRUE(access.in_loop);
    EXPECT_EQ(access.ways, 1) << report.toString();
  }
  EXPECT_TRUE(report.unevaluated_positions.empty());
}

// Statement executions of a kernel: over the whole launch (thread and block
// loops at their extents), and along one thread (only serial loops count).
struct Executions {
  int64_t launch = 0;
  int64_t per_thread = 0;
};

Executions countExecutions(const kir::StmtList& body, int64_t launch = 1, int64_t thread = 1) {
  Executions total;
  for (const auto& stmt : body) {
    if (const auto* loop = dynamic_cast<const kir::ForLoop*>(stmt.get())) {
      const int64_t extent = loop->extent.constant().value();
      const Executions inner =
          countExecutions(loop->body, launch * extent, isParallelDim(loop->parallel_type) ? thread : thread * extent);
      total.launch += inner.launch;
      total.per_thread += inner.per_thread;
    } else if (stmt->kind() != kir::StmtKind::Allocate) {
      total.launch += launch;
      total.per_thread += thread;
    }
  }
  return total;
}

// [2, 65536]: the serial scan's thread walks 65536 steps; the block scan's
// walks 16 tiles of 4 loads, a BlockScan and 4 steps, for about as many
// statements over the launch.
TEST(BlockScanKernels, ExecutedStatementsAgainstTheSerialScanFor2x65536) {
  const LoweredBlockScan chosen = lowerBlockScan(scanFusion({2, 65536}, ScanCombine::Add), false);
  ASSERT_TRUE(chosen.params.block_scan);
  ScanParams serial_params = chosen.params;
  serial_params.block_scan = false;
  serial_params.block_x = 32;
  auto fusion = scanFusion({2, 65536}, ScanCombine::Add);
  scheduleScan(*fusion, serial_params);
  GpuLower lower(fusion.get());
  const Executions serial = countExecutions(lower.run().body);
  const Executions block = countExecutions(chosen.kernel->body);
  std::cout << "[2, 65536] cumsum statement executions: serial " << serial.launch << " over the launch, "
            << serial.per_thread << " per thread; block scan " << block.launch << ", " << block.per_thread << "\n";
  EXPECT_EQ(serial.per_thread, 1 + 65536);  // the init, then one step per element
  EXPECT_EQ(block.per_thread, 1 + 16 * (4 + 1 + 4));
  EXPECT_EQ(serial.launch, 32 * serial.per_thread);  // a warp of threads for 2 rows
  EXPECT_EQ(block.launch, 2 * (1 + 16 * 1024 * (4 + 1 + 4)));
}

TEST(BlockScanKernels, EveryCombineAndDtypeCompilesWithNvrtcForSm90) {
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16, DataType::Double, DataType::Int,
                         DataType::Int32, DataType::Int16, DataType::Int8, DataType::UInt8, DataType::Bool}) {
    for (ScanCombine combine : kCombines) {
      if (combine == ScanCombine::LogAddExp && !isFloatingType(dtype)) continue;
      if ((combine == ScanCombine::Add || combine == ScanCombine::Mul) && dtype == DataType::Bool) continue;
      SCOPED_TRACE(ScanOp::nameOf(combine) + " " + toString(dtype));
      LoweredBlockScan lowered = lowerBlockScan(scanFusion({2, 3000}, combine, dtype));
      const std::string cuda = generateCuda(*lowered.kernel, "block_scan");
      EXPECT_NE(cuda.find("smelt::blockScan<"), std::string::npos);
      const CompiledKernel compiled = compileCuda(cuda, "block_scan");
      EXPECT_GT(compiled.ptxas.registers, 0) << cuda;
      EXPECT_EQ(compiled.ptxas.spill_store_bytes, 0);
    }
  }
}

}  // namespace
}  // namespace smelt
