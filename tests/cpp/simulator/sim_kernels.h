// The hand-built kernels the simulator tests run: each is what lowering would
// produce for a small schedule, with switches that break it the way a buggy
// pass or plan would (a barrier left out, a predicate dropped).
#pragma once

#include <memory>

#include "common/kir_builder.h"

namespace smelt::sim::testing {

using namespace kir_testing;

// out = tanh((T0 + T1) * s0) over [M, N], 8x4-thread blocks on a 2-D grid.
// The first two statements sit under an IfThenElse bound check, the store has
// its own predicate; `predicated = false` drops both (out-of-bounds when M, N
// are not multiples of the block).
inline std::unique_ptr<TestKernel> pointwiseKernel(bool predicated = true) {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(2);
  Scalar* s = symbolicScalar();
  TensorView* sum = add(a, b);
  TensorView* scaled = mul(sum, s);
  TensorView* out = tanh(scaled);
  k->fusion->addInput(a);
  k->fusion->addInput(b);
  k->fusion->addInput(s);
  k->fusion->addOutput(out);

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* B = k->global(b, true);
  kir::Buffer* O = k->global(out, false);
  kir::Buffer* L2 = k->local(sum->name(), DataType::Float, 1);
  kir::Buffer* L3 = k->local(scaled->name(), DataType::Float, 1);
  k->kernel.scalar_inputs.push_back(s);
  k->launch(ceilDiv(size(A, 1), 8), ceilDiv(size(A, 0), 4), 8, 4);

  kir::ForLoop* gy = loop(k->kernel.body, "blockIdx.y", ceilDiv(size(A, 0), 4), ParallelType::BIDy);
  kir::ForLoop* gx = loop(gy->body, "blockIdx.x", ceilDiv(size(A, 1), 8), ParallelType::BIDx);
  kir::StmtList& body = threadLoops2d(gx->body, 8, 4);
  allocate(body, L2);
  allocate(body, L3);
  IntExpr row = by() * 4 + ty();
  IntExpr col = bx() * 8 + tx();
  kir::Predicate inside = all({lt(row, size(A, 0)), lt(col, size(A, 1))});
  kir::StmtList& guarded = predicated ? ifThen(body, inside)->then_body : body;
  k->marks["load"] = compute(guarded, sum->definition(), at(L2, 0),
          {read(A, row * stride(A, 0) + col * stride(A, 1)),
           read(B, row * stride(B, 0) + col * stride(B, 1))});
  compute(guarded, scaled->definition(), at(L3, 0), {read(L2, 0), scalar(s)});
  k->marks["store"] = compute(body, out->definition(),
                              at(O, row * stride(O, 0) + col * stride(O, 1)), {read(L3, 0)},
                              predicated ? inside : kir::Predicate{});
  return k;
}

// out[M] = sum (or max) over N of T0[M, N]: 32x4 threads, each row reduced
// by one TIDy row of threads: a serial ReduceStep loop, then a BlockReduce
// over TIDx through a shared workspace, then thread x == 0 stores.
inline std::unique_ptr<TestKernel> rowReductionKernel(ReductionOpType op) {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* r = op == ReductionOpType::Sum ? sum(a, {1}) : max(a, {1});
  TensorView* out = set(r);
  k->fusion->addInput(a);
  k->fusion->addOutput(out);

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* O = k->global(out, false);
  kir::Buffer* acc = k->local("T1_acc", DataType::Float, 1);
  kir::Buffer* res = k->local(r->name(), DataType::Float, 1);
  kir::Buffer* ws = k->shared("T1_ws", DataType::Float, 32 * 4, 0);
  k->launch(ceilDiv(size(A, 0), 4), 1, 32, 4);

  kir::ForLoop* gx = loop(k->kernel.body, "blockIdx.x", ceilDiv(size(A, 0), 4), ParallelType::BIDx);
  kir::StmtList& body = threadLoops2d(gx->body, 32, 4);
  allocate(body, acc);
  allocate(body, res);
  allocate(body, ws);
  const ReductionOp* red = reductionOf(r);
  IntExpr row = bx() * 4 + ty();
  reduceInit(body, red, at(acc, 0));
  kir::ForLoop* i0 = loop(body, "i0", ceilDiv(size(A, 1), 32));
  IntExpr col = sym("i0") * 32 + tx();
  reduceStep(i0->body, red, at(acc, 0), read(A, row * stride(A, 0) + col * stride(A, 1)),
             all({lt(row, size(A, 0)), lt(col, size(A, 1))}));
  k->marks["block_reduce"] = blockReduce(body, red, at(res, 0), at(acc, 0), {ParallelType::TIDx},
                                         ws, all({lt(row, size(A, 0))}));
  compute(body, out->definition(), at(O, row * stride(O, 0)), {read(res, 0)},
          all({eq(tx(), 0), lt(row, size(A, 0))}));
  return k;
}

// out[M, N] = T0[M, 0]: thread x == 0 of each TIDy row loads the value and a
// BlockBroadcast over TIDx hands it to the row (N <= 32).
inline std::unique_ptr<TestKernel> broadcastKernel() {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* v = set(a);
  TensorView* out = set(v);
  k->fusion->addInput(a);
  k->fusion->addOutput(out);

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* O = k->global(out, false);
  kir::Buffer* held = k->local(v->name(), DataType::Float, 1);
  kir::Buffer* got = k->local("T1_bcast", DataType::Float, 1);
  kir::Buffer* ws = k->shared("T1_ws", DataType::Float, 32 * 4, 64);
  k->launch(ceilDiv(size(A, 0), 4), 1, 32, 4);

  kir::ForLoop* gx = loop(k->kernel.body, "blockIdx.x", ceilDiv(size(A, 0), 4), ParallelType::BIDx);
  kir::StmtList& body = threadLoops2d(gx->body, 32, 4);
  IntExpr row = bx() * 4 + ty();
  compute(body, v->definition(), at(held, 0), {read(A, row * stride(A, 0))},
          all({eq(tx(), 0), lt(row, size(A, 0))}));
  blockBroadcast(body, v->definition(), at(got, 0), at(held, 0), {ParallelType::TIDx}, ws);
  compute(body, out->definition(), at(O, row * stride(O, 0) + tx() * stride(O, 1)),
          {read(got, 0)}, all({lt(row, size(A, 0)), lt(tx(), size(A, 1))}));
  return k;
}

// out[N, M] = T0[M, N]^T through an 8x8 shared tile: each thread writes
// tile[ty][tx], then reads tile[tx][ty]. Without the barrier between the
// two, a thread reads a slot another thread has not necessarily written (RAW).
inline std::unique_ptr<TestKernel> transposeKernel(bool with_sync) {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* tile = set(a);
  TensorView* out = set(tile);
  k->fusion->addInput(a);
  k->fusion->addOutput(out);

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* O = k->global(out, false);
  O->shape = {size(A, 1), size(A, 0)};
  kir::Buffer* T = k->shared(tile->name(), DataType::Float, 64, 0);
  k->launch(ceilDiv(size(A, 1), 8), ceilDiv(size(A, 0), 8), 8, 8);

  kir::ForLoop* gy = loop(k->kernel.body, "blockIdx.y", ceilDiv(size(A, 0), 8), ParallelType::BIDy);
  kir::ForLoop* gx = loop(gy->body, "blockIdx.x", ceilDiv(size(A, 1), 8), ParallelType::BIDx);
  kir::StmtList& body = threadLoops2d(gx->body, 8, 8);
  allocate(body, T);
  k->marks["write"] = compute(
      body, tile->definition(), at(T, ty() * 8 + tx()),
      {read(A, (by() * 8 + ty()) * stride(A, 0) + (bx() * 8 + tx()) * stride(A, 1))},
      all({lt(by() * 8 + ty(), size(A, 0)), lt(bx() * 8 + tx(), size(A, 1))}));
  if (with_sync) k->marks["sync"] = sync(body, "RAW " + tile->name());
  k->marks["read"] = compute(
      body, out->definition(),
      at(O, (bx() * 8 + ty()) * stride(O, 0) + (by() * 8 + tx()) * stride(O, 1)),
      {read(T, tx() * 8 + ty())},
      all({lt(bx() * 8 + ty(), size(A, 1)), lt(by() * 8 + tx(), size(A, 0))}));
  return k;
}

// One block of 64 threads, two shared buffers whose bytes overlap: A (64
// floats at 0) and B (64 floats at 128, so B[0..31] reuses A[32..63]).
//   A[tx] = T0[tx]; sync; out1[tx] = A[63 - tx];  [sync]  B[tx] = 2 * T1[tx];
//   sync; out2[tx] = B[63 - tx]
// Without the middle barrier a thread may overwrite A's bytes (as B) while
// another still has to read them: WAR, and wrong numbers.
inline std::unique_ptr<TestKernel> overlapKernel(bool with_barrier) {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* in0 = makeContigTensor(1);
  TensorView* in1 = makeContigTensor(1);
  TensorView* a = set(in0);
  TensorView* out1 = set(a);
  TensorView* b = mul(in1, 2.0);
  TensorView* out2 = set(b);
  k->fusion->addInput(in0);
  k->fusion->addInput(in1);
  k->fusion->addOutput(out1);
  k->fusion->addOutput(out2);

  kir::Buffer* I0 = k->global(in0, true);
  kir::Buffer* I1 = k->global(in1, true);
  kir::Buffer* O1 = k->global(out1, false);
  kir::Buffer* O2 = k->global(out2, false);
  kir::Buffer* A = k->shared("A", DataType::Float, 64, 0);
  kir::Buffer* B = k->shared("B", DataType::Float, 64, 128);
  k->launch(1, 1, 64, 1);

  kir::StmtList& body = loop(k->kernel.body, "threadIdx.x", 64, ParallelType::TIDx)->body;
  compute(body, a->definition(), at(A, tx()), {read(I0, tx())});
  sync(body, "RAW A");
  k->marks["last_read_a"] = compute(body, out1->definition(), at(O1, tx()), {read(A, 63 - tx())});
  if (with_barrier) k->marks["reuse_sync"] = sync(body, "promoteReuse A -> B");
  k->marks["first_write_b"] =
      compute(body, b->definition(), at(B, tx()),
              {read(I1, tx()), scalar(b->definition()->input(1))});
  sync(body, "RAW B");
  compute(body, out2->definition(), at(O2, tx()), {read(B, 63 - tx())});
  return k;
}

// C[M, N] = A[M, K] @ B[K, N] (all multiples of 16): 16x16 threads per
// 16x16 output tile; per 16-wide K slice, the block stages A and B tiles in
// shared memory, syncs, accumulates 16 products per thread, syncs again.
// `sync_before_use` / `sync_before_overwrite` drop the RAW / WAR barrier.
inline std::unique_ptr<TestKernel> matmulKernel(bool sync_before_use = true,
                                                bool sync_before_overwrite = true) {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(2);
  TensorView* a_tile = set(a);
  TensorView* b_tile = set(b);
  TensorView* c = matmul(a_tile, b_tile);
  TensorView* out = set(c);
  k->fusion->addInput(a);
  k->fusion->addInput(b);
  k->fusion->addOutput(out);
  const Expr* product = exprOf(*k->fusion, ExprType::Binary);
  const ReductionOp* red = reductionOf(c);

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* B = k->global(b, true);
  kir::Buffer* C = k->global(out, false);
  C->shape = {size(A, 0), size(B, 1)};
  kir::Buffer* As = k->shared("As", DataType::Float, 256, 0);
  kir::Buffer* Bs = k->shared("Bs", DataType::Float, 256, 1024);
  kir::Buffer* acc = k->local("acc", DataType::Float, 1);
  kir::Buffer* prod = k->local("prod", DataType::Float, 1);
  k->launch(ceilDiv(size(B, 1), 16), ceilDiv(size(A, 0), 16), 16, 16);

  kir::ForLoop* gy = loop(k->kernel.body, "blockIdx.y", ceilDiv(size(A, 0), 16), ParallelType::BIDy);
  kir::ForLoop* gx = loop(gy->body, "blockIdx.x", ceilDiv(size(B, 1), 16), ParallelType::BIDx);
  kir::StmtList& body = threadLoops2d(gx->body, 16, 16);
  allocate(body, As);
  allocate(body, Bs);
  allocate(body, acc);
  allocate(body, prod);
  reduceInit(body, red, at(acc, 0));
  kir::ForLoop* ko = loop(body, "i0", ceilDiv(size(A, 1), 16));
  IntExpr k0 = sym("i0") * 16;
  k->marks["stage_a"] = compute(ko->body, a_tile->definition(), at(As, ty() * 16 + tx()),
                                {read(A, (by() * 16 + ty()) * stride(A, 0) + (k0 + tx()) * stride(A, 1))});
  k->marks["stage_b"] = compute(ko->body, b_tile->definition(), at(Bs, ty() * 16 + tx()),
                                {read(B, (k0 + ty()) * stride(B, 0) + (bx() * 16 + tx()) * stride(B, 1))});
  if (sync_before_use) sync(ko->body, "RAW As Bs");
  kir::ForLoop* ki = loop(ko->body, "i1", 16);
  k->marks["multiply"] = compute(ki->body, product, at(prod, 0),
                                 {read(As, ty() * 16 + sym("i1")), read(Bs, sym("i1") * 16 + tx())});
  reduceStep(ki->body, red, at(acc, 0), read(prod, 0));
  if (sync_before_overwrite) sync(ko->body, "WAR As Bs");
  compute(body, out->definition(), at(C, (by() * 16 + ty()) * stride(C, 0) + (bx() * 16 + tx()) * stride(C, 1)),
          {read(acc, 0)});
  return k;
}

// out[M, N + 3] = pad(T0[M, N], last dim 1 before, 2 after, value 0.5): the
// read of T0 carries the in-bounds predicate and the pad value.
inline std::unique_ptr<TestKernel> padKernel() {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(2);
  TensorView* out = pad(a, {1, 2}, 0.5);
  k->fusion->addInput(a);
  k->fusion->addOutput(out);
  const auto* pad_op = static_cast<const PadOp*>(out->definition());

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* O = k->global(out, false);
  O->shape = {size(A, 0), size(A, 1) + 3};
  k->launch(ceilDiv(size(A, 1) + 3, 8), ceilDiv(size(A, 0), 4), 8, 4);
  kir::ForLoop* gy = loop(k->kernel.body, "blockIdx.y", ceilDiv(size(A, 0), 4), ParallelType::BIDy);
  kir::ForLoop* gx = loop(gy->body, "blockIdx.x", ceilDiv(size(A, 1) + 3, 8), ParallelType::BIDx);
  kir::StmtList& body = threadLoops2d(gx->body, 8, 4);
  IntExpr row = by() * 4 + ty();
  IntExpr col = bx() * 8 + tx();
  kir::Operand in = read(A, row * stride(A, 0) + (col - 1) * stride(A, 1));
  in.in_bounds = all({ge(col, 1), lt(col, size(A, 1) + 1)});
  in.out_of_bounds_value = pad_op->padValue();
  compute(body, pad_op, at(O, row * stride(O, 0) + col * stride(O, 1)), {in},
          all({lt(row, size(A, 0)), lt(col, size(A, 1) + 3)}));
  return k;
}

// From a half T0[n]: out_bf16 = bfloat16(float(T0) * 3) and out_half = T0
// (a copy through a float register), 64 threads per block.
inline std::unique_ptr<TestKernel> halfKernel() {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* a = makeContigTensor(1, DataType::Half);
  TensorView* f = castOp(DataType::Float, a);
  TensorView* m = mul(f, 3.0);
  TensorView* out_bf16 = castOp(DataType::BFloat16, m);
  TensorView* out_half = castOp(DataType::Half, f);
  k->fusion->addInput(a);
  k->fusion->addOutput(out_bf16);
  k->fusion->addOutput(out_half);

  kir::Buffer* A = k->global(a, true);
  kir::Buffer* OB = k->global(out_bf16, false);
  kir::Buffer* OH = k->global(out_half, false);
  kir::Buffer* F = k->local(f->name(), DataType::Float, 1);
  kir::Buffer* M = k->local(m->name(), DataType::Float, 1);
  k->launch(ceilDiv(size(A, 0), 64), 1, 64, 1);
  kir::ForLoop* gx = loop(k->kernel.body, "blockIdx.x", ceilDiv(size(A, 0), 64), ParallelType::BIDx);
  kir::StmtList& body = loop(gx->body, "threadIdx.x", 64, ParallelType::TIDx)->body;
  IntExpr i = bx() * 64 + tx();
  kir::StmtList& inside = ifThen(body, all({lt(i, size(A, 0))}))->then_body;
  compute(inside, f->definition(), at(F, 0), {read(A, i * stride(A, 0))});
  compute(inside, m->definition(), at(M, 0), {read(F, 0), scalar(m->definition()->input(1))});
  compute(inside, out_bf16->definition(), at(OB, i * stride(OB, 0)), {read(M, 0)});
  compute(inside, out_half->definition(), at(OH, i * stride(OH, 0)), {read(F, 0)});
  return k;
}

// One block of 64 threads staging T0 through a shared buffer S of 64 floats:
//   S[w] = T0[tx] if tx < writers; sync (or, when `diverge`, a barrier only
//   threads tx < 16 reach); out[tx] = S[r]
// with w, r the write/read slots: (tx, tx) is a clean copy when writers = 64;
// (0, 0) makes every thread write slot 0, an order-dependent WAW race.
struct StagingKernelOptions {
  bool all_write_slot_zero = false;
  int64_t writers = 64;
  bool diverge = false;
};
inline std::unique_ptr<TestKernel> stagingKernel(StagingKernelOptions opt) {
  auto k = std::make_unique<TestKernel>();
  FusionGuard guard(k->fusion.get());
  TensorView* in = makeContigTensor(1);
  TensorView* staged = set(in);
  TensorView* out = set(staged);
  k->fusion->addInput(in);
  k->fusion->addOutput(out);

  kir::Buffer* I = k->global(in, true);
  kir::Buffer* O = k->global(out, false);
  kir::Buffer* S = k->shared("S", DataType::Float, 64, 0);
  k->launch(1, 1, 64, 1);
  kir::StmtList& body = loop(k->kernel.body, "threadIdx.x", 64, ParallelType::TIDx)->body;
  IntExpr slot = opt.all_write_slot_zero ? IntExpr(0) : tx();
  k->marks["write"] = compute(body, staged->definition(), at(S, slot), {read(I, tx())},
                              all({lt(tx(), opt.writers)}));
  kir::StmtList& barrier_scope = opt.diverge ? ifThen(body, all({lt(tx(), 16)}))->then_body : body;
  k->marks["sync"] = sync(barrier_scope, "RAW S");
  k->marks["read"] = compute(body, out->definition(), at(O, tx()), {read(S, slot)});
  return k;
}

}  // namespace smelt::sim::testing
