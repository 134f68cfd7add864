// scan (ScanOp): fusions through FusionExecutorCache (segmentation, the scan
// scheduler, lowering, the CPU simulator) against ATen's cumsum, cumprod,
// cummax / cummin values and logcumsumexp; the kernel IR's running value
// (ScanInit outside the scan loop, one step per iteration), linear work,
// launch shapes, schedule validation, and NVRTC compiling the kernels.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "lower/lower.h"
#include "ops/pointwise_kernel_checks.h"
#include "ops/scan_fusions.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/registry.h"

namespace smelt {
namespace {

using smelt::testing::evaluateWithATen;
using smelt::testing::expectCompiles;

const auto& kCombines = smelt::testing::kScanCombines;
using smelt::testing::scanFusion;

// Runs `fusion` on CPU tensors and checks values (NaN where ATen has NaN)
// and strides against ATen; returns the run's segments.
std::vector<SegmentRun> expectMatchesATen(std::unique_ptr<Fusion> fusion,
                                          const std::vector<at::Tensor>& inputs, double tolerance = 1e-5) {
  const std::unique_ptr<Fusion> reference = fusion->clone();
  const std::vector<at::Tensor> expected = evaluateWithATen(*reference, inputs);
  FusionExecutorCache cache(std::move(fusion));
  const std::vector<at::Tensor> got = cache.runFusionWithInputs(inputs);
  EXPECT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    EXPECT_EQ(got[i].scalar_type(), expected[i].scalar_type());
    EXPECT_EQ(got[i].strides(), expected[i].contiguous().strides());
    EXPECT_TRUE(at::allclose(got[i].to(at::kDouble), expected[i].to(at::kDouble), tolerance, tolerance,
                             /*equal_nan=*/true))
        << got[i] << "\n" << expected[i];
  }
  return cache.lastRun().segments;
}

// Values near 1 keep products and sums of long rows in range.
at::Tensor nearOne(const std::vector<int64_t>& shape) { return 1.0 + 0.05 * at::randn(shape); }

TEST(ScanKernels, EveryCombineAlongInnerAndOuterDimsMatchesATenInOneScanKernel) {
  for (ScanCombine combine : kCombines) {
    for (int64_t dim : {1, 0, -1}) {
      SCOPED_TRACE(ScanOp::nameOf(combine) + " along " + std::to_string(dim));
      // 7 rows of 37: neither divides a block.
      const std::vector<SegmentRun> segments =
          expectMatchesATen(scanFusion({7, 37}, dim, combine), {nearOne({7, 37})});
      ASSERT_EQ(segments.size(), 1u);
      EXPECT_EQ(segments[0].scheduler, SchedulerType::Scan);
    }
  }
}

TEST(ScanKernels, TheMiddleDimensionOfThreeAndAOneDimensionalScan) {
  for (ScanCombine combine : kCombines) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    expectMatchesATen(scanFusion({3, 50, 5}, 1, combine), {nearOne({3, 50, 5})});
    expectMatchesATen(scanFusion({300}, 0, combine), {nearOne({300})});
  }
}

// From a NaN on, cummax and cummin (and every other scan) are NaN, as torch.
TEST(ScanKernels, NaNPropagatesToTheRestOfTheRow) {
  at::Tensor x = at::randn({4, 9});
  x[1][3] = std::numeric_limits<float>::quiet_NaN();
  x[2][0] = std::numeric_limits<float>::quiet_NaN();
  x[3][8] = -std::numeric_limits<float>::infinity();
  for (ScanCombine combine : kCombines) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    expectMatchesATen(scanFusion({4, 9}, 1, combine), {x});
  }
}

// logcumsumexp of infinities: -inf rows stay -inf (no inf - inf NaN), +inf
// takes over.
TEST(ScanKernels, LogCumSumExpOfInfinitiesIsTorchs) {
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor x = at::tensor({-inf, -inf, 1.0, -inf, inf, 2.0, inf, -inf}).to(at::kFloat).reshape({2, 4});
  expectMatchesATen(scanFusion({2, 4}, 1, ScanCombine::LogAddExp), {x});
}

