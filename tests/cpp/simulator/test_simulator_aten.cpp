// The simulator against ATen on CPU: results of hand-built kernels (2-D
// pointwise with predicates, block reductions and broadcasts, pad, half and
// bfloat16, a shared-memory transpose and a tiled matmul) through the
// at::Tensor entry point. The only test translation unit including torch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "fusion/error.h"
#include "runtime/simulator/simulator.h"
#include "runtime/simulator/value_convert.h"
#include "simulator/sim_kernels.h"

namespace smelt::sim::testing {
namespace {

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
  at::manual_seed(seed);
  return at::randn(shape, at::kFloat);
}

TEST(SimulatorAten, PointwiseOn2dGridWithPredicatesAndStridedInputMatches) {
  auto k = pointwiseKernel(true);
  at::Tensor a = randn({37, 29}, 1);
  at::Tensor b = randn({29, 37}, 2).t();  // not contiguous: strides are bound per tensor
  const std::string s = k->kernel.scalar_inputs[0]->symbol();
  SimResult r = simulate(k->kernel, {a, b}, {}, {{s, 0.75}});
  EXPECT_TRUE(r.report.clean()) << r.report.toString();
  EXPECT_EQ(r.report.blocks_simulated, 4 * 10);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(at::allclose(r.outputs[0], at::tanh((a + b) * 0.75), 1e-6, 1e-6));
}

TEST(SimulatorAten, BlockReduceSumAndMaxMatch) {
  at::Tensor a = randn({13, 75}, 3);  // rows not a multiple of 4, columns not of 32
  for (ReductionOpType op : {ReductionOpType::Sum, ReductionOpType::Max}) {
    auto k = rowReductionKernel(op);
    for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
      SimOptions o;
      o.order = order;
      SimResult r = simulate(k->kernel, {a}, {}, {}, o);
      EXPECT_TRUE(r.report.clean()) << r.report.toString();
      at::Tensor expect = op == ReductionOpType::Sum ? at::sum(a, {1}) : std::get<0>(at::max(a, 1));
      EXPECT_TRUE(at::allclose(r.outputs[0], expect, 1e-5, 1e-5))
          << r.outputs[0] << expect;
    }
  }
}

TEST(SimulatorAten, BlockBroadcastMatches) {
  auto k = broadcastKernel();
  at::Tensor a = randn({10, 24}, 5);
  SimResult r = simulate(k->kernel, {a}, {}, {});
  EXPECT_TRUE(r.report.clean()) << r.report.toString();
  EXPECT_TRUE(at::equal(r.outputs[0], a.narrow(1, 0, 1).expand({10, 24})));
}

TEST(SimulatorAten, PadReadsTheOutOfBoundsValue) {
  auto k = padKernel();
  at::Tensor a = randn({6, 9}, 6);
  SimResult r = simulate(k->kernel, {a}, {}, {});
  EXPECT_TRUE(r.report.clean()) << r.report.toString();
  EXPECT_TRUE(at::equal(r.outputs[0], at::constant_pad_nd(a, {1, 2}, 0.5)));
}

TEST(SimulatorAten, HalfAndBFloat16RoundTrip) {
  auto k = halfKernel();
  at::Tensor a = (randn({300}, 7) * 1000).to(at::kHalf);
  SimResult r = simulate(k->kernel, {a}, {}, {});
  EXPECT_TRUE(r.report.clean()) << r.report.toString();
  ASSERT_EQ(r.outputs[0].scalar_type(), at::kBFloat16);
  ASSERT_EQ(r.outputs[1].scalar_type(), at::kHalf);
  EXPECT_TRUE(at::equal(r.outputs[0], (a.to(at::kFloat) * 3).to(at::kBFloat16)));
  EXPECT_TRUE(at::equal(r.outputs[1], a));
}

TEST(SimulatorAten, HalfAndBFloat16ConversionsAgreeWithC10) {
  // Every half and bfloat16 bit pattern decodes as c10 decodes it.
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    c10::Half h(static_cast<uint16_t>(bits), c10::Half::from_bits());
    c10::BFloat16 b(static_cast<uint16_t>(bits), c10::BFloat16::from_bits());
    float hf = halfToFloat(static_cast<uint16_t>(bits));
    float bf = bfloat16ToFloat(static_cast<uint16_t>(bits));
    ASSERT_TRUE(hf == static_cast<float>(h) || (std::isnan(hf) && std::isnan(static_cast<float>(h))))
        << bits;
    ASSERT_TRUE(bf == static_cast<float>(b) || (std::isnan(bf) && std::isnan(static_cast<float>(b))))
        << bits;
  }
  // Float -> half/bfloat16 rounds as c10 does, across the whole float range
  // (normals, subnormals, ties, overflow), stepping through bit patterns.
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 65521) {
    float f = bitsToFloat(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToHalf(f), c10::Half(f).x) << f;
    ASSERT_EQ(floatToBFloat16(f), c10::BFloat16(f).x) << f;
  }
  for (float tie : {2049.0f, 2051.0f, 65519.0f, 65520.0f, 5.9604645e-8f, 2.9802322e-8f,
                    8.940697e-8f, 1.00390625f, 1.01171875f}) {
    EXPECT_EQ(floatToHalf(tie), c10::Half(tie).x) << tie;
    EXPECT_EQ(floatToHalf(-tie), c10::Half(-tie).x) << tie;
    EXPECT_EQ(floatToBFloat16(tie), c10::BFloat16(tie).x) << tie;
  }
}

TEST(SimulatorAten, SharedMemoryTransposeMatches) {
  auto k = transposeKernel(true);
  at::Tensor a = randn({21, 13}, 8);
  SimResult r = simulate(k->kernel, {a}, {}, {});
  EXPECT_TRUE(r.report.clean()) << r.report.toString();
  EXPECT_TRUE(at::equal(r.outputs[0], a.t()));
}

TEST(SimulatorAten, TiledMatmulMatchesIntoPreallocatedOutput) {
  auto k = matmulKernel();
  at::Tensor a = randn({64, 64}, 9);
  at::Tensor b = randn({64, 64}, 10);
  at::Tensor c = at::empty({64, 64}, at::kFloat);
  SimResult r = simulate(k->kernel, {a, b}, {c}, {});
  EXPECT_TRUE(r.report.clean()) << r.report.toString();
  EXPECT_TRUE(r.outputs[0].is_same(c));
  EXPECT_TRUE(at::allclose(c, at::matmul(a, b), 1e-4, 1e-4));
}

TEST(SimulatorAten, ArgumentErrors) {
  auto k = transposeKernel(true);
  EXPECT_THROW(simulate(k->kernel, {randn({8, 8}, 1).to(at::kDouble)}), smelt::Error);
  EXPECT_THROW(simulate(k->kernel, {randn({8, 8}, 1)}, {at::empty({8, 8}), at::empty({8, 8})}),
               smelt::Error);
}

}  // namespace
}  // namespace smelt::sim::testing
