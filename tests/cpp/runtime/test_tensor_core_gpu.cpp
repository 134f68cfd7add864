// The tensor-core matmul on a GPU against torch, through the executors:
// every layout and type with odd sizes, the epilogues with and without the
// shared-memory epilogue, and the matmul scheduler's own choice (heuristic
// tiles for the device) through FusionExecutorCache against torch.matmul.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "common/aten_reference.h"
#include "common/tensor_core_fusions.h"
#include "runtime/executor.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/gpu_test_util.h"
#include "runtime/input_validation.h"

namespace smelt {
namespace {

using namespace smelt::testing::tensor_core;

void expectClose(const at::Tensor& got, const at::Tensor& expected, const std::string& context) {
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), expected.to(at::kFloat), 2e-2, 2e-2))
      << context << " max error " << (got.to(at::kFloat) - expected.to(at::kFloat)).abs().max().item<float>();
}

// The case on cuda:0, scheduled for tensor cores with `params` and run by
// FusionExecutor, against ATen's evaluation of the fusion on the same inputs.
void expectMatchesTorch(const Case& c, const TensorCoreMatmulParams& params) {
  TcFusion f = makeFusion(c, c10::Device(c10::kCUDA, 0));
  const at::Tensor expected = smelt::testing::evaluateWithATen(*f.fusion, f.inputs).at(0);
  // A transposed operand is a strided view: declare each input as it is stored.
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    f.fusion->inputs()[i]->asTensor()->setContiguity(contiguityOf(f.inputs[i]));
  }
  scheduleTensorCores(f, params);
  FusionExecutor fe;
  fe.compile(f.fusion.get(), f.inputs);
  expectClose(fe.run(f.inputs).at(0), expected, layoutName(c) + " " + params.toString());
}

TEST(TensorCoreGpu, EveryLayoutAndTypeOddSizes) {
  SKIP_WITHOUT_GPU();
  for (int layout = 0; layout < 4; ++layout) {
    for (DataType t : {DataType::Half, DataType::BFloat16}) {
      Case c;
      c.dtype = t;
      c.a_k_contiguous = layout & 1;
      c.b_k_contiguous = layout & 2;
      c.m = 200;
      c.n = 136;
      c.k = 264;
      expectMatchesTorch(c, smallParams(c));
    }
  }
}

TEST(TensorCoreGpu, EpiloguesAndSharedEpilogue) {
  SKIP_WITHOUT_GPU();
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::Gelu}) {
    for (bool smem : {false, true}) {
      Case c;
      c.epilogue = e;
      c.m = 96;
      c.n = 80;
      c.k = 128;
      TensorCoreMatmulParams p = smallParams(c);
      p.smem_epilogue = smem;
      p.promote_reuse = smem;
      expectMatchesTorch(c, p);
    }
  }
}

// Unscheduled fusions through FusionExecutorCache on CUDA tensors: the
// scheduler picks tensor cores and tiles for the device; the result matches
// torch.matmul on a large and a skinny shape.
TEST(TensorCoreGpu, SchedulerChoiceThroughTheCacheMatchesTorchMatmul) {
  SKIP_WITHOUT_GPU();
  for (int64_t m : {1024, 16}) {
    Case c;
    c.m = m;
    c.n = 2048;
    c.k = 512;
    TcFusion f = makeFusion(c, c10::Device(c10::kCUDA, 0));
    FusionExecutorCache cache(std::move(f.fusion));
    const at::Tensor got = cache.runFusionWithInputs(f.inputs).at(0);
    const std::string params = cache.lastRun().segments.at(0).params;
    EXPECT_NE(params.find("tensor cores: yes"), std::string::npos) << params;
    expectClose(got, at::matmul(f.inputs[0], f.inputs[1]), params);
  }
}

}  // namespace
}  // namespace smelt