TEST(ScanKernels, IntegerHalfAndBoolScans) {
  const auto longs = at::TensorOptions().dtype(at::kLong);
  for (ScanCombine combine : {ScanCombine::Add, ScanCombine::Mul, ScanCombine::Max, ScanCombine::Min}) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    expectMatchesATen(scanFusion({5, 21}, 1, combine, DataType::Int), {at::randint(-3, 4, {5, 21}, longs)});
    expectMatchesATen(scanFusion({5, 21}, 0, combine, DataType::Int32),
                      {at::randint(-3, 4, {5, 21}, longs).to(at::kInt)});
  }
  // Half sums accumulate in float (as ATen's): rounding each partial sum
  // to half would drift far from these.
  const auto half = at::TensorOptions().dtype(at::kHalf);
  expectMatchesATen(scanFusion({3, 200}, 1, ScanCombine::Add, DataType::Half), {at::rand({3, 200}, half)}, 1e-3);
  expectMatchesATen(scanFusion({3, 40}, 1, ScanCombine::LogAddExp, DataType::BFloat16),
                    {at::randn({3, 40}).to(at::kBFloat16)}, 1e-2);
  for (ScanCombine combine : {ScanCombine::Max, ScanCombine::Min}) {
    expectMatchesATen(scanFusion({4, 6}, 1, combine, DataType::Bool), {at::rand({4, 6}) > 0.7});
  }
}

// Element-wise producers and consumers run inside the scan loop; a
// reduction of the scan's output runs in a later kernel.
TEST(ScanKernels, ProducersAndConsumersFuseIntoTheScanKernel) {
  std::vector<SegmentRun> segments = expectMatchesATen(
      scanFusion({6, 33}, 1, ScanCombine::Add, DataType::Float,
                 [](TensorView* in) { return mul(exp(in), 2.0); },
                 [](TensorView* out) { return sigmoid(out); }),
      {at::randn({6, 33})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Scan);
  segments = expectMatchesATen(
      scanFusion({6, 33}, 0, ScanCombine::Max, DataType::Float, nullptr,
                 [](TensorView* out) { return sum(out, {1}); }),
      {at::randn({6, 33})});
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Scan);
  EXPECT_EQ(segments[1].scheduler, SchedulerType::Reduction);
}

// A bias broadcast along the scan axis is read at index 0 of it.
TEST(ScanKernels, ABroadcastProducerAlongTheScanAxis) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeConcreteTensor({5, 12});
    TensorView* bias = makeConcreteTensor({5});
    fusion->addInput(x);
    fusion->addInput(bias);
    fusion->addOutput(scan(add(x, broadcast(bias, {false, true})), 1, ScanCombine::Add));
  }
  const std::vector<SegmentRun> segments = expectMatchesATen(std::move(fusion), {at::randn({5, 12}), at::randn({5})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Scan);
}

// One thread per row: the other axes on [BIDx, TIDx], blocks no wider than
// the rows (a power of two, at least a warp).
TEST(ScanKernels, LaunchShapeHasOneThreadPerRow) {
  // Rows shorter than kBlockScanMinExtent: the serial scan (longer ones,
  // this few, take the block scan: test_block_scan_kernels.cpp).
  std::vector<SegmentRun> segments = expectMatchesATen(scanFusion({4, 500}, 1, ScanCombine::Add), {at::randn({4, 500})}, 1e-3);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].params, "ScanParams{block_x=32}");
  EXPECT_EQ(segments[0].launch.grid[0], 1);
  EXPECT_EQ(segments[0].launch.block[0], 32);
  segments = expectMatchesATen(scanFusion({100, 300}, 0, ScanCombine::Max), {at::randn({100, 300})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].params, "ScanParams{block_x=128}");
  EXPECT_EQ(segments[0].launch.grid[0], 3);
  EXPECT_EQ(segments[0].launch.block[0], 128);
  segments = expectMatchesATen(scanFusion({3, 20, 40}, 1, ScanCombine::Min), {at::randn({3, 20, 40})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].params, "ScanParams{block_x=64}");
  EXPECT_EQ(segments[0].launch.grid[1], 3);
}

// The scheduled, lowered kernel of a fusion.
struct LoweredScan {
  std::unique_ptr<Fusion> fusion;
  std::unique_ptr<GpuLower> lower;
  const kir::Kernel* kernel = nullptr;
};

