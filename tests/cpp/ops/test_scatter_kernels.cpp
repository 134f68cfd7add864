// scatter (ScatterOp): fusions through FusionExecutorCache (segmentation,
// the scatter scheduler, lowering, the CPU simulator) against ATen, every
// combine mode, expanded indices, scalar src, bounds errors worded as
// torch's, race detection, and NVRTC compiling the kernels.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "lower/lower.h"
#include "ops/pointwise_kernel_checks.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/registry.h"

namespace smelt {
namespace {

using smelt::testing::evaluateWithATen;
using smelt::testing::expectCompiles;

at::TensorOptions longs() { return at::TensorOptions().dtype(at::kLong); }

// self [6, 5], index [4, 5] (values in [0, 6)), src [4, 5] of `dtype`:
// out = scatter(self, 0, index, src, combine), `epilogue` applied after.
std::unique_ptr<Fusion> scatterFusion(ScatterCombine combine, DataType dtype = DataType::Float,
                                      TensorView* (*prologue)(TensorView*) = nullptr,
                                      TensorView* (*epilogue)(TensorView*) = nullptr) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* self = makeConcreteTensor({6, 5}, dtype);
  TensorView* index = makeConcreteTensor({4, 5}, DataType::Int);
  TensorView* src = makeConcreteTensor({4, 5}, dtype);
  fusion->addInput(self);
  fusion->addInput(index);
  fusion->addInput(src);
  TensorView* out = scatter(self, 0, index, prologue ? prologue(src) : src, combine);
  fusion->addOutput(epilogue ? epilogue(out) : out);
  return fusion;
}

// Runs `fusion` on CPU tensors and checks values and strides against ATen;
// returns the run's segments.
std::vector<SegmentRun> expectMatchesATen(std::unique_ptr<Fusion> fusion,
                                          const std::vector<at::Tensor>& inputs) {
  const std::unique_ptr<Fusion> reference = fusion->clone();
  const std::vector<at::Tensor> expected = evaluateWithATen(*reference, inputs);
  FusionExecutorCache cache(std::move(fusion));
  const std::vector<at::Tensor> got = cache.runFusionWithInputs(inputs);
  EXPECT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    EXPECT_EQ(got[i].strides(), expected[i].contiguous().strides());
    EXPECT_TRUE(at::allclose(got[i].to(at::kDouble), expected[i].to(at::kDouble), 1e-3, 1e-3))
        << got[i] << "\n" << expected[i];
  }
  return cache.lastRun().segments;
}

// Row indices with duplicates in every column.
at::Tensor duplicateIndex() {
  return at::tensor({0, 2, 5, 2, 1, 3, 3, 0, 5, 5, 1, 3, 2, 4, 4, 0, 3, 1, 2, 1}, longs()).reshape({4, 5});
}

// A permutation per column: no position written twice.
at::Tensor uniqueIndex() {
  return at::stack({at::tensor({0, 5, 3, 1}, longs()), at::tensor({2, 0, 4, 5}, longs()),
                    at::tensor({1, 3, 0, 2}, longs()), at::tensor({4, 1, 5, 0}, longs()),
                    at::tensor({3, 4, 2, 1}, longs())}, 1);
}

TEST(ScatterKernels, EveryCombineMatchesATenInOneScatterKernel) {
  for (ScatterCombine combine : {ScatterCombine::Set, ScatterCombine::Add, ScatterCombine::Mul,
                                 ScatterCombine::Max, ScatterCombine::Min}) {
    SCOPED_TRACE(toString(combine));
    const at::Tensor index = combine == ScatterCombine::Set ? uniqueIndex() : duplicateIndex();
    const std::vector<SegmentRun> segments =
        expectMatchesATen(scatterFusion(combine), {at::randn({6, 5}), index, at::randn({4, 5})});
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_EQ(segments[0].scheduler, SchedulerType::Scatter);
  }
}

