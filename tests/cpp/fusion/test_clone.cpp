// Fusion::clone and copySubgraph: copies print and lower exactly like the
// original, are independent of it, and segments become closed fusions.
#include <gtest/gtest.h>

#include <functional>

#include "common/expect_error.h"
#include "common/smem_case_fusions.h"
#include "fusion/clone.h"
#include "fusion/ops.h"
#include "lower/lower.h"

namespace smelt {
namespace {

std::string loweredText(Fusion& fusion) {
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  return kernel.toString() + kernel.summary();
}

class CloneCase : public ::testing::TestWithParam<std::pair<const char*, std::function<void()>>> {};

TEST_P(CloneCase, PrintsAndLowersLikeTheOriginal) {
  Fusion fusion;
  {
    FusionGuard guard(&fusion);
    GetParam().second();
  }
  CloneMap map;
  std::unique_ptr<Fusion> copy = fusion.clone(&map);
  EXPECT_EQ(copy->toString(), fusion.toString());
  for (const Val* in : fusion.inputs()) EXPECT_EQ(map(in)->fusion(), copy.get());
  EXPECT_EQ(loweredText(*copy), loweredText(fusion));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CloneCase,
    ::testing::Values(
        std::make_pair("A2_promoted", [] { cases::buildNeedsReorderedPush().a->promoteReuse(); }),
        std::make_pair("A6", [] { cases::buildSkippedSyncInterval(); }),
        std::make_pair("A7", [] { cases::buildSmemVectorizationChain(); }),
        std::make_pair("A9_symbolic", [] { cases::buildExpandBetweenAliases(false); }),
        std::make_pair("B1", [] { cases::buildTiledGemm(); }),
        std::make_pair("B1_circular_buffered", [] { cases::buildTiledGemm(64, 64, 96, 0, 3); }),
        std::make_pair("C1", [] { cases::buildPersistentRnnSlice(); }),
        std::make_pair("pointwise", [] { cases::buildPointwiseNonDivisible(); })),
    [](const auto& info) { return std::string(info.param.first); });

TEST(Clone, CopyIsIndependentAndKeepsNumbering) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  fusion.addInput(a);
  TensorView* b = exp(a);
  fusion.addOutput(b);
  CloneMap map;
  std::unique_ptr<Fusion> copy = fusion.clone(&map);
  TensorView* b_copy = map(b);
  EXPECT_EQ(b_copy->name(), b->name());
  EXPECT_EQ(b_copy->number(), b->number());
  b_copy->split(1, 4);
  EXPECT_EQ(b->nDims(), 2);
  EXPECT_EQ(b_copy->nDims(), 3);
  // New tensors in the copy get numbers past the original's.
  FusionGuard copy_guard(copy.get());
  TensorView* c = neg(map(a));
  EXPECT_EQ(c->number(), b->number() + 1);
}

TEST(CopySubgraph, SegmentOfATwoReductionFusion) {
  // s = sum(x, {1}); t = sum(broadcast(s) * x, {0}): the second reduction
  // becomes a fusion of its own with s as a Global input without definition.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  TensorView* s = sum(x, {1});
  TensorView* p = mul(broadcast(s, {false, true}), x);
  TensorView* t = sum(p, {0});
  fusion.addOutput(t);
  std::vector<const Expr*> second = {p->definition()->input(0)->definition(), p->definition(),
                                     t->definition()};
  CloneMap map;
  // The rewrite applies to every copied extent (here: T0's inner size fixed).
  std::unique_ptr<Fusion> segment =
      copySubgraph(fusion, second, {s, x}, {t}, &map, [&](const IntExpr& e) {
        return substitute(e, {{"T0.size[1]", IntExpr(13)}});
      });
  TensorView* s_in = map(s);
  EXPECT_EQ(s_in->definition(), nullptr);
  EXPECT_TRUE(segment->isInput(s_in));
  EXPECT_EQ(s_in->memoryType(), MemoryType::Global);
  ASSERT_EQ(s_in->logicalDomain().size(), 1u);  // the reduction axis is gone
  EXPECT_EQ(segment->mathString(),
            "Fusion inputs: (T1_g_float[i2{T0.size[0]}], T0_g_float[i0{T0.size[0]}, i1{13}])\n"
            "  T2_l_float[i4{T0.size[0]}, b5{1}] = broadcast(T1, {false, true})\n"
            "  T3_l_float[i6{T0.size[0]}, i7{13}] = mul(T2, T0)\n"
            "  T4_g_float[r8{T0.size[0]}, i9{13}] = sum(T3)\n"
            "Fusion outputs: (T4)\n");
  EXPECT_SMELT_ERROR(copySubgraph(fusion, {t->definition()}, {x}, {t}), "copySubgraph",
                     "reads T3");
}

}  // namespace
}  // namespace smelt
