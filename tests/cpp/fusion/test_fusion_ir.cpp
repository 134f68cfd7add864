// Fusion IR: construction, shape and dtype propagation, every scheduling
// primitive's resulting loop domain, printing, and one test per documented
// error of the public API.
#include <gtest/gtest.h>

#include <string>

#include "common/expect_error.h"
#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/symbols.h"
#include "fusion/transform_replay.h"

namespace smelt {
namespace {

// Loop extents of a tensor as text, e.g. "[4, 8]".
std::string loopExtents(const TensorView* tv) {
  std::string s = "[";
  for (int64_t i = 0; i < tv->nDims(); ++i) {
    s += (i ? ", " : "") + tv->axis(i)->extent().toString();
  }
  return s + "]";
}

TEST(IntExpr, FoldsConstantsAndKeepsSymbols) {
  IntExpr n = IntExpr::symbol("T0.size[1]");
  EXPECT_EQ((IntExpr(6) * 7 + 0).constant(), 42);
  EXPECT_EQ(ceilDiv(IntExpr(10), 4).constant(), 3);
  EXPECT_EQ((n * 1 + 0).toString(), "T0.size[1]");
  EXPECT_EQ(ceilDiv(n, 4).toString(), "ceilDiv(T0.size[1], 4)");
  EXPECT_EQ(alignUp(n * 4, 16).evaluate({{"T0.size[1]", 5}}), 32);
  EXPECT_TRUE((n + 1).sameAs(n + 1));
  EXPECT_FALSE((n + 1).sameAs(n + 2));
  EXPECT_SMELT_ERROR(n.evaluate({}), "T0.size[1]", "no value bound");
  EXPECT_SMELT_ERROR(ceilDiv(IntExpr(4), 0), "by zero");
}

// A register array indexed by a flattened position taken modulo a row and
// then modulo the vector: ((b * 128 + t) * 8 + i) % 4096 % 8 is i.
TEST(IntExpr, ModuloOfAModuloByAMultipleSimplifies) {
  const IntExpr b = IntExpr::symbol("blockIdx.x");
  const IntExpr t = IntExpr::symbol("threadIdx.x");
  const IntExpr i = IntExpr::symbol("i3");
  const IntBounds bounds = {{"threadIdx.x", IntExpr(128)}, {"i3", IntExpr(8)}};
  const IntExpr flat = (b * 128 + t) * 8 + i;
  EXPECT_EQ(simplify(flat % 4096 % 8, bounds).toString(), "i3");
  EXPECT_EQ(simplify(flat % 4096 % 4, bounds).toString(), "(i3 % 4)");
  // 8 does not divide 4100: (x % 4100) % 8 stays.
  EXPECT_EQ(simplify(flat % 4100 % 8, bounds).evaluate({{"blockIdx.x", 5}, {"threadIdx.x", 3}, {"i3", 2}}),
            ((5 * 128 + 3) * 8 + 2) % 4100 % 8);
  EXPECT_NE(simplify(flat % 4100 % 8, bounds).toString(), "i3");
}

// A vector's lanes divided and taken modulo a row whose length the vector
// width divides (GPT-2's k/v transpose: (t * 4 + i) / 16 / 8 and
// (t * 4 + i) % 16): the lane drops out of the quotient and is added to the
// remainder, so the lanes' addresses are one base plus constants. Checked
// against evaluation over every value in the bounds, and refused where the
// lane may reach the factor or the factor does not divide the divisor.
TEST(IntExpr, VectorLanesDivideOutOfARowTheWidthDivides) {
  const IntExpr t = IntExpr::symbol("threadIdx.x");
  const IntExpr i = IntExpr::symbol("i0");
  const IntBounds bounds = {{"threadIdx.x", IntExpr(128)}, {"i0", IntExpr(4)}};
  const IntExpr lane = t * 4 + i;
  EXPECT_EQ(simplify(lane / 16, bounds).toString(), "(threadIdx.x / 4)");
  EXPECT_EQ(simplify(lane / 16 / 8, bounds).toString(), "((threadIdx.x / 4) / 8)");
  EXPECT_EQ(simplify(lane % 16, bounds).toString(), "(((threadIdx.x % 4) * 4) + i0)");
  for (const IntExpr& e : {lane / 16 / 8 % 2, lane % 16, lane / 8, lane % 8, (i + t * 4) / 12}) {
    const IntExpr simple = simplify(e, bounds);
    for (int64_t tv = 0; tv < 128; ++tv) {
      for (int64_t iv = 0; iv < 4; ++iv) {
        ASSERT_EQ(simple.evaluate({{"threadIdx.x", tv}, {"i0", iv}}),
                  e.evaluate({{"threadIdx.x", tv}, {"i0", iv}}))
            << e.toString() << " -> " << simple.toString();
      }
    }
  }
  // i0 may reach 4 (bound 5): the lane can carry into the next row.
  EXPECT_NE(simplify(lane / 16, {{"threadIdx.x", IntExpr(128)}, {"i0", IntExpr(5)}}).toString(),
            "(threadIdx.x / 4)");
  // 4 does not divide 18.
  EXPECT_NE(simplify(lane / 18, bounds).toString().find("18"), std::string::npos);
}

// A dimension split in two and indexed back through constant strides folds
// to one term: (y / 8) * 256 + (y % 8) * 32 -> y * 32, for every y; strides
// that do not match keep both terms.
TEST(IntExpr, ASplitDimensionOverConstantStridesFoldsBack) {
  const IntExpr y = IntExpr::symbol("threadIdx.y");
  const IntExpr x = IntExpr::symbol("threadIdx.x");
  const IntBounds bounds = {{"threadIdx.y", IntExpr(16)}, {"threadIdx.x", IntExpr(8)}};
  const IntExpr index = y / 8 * 256 + y % 8 * 32 + x * 4;
  EXPECT_EQ(simplify(index, bounds).toString(), "((threadIdx.y * 32) + (threadIdx.x * 4))");
  for (int64_t yv = 0; yv < 64; ++yv) {
    ASSERT_EQ(simplify(index, bounds).evaluate({{"threadIdx.y", yv}, {"threadIdx.x", 3}}),
              index.evaluate({{"threadIdx.y", yv}, {"threadIdx.x", 3}}));
  }
  EXPECT_NE(simplify(y / 8 * 250 + y % 8 * 32, bounds).toString().find("250"), std::string::npos);
}

TEST(FusionConstruction, InputsOutputsAndTopologicalOrder) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeContigTensor(2);
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = exp(tv1);
  TensorView* tv3 = add(tv1, tv2);
  fusion.addOutput(tv3);
  EXPECT_EQ(tv0->axis(0)->extent().toString(), "T0.size[0]");
  EXPECT_EQ(tv0->memoryType(), MemoryType::Global);
  EXPECT_EQ(tv1->memoryType(), MemoryType::Local);
  EXPECT_EQ(tv3->memoryType(), MemoryType::Global);  // outputs live in global memory
  auto exprs = fusion.exprs();
  ASSERT_EQ(exprs.size(), 3u);
  EXPECT_EQ(exprs[0]->output(), tv1);
  EXPECT_EQ(exprs[1]->output(), tv2);
  EXPECT_EQ(exprs[2]->output(), tv3);
  EXPECT_EQ(fusion.consumersOf(tv1), (std::vector<TensorView*>{tv2, tv3}));
  EXPECT_TRUE(tv0->isFusionInput());
  EXPECT_TRUE(tv3->isFusionOutput());
}

TEST(FusionConstruction, MathAndTransformsPrintExactly) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({8, 6});
  fusion.addInput(tv0);
  TensorView* tv1 = sum(mul(tv0, 2.0), {1});
  fusion.addOutput(tv1);
  tv1->split(0, 4)->axis(1)->parallelize(ParallelType::TIDx);
  EXPECT_EQ(fusion.mathString(),
            "Fusion inputs: (T0_g_float[i0{8}, i1{6}])\n"
            "  T1_l_float[i2{8}, i3{6}] = mul(T0, 2.0)\n"
            "  T2_g_float[i6{2}, iTIDx7{4}, r5{6}] = sum(T1)\n"
            "Fusion outputs: (T2)\n");
  EXPECT_EQ(tv1->transformsString(),
            "T2 (Global float)\n"
            "  logical: [i4{8}, r5{6}]\n"
            "  Split: i4{8} by 4 -> i6{2}, iTIDx7{4}\n"
            "  loop: [i6{2}, iTIDx7{4}, r5{6}]\n");
}

