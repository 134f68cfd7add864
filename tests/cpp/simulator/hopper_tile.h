// A hand-written Hopper tile kernel in kernel IR (not a production builder):
// one warpgroup computes a 64 x 128 tile of A (64 x 256) times B^T (B given
// 128 x 256, K-major), TMA-loading 64-wide k blocks of A and B with 128-byte
// swizzle into a 2-stage ring guarded by full/empty mbarriers (thread 0 the
// producer: it refills a stage once all 128 threads arrived on its empty
// barrier), four wgmma k16 steps per block. The simulator runs it
// (simulator/test_hopper_pipeline.cpp) and an sm_90 GPU does
// (runtime/test_hopper_gpu.cpp).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "simulator/hopper_kernels.h"

namespace smelt::hopper_testing {

constexpr int64_t kM = 64, kN = 128, kK = 256, kBlockK = 64, kStages = 2;
constexpr int64_t kABlock = kM * kBlockK, kBBlock = kN * kBlockK;  // elements per stage
constexpr int64_t kBlocks = kK / kBlockK;

struct PipelineCase {
  bool full_wait = true;
  bool expect_tx = true;
  bool fence = true;
};

inline std::unique_ptr<TestKernel> pipelineKernel(const PipelineCase& c) {
  HopperKernel k = hopperKernel({{{kM, kK}, DataType::Half}, {{kN, kK}, DataType::Half}},
                                {{kM, kN}, DataType::Float}, 128);
  kir::Kernel& kernel = k.t->kernel;
  // bars[0..1]: stage s full (TMA bytes landed); bars[2..3]: stage s empty.
  kir::Buffer* bars = k.t->shared("bars", DataType::Int, 2 * kStages, 0);
  kir::Buffer* a = k.t->shared("A", DataType::Half, kStages * kABlock, 1024);
  kir::Buffer* b = k.t->shared("B", DataType::Half, kStages * kBBlock, 1024 + kStages * kABlock * 2);
  kir::Buffer* acc = k.t->local("acc", DataType::Float, kN / 2);
  const kir::TensorMap* a_map = tensorMap(kernel, k.in[0], kM, kBlockK, kir::TmaSwizzle::Bytes128);
  const kir::TensorMap* b_map = tensorMap(kernel, k.in[1], kN, kBlockK, kir::TmaSwizzle::Bytes128);
  constexpr int64_t kStageBytes = (kABlock + kBBlock) * 2;
  kir::StmtList& body = *k.body;
  for (kir::Buffer* buffer : {bars, a, b, acc}) allocate(body, buffer);

  kir::IfThenElse* init = ifThen(body, all({eq(tx(), 0)}));
  kir::ForLoop* init_stages = loop(init->then_body, "i0", kStages);
  mbarrierInit(init_stages->body, bars, sym("i0"), 1);
  mbarrierInit(init_stages->body, bars, sym("i0") + kStages, 128);
  if (c.fence) fenceProxyAsync(init->then_body);
  sync(body, "mbarrier init");

  // Fills stage `stage` with k block `block` (thread 0 only).
  auto fill = [&](kir::StmtList& list, const IntExpr& stage, const IntExpr& block) {
    if (c.expect_tx) mbarrierArrive(list, bars, stage, kStageBytes);
    tmaLoad(list, at(a, stage * kABlock), a_map, 0, block * kBlockK, at(bars, stage));
    tmaLoad(list, at(b, stage * kBBlock), b_map, 0, block * kBlockK, at(bars, stage));
  };
  kir::IfThenElse* prologue = ifThen(body, all({eq(tx(), 0)}));
  kir::ForLoop* first_fill = loop(prologue->then_body, "i1", kStages);
  fill(first_fill->body, sym("i1"), sym("i1"));

  kir::ForLoop* zero = loop(body, "i2", kN / 2);
  {
    FusionGuard guard(k.t->fusion.get());
    compute(zero->body, k.cast, at(acc, sym("i2")), {scalar(constant(0.0))});
  }
  kir::ForLoop* blocks = loop(body, "i3", kBlocks);
  const IntExpr block = sym("i3");
  const IntExpr stage = block % kStages;
  const IntExpr parity = block / kStages % 2;
  if (c.full_wait) mbarrierWait(blocks->body, bars, stage, parity);
  wgmmaFence(blocks->body, acc);
  kir::ForLoop* steps = loop(blocks->body, "i4", kBlockK / 16);
  wgmma(steps->body, at(acc, 0), at(a, stage * kABlock + sym("i4") * 16),
        at(b, stage * kBBlock + sym("i4") * 16), kN);
  wgmmaCommit(blocks->body);
  wgmmaWait(blocks->body, 0, acc);
  mbarrierArrive(blocks->body, bars, stage + kStages);
  kir::IfThenElse* refill = ifThen(blocks->body, all({eq(tx(), 0), lt(block + kStages, kBlocks)}));
  mbarrierWait(refill->then_body, bars, stage + kStages, parity);
  fill(refill->then_body, stage, block + kStages);

  kir::ForLoop* store = loop(body, "i5", kN / 2);
  const IntExpr i = sym("i5");
  compute(store->body, k.cast, at(k.out, accumulatorRow(tx(), i) * kN + accumulatorCol(tx(), i)),
          {read(acc, i)});
  return std::move(k.t);
}

inline std::vector<at::Tensor> operands() {
  at::manual_seed(7);
  return {at::randint(-4, 5, {kM, kK}, at::kFloat).to(at::kHalf),
          at::randint(-4, 5, {kN, kK}, at::kFloat).to(at::kHalf)};
}

}  // namespace smelt::hopper_testing
