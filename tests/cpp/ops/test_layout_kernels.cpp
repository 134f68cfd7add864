// Layout ops (permute, squeeze, unsqueeze, reshape) and the composites
// (linear, gelu) through scheduling, GpuLower, the simulator (against ATen)
// and NVRTC; schedules replay across reshapes in both directions so
// producers are computed inside their consumers' loops.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "common/example_fusions.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "ops/pointwise_kernel_checks.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt {
namespace {

using sim::testing::expectKernelCorrect;
using smelt::testing::expectCompiles;
using smelt::testing::randomInputs;
using smelt::testing::schedulePointwise;

// One input through a chain of layout ops, scheduled pointwise from the
// output: the input is read through every op's map in one kernel.
struct LayoutChain {
  const char* name;
  std::vector<int64_t> shape;
  TensorView* (*build)(TensorView* x);
};

void PrintTo(const LayoutChain& chain, std::ostream* os) { *os << chain.name; }

class LayoutChainKernel : public ::testing::TestWithParam<LayoutChain> {};

TEST_P(LayoutChainKernel, MatchesATenAndCompiles) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor(GetParam().shape);
  fusion.addInput(x);
  TensorView* y = GetParam().build(x);
  fusion.addOutput(y);
  schedulePointwise(fusion, y);
  expectKernelCorrect(fusion, randomInputs(fusion));
  expectCompiles(fusion, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    LayoutKernels, LayoutChainKernel,
    ::testing::Values(
        LayoutChain{"permute3d", {3, 5, 7}, [](TensorView* x) { return exp(permute(x, {2, 0, 1})); }},
        // flatten of a transpose: the view merges axes the permute reordered.
        LayoutChain{"flatten_transpose", {3, 5, 7},
                    [](TensorView* x) { return relu(flatten(transpose(x, 0, 2), 1)); }},  // [7, 15]
        // A reshape that merges and splits permuted axes: [4, 6] -> [6, 4] -> [3, 8].
        LayoutChain{"reshape_of_permute", {4, 6},
                    [](TensorView* x) { return neg(reshape(permute(x, {1, 0}), {3, 8})); }}),
    [](const auto& info) { return std::string(info.param.name); });

// The classic tiled transpose: a 16x16 tile staged in shared memory, written
// with threadIdx.x along the input's rows and read along the output's rows.
// The threads exchange data through the tile, so a barrier must separate the
// write and the read: the race detector checks it is there.
TEST(LayoutKernels, TransposeStagedThroughSharedMemory) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({32, 48});
  fusion.addInput(x);
  TensorView* out = permute(x, {1, 0});  // [48, 32]
  fusion.addOutput(out);
  TensorView* tile = x->cacheAfter();
  tile->setMemoryType(MemoryType::Shared);
  out->split(0, 16)->split(2, 16)->reorder({{1, 2}, {2, 1}});  // [48/16, 32/16, 16, 16]
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::BIDy);
  out->axis(2)->parallelize(ParallelType::TIDy);
  out->axis(3)->parallelize(ParallelType::TIDx);
  tile->computeAt(out, 2);
  // The tile's own loops: threadIdx.x walks the input's contiguous axis.
  tile->axis(2)->parallelize(ParallelType::Serial);
  tile->axis(3)->parallelize(ParallelType::TIDy);
  tile->axis(2)->parallelize(ParallelType::TIDx);
  expectKernelCorrect(fusion, randomInputs(fusion));
  expectCompiles(fusion, "transpose_tile");
}

TEST(LayoutKernels, ReshapeMergeIsComputedInsideItsConsumer) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 4, 9});
  TensorView* bias = makeConcreteTensor({24, 9});
  fusion.addInput(x);
  fusion.addInput(bias);
  TensorView* e = exp(x);
  TensorView* y = reshape(e, {24, 9});
  TensorView* out = add(y, bias);
  fusion.addOutput(out);
  schedulePointwise(fusion, out);
  EXPECT_EQ(e->computePosition(), 2);
  EXPECT_EQ(y->computePosition(), 2);
  expectKernelCorrect(fusion, randomInputs(fusion));
  expectCompiles(fusion, "reshape_merge");
}

