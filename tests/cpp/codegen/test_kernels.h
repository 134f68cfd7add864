// Hand-built kernel IR for the codegen and runtime tests: what lowering will
// produce for a few small schedules, written out statement by statement so
// these tests do not depend on the lowering passes.
#pragma once

#include <memory>
#include <vector>

#include "common/kir_builder.h"

namespace smelt::codegen_testing {

using namespace kir_testing;

// T2 = exp(T0); T3 = T2 * s0; T4 = T3 + T1 with T0/T1/T4 2-D (any strides),
// flattened onto blockIdx.x x threadIdx.x (128); T2 and T3 share one register.
inline std::unique_ptr<TestKernel> pointwiseKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "pointwise";
  FusionGuard guard(t->fusion.get());
  TensorView* tv0 = makeContigTensor(2);
  TensorView* tv1 = makeContigTensor(2);
  Scalar* s0 = symbolicScalar(DataType::Float);
  TensorView* tv2 = exp(tv0);
  TensorView* tv3 = mul(tv2, s0);
  TensorView* tv4 = add(tv3, tv1);
  t->fusion->addInput(tv0);
  t->fusion->addInput(tv1);
  t->fusion->addInput(s0);
  t->fusion->addOutput(tv4);

  kir::Kernel& k = t->kernel;
  kir::Buffer* in0 = t->global(tv0, true);
  kir::Buffer* in1 = t->global(tv1, true);
  kir::Buffer* out = t->global(tv4, false);
  kir::Buffer* local = t->buffer(tv3, "T3", MemoryType::Local, DataType::Float, {1});
  k.scalar_inputs = {s0};
  const IntExpr n = sym("T0.size[0]") * sym("T0.size[1]");
  k.launch.grid[0] = ceilDiv(n, 128);
  k.launch.block[0] = 128;

  kir::ForLoop* bx = loop(k.body, "i0", ceilDiv(n, 128), ParallelType::BIDx);
  kir::ForLoop* tx = loop(bx->body, "i1", 128, ParallelType::TIDx);
  const IntExpr linear = sym("i0") * 128 + sym("i1");
  auto index = [&](const kir::Buffer* b) {
    return (linear / sym("T0.size[1]")) * sym(b->name + ".stride[0]") +
           (linear % sym("T0.size[1]")) * sym(b->name + ".stride[1]");
  };
  allocate(tx->body, local);
  auto* guard_if = append(tx->body, std::make_unique<kir::IfThenElse>());
  guard_if->predicate.terms = {lt(linear, n)};
  compute(guard_if->then_body, tv2->definition(), at(local, 0), {read(in0, index(in0))});
  compute(guard_if->then_body, tv3->definition(), at(local, 0), {read(local, 0), scalar(s0)});
  compute(guard_if->then_body, tv4->definition(), at(out, index(out)),
          {read(local, 0), read(in1, index(in1))});
  return t;
}

// T1 = sum(T0, {1}); T2 = set(T1): one block per row (blockIdx.x), 128
// threads stride over the row into a register partial T3, a BlockReduce
// through the shared workspace T5 into T4, thread 0 writes T2.
inline std::unique_ptr<TestKernel> reductionKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "row_sum";
  FusionGuard guard(t->fusion.get());
  TensorView* tv0 = makeContigTensor(2);
  TensorView* tv1 = sum(tv0, {1});
  TensorView* tv2 = set(tv1);
  t->fusion->addInput(tv0);
  t->fusion->addOutput(tv2);
  const auto* red = static_cast<const ReductionOp*>(tv1->definition());

  kir::Kernel& k = t->kernel;
  kir::Buffer* in = t->global(tv0, true);
  kir::Buffer* out = t->global(tv2, false);
  kir::Buffer* partial = t->buffer(tv1, "T3", MemoryType::Local, DataType::Float, {1});
  kir::Buffer* result = t->buffer(tv1, "T4", MemoryType::Local, DataType::Float, {1});
  kir::Buffer* ws = t->shared("T5", DataType::Float, 128, 0, tv1);
  k.launch.grid[0] = sym("T0.size[0]");
  k.launch.block[0] = 128;

  kir::ForLoop* bx = loop(k.body, "i0", sym("T0.size[0]"), ParallelType::BIDx);
  kir::ForLoop* tx = loop(bx->body, "i1", 128, ParallelType::TIDx);
  allocate(tx->body, partial);
  allocate(tx->body, result);
  auto init = std::make_unique<kir::ReduceInit>();
  init->expr = red;
  init->out = at(partial, 0);
  append(tx->body, std::move(init));
  kir::ForLoop* serial = loop(tx->body, "i2", ceilDiv(sym("T0.size[1]"), 128));
  const IntExpr col = sym("i2") * 128 + sym("i1");
  auto step = std::make_unique<kir::ReduceStep>();
  step->expr = red;
  step->out = at(partial, 0);
  step->in = read(in, sym("i0") * sym("T0.stride[0]") + col * sym("T0.stride[1]"));
  step->predicate.terms = {lt(col, sym("T0.size[1]"))};
  append(serial->body, std::move(step));
  allocate(tx->body, ws);
  auto block = std::make_unique<kir::BlockReduce>();
  block->expr = red;
  block->out = at(result, 0);
  block->in = at(partial, 0);
  block->thread_axes = {ParallelType::TIDx};
  block->workspace = ws;
  append(tx->body, std::move(block));
  compute(tx->body, tv2->definition(), at(out, sym("i0") * sym("T2.stride[0]")), {read(result, 0)},
          kir::Predicate{{eq(sym("i1"), 0)}});
  return t;
}

