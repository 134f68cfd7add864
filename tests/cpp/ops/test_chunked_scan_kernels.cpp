// The chunked (multi-block) scan of few long rows (scheduler/chunked_scan.h):
// the chunking decision, and whole fusions through FusionExecutorCache — its
// segments (totals, prefixes, chunk scans) in the CPU simulator against ATen,
// every kernel compiled by NVRTC for sm_90, the chunk scan's grid at least
// one block per SM.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "fusion/device_limits.h"
#include "fusion/ops.h"
#include "ops/scan_fusions.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/chunked_scan.h"
#include "scheduler/scan.h"

namespace smelt {
namespace {

using smelt::testing::evaluateWithATen;

const auto& kCombines = smelt::testing::kScanCombines;
const int64_t kSm90 = DeviceLimits::forArch(90).sm_count;

bool exact(ScanCombine combine) { return combine == ScanCombine::Max || combine == ScanCombine::Min; }

void expectChunking(int64_t rows, int64_t extent, int64_t sm_count, int64_t chunks, int64_t length) {
  SCOPED_TRACE("[" + std::to_string(rows) + ", " + std::to_string(extent) + "] on " + std::to_string(sm_count));
  const std::optional<ScanChunking> chunking = scanChunking(rows, extent, sm_count);
  ASSERT_TRUE(chunking.has_value());
  EXPECT_EQ(chunking->chunks, chunks);
  EXPECT_EQ(chunking->length, length);
  EXPECT_GE(rows * chunking->chunks, sm_count);
  EXPECT_GE(chunking->chunks * chunking->length, extent);
}

// At least one chunk per SM over the rows; a count dividing the extent with
// a length of whole vectors where there is one, else padding.
TEST(ChunkedScanKernels, ChunkingDependsOnRowsExtentAndSmCount) {
  EXPECT_EQ(kSm90, 132);
  expectChunking(1, 100000, 132, 160, 625);
  expectChunking(1, 100000, 108, 125, 800);  // an A100's SMs
  expectChunking(2, 1000000, 132, 125, 8000);
  expectChunking(1, 1000000, 132, 200, 5000);
  expectChunking(1, 1 << 20, 132, 256, 4096);
  expectChunking(1, 70000, 132, 132, 532);    // padded by 224
  expectChunking(1, 100003, 132, 132, 760);   // prime: padded by 317
  EXPECT_FALSE(scanChunking(132, 1000000, 132).has_value());  // a block per row fills the SMs
  EXPECT_FALSE(scanChunking(1, 60000, 132).has_value());      // chunks shorter than a tile
  EXPECT_FALSE(scanChunking(2, 30000, 132).has_value());
}

struct ChunkedRun {
  std::vector<SegmentRun> segments;
  int64_t largest_scan_grid = 0;  // blocks of the widest scan kernel
};

// Runs `fusion` through FusionExecutorCache on CPU tensors (every kernel in
// the simulator, race-checked) against ATen; each kernel also compiles for
// sm_90.
ChunkedRun expectMatchesATen(std::unique_ptr<Fusion> fusion, const std::vector<at::Tensor>& inputs,
                             double tolerance) {
  const std::vector<at::Tensor> expected = evaluateWithATen(*fusion->clone(), inputs);
  FusionExecutorCache cache(std::move(fusion));
  const std::vector<at::Tensor> got = cache.runFusionWithInputs(inputs);
  ChunkedRun run;
  EXPECT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    EXPECT_EQ(got[i].scalar_type(), expected[i].scalar_type());
    EXPECT_EQ(got[i].sizes(), expected[i].sizes());
    EXPECT_EQ(got[i].strides(), expected[i].strides());
    const at::Tensor g = got[i].to(at::kDouble);
    const at::Tensor w = expected[i].to(at::kDouble);
    if (tolerance == 0) {
      EXPECT_TRUE(at::equal(g.nan_to_num(7.5), w.nan_to_num(7.5))) << (g - w).abs().nan_to_num(0).max();
    } else {
      EXPECT_TRUE(at::allclose(g, w, tolerance, tolerance, /*equal_nan=*/true)) << (g - w).abs().nan_to_num(0).max();
    }
  }
  run.segments = cache.lastRun().segments;
  for (size_t s = 0; s < run.segments.size(); ++s) {
    const SegmentRun& segment = run.segments[s];
    if (segment.view || segment.library) continue;
    EXPECT_GT(cache.lastExecutor(s).compiledKernel().ptxas.registers, 0) << segment.params;
    EXPECT_EQ(cache.lastExecutor(s).compiledKernel().ptxas.spill_store_bytes, 0) << segment.params;
    if (segment.scheduler == SchedulerType::Scan) {
      const int64_t blocks = segment.launch.grid[0] * segment.launch.grid[1] * segment.launch.grid[2];
      run.largest_scan_grid = std::max(run.largest_scan_grid, blocks);
    }
  }
  return run;
}

std::unique_ptr<Fusion> lastDimScan(const std::vector<int64_t>& shape, ScanCombine combine,
                                    DataType dtype = DataType::Float) {
  return smelt::testing::scanFusion(shape, -1, combine, dtype);
}

at::Tensor nearOne(const std::vector<int64_t>& shape) { return 1.0 + 0.0001 * at::randn(shape); }

// Extents on and off a chunk edge (70000 and 100003 padded; 2^20 in 256
// chunks of 4096), one row and two: every combine, the chunk scans' grid filling the SMs.
TEST(ChunkedScanKernels, EveryCombineAtChunkEdgesAndPadding) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{70000}, {100003}, {1 << 20}, {2, 40000}}) {
    for (ScanCombine combine : kCombines) {
      SCOPED_TRACE(ScanOp::nameOf(combine) + " of " + std::to_string(shape.back()));
      // Products of 1 + 1e-3 x: a chunk's is 1 +- 2% or more, while float
      // products near 1 in the kernels' tree order drift by about 6e-9 per
      // factor (numpy's float32 emulation of the order alike; ATen's CPU
      // product accumulates in double): 0.6% over 2^20 factors.
      const bool product = combine == ScanCombine::Mul;
      const at::Tensor x = product ? 1.0 + 0.001 * at::randn(shape) : at::randn(shape);
      const double tolerance = exact(combine) ? 0 : product ? std::max(1e-3, 2e-8 * shape.back()) : 1e-3;
      const ChunkedRun run = expectMatchesATen(lastDimScan(shape, combine), {x}, tolerance);
      EXPECT_GE(run.largest_scan_grid, kSm90);
    }
  }
}