TEST(ShapeAndDtype, BinaryOpsBroadcastAndPromote) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* f = makeConcreteTensor({4, 5});
  TensorView* h = makeConcreteTensor({4, 5}, DataType::Half);
  TensorView* b = makeConcreteTensor({4, 5}, DataType::BFloat16);
  TensorView* i = makeConcreteTensor({4, 5}, DataType::Int);
  TensorView* flag = makeConcreteTensor({4, 5}, DataType::Bool);
  EXPECT_EQ(add(f, h)->dtype(), DataType::Float);
  EXPECT_EQ(add(h, h)->dtype(), DataType::Half);
  EXPECT_EQ(add(h, b)->dtype(), DataType::Float);
  EXPECT_EQ(add(i, 1.0)->dtype(), DataType::Int);    // integral constant keeps int
  EXPECT_EQ(add(i, 0.5)->dtype(), DataType::Float);  // a fraction lifts it to float
  EXPECT_EQ(div(i, i)->dtype(), DataType::Int);        // truncating, as nvFuser's div
  EXPECT_EQ(truediv(i, i)->dtype(), DataType::Float);  // true division, as torch's /
  EXPECT_EQ(truediv(i, 2.0)->dtype(), DataType::Float);
  EXPECT_EQ(div(flag, flag)->dtype(), DataType::Float);  // bools have no integer division
  EXPECT_EQ(castOp(DataType::Half, f)->dtype(), DataType::Half);
  EXPECT_EQ(exp(i)->dtype(), DataType::Float);
  EXPECT_EQ(where(flag, f, constant(0.0))->dtype(), DataType::Float);
  TensorView* row = broadcast(sum(f, {1}), {false, true});
  EXPECT_EQ(loopExtents(row), "[4, 1]");
  EXPECT_TRUE(row->axis(1)->isBroadcast());
  TensorView* scaled = div(f, row);
  EXPECT_EQ(loopExtents(scaled), "[4, 5]");
  EXPECT_TRUE(scaled->axis(1)->isIteration());
}