LoweredScan lowerScan(std::unique_ptr<Fusion> fusion) {
  LoweredScan result;
  result.fusion = std::move(fusion);
  const std::vector<at::Tensor> inputs = smelt::testing::randomInputs(*result.fusion);
  RuntimeInfo runtime(*result.fusion, inputInfosOf(*result.fusion, inputs));
  EXPECT_EQ(selectScheduler(*result.fusion, runtime), SchedulerType::Scan);
  scheduleFusion(*result.fusion, runtime);
  result.lower = std::make_unique<GpuLower>(result.fusion.get());
  result.kernel = &result.lower->run();
  return result;
}

// The largest number of times any statement runs over the launch: the
// product of the extents of the loops around it (thread and block loops
// at their launch extents).
int64_t mostExecutions(const kir::StmtList& body, int64_t around = 1) {
  int64_t most = around;
  for (const auto& stmt : body) {
    if (const auto* loop = dynamic_cast<const kir::ForLoop*>(stmt.get())) {
      EXPECT_TRUE(loop->extent.constant().has_value()) << loop->extent;
      most = std::max(most, mostExecutions(loop->body, around * loop->extent.constant().value_or(1)));
    }
  }
  return most;
}

// The work is linear: a [4, 500] serial scan runs no statement more than 8
// times per element (32 threads for 4 rows), a [4, 4096] block scan once
// per element; the masked n x n reduction they replace ran n times per
// element.
TEST(ScanKernels, WorkIsLinearInTheExtent) {
  const LoweredScan serial = lowerScan(scanFusion({4, 500}, 1, ScanCombine::Add));
  EXPECT_EQ(mostExecutions(serial.kernel->body), 32 * 500);
  const LoweredScan block = lowerScan(scanFusion({4, 4096}, 1, ScanCombine::Add));
  EXPECT_EQ(mostExecutions(block.kernel->body), 4 * 4096);
}

// The running value starts just outside the scan loop and each iteration
// combines and stores: ScanInit, then the loop of the scan axis holding the
// step.
TEST(ScanKernels, TheRunningValueIsInitializedOutsideTheScanLoop) {
  const LoweredScan lowered = lowerScan(scanFusion({4, 64}, 1, ScanCombine::Max));
  const ScanOp* scan_op = nullptr;
  for (const Expr* expr : lowered.fusion->exprs()) {
    if (expr->type() == ExprType::Scan) scan_op = static_cast<const ScanOp*>(expr);
  }
  ASSERT_NE(scan_op, nullptr);
  const IterDomain* scan_axis = scan_op->output()->logicalDomain()[1];
  int found = 0;
  kir::forEachStmt(lowered.kernel->body, [&](const kir::Stmt* s, int) {
    const auto* loop = dynamic_cast<const kir::ForLoop*>(s);
    if (loop == nullptr) return;
    for (size_t i = 0; i + 1 < loop->body.size(); ++i) {
      const auto* init = dynamic_cast<const kir::ScanInit*>(loop->body[i].get());
      const auto* scan_loop = dynamic_cast<const kir::ForLoop*>(loop->body[i + 1].get());
      if (init == nullptr || scan_loop == nullptr) continue;
      ++found;
      EXPECT_EQ(init->expr, scan_op);
      EXPECT_EQ(init->carry.buffer->memory, MemoryType::Local);
      EXPECT_EQ(init->carry.buffer->elements.constant(), 1);
      EXPECT_EQ(scan_loop->parallel_type, ParallelType::Serial);
      EXPECT_EQ(scan_loop->extent.constant(), 64);
      EXPECT_EQ(scan_loop->iter_domain, scan_axis);
      ASSERT_EQ(scan_loop->body.size(), 1u);
      const auto* step = dynamic_cast<const kir::Compute*>(scan_loop->body[0].get());
      ASSERT_NE(step, nullptr);
      EXPECT_EQ(step->expr, scan_op);
      ASSERT_EQ(step->operands.size(), 2u);
      EXPECT_EQ(step->operands[1].access->buffer, init->carry.buffer);
    }
  });
  EXPECT_EQ(found, 1) << lowered.kernel->toString();
}

