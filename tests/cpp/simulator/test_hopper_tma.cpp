// TMA box loads in the simulator, on a hand-built kernel: thread 0 announces
// the box's bytes and issues the copy, every thread waits on the mbarrier
// and copies the shared tile out. Checked against the box cut from the
// input with ATen (zero fill past the tensor's edges), plain and 128-byte
// swizzled (chunk c of row r at c ^ (r % 8)); mutations that drop the wait,
// the arrive.expect_tx or the fence after init must be reported; the CUDA
// compiles for sm_90a with the tensor map as a __grid_constant__ parameter.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "fusion/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/simulator/simulator.h"
#include "simulator/hopper_kernels.h"

namespace smelt {
namespace {

using namespace hopper_testing;

constexpr int64_t kRows = 100, kCols = 72;          // the input tensor (Half)
constexpr int64_t kBoxRows = 16, kBoxCols = 64;     // 128-byte rows
constexpr int64_t kBoxElements = kBoxRows * kBoxCols;
constexpr int64_t kThreads = 128;

struct TmaCase {
  kir::TmaSwizzle swizzle = kir::TmaSwizzle::None;
  int64_t row = 0, col = 0;  // the box's first element
  bool wait = true;
  bool expect_tx = true;
  bool fence = true;
};

// out (Float, the raw shared tile, 16 x 64) = S after the TMA load.
std::unique_ptr<TestKernel> tmaKernel(const TmaCase& c) {
  HopperKernel k = hopperKernel({{{kRows, kCols}, DataType::Half}},
                                {{kBoxRows, kBoxCols}, DataType::Float}, kThreads);
  kir::Buffer* bars = k.t->shared("bars", DataType::Int, 1, 0);
  kir::Buffer* tile = k.t->shared("S", DataType::Half, kBoxElements, 1024);
  const kir::TensorMap* map = tensorMap(k.t->kernel, k.in[0], kBoxRows, kBoxCols, c.swizzle);
  kir::StmtList& body = *k.body;
  allocate(body, bars);
  allocate(body, tile);
  kir::IfThenElse* init = ifThen(body, all({eq(tx(), 0)}));
  mbarrierInit(init->then_body, bars, 0, 1);
  if (c.fence) fenceProxyAsync(init->then_body);
  sync(body, "mbarrier init");
  kir::IfThenElse* producer = ifThen(body, all({eq(tx(), 0)}));
  if (c.expect_tx) mbarrierArrive(producer->then_body, bars, 0, kBoxElements * 2);
  tmaLoad(producer->then_body, at(tile, 0), map, c.row, c.col, at(bars, 0));
  if (c.wait) mbarrierWait(body, bars, 0, 0);
  kir::ForLoop* copy = loop(body, "i0", kBoxElements / kThreads);
  const IntExpr element = sym("i0") * kThreads + tx();
  compute(copy->body, k.cast, at(k.out, element), {read(tile, element)});
  return std::move(k.t);
}

at::Tensor input() { return (at::arange(kRows * kCols, at::kFloat) % 1999).reshape({kRows, kCols}).to(at::kHalf); }

// The box at (row, col), zero past the edges, as the shared image the TMA
// leaves: row-major, or with 16-byte chunk c of row r at chunk c ^ (r % 8).
at::Tensor expectedTile(const at::Tensor& in, const TmaCase& c) {
  at::Tensor box = at::zeros({kBoxRows, kBoxCols}, at::kFloat);
  const int64_t rows = std::min(kBoxRows, kRows - c.row), cols = std::min(kBoxCols, kCols - c.col);
  box.slice(0, 0, rows).slice(1, 0, cols).copy_(in.slice(0, c.row, c.row + rows).slice(1, c.col, c.col + cols));
  if (c.swizzle == kir::TmaSwizzle::None) return box;
  at::Tensor image = at::empty_like(box);
  constexpr int64_t kChunk = 8;  // halves per 16 bytes
  for (int64_t r = 0; r < kBoxRows; ++r) {
    for (int64_t chunk = 0; chunk < kBoxCols / kChunk; ++chunk) {
      image[r].slice(0, (chunk ^ (r % 8)) * kChunk, (chunk ^ (r % 8)) * kChunk + kChunk)
          .copy_(box[r].slice(0, chunk * kChunk, chunk * kChunk + kChunk));
    }
  }
  return image;
}

class HopperTmaBoxes : public ::testing::TestWithParam<std::tuple<bool, int64_t, int64_t>> {};

TEST_P(HopperTmaBoxes, LandAtThePhaseCompletionAsTheBoxOfTheTensor) {
  TmaCase c;
  c.swizzle = std::get<0>(GetParam()) ? kir::TmaSwizzle::Bytes128 : kir::TmaSwizzle::None;
  c.row = std::get<1>(GetParam());
  c.col = std::get<2>(GetParam());
  std::unique_ptr<TestKernel> t = tmaKernel(c);
  const at::Tensor in = input();
  for (auto order : {sim::ThreadOrder::Forward, sim::ThreadOrder::Reverse}) {
    sim::SimOptions options;
    options.order = order;
    sim::SimResult r = sim::simulate(t->kernel, {in}, {}, {}, options);
    ASSERT_TRUE(r.report.clean()) << r.report.toString();
    EXPECT_TRUE(at::equal(r.outputs[0], expectedTile(in.to(at::kFloat), c)))
        << "row " << c.row << " col " << c.col;
  }
}

// Inside, past the bottom edge, past the right edge, and past both.
INSTANTIATE_TEST_SUITE_P(Boxes, HopperTmaBoxes,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(0, 40, 90),
                                            ::testing::Values(0, 24)));

TEST(HopperTma, ReadingWithoutTheWaitIsARaceWithTheCopy) {
  TmaCase c;
  c.wait = false;
  sim::SimResult r = sim::simulate(tmaKernel(c)->kernel, {input()});
  ASSERT_FALSE(r.report.races.empty()) << r.report.toString();
  const sim::RaceReport& race = r.report.races[0];
  EXPECT_EQ(race.kind, sim::RaceKind::RAW);
  EXPECT_NE(race.first.statement.find("TMA load into S"), std::string::npos) << race.toString();
  EXPECT_EQ(race.second.buffer, "S");
}

TEST(HopperTma, ReadingBeforeTheCopyIsIssuedIsAnError) {
  // Reverse order: threads 127..1 read before thread 0 issues the copy.
  TmaCase c;
  c.wait = false;
  sim::SimOptions options;
  options.order = sim::ThreadOrder::Reverse;
  sim::SimResult r = sim::simulate(tmaKernel(c)->kernel, {input()}, {}, {}, options);
  EXPECT_FALSE(r.report.clean());
}

TEST(HopperTma, WithoutArriveExpectTxTheWaitDeadlocks) {
  TmaCase c;
  c.expect_tx = false;
  sim::SimResult r = sim::simulate(tmaKernel(c)->kernel, {input()});
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::Deadlock);
  EXPECT_NE(r.report.errors[0].message.find("mbarrier bars[0]"), std::string::npos);
  EXPECT_NE(r.report.errors[0].message.find("1 of 1 arrivals and -2048 transaction bytes"),
            std::string::npos)
      << r.report.errors[0].message;
}

