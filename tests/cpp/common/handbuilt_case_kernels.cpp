#include "common/handbuilt_case_kernels.h"

namespace smelt::cases {

using namespace kir_testing;

namespace {

// The expressions the statements compute: a copy, a product and a sum.
struct Exprs {
  const Expr* copy;
  const Expr* product;
  const ReductionOp* sum;
};

Exprs makeExprs() {
  TensorView* copy = set(makeConcreteTensor({1}));
  TensorView* product = mul(copy, copy);
  return {copy->definition(), product->definition(), reductionOf(sum(product, {0}))};
}

IntExpr i(int n) { return sym("i" + std::to_string(n)); }

}  // namespace

std::unique_ptr<TestKernel> buildMatmulEpilogueKernel(bool promote) {
  constexpr int64_t kThreads = 256, kSteps = 8, kTile = 3 * 128 * 32, kReads = 64;
  constexpr int64_t kReadSpan = kTile / kReads;  // 192 threads' worth of one read row
  auto k = std::make_unique<TestKernel>();
  k->name = "matmul_epilogue";
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeConcreteTensor({kSteps * kTile}, DataType::Half);
  TensorView* b = makeConcreteTensor({kSteps * kTile}, DataType::Half);
  TensorView* c = makeConcreteTensor({kReads * kThreads});
  const Exprs e = makeExprs();

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* B = k->global(b, true);
  kir::Buffer* C = k->global(c, false);
  kir::Buffer* a_s = k->sharedTensor("A_s", DataType::Half, kTile, promote);
  kir::Buffer* b_s = k->sharedTensor("B_s", DataType::Half, kTile, promote);
  kir::Buffer* c_s = k->sharedTensor("C_s", DataType::Float, kReads * kThreads);
  kir::Buffer* acc = k->local("acc", DataType::Float, kReads);
  kir::Buffer* prod = k->local("prod", DataType::Float, 1);
  k->launch(1, 1, kThreads, 1);

  kir::StmtList& body = k->kernel.body;
  for (kir::Buffer* buffer : {a_s, b_s, acc, prod}) allocate(body, buffer);
  kir::StmtList& thread = loop(body, "threadIdx.x", kThreads, ParallelType::TIDx)->body;
  reduceInit(loop(thread, "i5", kReads)->body, e.sum, at(acc, i(5)));
  kir::ForLoop* steps = loop(thread, "i0", kSteps);
  k->marks["war"] = sync(steps->body, "WAR A_s, B_s");
  kir::ForLoop* copies = loop(steps->body, "i1", kTile / kThreads);
  IntExpr element = i(1) * kThreads + tx();
  compute(copies->body, e.copy, at(a_s, element), {read(A, i(0) * kTile + element)});
  compute(copies->body, e.copy, at(b_s, element), {read(B, i(0) * kTile + element)});
  k->marks["raw"] = sync(steps->body, "RAW A_s, B_s");
  kir::ForLoop* products = loop(steps->body, "i2", kReads);
  compute(products->body, e.product, at(prod, 0),
          {read(a_s, i(2) * kReadSpan + tx() % kReadSpan),
           read(b_s, i(2) * kReadSpan + (tx() + kReadSpan / 2) % kReadSpan)});
  reduceStep(products->body, e.sum, at(acc, i(2)), read(prod, 0));
  allocate(thread, c_s);
  compute(loop(thread, "i3", kReads)->body, e.copy, at(c_s, i(3) * kThreads + tx()),
          {read(acc, i(3))});
  k->marks["raw_c"] = sync(thread, "RAW C_s");
  compute(loop(thread, "i4", kReads)->body, e.copy, at(C, i(4) * kThreads + tx()),
          {read(c_s, i(4) * kThreads + (kThreads - 1 - tx()))});
  return k;
}

std::unique_ptr<TestKernel> buildStreamKKernel() {
  constexpr int64_t kThreads = 128, kSteps = 4, kRounds = 8;
  constexpr int64_t kA = 16640, kB = 16384, kRed = 65536, kC = 1024;
  auto k = std::make_unique<TestKernel>();
  k->name = "stream_k";
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeConcreteTensor({kSteps * kA}, DataType::Half);
  TensorView* b = makeConcreteTensor({kSteps * kB}, DataType::Half);
  TensorView* c = makeConcreteTensor({kC}, DataType::Half);
  const Exprs e = makeExprs();

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* B = k->global(b, true);
  kir::Buffer* C = k->global(c, false);
  kir::Buffer* a_tiles = k->sharedTensor("A_tiles", DataType::Half, kA);
  kir::Buffer* b_tiles = k->sharedTensor("B_tiles", DataType::Half, kB);
  kir::Buffer* red_buf = k->sharedTensor("red_buf", DataType::Half, kRed);
  kir::Buffer* c_tile = k->sharedTensor("C_tile", DataType::Half, kC);
  kir::Buffer* acc = k->local("acc", DataType::Float, 2);
  k->launch(1, 1, kThreads, 1);

  kir::StmtList& body = k->kernel.body;
  for (kir::Buffer* buffer : {a_tiles, b_tiles, red_buf, c_tile, acc}) allocate(body, buffer);
  kir::StmtList& thread = loop(body, "threadIdx.x", kThreads, ParallelType::TIDx)->body;
  reduceInit(thread, e.sum, at(acc, 0));
  reduceInit(thread, e.sum, at(acc, 1));
  const IntExpr mirrored = IntExpr(kThreads - 1) - tx();  // another thread's element
  // K loop: each step loads both tiles, then sums what the others loaded.
  kir::ForLoop* steps = loop(thread, "i0", kSteps);
  compute(loop(steps->body, "i1", kA / kThreads)->body, e.copy,
          at(a_tiles, i(1) * kThreads + tx()), {read(A, i(0) * kA + i(1) * kThreads + tx())});
  compute(loop(steps->body, "i2", kB / kThreads)->body, e.copy,
          at(b_tiles, i(2) * kThreads + tx()), {read(B, i(0) * kB + i(2) * kThreads + tx())});
  k->marks["raw_tiles"] = sync(steps->body, "RAW A_tiles, B_tiles");
  reduceStep(loop(steps->body, "i3", kA / kThreads)->body, e.sum, at(acc, 0),
             read(a_tiles, i(3) * kThreads + mirrored));
  reduceStep(loop(steps->body, "i4", kB / kThreads)->body, e.sum, at(acc, 0),
             read(b_tiles, i(4) * kThreads + mirrored));
  k->marks["war_tiles"] = sync(steps->body, "WAR A_tiles, B_tiles");
  // Cross-warp reduction: each round fills one slice of red_buf.
  constexpr int64_t kSlice = kRed / kRounds / kThreads;
  kir::ForLoop* rounds = loop(thread, "i5", kRounds);
  compute(loop(rounds->body, "i6", kSlice)->body, e.copy,
          at(red_buf, (i(5) * kSlice + i(6)) * kThreads + tx()), {read(acc, 0)});
  k->marks["raw_red"] = sync(thread, "RAW red_buf");
  reduceStep(loop(thread, "i7", kRed / kThreads)->body, e.sum, at(acc, 1),
             read(red_buf, i(7) * kThreads + mirrored));
  k->marks["phase"] = sync(thread, "phase");
  // Epilogue.
  compute(loop(thread, "i8", kC / kThreads)->body, e.copy, at(c_tile, i(8) * kThreads + tx()),
          {read(acc, 1)});
  k->marks["raw_c"] = sync(thread, "RAW C_tile");
  compute(loop(thread, "i9", kC / kThreads)->body, e.copy, at(C, i(9) * kThreads + tx()),
          {read(c_tile, i(9) * kThreads + mirrored)});
  return k;
}

}  // namespace smelt::cases
