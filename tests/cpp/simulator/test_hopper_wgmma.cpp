// wgmma in the simulator: a warpgroup multiplies a 64 x 64 A tile by an
// n x 64 B tile (B^T, K-major), both TMA-loaded with 128-byte swizzle, in
// four k16 steps through matrix descriptors, and stores its accumulators by
// the PTX fragment layout; the result equals ATen's matmul for f16 and bf16
// and n from 8 to 256. Reading accumulators before wgmma.wait_group, or a
// wgmma on registers written after the last wgmma.fence, is reported. The
// accumulator layout function is checked against the PTX figure, and the
// kernel compiles for sm_90a.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <set>

#include "lower/hopper_layout.h"
#include "runtime/simulator/simulator.h"
#include "simulator/hopper_kernels.h"

namespace smelt {
namespace {

using namespace hopper_testing;

constexpr int64_t kK = 64;  // one 128-byte swizzled row of 16-bit elements

TEST(HopperWgmma, AccumulatorLayoutCoversTheTileAsThePtxFigure) {
  for (int64_t n : {8, 64, 256}) {
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t t = 0; t < 128; ++t) {
      for (int64_t i = 0; i < n / 2; ++i) {
        const hopper::RowCol rc = hopper::wgmmaAccumulatorElement(t, i);
        ASSERT_TRUE(rc.row >= 0 && rc.row < 64 && rc.col >= 0 && rc.col < n);
        EXPECT_TRUE(seen.insert({rc.row, rc.col}).second) << t << " " << i;
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), 64 * n);
  }
  // Thread 0: d0 (0, 0), d1 (0, 1), d2 (8, 0), d4 (0, 8); thread 5 (group 1,
  // thread-in-group 1): d0 (1, 2); thread 37 (warp 1): d3 (25, 3).
  auto expect = [](int64_t t, int64_t i, int64_t row, int64_t col) {
    const hopper::RowCol rc = hopper::wgmmaAccumulatorElement(t, i);
    EXPECT_EQ(rc.row, row) << "thread " << t << " d" << i;
    EXPECT_EQ(rc.col, col) << "thread " << t << " d" << i;
  };
  expect(0, 0, 0, 0);
  expect(0, 1, 0, 1);
  expect(0, 2, 8, 0);
  expect(0, 4, 0, 8);
  expect(5, 0, 1, 2);
  expect(37, 3, 25, 3);
}

TEST(HopperWgmma, DescriptorBitsAreThePtxFormat) {
  // start 0x1400 >> 4 in bits 0-13, leading offset 1 in 16-29, stride
  // 1024 >> 4 = 64 in 32-45, swizzle mode 1 (128 B) in 62-63.
  EXPECT_EQ(hopper::wgmmaDescriptor(0x1400), 0x140ull | (1ull << 16) | (64ull << 32) | (1ull << 62));
  const hopper::Descriptor d = hopper::decodeDescriptor(hopper::wgmmaDescriptor(0x1420));
  EXPECT_EQ(d.start, 0x1420);
  EXPECT_EQ(d.stride_bytes, 1024);
  EXPECT_EQ(d.swizzle_mode, 1);
  // Row 9, bytes 16..31 of the k16 slice 32 bytes in: chunk 3 of row 1 of
  // the second 8-row group, stored at chunk 3 ^ 1.
  EXPECT_EQ(hopper::descriptorByte(hopper::decodeDescriptor(hopper::wgmmaDescriptor(0x1420)), 9, 16),
            0x1400 + 1024 + 128 + (3 ^ 1) * 16);
}

struct WgmmaCase {
  int64_t n = 64;
  DataType dtype = DataType::Half;
  bool wait = true;
  bool fence = true;
  bool zero_init = true;  // generic zero fill, else the first wgmma ignores D
};

// One warpgroup: TMA A (64 x 64) and B (n x 64) with 128-byte swizzle on
// one mbarrier; acc = 0; four wgmma k16 steps; commit; wait; store.
std::unique_ptr<TestKernel> wgmmaKernel(const WgmmaCase& c) {
  HopperKernel k = hopperKernel({{{64, kK}, c.dtype}, {{c.n, kK}, c.dtype}}, {{64, c.n}, DataType::Float}, 128);
  kir::Kernel& kernel = k.t->kernel;
  kir::Buffer* bars = k.t->shared("bars", DataType::Int, 1, 0);
  kir::Buffer* a = k.t->shared("A", c.dtype, 64 * kK, 1024);
  kir::Buffer* b = k.t->shared("B", c.dtype, c.n * kK, 1024 + 64 * kK * 2);
  kir::Buffer* acc = k.t->local("acc", DataType::Float, c.n / 2);
  const kir::TensorMap* a_map = tensorMap(kernel, k.in[0], 64, kK, kir::TmaSwizzle::Bytes128);
  const kir::TensorMap* b_map = tensorMap(kernel, k.in[1], c.n, kK, kir::TmaSwizzle::Bytes128);
  kir::StmtList& body = *k.body;
  for (kir::Buffer* buffer : {bars, a, b, acc}) allocate(body, buffer);
  kir::IfThenElse* init = ifThen(body, all({eq(tx(), 0)}));
  mbarrierInit(init->then_body, bars, 0, 1);
  fenceProxyAsync(init->then_body);
  sync(body, "mbarrier init");
  kir::IfThenElse* producer = ifThen(body, all({eq(tx(), 0)}));
  mbarrierArrive(producer->then_body, bars, 0, (64 + c.n) * kK * 2);
  tmaLoad(producer->then_body, at(a, 0), a_map, 0, 0, at(bars, 0));
  tmaLoad(producer->then_body, at(b, 0), b_map, 0, 0, at(bars, 0));
  if (c.zero_init) {
    kir::ForLoop* zero = loop(body, "i0", c.n / 2);
    FusionGuard guard(k.t->fusion.get());
    compute(zero->body, k.cast, at(acc, sym("i0")), {scalar(constant(0.0))});
  }
  mbarrierWait(body, bars, 0, 0);
  if (c.fence) wgmmaFence(body, acc);
  // Without the zero fill the first k step overwrites D (scale-d 0).
  const int64_t first = c.zero_init ? 0 : 1;
  if (!c.zero_init) wgmma(body, at(acc, 0), at(a, 0), at(b, 0), c.n, /*accumulate=*/false);
  kir::ForLoop* steps = loop(body, "i1", kK / 16 - first);
  const IntExpr k_offset = (sym("i1") + first) * 16;
  wgmma(steps->body, at(acc, 0), at(a, k_offset), at(b, k_offset), c.n);
  wgmmaCommit(body);
  if (c.wait) wgmmaWait(body, 0, acc);
  kir::ForLoop* store = loop(body, "i3", c.n / 2);
  const IntExpr i = sym("i3");
  compute(store->body, k.cast, at(k.out, accumulatorRow(tx(), i) * c.n + accumulatorCol(tx(), i)),
          {read(acc, i)});
  return std::move(k.t);
}

std::vector<at::Tensor> operands(const WgmmaCase& c) {
  const auto type = c.dtype == DataType::BFloat16 ? at::kBFloat16 : at::kHalf;
  at::manual_seed(c.n);
  return {at::randint(-4, 5, {64, kK}, at::kFloat).to(type), at::randint(-4, 5, {c.n, kK}, at::kFloat).to(type)};
}

class HopperWgmmaShapes : public ::testing::TestWithParam<std::tuple<int64_t, bool, bool>> {};

TEST_P(HopperWgmmaShapes, EqualsATenMatmul) {
  WgmmaCase c;
  c.n = std::get<0>(GetParam());
  c.dtype = std::get<1>(GetParam()) ? DataType::BFloat16 : DataType::Half;
  c.zero_init = std::get<2>(GetParam());
  std::unique_ptr<TestKernel> t = wgmmaKernel(c);
  const std::vector<at::Tensor> in = operands(c);
  sim::SimResult r = sim::simulate(t->kernel, in);
  ASSERT_TRUE(r.report.clean()) << r.report.toString();
  // Small integers: every product and sum is exact in fp32.
  EXPECT_TRUE(at::equal(r.outputs[0], at::matmul(in[0].to(at::kFloat), in[1].to(at::kFloat).t())));
}

INSTANTIATE_TEST_SUITE_P(Shapes, HopperWgmmaShapes,
                         ::testing::Values(std::make_tuple(8, false, true), std::make_tuple(64, false, true),
                                           std::make_tuple(64, true, false), std::make_tuple(256, true, true),
                                           std::make_tuple(120, false, false)));

TEST(HopperWgmma, ReadingAccumulatorsBeforeWaitGroupIsReported) {
  WgmmaCase c;
  c.wait = false;
  sim::SimResult r = sim::simulate(wgmmaKernel(c)->kernel, operands(c));
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::AsyncCopyInFlight);
  EXPECT_EQ(r.report.errors[0].buffer, "acc");
  EXPECT_NE(r.report.errors[0].message.find("missing wgmma.wait_group"), std::string::npos);
}

