#include "common/smem_case_fusions.h"

#include "fusion/ops.h"
#include "fusion/transform_replay.h"

namespace smelt::cases {

namespace {
TensorView* ones(std::vector<IntExpr> shape) { return full(std::move(shape), 1.0); }
TensorView* shared(TensorView* tv) { return tv->setMemoryType(MemoryType::Shared); }
}  // namespace

SimpleCase buildSimpleCase(int64_t h, int64_t w) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = ones({h});
  TensorView* tv1 = shared(set(tv0));
  TensorView* tv2 = set(tv1);
  fusion->addOutput(tv2);
  TensorView* tv3 = sum(tv2, {0});
  fusion->addOutput(tv3);
  TensorView* tv4 = ones({w});
  TensorView* tv5 = shared(mul(tv3, tv4));
  TensorView* tv6 = set(tv5);
  fusion->addOutput(tv6);
  return {tv1, tv5, tv3};
}

NeedsReorderedPush buildNeedsReorderedPush(int64_t h) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = shared(ones({h}));
  TensorView* tv1 = shared(pad(tv0, {0, 1}));
  TensorView* tv2 = mul(tv1, tv1);
  TensorView* tv3 = sum(tv2, {0});
  TensorView* tv4 = broadcast(tv3, {true});
  TensorView* tv5 = shared(mul(tv4, tv1));
  fusion->addOutput(add(tv1, tv1));
  fusion->addOutput(neg(tv5));
  return {tv0, tv1, tv5, tv3};
}

MultipleDownstream buildPromoteReuseMultipleDownstream(int64_t h) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = shared(ones({h}));
  TensorView* tv2 = shared(pad(neg(tv0), {0, 1}));
  TensorView* tv4 = shared(pad(neg(tv2), {0, 1}));
  fusion->addOutput(neg(tv4));
  return {tv0, tv2, tv4};
}

MultiplePromote buildMultiplePromoteReuse(int64_t h) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = shared(ones({h}));
  TensorView* tv2 = shared(pad(neg(neg(tv0)), {0, 1}));
  TensorView* tv4 = shared(pad(neg(neg(tv2)), {0, 1}));
  TensorView* tv6 = shared(pad(neg(neg(tv4)), {0, 1}));
  fusion->addOutput(neg(tv6));
  return {tv0, tv2, tv4, tv6};
}

SkippedSync buildSkippedSyncInterval(int64_t d, int64_t h, int64_t w) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = shared(ones({d, h, w}));
  TensorView* tv1 = neg(tv0);
  TensorView* tv2 = shared(pad(tv1, {0, 1}));
  TensorView* tv3 = set(tv2);
  fusion->addOutput(tv3);
  for (TensorView* tv : {tv0, tv1, tv2, tv3}) tv->axis(0)->parallelize(ParallelType::TIDx);
  tv0->inlineMost();
  return {tv0, tv2};
}

VectorChain buildSmemVectorizationChain() {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = makeConcreteTensor({16});
  fusion->addInput(tv0);
  TensorView* tv1 = set(tv0);
  TensorView* tv2 = set(tv1);
  TensorView* tv3 = set(tv2);
  fusion->addOutput(set(tv3));
  tv1->split(-1, 2)->axis(-1)->parallelize(ParallelType::Vectorize);
  shared(tv1);
  tv2->split(-1, 4);
  tv3->split(-1, 4)->axis(-1)->parallelize(ParallelType::Vectorize);
  shared(tv3);
  inlineMost(fusion);
  return {tv1, tv3};
}

VectorChain buildRegisterVectorizationChain(int64_t vf1, int64_t vf2) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = makeConcreteTensor({16});
  fusion->addInput(tv0);
  TensorView* tv1 = set(tv0);
  TensorView* tv2 = set(tv1);
  TensorView* tv3 = set(tv2);
  fusion->addOutput(set(tv3));
  tv1->split(-1, vf1);
  if (vf1 > 1) tv1->axis(-1)->parallelize(ParallelType::Vectorize);
  tv2->split(-1, vf2);
  tv3->split(-1, vf2);
  if (vf2 > 1) tv3->axis(-1)->parallelize(ParallelType::Vectorize);
  return {tv1, tv3};
}

ExpandChain buildExpandBetweenAliases(bool concrete) {
  Fusion* fusion = Fusion::current();
  TensorView* tv0 = concrete ? makeConcreteTensor({4}) : makeContigTensor(1);
  fusion->addInput(tv0);
  TensorView* tv1 = shared(set(tv0));
  TensorView* tv2 = shared(broadcast(tv1, {true, false}));
  TensorView* tv3 = shared(expand(tv2, {3, 4}));
  fusion->addOutput(set(tv3));
  return {tv1, tv3};
}