TEST(HopperTma, WithoutTheFenceAfterInitTheAsyncProxyMaySeeNoBarrier) {
  TmaCase c;
  c.fence = false;
  sim::SimResult r = sim::simulate(tmaKernel(c)->kernel, {input()});
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::MissingFence);
  EXPECT_NE(r.report.errors[0].message.find("mbarrier bars[0]"), std::string::npos);
}

TEST(HopperTma, SwizzledTileMustBe1024ByteAligned) {
  TmaCase c;
  c.swizzle = kir::TmaSwizzle::Bytes128;
  std::unique_ptr<TestKernel> t = tmaKernel(c);
  for (const auto& b : t->kernel.buffers) {
    if (b->name == "S") b->address = IntExpr(512);
  }
  sim::SimResult r = sim::simulate(t->kernel, {input()});
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::Misaligned);
  EXPECT_NE(r.report.errors[0].message.find("1024-byte aligned"), std::string::npos);
}

TEST(HopperTma, CodegenPassesTheTensorMapAndNvrtcCompilesForSm90a) {
  TmaCase c;
  c.swizzle = kir::TmaSwizzle::Bytes128;
  std::unique_ptr<TestKernel> t = tmaKernel(c);
  const std::string cuda = generateCuda(t->kernel, "tma_box");
  for (const char* text :
       {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "const __grid_constant__ smelt::TensorMap tmap0",
        "smelt::tmaLoad2d(&S[0], &tmap0, static_cast<int>(0), static_cast<int>(0), &bars[0]);"}) {
    EXPECT_NE(cuda.find(text), std::string::npos) << text << "\n" << cuda;
  }
  CompiledKernel compiled = compileSm90a(t->kernel, "tma_box");
  EXPECT_EQ(compiled.ptxas.stack_frame_bytes, 0);
}

}  // namespace
}  // namespace smelt

namespace smelt {
namespace {

// The runtime's cuTensorMapEncodeTiled arguments for a TMA-read tensor, and
// the tensors it refuses, named; without a driver the encode itself reports
// the missing device.
TEST(HopperTensorMap, EncodeArgumentsAreInnermostFirstInBytes) {
  alignas(16) static uint16_t data[100 * 72];
  const cuda::TiledTensorMap map =
      cuda::tiledTensorMap("T0", data, DataType::Half, {100, 72}, {72, 1}, 16, 64, true);
  EXPECT_EQ(map.dtype, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(map.dims[0], 72u);
  EXPECT_EQ(map.dims[1], 100u);
  EXPECT_EQ(map.row_stride_bytes, 144u);
  EXPECT_EQ(map.box[0], 64u);
  EXPECT_EQ(map.box[1], 16u);
  EXPECT_EQ(map.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  auto refused = [&](std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t box_cols,
                     bool swizzle, const std::string& why) {
    try {
      cuda::tiledTensorMap("T0", data, DataType::Half, sizes, strides, 16, box_cols, swizzle);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("T0"), std::string::npos) << e.what();
    }
  };
  refused({100, 70}, {70, 1}, 64, false, "row stride of 140 bytes");
  refused({72, 100}, {1, 72}, 64, false, "not contiguous along its last dimension");
  refused({100, 72}, {72, 1}, 32, true, "needs box rows of 128 bytes");
  refused({4, 100, 72}, {7200, 72, 1}, 64, false, "has rank 3");
  if (!cuda::deviceAvailable()) {
    try {
      cuda::encodeTensorMap(map);
      ADD_FAILURE() << "encoded without a device";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace smelt
