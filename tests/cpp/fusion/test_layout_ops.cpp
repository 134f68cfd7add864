// Layout ops and composites at the fusion level: shapes, how reshape groups
// dimensions into view transforms, printing, how schedules replay across
// them, and the errors each op documents.
#include <gtest/gtest.h>

#include <string>

#include "common/example_fusions.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"

namespace smelt {
namespace {

// Logical extents (no reduction axes) as text, e.g. "[4, 8]".
std::string shapeOf(const TensorView* tv) {
  std::string s = "[";
  auto axes = tv->logicalNoReductions();
  for (size_t i = 0; i < axes.size(); ++i) {
    s += (i ? ", " : "") + axes[i]->loopExtent().toString();
  }
  return s + "]";
}

class LayoutOps : public ::testing::Test {
 protected:
  Fusion fusion;
  FusionGuard guard{&fusion};
};

TEST_F(LayoutOps, PermuteAndTransposeReorderTheLogicalAxes) {
  TensorView* x = makeConcreteTensor({2, 3, 4});
  TensorView* p = permute(x, {2, 0, 1});
  EXPECT_EQ(shapeOf(p), "[4, 2, 3]");
  EXPECT_EQ(p->definition()->toString(), "T1_l_float[i3{4}, i4{2}, i5{3}] = permute(T0, {2, 0, 1})");
  // The producer's axis dims[i] maps onto the output's axis i.
  IdMap map = pairwiseLogicalMap(x, p);
  EXPECT_EQ(map.at(x->axis(2)), p->axis(0));
  EXPECT_EQ(map.at(x->axis(0)), p->axis(1));
  EXPECT_EQ(shapeOf(transpose(x, 0, -1)), "[4, 3, 2]");
  EXPECT_SMELT_ERROR(permute(x, {0, 1}), "permute", "T0", "rank 3", "2 dimensions");
  EXPECT_SMELT_ERROR(permute(x, {0, 1, 1}), "permute", "dimension 1", "T0", "listed twice");
  EXPECT_SMELT_ERROR(permute(x, {0, 1, 3}), "permute", "dimension 3", "out of range", "T0");
}

TEST_F(LayoutOps, SqueezeDropsExtentOneDimensionsOnly) {
  TensorView* x = makeConcreteTensor({4, 1, 5});
  TensorView* b = broadcast(makeConcreteTensor({4}), {false, true});
  EXPECT_EQ(shapeOf(squeeze(x, {1})), "[4, 5]");
  EXPECT_EQ(shapeOf(squeeze(b, {-1})), "[4]");
  // Like torch, a listed dimension of another extent stays.
  TensorView* kept = squeeze(x, {0});
  EXPECT_EQ(shapeOf(kept), "[4, 1, 5]");
  EXPECT_EQ(kept->definition()->type(), ExprType::Set);
  EXPECT_EQ(squeeze(x, {0, 1})->definition()->toString(),
            "T6_l_float[i12{4}, i13{5}] = squeeze(T0, {false, true, false})");
  EXPECT_SMELT_ERROR(squeeze(makeContigTensor(2), {1}), "squeeze", "dimension 1", "symbolic extent",
                     "run time");
  EXPECT_EQ(shapeOf(unsqueeze(x, -1)), "[4, 1, 5, 1]");
  EXPECT_TRUE(unsqueeze(x, 0)->axis(0)->isBroadcast());
  EXPECT_SMELT_ERROR(unsqueeze(x, 4), "unsqueeze", "dimension 4", "rank 4");
}

TEST_F(LayoutOps, ReshapeGroupsDimensionsIntoMergesAndSplits) {
  TensorView* x = makeConcreteTensor({2, 3, 4});
  TensorView* merged = reshape(x, {6, 4});
  EXPECT_EQ(shapeOf(merged), "[6, 4]");
  EXPECT_TRUE(merged->hasViewTransforms());
  ASSERT_EQ(viewTransforms(merged).size(), 1u);
  EXPECT_EQ(viewTransforms(merged)[0]->kind, IdTransform::Kind::Merge);
  // The untouched dimension is one axis in root and logical.
  EXPECT_EQ(merged->rootDomain()[2], merged->logicalDomain()[1]);

  TensorView* regrouped = reshape(x, {3, 8});  // merge all three, split once
  EXPECT_EQ(shapeOf(regrouped), "[3, 8]");
  EXPECT_EQ(viewTransforms(regrouped).size(), 3u);

  TensorView* flat = makeConcreteTensor({24});
  TensorView* split = reshape(flat, {2, -1, 4});
  EXPECT_EQ(shapeOf(split), "[2, 3, 4]");
  EXPECT_EQ(viewTransforms(split).size(), 2u);
  EXPECT_EQ(shapeOf(flatten(split)), "[24]");
  EXPECT_EQ(shapeOf(flatten(split, 1)), "[2, 12]");
  EXPECT_SMELT_ERROR(flatten(split, 2, 1), "flatten", "start dimension 2", "T", "end dimension 1");
  EXPECT_SMELT_ERROR(flatten(split, 0, 3), "flatten", "dimension 3", "out of range");
}

TEST_F(LayoutOps, ReshapeSqueezesAndBroadcastsExtentOneEntries) {
  TensorView* x = makeConcreteTensor({4, 1, 5});
  TensorView* y = reshape(x, {4, 5});
  EXPECT_EQ(y->definition()->type(), ExprType::Squeeze);  // no view needed
  TensorView* z = reshape(makeConcreteTensor({20}), {4, 1, 5});
  EXPECT_EQ(shapeOf(z), "[4, 1, 5]");
  EXPECT_EQ(z->definition()->type(), ExprType::Broadcast);
  EXPECT_TRUE(z->axis(1)->isBroadcast());
  EXPECT_EQ(reshape(x, {4, 1, 5})->definition()->type(), ExprType::Set);
}

TEST_F(LayoutOps, ReshapeOfSymbolicExtentsMergesAndSplitsOnlyIntoExactFactors) {
  TensorView* x = makeContigTensor(3);
  TensorView* rows = reshape(x, {-1, x->axis(2)->extent()});
  EXPECT_EQ(shapeOf(rows), "[(T0.size[0] * T0.size[1]), T0.size[2]]");
  IntExpr product = x->axis(0)->extent() * x->axis(1)->extent() * x->axis(2)->extent();
  EXPECT_EQ(shapeOf(reshape(x, {product})), "[((T0.size[0] * T0.size[1]) * T0.size[2])]");
  EXPECT_SMELT_ERROR(reshape(x, {x->axis(0)->extent(), x->axis(1)->extent(), 2, -1}), "reshape",
                     "T0", "splitting dimension 2", "divisibility");
  // All merged, then split into [b, a * c]: the -1 is an exact quotient.
  EXPECT_EQ(shapeOf(reshape(x, {x->axis(1)->extent(), -1})), "[T0.size[1], (T0.size[0] * T0.size[2])]");
  EXPECT_SMELT_ERROR(reshape(x, {x->axis(1)->extent(), x->axis(1)->extent(), -1}), "reshape", "T0",
                     "cannot be matched");
}

// Issue 17, class 5: the extents of any tensor of the fusion are reshape
// entries, merged ones included: an identity reshape, passing a merged
// extent through, merging it again (in any order of the factors) and
// splitting it back into the extents it is the product of.
TEST_F(LayoutOps, ReshapeEntriesAreExtentsOfAnyTensor) {
  TensorView* x = makeContigTensor(4);
  using examples::sizeOf;
  TensorView* y = reshape(x, {sizeOf(x, 0), sizeOf(x, 1), -1});
  EXPECT_EQ(shapeOf(y), "[T0.size[0], T0.size[1], (T0.size[2] * T0.size[3])]");
  EXPECT_EQ(reshape(y, {sizeOf(y, 0), sizeOf(y, 1), sizeOf(y, 2)})->definition()->type(), ExprType::Set);
  EXPECT_EQ(shapeOf(reshape(y, {-1, sizeOf(y, 2)})),
            "[(T0.size[0] * T0.size[1]), (T0.size[2] * T0.size[3])]");
  // A reshape of y regroups x itself: the product merges x's last three axes,
  // and splitting y's merged extent back into its factors is x unchanged.
  TensorView* again = reshape(y, {sizeOf(y, 0), sizeOf(x, 3) * sizeOf(x, 2) * sizeOf(y, 1)});
  EXPECT_EQ(again->definition()->inputs().at(0), x);
  EXPECT_EQ(viewTransforms(again).size(), 2u);
  TensorView* back = reshape(y, {sizeOf(y, 0), sizeOf(y, 1), sizeOf(x, 2), sizeOf(x, 3)});
  EXPECT_EQ(shapeOf(back), "[T0.size[0], T0.size[1], T0.size[2], T0.size[3]]");
  EXPECT_EQ(back->definition()->type(), ExprType::Set);
  EXPECT_EQ(back->definition()->inputs().at(0), x);
  EXPECT_EQ(shapeOf(reshape(y, {sizeOf(y, 0), sizeOf(y, 1), sizeOf(x, 2), -1})), shapeOf(back));
  // A factor the merged extent does not have would need a check at run time.
  EXPECT_SMELT_ERROR(reshape(y, {sizeOf(y, 0), sizeOf(y, 1), sizeOf(x, 2), 2, -1}),
                     "reshape of tensor T1", "which regroups T0", "splitting dimension 3",
                     "T0.size[3]", "divisibility");
}

TEST_F(LayoutOps, ReshapeErrorsNameTheTensorAndShapes) {
  TensorView* x = makeConcreteTensor({2, 3, 4});
  EXPECT_SMELT_ERROR(reshape(x, {5, 5}), "reshape of tensor T0 with shape [2, 3, 4] into [5, 5]",
                     "24 elements");
  EXPECT_SMELT_ERROR(reshape(x, {-1, -1}), "T0", "only one extent can be -1");
  EXPECT_SMELT_ERROR(reshape(x, {-1, 5}), "T0", "24 elements");
  EXPECT_SMELT_ERROR(reshape(x, {0, 24}), "T0", "extent 0", "positive");
}

TEST_F(LayoutOps, ReshapePrintsRootAndViewTransforms) {
  TensorView* x = makeConcreteTensor({2, 6});
  fusion.addInput(x);
  TensorView* y = reshape(x, {12});
  fusion.addOutput(y);
  EXPECT_EQ(y->transformsString(),
            "T1 (Global float)\n"
            "  root: [i2{2}, i3{6}]\n"
            "  Merge: i2{2} and i3{6} -> i4{12}\n"
            "  logical: [i4{12}]\n"
            "  loop: [i4{12}]\n");
  EXPECT_EQ(fusion.mathString(),
            "Fusion inputs: (T0_g_float[i0{2}, i1{6}])\n"
            "  T1_g_float[i4{12}] = reshape(T0)\n"
            "Fusion outputs: (T1)\n");
}

// A schedule set on the reshape's output replays onto its input through the
// view transforms, so the input is computed inside the output's loops.
TEST_F(LayoutOps, ScheduleReplaysBackwardThroughAReshape) {
  TensorView* x = makeConcreteTensor({6, 4, 9});
  fusion.addInput(x);
  TensorView* e = exp(x);
  TensorView* y = reshape(e, {24, 9});
  fusion.addOutput(y);
  y->merge(0)->split(0, 32);
  propagateSchedule(y);
  EXPECT_EQ(e->nDims(), 2);
  EXPECT_EQ(e->axis(1)->extent().constant(), 32);
  inlineMost(&fusion);
  EXPECT_EQ(e->computePosition(), 2);
}

// From the input forward: a producer merged like the view maps onto the
// reshape's merged axis; a split the view lacks stops there.
TEST_F(LayoutOps, ScheduleReplaysForwardOntoMatchingViewTransforms) {
  TensorView* x = makeConcreteTensor({6, 4, 9});
  fusion.addInput(x);
  TensorView* e = exp(x);
  TensorView* y = reshape(e, {24, 9});
  TensorView* z = neg(y);
  fusion.addOutput(z);
  e->merge(0)->split(0, 8);
  propagateSchedule(e);
  EXPECT_EQ(y->nDims(), 3);
  EXPECT_EQ(z->nDims(), 3);
  EXPECT_EQ(z->axis(1)->extent().constant(), 8);
  inlineMost(&fusion);
  EXPECT_EQ(e->computePosition(), 3);
  EXPECT_EQ(y->computePosition(), 3);
}

TEST_F(LayoutOps, CacheBeforeMovesTheViewToTheNewProducer) {
  TensorView* x = makeConcreteTensor({2, 6});
  fusion.addInput(x);
  TensorView* y = reshape(x, {3, 4});
  fusion.addOutput(y);
  TensorView* staged = y->cacheBefore();
  EXPECT_TRUE(staged->hasViewTransforms());
  EXPECT_FALSE(y->hasViewTransforms());
  EXPECT_EQ(staged->definition()->type(), ExprType::Reshape);
  EXPECT_EQ(shapeOf(y), "[3, 4]");
}

TEST_F(LayoutOps, LinearShapesAndDtypes) {
  TensorView* x = makeConcreteTensor({3, 5, 8});
  TensorView* w = makeConcreteTensor({6, 8});
  TensorView* b = makeConcreteTensor({6});
  EXPECT_EQ(shapeOf(linear(x, w, b)), "[3, 5, 6]");
  EXPECT_EQ(shapeOf(linear(makeConcreteTensor({8}), w)), "[6]");
  TensorView* xh = makeConcreteTensor({3, 8}, DataType::Half);
  TensorView* wh = makeConcreteTensor({6, 8}, DataType::Half);
  TensorView* out = linear(xh, wh);
  EXPECT_EQ(out->dtype(), DataType::Half);
  EXPECT_EQ(out->definition()->opName(), "cast<half>");  // accumulated in float
  EXPECT_SMELT_ERROR(linear(x, makeConcreteTensor({6, 7})), "linear", "K of T0 (8)", "(7)");
  EXPECT_SMELT_ERROR(linear(xh, w), "linear", "same floating dtype");
  EXPECT_SMELT_ERROR(linear(x, w, makeConcreteTensor({5})), "linear", "bias", "5 elements",
                     "N = 6");
  EXPECT_EQ(gelu(xh)->dtype(), DataType::Half);
  EXPECT_EQ(gelu(x, true)->dtype(), DataType::Float);
  EXPECT_SMELT_ERROR(gelu(makeConcreteTensor({4}, DataType::Int)), "gelu", "int64");
}

}  // namespace
}  // namespace smelt