TiledGemm buildTiledGemm(int64_t m, int64_t n, int64_t k, int64_t batch, int64_t stages) {
  Fusion* fusion = Fusion::current();
  bool batched = batch > 0;
  TensorView* a = batched ? makeConcreteTensor({batch, m, k}) : makeConcreteTensor({m, k});
  TensorView* b = batched ? makeConcreteTensor({batch, k, n}) : makeConcreteTensor({k, n});
  fusion->addInput(a);
  fusion->addInput(b);
  // [(B,) M, K, 1] * [(B,) 1, K, N] summed over K.
  std::vector<bool> a_new = batched ? std::vector<bool>{false, false, false, true}
                                    : std::vector<bool>{false, false, true};
  std::vector<bool> b_new = batched ? std::vector<bool>{false, true, false, false}
                                    : std::vector<bool>{true, false, false};
  int64_t k_axis = batched ? 2 : 1;
  TensorView* c = sum(mul(broadcast(a, a_new), broadcast(b, b_new)), {k_axis});
  fusion->addOutput(c);
  TensorView* acc = c->cacheBefore();                 // the accumulator (Local)
  TensorView* c_sub = shared(c->cacheBefore());       // the epilogue tile
  TensorView* a_sub = shared(a->cacheAfter());
  TensorView* b_sub = shared(b->cacheAfter());
  a_sub->setName("Asub");
  b_sub->setName("Bsub");
  c_sub->setName("Csub");
  int64_t o = batched ? 1 : 0;  // first non-batch axis
  // Output and epilogue tile: [(B,) Mo, No, Mi, Ni].
  for (TensorView* tv : {c, c_sub}) {
    tv->split(o, 32)->split(o + 2, 32);  // [Mo, Mi, No, Ni]
    tv->reorder({{o + 1, o + 2}, {o + 2, o + 1}});
    tv->axis(o)->parallelize(ParallelType::BIDy);
    tv->axis(o + 1)->parallelize(ParallelType::BIDx);
    tv->axis(o + 2)->parallelize(ParallelType::TIDy);
    tv->axis(o + 3)->parallelize(ParallelType::TIDx);
  }
  // Accumulator: [(B,) Mo, No, rKo, Mi, Ni, rKi].
  acc->split(o, 32)->split(o + 2, 32)->split(o + 4, 32);  // [Mo, Mi, rKo, rKi, No, Ni]
  acc->reorder({{o + 4, o + 1}, {o + 2, o + 2}, {o + 1, o + 3}, {o + 5, o + 4}, {o + 3, o + 5}});
  acc->axis(o)->parallelize(ParallelType::BIDy);
  acc->axis(o + 1)->parallelize(ParallelType::BIDx);
  acc->axis(o + 3)->parallelize(ParallelType::TIDy);
  acc->axis(o + 4)->parallelize(ParallelType::TIDx);
  // Operand tiles: one element per thread in each K step.
  a_sub->computeAt(acc, o + 3);
  b_sub->computeAt(acc, o + 3);
  a_sub->axis(-1)->parallelize(ParallelType::TIDx);
  b_sub->axis(-1)->parallelize(ParallelType::TIDy);
  inlineMost(fusion);
  a_sub->circularBuffer(stages);
  b_sub->circularBuffer(stages);
  return {a_sub, b_sub, c_sub, c};
}