// Two shared tiles at planned addresses (T1 @0, T2 @512) and a third, T3,
// aliasing T1 once T1 is dead; BlockSyncs between the stages:
//   T1[x] = T0[blk*128 + x]; sync; T2[x] = T1[127 - x] * 2; sync;
//   T3[x] = T2[(x + 1) % 128]; sync; T4[blk*128 + x] = T3[127 - x].
inline std::unique_ptr<TestKernel> sharedTilesKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "shared_tiles";
  FusionGuard guard(t->fusion.get());
  TensorView* tv0 = makeContigTensor(1);
  TensorView* tv1 = set(tv0);
  TensorView* tv2 = mul(tv1, 2.0);
  TensorView* tv3 = set(tv2);
  TensorView* tv4 = set(tv3);
  t->fusion->addInput(tv0);
  t->fusion->addOutput(tv4);

  kir::Kernel& k = t->kernel;
  kir::Buffer* in = t->global(tv0, true);
  kir::Buffer* out = t->global(tv4, false);
  kir::Buffer* s1 = t->shared("T1", DataType::Float, 128, 0, tv1);
  kir::Buffer* s2 = t->shared("T2", DataType::Float, 128, 512, tv2);
  kir::Buffer* s3 = t->shared("T3", DataType::Float, 128, 0, tv3);
  s3->alias_of = s1;
  k.launch.grid[0] = ceilDiv(sym("T0.size[0]"), 128);
  k.launch.block[0] = 128;

  kir::ForLoop* bx = loop(k.body, "i0", ceilDiv(sym("T0.size[0]"), 128), ParallelType::BIDx);
  allocate(bx->body, s1);
  allocate(bx->body, s2);
  allocate(bx->body, s3);
  const IntExpr g = sym("i0") * 128 + sym("i1");
  const kir::Predicate in_range{{lt(g, sym("T0.size[0]"))}};
  kir::ForLoop* x1 = loop(bx->body, "i1", 128, ParallelType::TIDx);
  compute(x1->body, tv1->definition(), at(s1, sym("i1")), {read(in, g * sym("T0.stride[0]"))},
          in_range);
  sync(bx->body, "RAW T1");
  kir::ForLoop* x2 = loop(bx->body, "i1", 128, ParallelType::TIDx);
  compute(x2->body, tv2->definition(), at(s2, sym("i1")),
          {read(s1, IntExpr(127) - sym("i1")), scalar(tv2->definition()->input(1))});
  sync(bx->body, "RAW T2");
  kir::ForLoop* x3 = loop(bx->body, "i1", 128, ParallelType::TIDx);
  compute(x3->body, tv3->definition(), at(s3, sym("i1")), {read(s2, (sym("i1") + 1) % 128)});
  sync(bx->body, "RAW T3");
  kir::ForLoop* x4 = loop(bx->body, "i1", 128, ParallelType::TIDx);
  compute(x4->body, tv4->definition(), at(out, g * sym("T4.stride[0]")),
          {read(s3, IntExpr(127) - sym("i1"))}, in_range);
  return t;
}