TEST(ShapeAndDtype, ReductionBroadcastExpandPadFullMatmul) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({3, 4, 5});
  TensorView* s = sum(x, {0, -1});
  ASSERT_EQ(s->logicalDomain().size(), 3u);
  EXPECT_TRUE(s->axis(0)->isReduction());
  EXPECT_TRUE(s->axis(1)->isIteration());
  EXPECT_TRUE(s->axis(2)->isReduction());
  EXPECT_EQ(s->logicalNoReductions().size(), 1u);

  TensorView* v = makeConcreteTensor({4});
  TensorView* bv = broadcast(v, {true, false});
  TensorView* ev = expand(bv, {3, -1});
  EXPECT_TRUE(ev->axis(0)->isBroadcast());
  EXPECT_EQ(ev->axis(0)->loopExtent().constant(), 3);
  EXPECT_EQ(loopExtents(set(ev)), "[3, 4]");  // a copy materializes the expansion

  TensorView* p = pad(x, {0, 1, 2, 0});  // last dim +1 after, middle dim +2 before
  EXPECT_EQ(loopExtents(p), "[3, 6, 6]");

  TensorView* filled = full({IntExpr(2), IntExpr(7)}, 1.0, DataType::Half);
  EXPECT_EQ(loopExtents(filled), "[2, 7]");
  EXPECT_EQ(filled->dtype(), DataType::Half);

  TensorView* a = makeConcreteTensor({16, 8});
  TensorView* bm = makeConcreteTensor({8, 12});
  TensorView* c = matmul(a, bm);
  EXPECT_EQ(loopExtents(c), "[16, 8, 12]");
  EXPECT_TRUE(c->axis(1)->isReduction());
  EXPECT_EQ(c->logicalNoReductions().size(), 2u);

  TensorView* sym = makeContigTensor(1);
  TensorView* psym = pad(sym, {2, 3});
  EXPECT_EQ(psym->axis(0)->extent().toString(), "(" + sym->name() + ".size[0] + 5)");
}

TEST(Primitives, SplitInnerAndNparts) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv = makeConcreteTensor({10, 12});
  tv->split(0, 4);
  EXPECT_EQ(loopExtents(tv), "[3, 4, 12]");  // ceilDiv(10, 4) = 3: non-divisible
  tv->split(-1, 3, /*inner_split=*/false);
  EXPECT_EQ(loopExtents(tv), "[3, 4, 3, 4]");  // nparts = 3 outer
  TensorView* sym = makeContigTensor(1);
  sym->split(0, 128);
  EXPECT_EQ(loopExtents(sym), "[ceilDiv(T1.size[0], 128), 128]");
  sym->split(0, 2, false);
  EXPECT_EQ(loopExtents(sym), "[2, ceilDiv(ceilDiv(T1.size[0], 128), 2), 128]");
}

