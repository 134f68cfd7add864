// Hand-built kernel IR for the Hopper statement tests: a one-block kernel
// over a fusion out = cast(in) whose statements the tests write out, with
// builders for the mbarrier, TMA and wgmma statements, and the sm_90a NVRTC
// compile every such kernel must pass.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "common/kir_builder.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt::hopper_testing {

using namespace kir_testing;

struct HopperKernel {
  std::unique_ptr<TestKernel> t = std::make_unique<TestKernel>();
  std::vector<kir::Buffer*> in;  // Global inputs
  kir::Buffer* out = nullptr;    // the Global output
  const Expr* cast = nullptr;    // a cast to the output's dtype, for Compute statements
  kir::StmtList* body = nullptr;  // inside the threadIdx.x loop
};

struct TensorSpec {
  std::vector<int64_t> shape;
  DataType dtype;
};

// One block of `threads` threads; the inputs' dtypes are all `inputs[0]`'s.
inline HopperKernel hopperKernel(const std::vector<TensorSpec>& inputs, const TensorSpec& output,
                                 int64_t threads) {
  HopperKernel k;
  FusionGuard guard(k.t->fusion.get());
  for (const TensorSpec& spec : inputs) {
    TensorView* in = makeConcreteTensor(spec.shape, spec.dtype);
    k.t->fusion->addInput(in);
    k.in.push_back(k.t->global(in, true));
  }
  const std::vector<int64_t>& out_shape = output.shape;
  const DataType out_dtype = output.dtype;
  TensorView* out_tv = makeConcreteTensor(out_shape, out_dtype);
  k.cast = castOp(out_dtype, static_cast<TensorView*>(k.t->fusion->inputs()[0]))->definition();
  k.out = k.t->buffer(out_tv, "T" + std::to_string(out_tv->number()), MemoryType::Global,
                      out_dtype, {out_shape.begin(), out_shape.end()});
  k.t->kernel.outputs.push_back(k.out);
  k.t->launch(1, 1, threads, 1);
  k.body = &loop(k.t->kernel.body, "threadIdx.x", threads, ParallelType::TIDx)->body;
  return k;
}

inline void mbarrierInit(kir::StmtList& list, const kir::Buffer* bars, IntExpr index,
                         int64_t arrivals) {
  auto s = std::make_unique<kir::MbarrierInit>();
  s->barrier = at(bars, std::move(index));
  s->arrivals = arrivals;
  append(list, std::move(s));
}

inline kir::MbarrierArrive* mbarrierArrive(kir::StmtList& list, const kir::Buffer* bars,
                                           IntExpr index, int64_t transaction_bytes = 0) {
  auto s = std::make_unique<kir::MbarrierArrive>();
  s->barrier = at(bars, std::move(index));
  s->transaction_bytes = transaction_bytes;
  return append(list, std::move(s));
}

inline kir::MbarrierWait* mbarrierWait(kir::StmtList& list, const kir::Buffer* bars, IntExpr index,
                                       IntExpr parity) {
  auto s = std::make_unique<kir::MbarrierWait>();
  s->barrier = at(bars, std::move(index));
  s->parity = std::move(parity);
  return append(list, std::move(s));
}

inline kir::FenceProxyAsync* fenceProxyAsync(kir::StmtList& list) {
  return append(list, std::make_unique<kir::FenceProxyAsync>());
}

inline const kir::TensorMap* tensorMap(kir::Kernel& kernel, const kir::Buffer* tensor,
                                       int64_t rows, int64_t cols, kir::TmaSwizzle swizzle) {
  auto map = std::make_unique<kir::TensorMap>();
  map->tensor = tensor;
  map->box_rows = rows;
  map->box_cols = cols;
  map->swizzle = swizzle;
  map->name = "tmap" + std::to_string(kernel.tensor_maps.size());
  kernel.tensor_maps.push_back(std::move(map));
  return kernel.tensor_maps.back().get();
}

inline kir::TmaLoad* tmaLoad(kir::StmtList& list, kir::Access dst, const kir::TensorMap* map,
                             IntExpr row, IntExpr col, kir::Access barrier) {
  auto s = std::make_unique<kir::TmaLoad>();
  s->dst = std::move(dst);
  s->map = map;
  s->row = std::move(row);
  s->col = std::move(col);
  s->barrier = std::move(barrier);
  return append(list, std::move(s));
}

inline kir::Wgmma* wgmma(kir::StmtList& list, kir::Access acc, kir::Access a, kir::Access b,
                         int64_t n, bool accumulate = true) {
  auto s = std::make_unique<kir::Wgmma>();
  s->acc = std::move(acc);
  s->a = std::move(a);
  s->b = std::move(b);
  s->n = n;
  s->accumulate = accumulate;
  return append(list, std::move(s));
}

inline void wgmmaFence(kir::StmtList& list, const kir::Buffer* acc) {
  auto s = std::make_unique<kir::WgmmaFence>();
  s->accumulators = {acc};
  append(list, std::move(s));
}

inline void wgmmaCommit(kir::StmtList& list) { append(list, std::make_unique<kir::WgmmaCommit>()); }

inline void wgmmaWait(kir::StmtList& list, int64_t pending, const kir::Buffer* acc) {
  auto s = std::make_unique<kir::WgmmaWait>();
  s->pending = pending;
  s->accumulators = {acc};
  append(list, std::move(s));
}

// The element of the 64 x n tile that accumulator `i` of thread `t` holds,
// as the PTX ISA's m64nNk16 D fragment figure gives it: warp t/32 owns rows
// 16 (t/32) ..; in each 8-column group i/4, lane l holds (l/4, 2 (l%4) + i%2)
// and, for i%4 >= 2, that row + 8.
inline IntExpr accumulatorRow(IntExpr t, IntExpr i) {
  return t / 32 * 16 + t % 32 / 4 + i % 4 / 2 * 8;
}
inline IntExpr accumulatorCol(IntExpr t, IntExpr i) { return i / 4 * 8 + t % 4 * 2 + i % 2; }

// Compiles the kernel's CUDA for sm_90a (throws with NVRTC's log on failure).
inline CompiledKernel compileSm90a(const kir::Kernel& kernel, const std::string& name) {
  NvrtcOptions options;
  options.arch = 90;
  options.arch_specific = true;
  return compileCuda(generateCuda(kernel, name), name, options);
}

}  // namespace smelt::hopper_testing