// T3 (bfloat16) = cast(tanh(cast(T0 half -> float)) -> bfloat16), plus
// T4 (half) = cast(T3 -> half): loads and stores of both 16-bit types.
inline std::unique_ptr<TestKernel> halfCastKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "half_casts";
  FusionGuard guard(t->fusion.get());
  TensorView* tv0 = makeContigTensor(1, DataType::Half);
  TensorView* f = castOp(DataType::Float, tv0);
  TensorView* th = tanh(f);
  TensorView* tv3 = castOp(DataType::BFloat16, th);
  TensorView* tv4 = castOp(DataType::Half, tv3);
  t->fusion->addInput(tv0);
  t->fusion->addOutput(tv3);
  t->fusion->addOutput(tv4);

  kir::Kernel& k = t->kernel;
  kir::Buffer* in = t->global(tv0, true);
  kir::Buffer* out_bf = t->global(tv3, false);
  kir::Buffer* out_h = t->global(tv4, false);
  kir::Buffer* tmp = t->buffer(th, "T2", MemoryType::Local, DataType::Float, {4});
  const IntExpr n = sym("T0.size[0]");
  k.launch.grid[0] = ceilDiv(n, 512);
  k.launch.block[0] = 128;

  kir::ForLoop* bx = loop(k.body, "i0", ceilDiv(n, 512), ParallelType::BIDx);
  kir::ForLoop* tx = loop(bx->body, "i1", 128, ParallelType::TIDx);
  allocate(tx->body, tmp);
  kir::ForLoop* u = loop(tx->body, "i2", 4, ParallelType::Unroll);
  const IntExpr g = (sym("i0") * 128 + sym("i1")) * 4 + sym("i2");
  const kir::Predicate in_range{{lt(g, n)}};
  compute(u->body, f->definition(), at(tmp, sym("i2")), {read(in, g * sym("T0.stride[0]"))}, in_range);
  compute(u->body, th->definition(), at(tmp, sym("i2")), {read(tmp, sym("i2"))}, in_range);
  compute(u->body, tv3->definition(), at(out_bf, g * sym("T3.stride[0]")), {read(tmp, sym("i2"))}, in_range);
  compute(u->body, tv4->definition(), at(out_h, g * sym("T4.stride[0]")),
          {read(out_bf, g * sym("T3.stride[0]"))}, in_range);
  return t;
}

// T1 = pad(T0, {2, 3}, 0.5) on a 1-D tensor: out[i] = T0[i - 2] inside, 0.5
// outside; the read is guarded by its in_bounds predicate.
inline std::unique_ptr<TestKernel> padKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "pad1d";
  FusionGuard guard(t->fusion.get());
  TensorView* tv0 = makeContigTensor(1);
  TensorView* tv1 = pad(tv0, {2, 3}, 0.5);
  t->fusion->addInput(tv0);
  t->fusion->addOutput(tv1);
  const auto* padop = static_cast<const PadOp*>(tv1->definition());

  kir::Kernel& k = t->kernel;
  kir::Buffer* in = t->global(tv0, true);
  kir::Buffer* out = t->global(tv1, false);
  const IntExpr n = sym("T0.size[0]") + 5;
  k.launch.grid[0] = ceilDiv(n, 64);
  k.launch.block[0] = 64;

  kir::ForLoop* bx = loop(k.body, "i0", ceilDiv(n, 64), ParallelType::BIDx);
  kir::ForLoop* tx = loop(bx->body, "threadIdx.x", 64, ParallelType::TIDx);
  const IntExpr g = sym("i0") * 64 + sym("threadIdx.x");
  const IntExpr src = g - 2;
  kir::Operand operand = read(in, src * sym("T0.stride[0]"));
  operand.in_bounds.terms = {ge(src, 0), lt(src, sym("T0.size[0]"))};
  operand.out_of_bounds_value = padop->padValue();
  compute(tx->body, padop, at(out, g * sym("T1.stride[0]")), {operand},
          kir::Predicate{{lt(g, n)}});
  return t;
}