TEST(Primitives, MergeReorderParallelize) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv = makeConcreteTensor({2, 3, 5});
  tv->merge(0);
  EXPECT_EQ(loopExtents(tv), "[6, 5]");
  tv->merge(1, 0);  // merging out of order puts the result at the first position
  EXPECT_EQ(loopExtents(tv), "[30]");
  TensorView* t2 = makeConcreteTensor({2, 3, 5, 7});
  t2->reorder({{0, 3}, {3, 1}});
  EXPECT_EQ(loopExtents(t2), "[3, 7, 5, 2]");
  t2->reorder({{-1, 0}});
  EXPECT_EQ(loopExtents(t2), "[2, 3, 7, 5]");
  t2->axis(0)->parallelize(ParallelType::BIDx);
  t2->axis(-1)->parallelize(ParallelType::TIDx);
  EXPECT_EQ(t2->axis(0)->parallelType(), ParallelType::BIDx);
  EXPECT_EQ(t2->axis(3)->parallelType(), ParallelType::TIDx);
  t2->axis(0)->parallelize(ParallelType::Serial);
  t2->axis(1)->parallelize(ParallelType::BIDx);  // freed by the line above
  EXPECT_EQ(t2->axis(1)->parallelType(), ParallelType::BIDx);
  // merging a broadcast into an iteration axis keeps the iteration extent
  TensorView* b = broadcast(makeConcreteTensor({6}), {true, false});
  b->merge(0);
  EXPECT_EQ(loopExtents(b), "[6]");
  EXPECT_TRUE(b->axis(0)->isIteration());
}

TEST(Primitives, ComputeAtReplaysTheConsumerSchedule) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({64, 32});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = exp(tv1);
  TensorView* tv3 = abs(tv2);
  fusion.addOutput(tv3);
  tv3->merge(0)->split(0, 128);
  tv3->axis(0)->parallelize(ParallelType::BIDx);
  tv3->axis(1)->parallelize(ParallelType::TIDx);
  tv1->computeAt(tv3, 1);
  // tv1 and tv2 (on the path) now mirror tv3 and share its first loop.
  EXPECT_EQ(loopExtents(tv1), "[16, 128]");
  EXPECT_EQ(loopExtents(tv2), "[16, 128]");
  EXPECT_EQ(tv1->computePosition(), 1);
  EXPECT_EQ(tv2->computePosition(), 1);
  EXPECT_EQ(tv3->computePosition(), 0);
  EXPECT_EQ(tv2->axis(0)->parallelType(), ParallelType::BIDx);
  EXPECT_EQ(tv2->axis(1)->parallelType(), ParallelType::TIDx);
  EXPECT_EQ(loopOwner(tv1, 0), std::make_pair(static_cast<const TensorView*>(tv3), int64_t{0}));
  EXPECT_EQ(loopOwner(tv1, 1), std::make_pair(static_cast<const TensorView*>(tv1), int64_t{1}));
  tv1->computeAt(tv3, -1);  // all of tv3's loops
  EXPECT_EQ(tv1->computePosition(), 2);
}

TEST(Primitives, ComputeAtSkipsBroadcastLoopsTheProducerLacks) {
  // A matmul operand is computed inside the other operand's tile loop.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({64, 32});
  TensorView* b = makeConcreteTensor({32, 48});
  fusion.addInput(a);
  fusion.addInput(b);
  TensorView* c = matmul(a, b);  // [M, rK, N]
  fusion.addOutput(c);
  TensorView* a_s = a->cacheAfter()->setMemoryType(MemoryType::Shared);
  c->split(0, 16)->split(2, 8)->split(4, 16);     // [Mo, Mi, rKo, rKi, No, Ni]
  c->reorder({{4, 1}, {2, 2}, {1, 3}, {5, 4}, {3, 5}});  // [Mo, No, rKo, Mi, Ni, rKi]
  a_s->computeAt(c, 3);
  EXPECT_EQ(loopExtents(a_s), "[4, 4, 16, 8]");  // [Mo, rKo, Mi, Ki]
  EXPECT_EQ(a_s->computePosition(), 2);
  auto owner = loopOwner(a_s, 1);  // a_s's K-tile loop is c's K-tile loop
  EXPECT_EQ(owner.first, c);
  EXPECT_EQ(owner.second, 2);
}