TEST(LayoutKernels, ReshapeSplitIsComputedInsideItsConsumer) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({24, 9});
  fusion.addInput(x);
  TensorView* t = tanh(x);
  TensorView* out = mul(reshape(t, {6, 4, 9}), 2.0);
  fusion.addOutput(out);
  schedulePointwise(fusion, out);
  EXPECT_EQ(t->computePosition(), 2);
  expectKernelCorrect(fusion, randomInputs(fusion));
  expectCompiles(fusion, "reshape_split");
}

TEST(LayoutKernels, ReshapeScheduledFromItsInput) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 4, 9});
  fusion.addInput(x);
  TensorView* e = exp(x);
  TensorView* y = reshape(e, {24, 9});
  TensorView* out = neg(y);
  fusion.addOutput(out);
  e->merge(0)->split(0, 8);
  e->axis(0)->parallelize(ParallelType::BIDx);
  e->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(e);
  inlineMost(&fusion);
  EXPECT_EQ(e->computePosition(), 3);
  EXPECT_EQ(y->computePosition(), 3);
  expectKernelCorrect(fusion, randomInputs(fusion));
  expectCompiles(fusion, "reshape_from_input");
}

TEST(LayoutKernels, SymbolicReshapeMergesLeadingDimensions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  fusion.addInput(x);
  TensorView* out = add(reshape(x, {-1, x->axis(2)->extent()}), 1.0);
  fusion.addOutput(out);
  schedulePointwise(fusion, out, 128);
  expectKernelCorrect(fusion, {at::randn({3, 5, 7})});
  expectKernelCorrect(fusion, {at::randn({2, 1, 300})});
  expectCompiles(fusion, "reshape_symbolic");
}

// Issue 17: a producer merging a broadcast with an axis that its consumer
// merges with the axis the broadcast stands for. The producer's merged loop
// drops the broadcast (6 iterations, the consumer's 24): it is not the same
// loop, so the producer is not inlined into it (it was, and read its input
// at the consumer's flat index). Computed in its own loops it is correct;
// bound to threads it would be read across threads, which is refused.
TEST(LayoutKernels, BroadcastMergedWithAnIteratedAxisIsNotInlinedIntoThatLoop) {
  for (const bool threads : {false, true}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor({6, 4});
    TensorView* rows = makeConcreteTensor({6});
    fusion.addInput(x);
    fusion.addInput(rows);
    TensorView* row_values = broadcast(exp(rows), {false, true});
    TensorView* out = mul(x, row_values);
    fusion.addOutput(out);
    out->merge(0)->split(0, 4);
    if (threads) out->axis(1)->parallelize(ParallelType::TIDx);
    propagateSchedule(out);
    inlineMost(&fusion);
    EXPECT_EQ(row_values->computePosition(), 0);
    if (threads) {
      EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "tensor T3 is in Local memory", "bound to TIDx");
    } else {
      expectKernelCorrect(fusion, randomInputs(fusion));
    }
  }
}

// Issue 17, class 5: view, merge, view back with symbolic sizes; the split
// back uses the input's sizes, whose product the merged extent is.
TEST(LayoutKernels, SymbolicMergedExtentSplitsBackIntoItsFactors) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(4);
  fusion.addInput(x);
  using examples::sizeOf;
  TensorView* y = neg(reshape(x, {sizeOf(x, 0), sizeOf(x, 1), -1}));
  TensorView* out = reshape(y, {sizeOf(y, 0), sizeOf(y, 1), sizeOf(x, 2), sizeOf(x, 3)});
  fusion.addOutput(out);
  schedulePointwise(fusion, out, 64);
  expectKernelCorrect(fusion, {at::randn({2, 16, 4, 8})});
  expectKernelCorrect(fusion, {at::randn({3, 5, 2, 7})});
}

