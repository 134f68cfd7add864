// FusionExecutor on CUDA tensors (label gpu): every case fusion and a few
// schedules run on the GPU and match torch's results computed from the same
// CUDA inputs. Skipped where there is no device.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "common/aten_reference.h"
#include "common/smem_case_fusions.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "runtime/executor_test_util.h"
#include "runtime/gpu_test_util.h"

namespace smelt {
namespace {

using testing::buildVectorizedCopy;
using testing::evaluateWithATen;
using testing::expectOutputsMatch;
using testing::randomInputs;

const at::Device kGpu(at::kCUDA, 0);

// Compiles for and runs on the GPU; compares with torch on the same inputs
// (fusions without inputs are evaluated by torch on the CPU).
void expectGpuRunMatchesTorch(Fusion& fusion, const std::vector<at::Tensor>& inputs, const std::string& what) {
  ExecutorOptions options;
  options.device = kGpu;
  FusionExecutor fe;
  fe.compile(&fusion, inputs, options);
  const std::vector<at::Tensor> outputs = fe.run(inputs);
  for (const at::Tensor& out : outputs) EXPECT_TRUE(out.is_cuda()) << what;
  expectOutputsMatch(fusion, outputs, evaluateWithATen(fusion, inputs), what);
}

class GpuExecutorCase : public ::testing::TestWithParam<cases::NamedCase> {};

TEST_P(GpuExecutorCase, MatchesTorch) {
  SKIP_WITHOUT_GPU();
  Fusion fusion;
  FusionGuard guard(&fusion);
  GetParam().build();
  expectGpuRunMatchesTorch(fusion, randomInputs(fusion, 0, /*symbolic_extent=*/4, kGpu), GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(SmemCases, GpuExecutorCase, ::testing::ValuesIn(cases::allCases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuExecutor, PointwiseEveryDtypeAndSymbolicSizes) {
  SKIP_WITHOUT_GPU();
  for (DataType dtype : {DataType::Float, DataType::Double, DataType::Half, DataType::BFloat16}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2, dtype);
    TensorView* b = makeContigTensor(2, dtype);
    fusion.addInput(a);
    fusion.addInput(b);
    TensorView* c = castOp(dtype, tanh(add(mul(a, 0.5), b)));
    fusion.addOutput(c);
    c->merge(0)->split(0, 128);
    c->axis(0)->parallelize(ParallelType::BIDx);
    c->axis(1)->parallelize(ParallelType::TIDx);
    propagateSchedule(c);
    inlineMost(&fusion);
    ExecutorOptions options;
    FusionExecutor fe;
    const auto type = testing::toScalarType(dtype);
    fe.compile(&fusion, {at::randn({3, 5}, kGpu).to(type), at::randn({3, 5}, kGpu).to(type)}, options);
    for (auto shape : {std::vector<int64_t>{37, 300}, std::vector<int64_t>{1000, 129}}) {
      std::vector<at::Tensor> inputs = {at::randn(shape, kGpu).to(type), at::randn(shape, kGpu).to(type)};
      expectOutputsMatch(fusion, fe.run(inputs), evaluateWithATen(fusion, inputs), toString(dtype));
    }
  }
}

TEST(GpuExecutor, VectorizedCopy) {
  SKIP_WITHOUT_GPU();
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildVectorizedCopy(1000);
  at::Tensor a = at::randn({1000, 8}, kGpu);
  FusionExecutor fe;
  fe.compile(&fusion, {a});
  ASSERT_NE(fe.cudaSource().find("smelt::Vector<float, 4>"), std::string::npos);
  EXPECT_TRUE(at::equal(fe.run({a})[0], a));
  at::Tensor rows_of_12 = at::randn({1000, 12}, kGpu).narrow(1, 4, 8);
  EXPECT_TRUE(at::equal(fe.run({rows_of_12})[0], rows_of_12));
}

TEST(GpuExecutor, MergedVectorizedPointwiseAnyShape) {
  SKIP_WITHOUT_GPU();
  for (DataType dtype : {DataType::Float, DataType::Half}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    testing::buildMergedVectorizedAdd(dtype);
    const auto type = testing::toScalarType(dtype);
    FusionExecutor fe;
    fe.compile(&fusion, {at::randn({6, 8}, kGpu).to(type)});
    ASSERT_NE(fe.cudaSource().find("lane by lane across a bound"), std::string::npos);
    for (auto shape : {std::vector<int64_t>{6, 8}, std::vector<int64_t>{3, 5}, std::vector<int64_t>{1000, 129},
                       std::vector<int64_t>{1, 1031}}) {
      std::vector<at::Tensor> inputs = {at::randn(shape, kGpu).to(type)};
      expectOutputsMatch(fusion, fe.run(inputs), evaluateWithATen(fusion, inputs), toString(dtype));
    }
  }
}

TEST(GpuExecutor, InnerReductionWithBlockReduce) {
  SKIP_WITHOUT_GPU();
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildRowSumBlockReduce(33, 1000);
  expectGpuRunMatchesTorch(fusion, randomInputs(fusion, 0, -1, kGpu), "sum over 1000");
}

TEST(GpuExecutor, SharedMemoryAbove48KiB) {
  SKIP_WITHOUT_GPU();
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPersistentRnnSlice(512, 256, 8);  // 64 KiB of dynamic shared memory
  expectGpuRunMatchesTorch(fusion, randomInputs(fusion, 0, -1, kGpu), "C1 512x256");
}

TEST(GpuExecutor, NonContiguousInputAndCacheHitLaunch) {
  SKIP_WITHOUT_GPU();
  KernelCache cache;
  ExecutorOptions options;
  options.cache = &cache;
  auto build = [](Fusion& fusion) {
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2);
    a->setContiguity({false, false});
    fusion.addInput(a);
    TensorView* b = exp(a);
    fusion.addOutput(b);
    b->merge(0)->split(0, 256);
    b->axis(0)->parallelize(ParallelType::BIDx);
    b->axis(1)->parallelize(ParallelType::TIDx);
  };
  at::Tensor a = at::randn({300, 70}, kGpu).t();
  Fusion first;
  build(first);
  FusionExecutor fe1;
  fe1.compile(&first, {a}, options);
  Fusion second;
  build(second);
  FusionExecutor fe2;
  fe2.compile(&second, {a}, options);
  EXPECT_TRUE(fe2.compiledFromCache());
  EXPECT_FALSE(fe2.isLowered());
  EXPECT_TRUE(at::allclose(fe1.run({a})[0], at::exp(a)));
  EXPECT_TRUE(at::allclose(fe2.run({a})[0], at::exp(a)));
  EXPECT_FALSE(fe2.isLowered()) << "a GPU run needs no kernel IR";
}

}  // namespace
}  // namespace smelt