TEST(Primitives, InlineMostOnTheVectorizedChainOfCaseA7) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({16});
  fusion.addInput(tv0);
  TensorView* tv1 = set(tv0);
  TensorView* tv2 = set(tv1);
  TensorView* tv3 = set(tv2);
  TensorView* tv4 = set(tv3);
  fusion.addOutput(tv4);
  tv1->split(-1, 2)->axis(-1)->parallelize(ParallelType::Vectorize);
  tv1->setMemoryType(MemoryType::Shared);
  tv2->split(-1, 4);
  tv3->split(-1, 4)->axis(-1)->parallelize(ParallelType::Vectorize);
  tv3->setMemoryType(MemoryType::Shared);
  inlineMost(&fusion);
  EXPECT_EQ(tv1->computePosition(), 0);  // split by 2 vs by 4: no common loop
  EXPECT_EQ(tv2->computePosition(), 1);  // shares the outer loop, not the vectorized one
  EXPECT_EQ(tv3->computePosition(), 0);  // tv4 is not split
  EXPECT_EQ(tv4->computePosition(), 0);
  tv2->inlineAt(0);
  EXPECT_EQ(tv2->computePosition(), 0);
}

TEST(Primitives, InlineJoinsTheLoopsOfSiblingConsumers) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({8, 8});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = exp(tv1);
  TensorView* tv3 = abs(tv1);
  fusion.addOutput(tv2);
  fusion.addOutput(tv3);
  // tv2 and tv3 run in loop nests of their own; inlining tv1 into both
  // makes their loops one.
  EXPECT_EQ(loopOwner(tv3, 0), std::make_pair(static_cast<const TensorView*>(tv3), int64_t{0}));
  EXPECT_EQ(tv1->maxInlinePosition(), 2);
  tv1->inlineAt(2);
  for (int64_t axis : {0, 1}) {
    EXPECT_EQ(loopOwner(tv3, axis), std::make_pair(static_cast<const TensorView*>(tv2), axis));
    EXPECT_EQ(loopOwner(tv1, axis), std::make_pair(static_cast<const TensorView*>(tv2), axis));
  }
  // Bound differently, the loops cannot be one.
  tv1->inlineAt(0);
  tv3->axis(1)->parallelize(ParallelType::TIDx);
  EXPECT_EQ(tv1->maxInlinePosition(), 1);
}

TEST(Primitives, InlineDoesNotJoinLoopsOfDifferentExtents) {
  // v.sum() next to v.expand(6, 4).sum() for v of [6, 1]: the broadcast
  // axis's loop runs once, the expanded one's four times.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({6});
  fusion.addInput(tv0);
  TensorView* tv1 = broadcast(neg(tv0), {false, true});
  fusion.addOutput(sum(tv1, {0, 1}));
  fusion.addOutput(sum(expand(tv1, {IntExpr(6), IntExpr(4)}), {0, 1}));
  inlineMost(&fusion);
  EXPECT_EQ(tv1->computePosition(), 1);
  // A broadcast row written as it is and read by a product over two rows
  // (llama's rotary cos next to q * cos): joined, the row would be computed
  // twice.
  Fusion rows;
  FusionGuard rows_guard(&rows);
  TensorView* angle = makeConcreteTensor({8});
  TensorView* q = makeConcreteTensor({2, 8});
  rows.addInput(angle);
  rows.addInput(q);
  TensorView* cosine = broadcast(cos(angle), {true, false});
  rows.addOutput(neg(cosine));
  rows.addOutput(mul(q, cosine));
  inlineMost(&rows);
  EXPECT_EQ(cosine->computePosition(), 0);
}