SliceKGemm buildSliceKGemm(int64_t slices, int64_t m, int64_t n, int64_t k, int64_t k_tile) {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({slices, m, k});
  TensorView* b = makeConcreteTensor({slices, k, n});
  fusion->addInput(a);
  fusion->addInput(b);
  // [W, M, K, 1] * [W, 1, K, N] summed over K, then over the slices W.
  TensorView* partial =
      sum(mul(broadcast(a, {false, false, false, true}), broadcast(b, {false, true, false, false})),
          {2});
  TensorView* c = sum(partial, {0});
  fusion->addOutput(c);
  TensorView* c_tile = shared(c->cacheBefore());
  TensorView* red_buf = shared(partial);
  TensorView* acc = partial->cacheBefore();  // the per-thread accumulator (Local)
  TensorView* a_tiles = shared(a->cacheAfter());
  TensorView* b_tiles = shared(b->cacheAfter());
  a_tiles->setName("A_tiles");
  b_tiles->setName("B_tiles");
  red_buf->setName("red_buf");
  c_tile->setName("C_tile");
  // Partial products, one per thread: [W, M, N] on (TIDz, TIDy, TIDx).
  red_buf->axis(0)->parallelize(ParallelType::TIDz);
  red_buf->axis(1)->parallelize(ParallelType::TIDy);
  red_buf->axis(2)->parallelize(ParallelType::TIDx);
  // Accumulator [rKo, W, M, N, rKi]: the K loop outermost, shared by all slices.
  acc->split(2, k_tile)->reorder({{2, 0}, {0, 1}, {1, 2}, {4, 3}, {3, 4}});
  acc->axis(1)->parallelize(ParallelType::TIDz);
  acc->axis(2)->parallelize(ParallelType::TIDy);
  acc->axis(3)->parallelize(ParallelType::TIDx);
  // Operand tiles: one element per thread in each K step.
  a_tiles->computeAt(acc, 1);
  b_tiles->computeAt(acc, 1);
  for (TensorView* tile : {a_tiles, b_tiles}) {
    tile->axis(-3)->parallelize(ParallelType::TIDz);
    tile->axis(-2)->parallelize(ParallelType::TIDy);
    tile->axis(-1)->parallelize(ParallelType::TIDx);
  }
  // Cross-warp reduction [rW, M, N] with M on TIDx and N on TIDy: each thread
  // sums what other warps wrote; the output reads it transposed back.
  c_tile->reorder({{0, 2}, {1, 0}, {2, 1}});  // [M, N, rW]
  c_tile->axis(0)->parallelize(ParallelType::TIDx);
  c_tile->axis(1)->parallelize(ParallelType::TIDy);
  c->axis(0)->parallelize(ParallelType::TIDy);
  c->axis(1)->parallelize(ParallelType::TIDx);
  inlineMost(fusion);
  return {a_tiles, b_tiles, red_buf, c_tile, c};
}

PersistentSlice buildPersistentRnnSlice(int64_t m, int64_t n, int64_t parts) {
  Fusion* fusion = Fusion::current();
  TensorView* w = makeConcreteTensor({m, n});
  fusion->addInput(w);
  TensorView* y = add(w, w);
  fusion->addOutput(y);
  TensorView* w_shared = shared(w->cacheAfter());
  TensorView* w_local = w_shared->cacheAfter();
  w_shared->setName("w_s");
  w_local->setName("w_l");
  y->split(0, parts, /*inner_split=*/false);  // [parts, m / parts, n]
  y->axis(0)->parallelize(ParallelType::BIDx);
  y->axis(2)->parallelize(ParallelType::TIDx);
  propagateSchedule(y);
  w_shared->inlineAt(1);
  w_local->inlineAt(1);
  return {w_shared, w_local};
}

void buildPointwiseNonDivisible() {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({10, 100});
  TensorView* b = makeConcreteTensor({10, 100});
  fusion->addInput(a);
  fusion->addInput(b);
  TensorView* c = relu(add(a, b));
  fusion->addOutput(c);
  c->merge(0)->split(0, 128);
  c->axis(0)->parallelize(ParallelType::BIDx);
  c->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(c);
  inlineMost(fusion);
}

void buildRowSumBlockReduce(int64_t rows, int64_t cols) {
  Fusion* fusion = Fusion::current();
  TensorView* x = makeConcreteTensor({rows, cols});
  fusion->addInput(x);
  TensorView* s = sum(x, {1});
  fusion->addOutput(s);
  s->split(1, 128);
  s->axis(0)->parallelize(ParallelType::BIDx);
  s->axis(2)->parallelize(ParallelType::TIDx);
  s->cacheBefore()->inlineAt(1);
}

const std::vector<NamedCase>& allCases() {
  static const std::vector<NamedCase> cases = {
      {"A1", [] { buildSimpleCase(); }},
      {"A2", [] { buildNeedsReorderedPush(); }},
      {"A3", [] { buildNeedsReorderedPush().a->promoteReuse(); }},
      {"A4", [] { buildPromoteReuseMultipleDownstream(); }},
      {"A5", [] { buildMultiplePromoteReuse(); }},
      {"A6", [] { buildSkippedSyncInterval(); }},
      {"A6_promoted", [] { buildSkippedSyncInterval().tv0->promoteReuse(); }},
      {"A7", [] { buildSmemVectorizationChain(); }},
      {"A8", [] { buildRegisterVectorizationChain(2, 4); }},
      {"A9", [] { buildExpandBetweenAliases(true); }},
      {"A9_symbolic", [] { buildExpandBetweenAliases(false); }},
      {"B1", [] { buildTiledGemm(); }},
      {"B2", [] { buildTiledGemm(64, 64, 64, 2); }},
      {"B3", [] { buildSliceKGemm(); }},
      {"C1", [] { buildPersistentRnnSlice(); }},
  };
  return cases;
}

}  // namespace smelt::cases