// A NaN in one chunk makes every later chunk NaN; logcumsumexp keeps -inf
// up to the first finite value and +inf from the first +inf on. (Products
// near 1: a chunk's product that underflows to 0 times an infinite prefix
// is NaN where the serial product stays infinite, as in any reordering.)
TEST(ChunkedScanKernels, NaNAndInfinitiesAcrossChunks) {
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor x = nearOne({3, 50000});
  x[0][20000] = std::numeric_limits<float>::quiet_NaN();
  x[1].slice(0, 0, 30000).fill_(-inf);
  x[2][45000] = inf;
  for (ScanCombine combine : kCombines) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    const ChunkedRun run = expectMatchesATen(lastDimScan({3, 50000}, combine), {x}, exact(combine) ? 0 : 1e-3);
    EXPECT_GE(run.largest_scan_grid, kSm90);
  }
}

// int64 sums past 2^53 exact (to 2^59.6 here; each chunk's total stays
// below 2^53, as the simulator's reductions accumulate in double), int32 max/min, 16-bit floats accumulated in
// float, bool max/min.
TEST(ChunkedScanKernels, IntegerSixteenBitAndBool) {
  const auto longs = at::TensorOptions().dtype(at::kLong);
  expectMatchesATen(lastDimScan({100000}, ScanCombine::Add, DataType::Int),
                    {at::randint(int64_t{1} << 42, int64_t{1} << 43, {100000}, longs) | 1}, 0);
  for (ScanCombine combine : {ScanCombine::Max, ScanCombine::Min}) {
    SCOPED_TRACE(ScanOp::nameOf(combine));
    expectMatchesATen(lastDimScan({2, 40000}, combine, DataType::Int32),
                      {at::randint(-1000000, 1000000, {2, 40000}, longs).to(at::kInt)}, 0);
    expectMatchesATen(lastDimScan({70000}, combine, DataType::Int),
                      {at::randint(-1000000, 1000000, {70000}, longs)}, 0);
    expectMatchesATen(lastDimScan({100003}, combine, DataType::Bool), {at::rand({100003}) > 0.9999}, 0);
  }
  expectMatchesATen(lastDimScan({100000}, ScanCombine::Mul, DataType::Int),
                    {1 - 2 * (at::rand({100000}) > 0.9999).to(at::kLong)}, 0);
  expectMatchesATen(lastDimScan({2, 40000}, ScanCombine::Add, DataType::Half), {at::rand({2, 40000}).to(at::kHalf)},
                    2e-2);
  expectMatchesATen(lastDimScan({70000}, ScanCombine::LogAddExp, DataType::BFloat16),
                    {at::randn({70000}).to(at::kBFloat16)}, 5e-2);
  expectMatchesATen(lastDimScan({100000}, ScanCombine::Max, DataType::Half), {at::randn({100000}).to(at::kHalf)}, 0);
}

