// Who computes a matmul (scheduler/matmul/matmul_choice.h): the rules, the
// segments a GPU target makes (the matmul core in a library segment, its
// epilogue fused with the neighbours in smelt's kernels), and the library
// segments' values: forced on CPU tensors (ATen's CPU matmul), against ATen.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "runtime/aten_dtype.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/matmul/matmul_choice.h"
#include "scheduler/segmenter.h"

namespace smelt {
namespace {

using testing::evaluateWithATen;
using testing::expectOutputsMatch;

const ExecutionTarget kGpu90(90, /*gpu=*/true, MatmulPolicy::Auto);

MatmulProblem problem(DataType type, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  MatmulProblem p;
  p.operand_type = type;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  return p;
}

TEST(MatmulChoice, LibraryOnGpusGeneratedInTheSimulator) {
  const MatmulChoice simulated = chooseMatmul(problem(DataType::Half, 4096, 4096, 4096), ExecutionTarget(90));
  EXPECT_EQ(simulated.implementation, MatmulImplementation::Generated);
  EXPECT_EQ(simulated.reason, "generated: the CPU simulator runs smelt's own kernels");

  // The nearest measurement decides: 4096^3 fp16 on sm_90 measured 2.21x.
  const MatmulChoice big = chooseMatmul(problem(DataType::Half, 4000, 4096, 4100), kGpu90);
  EXPECT_EQ(big.implementation, MatmulImplementation::Library);
  EXPECT_EQ(big.reason, "library: on sm_90 the generated kernel measured 2.21x the library at the "
                        "nearest measured shape 4096x4096x4096 (half)");
  // bf16 runs the same instructions as fp16; a small M finds the 64-row row.
  const MatmulChoice skinny = chooseMatmul(problem(DataType::BFloat16, 48, 4096, 4096), kGpu90);
  EXPECT_EQ(skinny.implementation, MatmulImplementation::Library);
  EXPECT_NE(skinny.reason.find("4.91x"), std::string::npos) << skinny.reason;
  EXPECT_NE(skinny.reason.find("64x4096x4096"), std::string::npos) << skinny.reason;
  // A batch counts in M (bmm's rows).
  EXPECT_NE(chooseMatmul(problem(DataType::Half, 128, 4096, 4096, 4), kGpu90).reason.find("512x4096x4096"),
            std::string::npos);

  const MatmulChoice unmeasured =
      chooseMatmul(problem(DataType::Float, 17, 192, 768), ExecutionTarget(80, true, MatmulPolicy::Auto));
  EXPECT_EQ(unmeasured.implementation, MatmulImplementation::Library);
  EXPECT_EQ(unmeasured.reason, "library: no measurement of smelt's kernel on sm_80 for float operands; "
                               "cuBLAS is the reference");

  // Forced either way, where the library can run it at all.
  EXPECT_EQ(chooseMatmul(problem(DataType::Half, 64, 64, 64), ExecutionTarget(90, true, MatmulPolicy::Generated))
                .implementation,
            MatmulImplementation::Generated);
  EXPECT_EQ(chooseMatmul(problem(DataType::Float, 64, 64, 64), ExecutionTarget(90, false, MatmulPolicy::Library))
                .implementation,
            MatmulImplementation::Library);
  const MatmulChoice ints = chooseMatmul(problem(DataType::Int, 64, 64, 64),
                                         ExecutionTarget(90, true, MatmulPolicy::Library));
  EXPECT_EQ(ints.implementation, MatmulImplementation::Generated);
  EXPECT_EQ(ints.reason, "generated: no library matmul takes int64 operands");
}

// relu(exp(a) @ b + bias) in fp16, b stored [N, K] (an nn.Linear weight).
std::unique_ptr<Fusion> linearBetweenNeighbours(DataType type) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* a = makeContigTensor(2, type);
  TensorView* b = makeContigTensor(2, type);  // contiguity per signature
  TensorView* bias = makeContigTensor(1, type);
  fusion->addInput(a);
  fusion->addInput(b);
  fusion->addInput(bias);
  TensorView* mm = matmul(castOp(type, exp(a)), b);
  fusion->addOutput(relu(add(mm, broadcast(bias, {true, false}))));
  return fusion;
}

std::vector<at::Tensor> linearInputs(at::ScalarType type, int64_t m, int64_t n, int64_t k) {
  const auto options = at::TensorOptions().dtype(type);
  return {at::randn({m, k}, options) * 0.25, at::randn({n, k}, options).t(), at::randn({n}, options)};
}

TEST(LibraryMatmul, GpuTargetGivesTheCoreToTheLibraryAndFusesTheEpilogue) {
  std::unique_ptr<Fusion> fusion = linearBetweenNeighbours(DataType::Half);
  std::vector<at::Tensor> inputs = linearInputs(at::kHalf, 64, 48, 32);
  for (at::Tensor& t : inputs) t = t.contiguous();  // as the fusion declares them
  const SegmentedFusion gpu = segmentFusion(*fusion, RuntimeInfo(*fusion, inputInfosOf(*fusion, inputs), kGpu90));
  // exp(a) and its cast, the library's mm (casts, broadcasts, product, sum
  // and the cast back to Half), then bias and ReLU in one kernel.
  ASSERT_EQ(gpu.segments.size(), 3u) << gpu.toString();
  EXPECT_EQ(gpu.segments[0].scheduler, SchedulerType::Pointwise);
  EXPECT_EQ(gpu.segments[1].scheduler, SchedulerType::LibraryMatmul);
  EXPECT_EQ(gpu.segments[1].fusion->exprs().size(), 7u) << gpu.segments[1].fusion->mathString();
  EXPECT_EQ(gpu.segments[2].scheduler, SchedulerType::Pointwise);
  EXPECT_EQ(gpu.segments[1].outputs.size(), 1u);
  EXPECT_EQ(gpu.segments[1].outputs[0]->dtype(), DataType::Half);

  // The simulator's target keeps smelt's matmul, epilogue included.
  const SegmentedFusion simulated = segmentFusion(*fusion, RuntimeInfo(*fusion, inputInfosOf(*fusion, inputs)));
  ASSERT_EQ(simulated.segments.size(), 2u) << simulated.toString();
  EXPECT_EQ(simulated.segments[1].scheduler, SchedulerType::Matmul);
}

ExecutorOptions libraryOptions() {
  ExecutorOptions options;
  options.matmul = MatmulPolicy::Library;
  return options;
}

TEST(LibraryMatmul, ForcedOnCpuTensorsMatchesATen) {
  for (DataType type : {DataType::Half, DataType::Float}) {
    FusionExecutorCache cache(linearBetweenNeighbours(type), libraryOptions());
    const std::vector<at::Tensor> inputs = linearInputs(toAtenType(type), 33, 24, 40);
    const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
    Fusion& fusion = const_cast<Fusion&>(cache.fusion());
    expectOutputsMatch(fusion, outputs, evaluateWithATen(fusion, inputs), cache.lastRun().toString());
    const FusionRun& run = cache.lastRun();
    // fp32: the bias add follows the sum, so addmm takes it and the ReLU
    // after it (cuBLASLt's epilogue); fp16: matmul() casts the sum back
    // first, and the add of two halves and the ReLU run in smelt's kernel.
    const bool half = type == DataType::Half;
    ASSERT_EQ(run.segments.size(), half ? 3u : 2u) << run.toString();
    const SegmentRun& library = run.segments[1];
    EXPECT_EQ(library.scheduler, SchedulerType::LibraryMatmul);
    EXPECT_TRUE(library.library);
    const std::string call = half ? "aten::mm half -> half" : "aten::_addmm_activation(relu) float -> float";
    EXPECT_EQ(library.params, "LibraryMatmul{" + call + "; library: asked for (matmul policy)}");
    EXPECT_NE(run.toString().find("1 library_matmul LibraryMatmul{"), std::string::npos) << run.toString();
    EXPECT_SMELT_ERROR(cache.lastExecutor(1), "a library computed its matmul");
    EXPECT_EQ(cache.numCompiledKernels(), half ? 2 : 1);  // exp(a); for fp16 the epilogue too
  }
}

// bmm of Half operands whose Float result is the output (no cast back): the
// library's fp32 result, batched.
TEST(LibraryMatmul, BatchedWithAFloatResult) {
  auto owned = std::make_unique<Fusion>();
  {
    FusionGuard guard(owned.get());
    TensorView* a = makeContigTensor(3, DataType::Half);
    TensorView* b = makeContigTensor(3, DataType::Half);
    owned->addInput(a);
    owned->addInput(b);
    TensorView* a32 = castOp(DataType::Float, a);
    TensorView* b32 = castOp(DataType::Float, b);
    owned->addOutput(sum(mul(broadcast(a32, {false, false, false, true}),
                             broadcast(b32, {false, true, false, false})), {2}));
  }
  FusionExecutorCache cache(std::move(owned), libraryOptions());
  const auto half = at::TensorOptions().dtype(at::kHalf);
  const std::vector<at::Tensor> inputs = {at::randn({3, 17, 24}, half), at::randn({3, 24, 9}, half)};
  const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  ASSERT_EQ(cache.lastRun().segments.size(), 1u) << cache.lastRun().toString();
  EXPECT_EQ(cache.lastRun().segments[0].params,
            "LibraryMatmul{aten::bmm half -> float; library: asked for (matmul policy)}");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].scalar_type(), at::kFloat);
  const at::Tensor want = at::bmm(inputs[0].to(at::kFloat), inputs[1].to(at::kFloat));
  EXPECT_TRUE(at::allclose(outputs[0], want, 1e-4, 1e-4));
}

// What a GPU run would do, decided without one: compileFor on meta inputs for
// a CUDA device gives the matmul to the library and compiles the rest.
TEST(LibraryMatmul, CompileForACudaDeviceChoosesTheLibrary) {
  FusionExecutorCache cache(linearBetweenNeighbours(DataType::BFloat16));
  std::vector<at::Tensor> meta;
  for (const at::Tensor& t : linearInputs(at::kBFloat16, 256, 128, 64)) meta.push_back(t.to(at::kMeta));
  const std::vector<at::Tensor> outputs = cache.compileFor(meta, c10::Device(c10::kCUDA, 0));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].sizes(), at::IntArrayRef({256, 128}));
  EXPECT_EQ(outputs[0].scalar_type(), at::kBFloat16);
  const FusionRun& run = cache.lastRun();
  ASSERT_EQ(run.segments.size(), 3u) << run.toString();
  EXPECT_EQ(run.segments[1].scheduler, SchedulerType::LibraryMatmul);
  EXPECT_NE(run.segments[1].params.find("aten::mm bfloat16 -> bfloat16; library: on sm_"), std::string::npos)
      << run.segments[1].params;
}

}  // namespace
}  // namespace smelt
