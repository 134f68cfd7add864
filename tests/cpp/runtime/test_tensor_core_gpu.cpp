// The tensor-core matmul kernel on a GPU against torch: every layout and
// type, odd sizes, the epilogues, the shared-memory epilogue, and the default
// configuration on a large shape. Skips without a GPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "common/aten_reference.h"
#include "common/tensor_core_fusions.h"
#include "runtime/gpu_test_util.h"
#include "runtime/tensor_core_runner.h"

namespace smelt {
namespace {

using namespace smelt::testing::tensor_core;

// Runs the case on cuda:0 with `params` and compares with ATen's evaluation
// of the fusion on the same (CUDA) inputs.
void expectMatchesTorch(const Case& c, const TensorCoreMatmulParams& params) {
  TcFusion f = makeFusion(c, c10::Device(c10::kCUDA, 0));
  at::Tensor expected = smelt::testing::evaluateWithATen(*f.fusion, f.inputs).at(0);
  TensorCoreMatmulRunner runner(f.fusion.get(), f.operands, params);
  at::Tensor got = runner.run(f.inputs);
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), expected.to(at::kFloat), 2e-2, 2e-2))
      << layoutName(c) << " " << params.toString() << " max error "
      << (got.to(at::kFloat) - expected.to(at::kFloat)).abs().max().item<float>();
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

TEST(TensorCoreGpu, DefaultConfigurationLargeShape) {
  SKIP_WITHOUT_GPU();
  Case c;
  c.m = 1024;
  c.n = 2048;
  c.k = 512;
  expectMatchesTorch(c, tensorCoreHeuristics(c.m, c.n, c.k, c.a_k_contiguous, c.b_k_contiguous));
}

}  // namespace
}  // namespace smelt