TEST(Primitives, InlineDoesNotJoinALoopAReductionMustFinishFirst) {
  // x / x.sum(1): the division's column loop cannot be the sum's.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({8, 8});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = sum(tv1, {1});
  TensorView* tv3 = div(tv1, broadcast(tv2, {false, true}));
  fusion.addOutput(tv3);
  inlineMost(&fusion);
  EXPECT_EQ(tv2->computePosition(), 1);
  EXPECT_EQ(tv1->computePosition(), 1);  // the rows' loop only
  // Nor a loop whose values reach each other through a tensor computed
  // outside it: exp(x) next to exp(x) + sum(exp(x)) along the same rows.
  Fusion chain;
  FusionGuard chain_guard(&chain);
  TensorView* a = makeConcreteTensor({8});
  chain.addInput(a);
  TensorView* b = neg(a);
  TensorView* total = sum(b, {0});
  TensorView* c = add(b, broadcast(total, {true}));
  chain.addOutput(exp(b));
  chain.addOutput(c);
  EXPECT_EQ(b->maxInlinePosition(), 0);
}

TEST(Primitives, CacheAfterAndCacheBefore) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({8, 4});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = sum(tv1, {1});
  fusion.addOutput(tv2);
  TensorView* cached_in = tv0->cacheAfter();
  EXPECT_EQ(cached_in->definition()->type(), ExprType::Set);
  EXPECT_EQ(tv1->definition()->input(0), cached_in);
  EXPECT_EQ(tv0->uses().size(), 1u);
  tv2->split(0, 2);
  TensorView* producer = tv2->cacheBefore();
  EXPECT_EQ(producer->definition()->type(), ExprType::Reduction);
  EXPECT_TRUE(producer->hasReduction());
  EXPECT_FALSE(tv2->hasReduction());
  EXPECT_EQ(tv2->definition()->type(), ExprType::Set);
  EXPECT_EQ(tv2->definition()->input(0), producer);
  EXPECT_EQ(loopExtents(producer), "[4, 2, 4]");  // keeps the schedule it took over
  EXPECT_EQ(loopExtents(tv2), "[4, 2]");          // replayed without the reduction
  EXPECT_TRUE(tv2->isFusionOutput());
  EXPECT_EQ(fusion.exprs().size(), 4u);
}

// The expression order a fusion keeps between calls follows every change
// of the graph: cacheAfter/cacheBefore (replaceInput, replaceOutput), a new
// output, a removed expression.
TEST(Primitives, ExpressionOrderFollowsGraphChanges) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({8, 4});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = sum(tv1, {1});
  fusion.addOutput(tv2);
  ASSERT_EQ(fusion.exprs().size(), 2u);
  EXPECT_EQ(fusion.consumersOf(tv0), std::vector<TensorView*>{tv1});
  TensorView* cached_in = tv0->cacheAfter();
  EXPECT_EQ(fusion.consumersOf(tv0), std::vector<TensorView*>{cached_in});
  EXPECT_EQ(fusion.consumersOf(cached_in), std::vector<TensorView*>{tv1});
  TensorView* producer = tv2->cacheBefore();
  EXPECT_EQ(fusion.consumersOf(tv1), std::vector<TensorView*>{producer});
  EXPECT_EQ(fusion.exprs().back()->output(), tv2);
  TensorView* tv3 = exp(tv1);  // computes nothing an output needs yet
  EXPECT_EQ(fusion.exprs().size(), 4u);
  EXPECT_EQ(fusion.consumersOf(tv1), std::vector<TensorView*>{producer});
  fusion.addOutput(tv3);
  EXPECT_EQ(fusion.exprs().size(), 5u);
  EXPECT_EQ(fusion.consumersOf(tv1), (std::vector<TensorView*>{producer, tv3}));
  fusion.removeExpr(tv3->definition());
  EXPECT_EQ(fusion.consumersOf(tv1), std::vector<TensorView*>{producer});
}

TEST(Primitives, SetMemoryTypeAndPromoteReuse) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv0 = makeConcreteTensor({8});
  fusion.addInput(tv0);
  TensorView* tv1 = set(tv0);
  fusion.addOutput(set(tv1));
  tv1->setMemoryType(MemoryType::Shared)->promoteReuse();
  EXPECT_TRUE(tv1->shouldPromoteReuse());
  tv1->setMemoryType(MemoryType::Local);  // leaving shared memory drops the request
  EXPECT_FALSE(tv1->shouldPromoteReuse());
}