TEST(ScanKernels, EveryCombineAndDtypeCompilesWithNvrtc) {
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16, DataType::Double,
                         DataType::Int, DataType::Int32, DataType::Int8, DataType::Bool}) {
    for (ScanCombine combine : kCombines) {
      if (combine == ScanCombine::LogAddExp && !isFloatingType(dtype)) continue;
      if ((combine == ScanCombine::Add || combine == ScanCombine::Mul) && dtype == DataType::Bool) continue;
      SCOPED_TRACE(ScanOp::nameOf(combine) + " " + toString(dtype));
      LoweredScan lowered = lowerScan(scanFusion({5, 70}, 0, combine, dtype));
      expectCompiles(*lowered.fusion, "scan_kernel");
    }
  }
}

// A schedule that splits, parallelizes or nests a loop inside the scan
// axis is refused by name.
TEST(ScanKernels, ScheduleValidationNamesTheScanAxis) {
  auto lowerWith = [](void (*schedule)(TensorView*)) {
    auto fusion = scanFusion({8, 16}, 1, ScanCombine::Add);
    FusionGuard guard(fusion.get());
    TensorView* out = fusion->outputs()[0]->asTensor();
    schedule(out);
    GpuLower lower(fusion.get());
    lower.run();
  };
  EXPECT_SMELT_ERROR(lowerWith([](TensorView* out) { out->split(1, 4); }),
                     "scan T1: its scan axis (dimension 1) was split or merged");
  EXPECT_SMELT_ERROR(lowerWith([](TensorView* out) { out->axis(1)->parallelize(ParallelType::TIDx); }),
                     "the scan axis must run serially, in order");
  EXPECT_SMELT_ERROR(lowerWith([](TensorView* out) { out->reorder({{0, 1}}); }),
                     "iterates inside the scan axis");
}

TEST(ScanKernels, ErrorsNameTheTensorAndDimension) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 5});
  EXPECT_SMELT_ERROR(scan(x, 2, ScanCombine::Add), "cumsum: dimension 2 is out of range for T0 of rank 2");
  EXPECT_SMELT_ERROR(scan(x, -3, ScanCombine::Max), "cummax: dimension -3 is out of range for T0 of rank 2");
  TensorView* ints = makeConcreteTensor({6}, DataType::Int);
  EXPECT_SMELT_ERROR(scan(ints, 0, ScanCombine::LogAddExp),
                     "logcumsumexp: T1 has dtype int64; logcumsumexp needs a floating dtype");
  TensorView* flags = makeConcreteTensor({6}, DataType::Bool);
  EXPECT_SMELT_ERROR(scan(flags, 0, ScanCombine::Add), "cumsum: T2 has dtype bool");
  EXPECT_SMELT_ERROR(scan(makeConcreteTensor({}), 0, ScanCombine::Mul),
                     "cumprod: T3 has rank 0; a scan needs a dimension");
}

}  // namespace
}  // namespace smelt

namespace smelt {
namespace {

// A pad of the input runs in the scan's loops (a bounds predicate and the
// pad value), serial and block scans alike: one kernel.
TEST(ScanKernels, APadOfTheInputRunsInTheScanKernel) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4, 100}, {2, 3000}}) {
    for (const std::vector<std::pair<int64_t, int64_t>>& widths : std::vector<std::vector<std::pair<int64_t, int64_t>>>{
             {{0, 0}, {1, -1}}, {{1, 2}, {5, 7}}}) {
      SCOPED_TRACE(std::to_string(shape[1]) + " padded by " + std::to_string(widths[1].first));
      auto fusion = std::make_unique<Fusion>();
      {
        FusionGuard guard(fusion.get());
        TensorView* in = makeConcreteTensor(shape);
        fusion->addInput(in);
        fusion->addOutput(scan(padAxes(in, widths, -2.5), 1, ScanCombine::Max));
      }
      const std::vector<SegmentRun> segments = expectMatchesATen(std::move(fusion), {at::randn(shape)});
      ASSERT_EQ(segments.size(), 1u);
      EXPECT_EQ(segments[0].scheduler, SchedulerType::Scan);
      EXPECT_EQ(segments[0].params.find("block_scan") != std::string::npos, shape[1] == 3000) << segments[0].params;
    }
  }
}

}  // namespace
}  // namespace smelt