// One thread computes every element-wise op once into registers (compile
// coverage): neg exp tanh abs relu cast add sub mul div maximum minimum where
// full set, and a max-reduction step, with float, double, int and bool.
inline std::unique_ptr<TestKernel> everyOpKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "every_op";
  FusionGuard guard(t->fusion.get());
  TensorView* a = makeContigTensor(1);
  TensorView* b = makeContigTensor(1, DataType::Double);
  TensorView* c = makeContigTensor(1, DataType::Bool);
  TensorView* n = makeContigTensor(1, DataType::Int);
  t->fusion->addInput(a);
  t->fusion->addInput(b);
  t->fusion->addInput(c);
  t->fusion->addInput(n);
  std::vector<TensorView*> results = {
      neg(a), exp(a), tanh(b), abs(a), abs(n), relu(a), castOp(DataType::Int32, a),
      add(a, b), sub(n, n), mul(a, 3.0), div(b, b), maximum(a, a), minimum(n, n),
      where(c, a, a), full({IntExpr(1)}, -1.5), set(c), max(a, {0}), neg(n)};
  TensorView* out = makeContigTensor(1);
  t->fusion->addOutput(out);

  kir::Kernel& k = t->kernel;
  kir::Buffer* ga = t->global(a, true);
  kir::Buffer* gb = t->global(b, true);
  kir::Buffer* gc = t->global(c, true);
  kir::Buffer* gn = t->global(n, true);
  t->global(out, false);  // declares the output parameter
  auto value = [&](const kir::Buffer* buf) { return read(buf, 0); };
  for (TensorView* r : results) {
    kir::Buffer* reg = t->buffer(r, r->name(), MemoryType::Local, r->dtype(), {1});
    allocate(k.body, reg);
    const Expr* expr = r->definition();
    if (expr->type() == ExprType::Reduction) {
      auto init = std::make_unique<kir::ReduceInit>();
      init->expr = static_cast<const ReductionOp*>(expr);
      init->out = at(reg, 0);
      append(k.body, std::move(init));
      auto step = std::make_unique<kir::ReduceStep>();
      step->expr = static_cast<const ReductionOp*>(expr);
      step->out = at(reg, 0);
      step->in = value(ga);
      append(k.body, std::move(step));
      continue;
    }
    std::vector<kir::Operand> operands;
    for (Val* in : expr->inputs()) {
      if (in == a) operands.push_back(value(ga));
      else if (in == b) operands.push_back(value(gb));
      else if (in == c) operands.push_back(value(gc));
      else if (in == n) operands.push_back(value(gn));
      else operands.push_back(scalar(in));
    }
    if (expr->type() == ExprType::Full) operands.clear();
    compute(k.body, expr, at(reg, 0), std::move(operands));
  }
  return t;
}

// T1 = set(T0); T2 = set(T1) over [N, 64] (T0 and T2 contiguous): one block
// per row, 16 threads, each moving 4 adjacent floats through the register
// array T1 with one 16-byte load (vectorized loop i2) and one 16-byte store
// (vectorized loop i3).
inline std::unique_ptr<TestKernel> vectorizedCopyKernel() {
  auto t = std::make_unique<TestKernel>();
  t->name = "vectorized_copy";
  FusionGuard guard(t->fusion.get());
  TensorView* tv0 = makeContigTensor(2);
  TensorView* tv1 = set(tv0);
  TensorView* tv2 = set(tv1);
  t->fusion->addInput(tv0);
  t->fusion->addOutput(tv2);

  kir::Kernel& k = t->kernel;
  kir::Buffer* in = t->global(tv0, true);
  kir::Buffer* out = t->global(tv2, false);
  kir::Buffer* reg = t->local("T1", DataType::Float, 4, tv1);
  k.launch.grid[0] = sym("T0.size[0]");
  k.launch.block[0] = 16;

  kir::ForLoop* bx = loop(k.body, "i0", sym("T0.size[0]"), ParallelType::BIDx);
  kir::ForLoop* tx = loop(bx->body, "i1", 16, ParallelType::TIDx);
  auto index = [&](const kir::Buffer* b, const std::string& lane) {
    return sym("i0") * sym(b->name + ".stride[0]") + (sym("i1") * 4 + sym(lane)) * sym(b->name + ".stride[1]");
  };
  allocate(tx->body, reg);
  kir::ForLoop* load = loop(tx->body, "i2", 4, ParallelType::Vectorize);
  compute(load->body, tv1->definition(), at(reg, sym("i2")), {read(in, index(in, "i2"))});
  kir::ForLoop* store = loop(tx->body, "i3", 4, ParallelType::Vectorize);
  compute(store->body, tv2->definition(), at(out, index(out, "i3")), {read(reg, sym("i3"))});
  return t;
}

inline std::vector<std::unique_ptr<TestKernel>> allTestKernels() {
  std::vector<std::unique_ptr<TestKernel>> kernels;
  kernels.push_back(pointwiseKernel());
  kernels.push_back(reductionKernel());
  kernels.push_back(sharedTilesKernel());
  kernels.push_back(halfCastKernel());
  kernels.push_back(padKernel());
  kernels.push_back(everyOpKernel());
  kernels.push_back(vectorizedCopyKernel());
  return kernels;
}

}  // namespace smelt::codegen_testing