TEST(Primitives, PropagateScheduleReachesEveryTensor) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  TensorView* e = exp(x);
  TensorView* y = div(e, broadcast(sum(e, {1}), {false, true}));
  fusion.addOutput(y);
  y->split(1, 128);
  y->axis(0)->parallelize(ParallelType::BIDx);
  y->axis(2)->parallelize(ParallelType::TIDx);
  propagateSchedule(y);
  for (TensorView* tv : fusion.allTensors()) {
    if (tv->isFusionInput()) continue;
    ASSERT_EQ(tv->nDims(), 3) << tv->toString();
    EXPECT_EQ(tv->axis(0)->parallelType(), ParallelType::BIDx) << tv->toString();
    EXPECT_EQ(tv->axis(2)->parallelType(), ParallelType::TIDx) << tv->toString();
  }
  // The reduction is reached from its producer, not through the broadcast.
  TensorView* s = fusion.consumersOf(e)[0];
  ASSERT_TRUE(s->hasReduction());
  EXPECT_TRUE(s->axis(1)->isReduction());
  EXPECT_EQ(s->axis(2)->extent().constant(), 128);
  inlineMost(&fusion);
  EXPECT_EQ(e->computePosition(), 1);  // read by the sum and by the division
  EXPECT_EQ(s->computePosition(), 1);
}

// ---- errors: each documented misuse names the tensor, axis or op ----

class FusionErrors : public ::testing::Test {
 protected:
  Fusion fusion;
  FusionGuard guard{&fusion};
};

TEST_F(FusionErrors, AxisOutOfRange) {
  TensorView* tv = makeConcreteTensor({4, 4});
  EXPECT_SMELT_ERROR(tv->split(2, 2), "split", "axis 2", "T0", "2 loop axes");
  EXPECT_SMELT_ERROR(tv->axis(-3), "axis -3", "T0");
  EXPECT_SMELT_ERROR(tv->merge(0, 5), "merge", "axis 5");
  EXPECT_SMELT_ERROR(tv->reorder({{0, 9}}), "reorder", "axis 9");
}

TEST_F(FusionErrors, MergingReductionWithIteration) {
  TensorView* tv = sum(makeConcreteTensor({4, 4}), {1});
  EXPECT_SMELT_ERROR(tv->merge(0), "merge", "T1", "mix an iteration and a reduction axis");
}

TEST_F(FusionErrors, SameParallelTypeTwice) {
  TensorView* tv = makeConcreteTensor({4, 4});
  tv->axis(0)->parallelize(ParallelType::TIDx);
  EXPECT_SMELT_ERROR(tv->axis(1)->parallelize(ParallelType::TIDx), "T0",
                     "already binds axis 0", "TIDx");
}

TEST_F(FusionErrors, ParallelizeAnAxisThatWasSplitAway) {
  TensorView* tv = makeConcreteTensor({8});
  IterDomain* old_axis = tv->axis(0);
  tv->split(0, 2);
  EXPECT_SMELT_ERROR(old_axis->parallelize(ParallelType::TIDx), "T0", "not in its loop domain");
}

TEST_F(FusionErrors, ComputeAtPastTheSharedLoopDepth) {
  TensorView* tv0 = makeConcreteTensor({8, 8});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = exp(tv1);
  fusion.addOutput(tv2);
  EXPECT_SMELT_ERROR(tv1->computeAt(tv2, 3), "computeAt(T2, 3)", "past the shared loop depth");
  EXPECT_SMELT_ERROR(tv2->computeAt(tv1, 1), "T1", "does not consume T2");
  EXPECT_SMELT_ERROR(tv1->inlineAt(3), "inlineAt(3)", "out of range", "T1");
}

TEST_F(FusionErrors, ComputeAtIntoALoopTheProducerLacks) {
  TensorView* tv0 = makeConcreteTensor({8, 6});
  fusion.addInput(tv0);
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = pad(tv1, {0, 2});  // the padded axis has no counterpart
  fusion.addOutput(tv2);
  EXPECT_SMELT_ERROR(tv1->computeAt(tv2, 2), "axis 1", "of T2", "no counterpart in T1");
  tv1->computeAt(tv2, 1);
  EXPECT_EQ(tv1->computePosition(), 1);
  EXPECT_SMELT_ERROR(tv1->inlineAt(2), "inlineAt(2)", "axis 1", "T1",
                     "largest legal position is 1");
}

TEST_F(FusionErrors, PromoteReuseOnANonSharedTensor) {
  TensorView* tv = set(makeConcreteTensor({8}));
  EXPECT_SMELT_ERROR(tv->promoteReuse(), "promoteReuse", "T1", "Local", "only Shared");
}

