// The matmul scheduler on the GPU (label gpu): every layout and dtype, with
// the heuristic schedule and with the case D1 schedule (C_s epilogue,
// promoted operand tiles, dynamic shared memory above 48 KiB), through
// FusionExecutor against torch on the same CUDA inputs. Skipped where there
// is no device.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "common/aten_reference.h"
#include "fusion/ops.h"
#include "runtime/executor.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/gpu_test_util.h"
#include "runtime/input_validation.h"
#include "scheduler/matmul/matmul_scheduler.h"

namespace smelt {
namespace {

const at::Device kGpu(at::kCUDA, 0);

// a [M, K] and b [K, N] stored as `layout` says, on the GPU.
std::vector<at::Tensor> gpuInputs(int64_t m, int64_t n, int64_t k, DataType dtype,
                                  MatmulLayout layout) {
  at::manual_seed(0);
  const at::ScalarType type = testing::toScalarType(dtype);
  auto make = [&](int64_t rows, int64_t cols, bool transposed) {
    at::Tensor t = transposed ? at::randn({cols, rows}).t() : at::randn({rows, cols});
    return t.to(type).to(kGpu);
  };
  return {make(m, k, !aIsKContiguous(layout)), make(k, n, !bIsNContiguous(layout))};
}

void runAndCompare(int64_t m, int64_t n, int64_t k, DataType dtype, MatmulLayout layout,
                   const MatmulParams* override_params) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({m, k}, dtype);
  TensorView* b = makeConcreteTensor({k, n}, dtype);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(matmul(a, b));
  const std::vector<at::Tensor> inputs = gpuInputs(m, n, k, dtype, layout);
  // A transposed operand is a strided view: declare each input as it is stored.
  a->setContiguity(contiguityOf(inputs[0]));
  b->setContiguity(contiguityOf(inputs[1]));
  MatmulParams params = override_params != nullptr
                            ? *override_params
                            : matmulHeuristics(fusion, RuntimeInfo(fusion, inputInfosOf(fusion, inputs)));
  scheduleMatmul(&fusion, params);
  ExecutorOptions options;
  options.device = kGpu;
  FusionExecutor fe;
  fe.compile(&fusion, inputs, options);
  const std::vector<at::Tensor> outputs = fe.run(inputs);
  const at::Tensor expected = at::matmul(inputs[0], inputs[1]);
  testing::expectOutputsMatch(fusion, outputs, {expected},
                              toString(layout) + " " + toString(dtype) + "\n" + params.toString());
}

TEST(MatmulGpu, EveryLayoutAndDtypeMatchesTorch) {
  SKIP_WITHOUT_GPU();
  for (MatmulLayout layout : {MatmulLayout::TT, MatmulLayout::TN, MatmulLayout::NT, MatmulLayout::NN}) {
    for (DataType dtype : {DataType::Float, DataType::Half, DataType::BFloat16}) {
      runAndCompare(257, 193, 301, dtype, layout, nullptr);
    }
  }
}

// Case D1 on the device: 65,536 B of dynamic shared memory with the operand
// tiles promoted (114,688 B without).
TEST(MatmulGpu, CaseD1ScheduleMatchesTorch) {
  SKIP_WITHOUT_GPU();
  MatmulParams params;
  params.block_m = params.block_n = 128;
  params.block_k = 32;
  params.stages = 3;
  params.smem_epilogue = true;
  for (bool promote : {false, true}) {
    params.promote_operand_reuse = promote;
    runAndCompare(512, 384, 1000, DataType::Half, MatmulLayout::TN, &params);
  }
}

}  // namespace
}  // namespace smelt