TEST(ScatterKernels, IntegerAndHalfAccumulateEveryDuplicate) {
  expectMatchesATen(scatterFusion(ScatterCombine::Add, DataType::Int),
                    {at::randint(-5, 5, {6, 5}, longs()), duplicateIndex(), at::randint(-5, 5, {4, 5}, longs())});
  const auto half = at::TensorOptions().dtype(at::kHalf);
  expectMatchesATen(scatterFusion(ScatterCombine::Max, DataType::Half),
                    {at::randn({6, 5}, half), duplicateIndex(), at::randn({4, 5}, half)});
}

// index_add's form: a 1-D index expanded over the other dimension, negative
// indices counting from the end.
TEST(ScatterKernels, ExpandedIndexWithNegativeIndices) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* self = makeConcreteTensor({6, 5});
    TensorView* rows = makeConcreteTensor({4}, DataType::Int);
    TensorView* src = makeConcreteTensor({4, 5});
    fusion->addInput(self);
    fusion->addInput(rows);
    fusion->addInput(src);
    TensorView* index = expand(broadcast(rows, {false, true}), {IntExpr(4), IntExpr(5)});
    fusion->addOutput(scatter(self, 0, index, src, ScatterCombine::Add, /*wrap_negative=*/true));
  }
  const std::vector<SegmentRun> segments = expectMatchesATen(
      std::move(fusion), {at::randn({6, 5}), at::tensor({1, -1, 1, 0}, longs()), at::randn({4, 5})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Scatter);
}

TEST(ScatterKernels, ScalarSourceAlongTheLastDimension) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* self = makeConcreteTensor({3, 6});
    TensorView* index = makeConcreteTensor({3, 2}, DataType::Int);
    fusion->addInput(self);
    fusion->addInput(index);
    fusion->addOutput(scatter(self, 1, index, fusion->newConstant(2.5, DataType::Double)));
  }
  expectMatchesATen(std::move(fusion), {at::randn({3, 6}), at::tensor({0, 5, 3, 4, 2, 1}, longs()).reshape({3, 2})});
}

// Rows of 40 elements get blocks of 64 threads, not 128 (half idle); the
// index is the embedding gradient's: one row per token, expanded.
TEST(ScatterKernels, NarrowRowsGetBlocksAsWideAsTheRow) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* self = makeConcreteTensor({9, 40});
    TensorView* rows = makeConcreteTensor({6}, DataType::Int);
    TensorView* src = makeConcreteTensor({6, 40});
    fusion->addInput(self);
    fusion->addInput(rows);
    fusion->addInput(src);
    TensorView* index = expand(broadcast(rows, {false, true}), {IntExpr(6), IntExpr(40)});
    fusion->addOutput(scatter(self, 0, index, src, ScatterCombine::Add));
  }
  const std::vector<SegmentRun> segments = expectMatchesATen(
      std::move(fusion), {at::randn({9, 40}), at::tensor({8, 0, 8, 3, 0, 8}, longs()), at::randn({6, 40})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].params, "ScatterParams{block_x=64, split_grid_y=false}");
}

TEST(ScatterKernels, AProducerOfSrcRunsInTheScatterKernel) {
  const std::vector<SegmentRun> segments = expectMatchesATen(
      scatterFusion(ScatterCombine::Add, DataType::Float, [](TensorView* src) { return mul(exp(src), 2.0); }),
      {at::randn({6, 5}), duplicateIndex(), at::randn({4, 5})});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Scatter);
}

TEST(ScatterKernels, AConsumerRunsInALaterKernel) {
  const std::vector<SegmentRun> segments = expectMatchesATen(
      scatterFusion(ScatterCombine::Set, DataType::Float, nullptr, [](TensorView* out) { return sigmoid(out); }),
      {at::randn({6, 5}), uniqueIndex(), at::randn({4, 5})});
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Scatter);
  EXPECT_EQ(segments[1].scheduler, SchedulerType::Pointwise);
}