TEST_F(FusionErrors, MismatchedShapesInBinaryOps) {
  TensorView* a = makeConcreteTensor({4, 5});
  TensorView* b = makeConcreteTensor({4, 6});
  TensorView* c = makeConcreteTensor({4});
  EXPECT_SMELT_ERROR(add(a, b), "add", "dimension 1", "T0", "extent 5", "T1", "extent 6");
  EXPECT_SMELT_ERROR(mul(a, c), "mul", "T0 has rank 2", "T2 has rank 1");
  TensorView* m = makeConcreteTensor({4, 7});
  EXPECT_SMELT_ERROR(matmul(a, m), "matmul", "K of T0 (5)", "K of T3 (4)");
}

TEST_F(FusionErrors, BadOpArguments) {
  TensorView* a = makeConcreteTensor({4, 5});
  EXPECT_SMELT_ERROR(sum(a, {2}), "sum", "axis 2", "T0", "rank 2");
  EXPECT_SMELT_ERROR(sum(a, {1, -1}), "sum", "listed twice");
  EXPECT_SMELT_ERROR(broadcast(a, {true, false}), "broadcast", "T0", "rank 2", "keep 1");
  EXPECT_SMELT_ERROR(expand(a, {4, 6}), "expand", "dimension 1", "not a broadcast");
  EXPECT_SMELT_ERROR(pad(a, {1}), "pad", "even number");
  EXPECT_SMELT_ERROR(pad(a, {-3, -2}), "pad", "dimension 1", "T0", "leaves no element");
  EXPECT_SMELT_ERROR(where(a, a, a), "where", "condition T0", "bool");
  EXPECT_SMELT_ERROR(a->split(0, 0), "split", "factor 0", "positive");
  EXPECT_SMELT_ERROR(makeConcreteTensor({4, 0}), "dimension 1", "extent 0");
}

TEST_F(FusionErrors, InputsAndOutputsStayGlobal) {
  TensorView* in = makeConcreteTensor({4});
  fusion.addInput(in);
  EXPECT_SMELT_ERROR(in->setMemoryType(MemoryType::Shared), "T0", "fusion input", "Global");
  EXPECT_SMELT_ERROR(in->cacheBefore(), "cacheBefore", "T0", "no definition");
  EXPECT_SMELT_ERROR(fusion.addOutput(in), "addOutput", "T0", "fusion input");
  TensorView* out = neg(in);
  EXPECT_SMELT_ERROR(fusion.addInput(out), "addInput", "computed by an expression");
}

TEST(FusionErrorsNoGuard, OpsNeedAnActiveFusion) {
  EXPECT_SMELT_ERROR(makeConcreteTensor({4}), "no active Fusion");
}

TEST_F(FusionErrors, OperandsFromAnotherFusion) {
  TensorView* a = makeConcreteTensor({4});
  Fusion other;
  FusionGuard other_guard(&other);
  TensorView* b = makeConcreteTensor({4});
  EXPECT_SMELT_ERROR(add(a, b), "add", "T0", "another fusion");
}

// A fusion tensor's size symbols name it by number and parse back; no other
// symbol parses as a size.
TEST(Symbols, SizeSymbolsRoundTrip) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* tv = makeContigTensor(2)->setName("renamed");
  const std::string size = sizeSymbol(tv, 1);
  EXPECT_EQ(size, "T" + std::to_string(tv->number()) + ".size[1]");
  EXPECT_EQ(tv->axis(1)->extent().symbolName(), size);
  const std::optional<SizeSymbol> parsed = parseSizeSymbol(size);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->tensor_number, tv->number());
  EXPECT_EQ(parsed->dim, 1);
  for (const std::string& other : {strideSymbol(tv, 1), sizeSymbol("renamed", 1), threadIdxSymbol(0),
                                   std::string("T1.size[]"), std::string("Tx.size[0]")}) {
    EXPECT_FALSE(parseSizeSymbol(other).has_value()) << other;
  }
  EXPECT_EQ(parallelIndexSymbol(ParallelType::BIDy), blockIdxSymbol(1));
  EXPECT_TRUE(isBuiltinSymbol(gridDimSymbol(2)));
  EXPECT_FALSE(isBuiltinSymbol(size));
}

}  // namespace
}  // namespace smelt