TEST(LayoutKernels, SqueezeAndUnsqueeze) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 1, 37});
  TensorView* row = makeConcreteTensor({37, 1});
  fusion.addInput(x);
  fusion.addInput(row);
  TensorView* r = unsqueeze(squeeze(row, {1}), 0);  // [1, 37] broadcast
  TensorView* out = sub(squeeze(x, {1}), r);
  fusion.addOutput(out);
  // Rows on blocks, columns on threads: the broadcast row is not merged.
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(out);
  inlineMost(&fusion);
  expectKernelCorrect(fusion, randomInputs(fusion));
  expectCompiles(fusion, "squeeze_unsqueeze");
}

class LinearKernel : public ::testing::TestWithParam<DataType> {};

// y[b, s, n] = sum_k x[b, s, k] w[n, k] + bias[n]: batch rows on blocks,
// output features on threads, K reduced serially per thread.
TEST_P(LinearKernel, MatchesATen) {
  const DataType dtype = GetParam();
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({2, 3, 16}, dtype);
  TensorView* w = makeConcreteTensor({8, 16}, dtype);
  TensorView* b = makeConcreteTensor({8}, dtype);
  fusion.addInput(x);
  fusion.addInput(w);
  fusion.addInput(b);
  TensorView* y = linear(x, w, b);
  fusion.addOutput(y);
  y->merge(0);
  y->axis(0)->parallelize(ParallelType::BIDx);
  y->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(y);
  inlineMost(&fusion);
  std::vector<at::Tensor> inputs = randomInputs(fusion);
  double tol = dtype == DataType::Float ? 1e-4 : 1e-2;
  expectKernelCorrect(fusion, inputs, tol, tol);
  // The composite is torch's linear.
  at::Tensor want = at::linear(inputs[0].to(at::kFloat), inputs[1].to(at::kFloat),
                               inputs[2].to(at::kFloat));
  at::Tensor got = smelt::testing::evaluateWithATen(fusion, inputs)[0].to(at::kFloat);
  EXPECT_TRUE(at::allclose(got, want, tol, tol));
  expectCompiles(fusion, "linear_" + toString(dtype));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LinearKernel,
                         ::testing::Values(DataType::Float, DataType::Half, DataType::BFloat16),
                         [](const auto& info) { return toString(info.param); });

class GeluKernel : public ::testing::TestWithParam<std::tuple<DataType, bool>> {};

TEST_P(GeluKernel, MatchesTorchGelu) {
  const auto [dtype, tanh_form] = GetParam();
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({6, 37}, dtype);
  fusion.addInput(x);
  TensorView* y = gelu(x, tanh_form);
  fusion.addOutput(y);
  schedulePointwise(fusion, y);
  std::vector<at::Tensor> inputs = randomInputs(fusion);
  double tol = dtype == DataType::Float ? 1e-5 : 1e-2;
  expectKernelCorrect(fusion, inputs, tol, tol);
  at::Tensor want = at::gelu(inputs[0], tanh_form ? "tanh" : "none").to(at::kFloat);
  at::Tensor got = smelt::testing::evaluateWithATen(fusion, inputs)[0].to(at::kFloat);
  EXPECT_TRUE(at::allclose(got, want, tol, tol));
  expectCompiles(fusion, std::string("gelu_") + (tanh_form ? "tanh_" : "erf_") + toString(dtype));
}

INSTANTIATE_TEST_SUITE_P(
    Forms, GeluKernel,
    ::testing::Combine(::testing::Values(DataType::Float, DataType::Half), ::testing::Bool()),
    [](const auto& info) {
      return toString(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_tanh" : "_erf");
    });

}  // namespace
}  // namespace smelt