TEST(ScatterKernels, AComputedSelfIsCompleteBeforeTheScatter) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeConcreteTensor({6, 5});
    TensorView* index = makeConcreteTensor({4, 5}, DataType::Int);
    TensorView* src = makeConcreteTensor({4, 5});
    fusion->addInput(x);
    fusion->addInput(index);
    fusion->addInput(src);
    fusion->addOutput(scatter(add(x, 1.0), 0, index, src, ScatterCombine::Add));
  }
  const std::vector<SegmentRun> segments =
      expectMatchesATen(std::move(fusion), {at::randn({6, 5}), duplicateIndex(), at::randn({4, 5})});
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].scheduler, SchedulerType::Pointwise);
  EXPECT_EQ(segments[1].scheduler, SchedulerType::Scatter);
}

TEST(ScatterKernels, AnIndexOutOfBoundsIsTorchsError) {
  at::Tensor index = uniqueIndex();
  index[2][1] = 7;
  FusionExecutorCache set(scatterFusion(ScatterCombine::Set));
  EXPECT_SMELT_ERROR(set.runFusionWithInputs({at::randn({6, 5}), index, at::randn({4, 5})}),
                     "scatter: index 7 is out of bounds for dimension 0 with size 6");
  index[2][1] = -1;  // no wrapping for torch.scatter
  FusionExecutorCache negative(scatterFusion(ScatterCombine::Add));
  EXPECT_SMELT_ERROR(negative.runFusionWithInputs({at::randn({6, 5}), index, at::randn({4, 5})}),
                     "scatter: index -1 is out of bounds for dimension 0 with size 6");
}

// Atomic combines are no race; a Set writing one element from two threads is.
TEST(ScatterKernels, DuplicateSetWritesAreReportedAsARace) {
  FusionExecutorCache set(scatterFusion(ScatterCombine::Set));
  EXPECT_SMELT_ERROR(set.runFusionWithInputs({at::randn({6, 5}), duplicateIndex(), at::randn({4, 5})}),
                     "two threads store");
}

TEST(ScatterKernels, EveryCombineAndDtypeCompilesWithNvrtc) {
  for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16, DataType::Double,
                         DataType::Int, DataType::Int32, DataType::Int8, DataType::Bool}) {
    for (ScatterCombine combine : {ScatterCombine::Set, ScatterCombine::Add, ScatterCombine::Mul,
                                   ScatterCombine::Max, ScatterCombine::Min}) {
      SCOPED_TRACE(std::string(toString(combine)) + " " + toString(dtype));
      std::unique_ptr<Fusion> fusion = scatterFusion(combine, dtype);
      const std::vector<at::Tensor> inputs = smelt::testing::randomInputs(*fusion);
      RuntimeInfo runtime(*fusion, inputInfosOf(*fusion, inputs));
      ASSERT_EQ(selectScheduler(*fusion, runtime), SchedulerType::Scatter);
      scheduleFusion(*fusion, runtime);
      expectCompiles(*fusion, "scatter_kernel");
    }
  }
}

TEST(ScatterKernels, ErrorsNameTheTensorsAndDimensions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* self = makeConcreteTensor({6, 5});
  TensorView* floats = makeConcreteTensor({4, 5});
  EXPECT_SMELT_ERROR(scatter(self, 0, floats, floats), "scatter: index T1 has dtype float; indices are integers");
  TensorView* flat = makeConcreteTensor({4}, DataType::Int);
  EXPECT_SMELT_ERROR(scatter(self, 0, flat, floats), "scatter: index T2 has rank 1 but T0 has rank 2");
  TensorView* wide = makeConcreteTensor({4, 7}, DataType::Int);
  EXPECT_SMELT_ERROR(scatter(self, 0, wide, floats, ScatterCombine::Add),
                     "scatter_add: dimension 1 of index T3 has extent 7 but dimension 1 of T0 has extent 5");
  TensorView* index = makeConcreteTensor({5, 5}, DataType::Int);
  EXPECT_SMELT_ERROR(scatter(self, 0, index, floats),
                     "scatter: dimension 0 of the index has extent 5 but dimension 0 of src T1 has extent 4");
  EXPECT_SMELT_ERROR(scatter(self, 2, index, floats), "scatter: dimension 2 is out of range for T0 of rank 2");
}

}  // namespace
}  // namespace smelt