TEST(HopperWgmma, AccumulatorsWrittenAfterTheFenceAreReported) {
  WgmmaCase c;
  c.fence = false;
  sim::SimResult r = sim::simulate(wgmmaKernel(c)->kernel, operands(c));
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::MissingFence);
  EXPECT_NE(r.report.errors[0].message.find("wgmma.fence"), std::string::npos);
}

TEST(HopperWgmma, CodegenAndNvrtcForSm90a) {
  for (DataType dtype : {DataType::Half, DataType::BFloat16}) {
    WgmmaCase c;
    c.n = 256;
    c.dtype = dtype;
    std::unique_ptr<TestKernel> t = wgmmaKernel(c);
    const std::string cuda = generateCuda(t->kernel, "wgmma_tile");
    const std::string type = dtype == DataType::Half ? "f16" : "bf16";
    for (const std::string& text :
         {"wgmma.mma_async.sync.aligned.m64n256k16.f32." + type + "." + type,
          std::string("wgmma.fence.sync.aligned"), std::string("wgmma.commit_group.sync.aligned"),
          std::string("wgmma.wait_group.sync.aligned")}) {
      EXPECT_NE(cuda.find(text), std::string::npos) << text;
    }
    CompiledKernel compiled = compileSm90a(t->kernel, "wgmma_tile");
    EXPECT_EQ(compiled.ptxas.stack_frame_bytes, 0) << compiled.log;
    EXPECT_EQ(compiled.ptxas.spill_store_bytes, 0) << compiled.log;
  }
}

}  // namespace
}  // namespace smelt