// The launch shapes of [100000] and [2, 1000000] fp32 cumsum: before, one
// block scan block per row; now the chunk scans' grid has a block per SM.
TEST(ChunkedScanKernels, FewLongRowsFillTheSms) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{100000}, {2, 1000000}}) {
    SCOPED_TRACE(std::to_string(shape.size()) + "-D");
    const ChunkedRun run = expectMatchesATen(lastDimScan(shape, ScanCombine::Add), {at::randn(shape)}, 1e-2);
    EXPECT_GE(run.largest_scan_grid, kSm90);
    int64_t kernels = 0;
    for (const SegmentRun& segment : run.segments) {
      kernels += !segment.view;
      std::cout << "  " << toString(segment.scheduler) << (segment.view ? " (view)" : "") << " " << segment.params
                << " grid " << segment.launch.grid[0] << "x" << segment.launch.grid[1] << "x" << segment.launch.grid[2]
                << " block " << segment.launch.block[0] << "x" << segment.launch.block[1] << "\n";
    }
    EXPECT_EQ(kernels, 3);  // totals, prefixes (their pad in the scan's loops), chunk scans
  }
}

// A computed input and a consumer of the scan: they run in kernels of
// their own around the chunked steps, the scan in chunks still.
TEST(ChunkedScanKernels, ProducersAndConsumersRunAroundTheChunks) {
  auto fusion = smelt::testing::scanFusion(
      {2, 60000}, -1, ScanCombine::Add, DataType::Float, [](TensorView* in) { return mul(exp(in), 0.5); },
      [](TensorView* out) { return sigmoid(out); });
  const ChunkedRun run = expectMatchesATen(std::move(fusion), {at::randn({2, 60000})}, 1e-4);
  EXPECT_GE(run.largest_scan_grid, kSm90);
}

// A symbolic extent is not chunked: the one-block-per-row scan runs.
TEST(ChunkedScanKernels, SymbolicExtentsKeepTheBlockScan) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* in = makeContigTensor(1);
    fusion->addInput(in);
    fusion->addOutput(scan(in, 0, ScanCombine::Add));
  }
  const ChunkedRun run = expectMatchesATen(std::move(fusion), {at::randn({100000})}, 1e-2);
  ASSERT_EQ(run.segments.size(), 1u);
  EXPECT_EQ(run.largest_scan_grid, 1);
}

}  // namespace
}  // namespace smelt
