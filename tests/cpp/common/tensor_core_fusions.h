// Matmul fusions for the tensor-core tests and benchmark: out =
// epilogue(matmul(a, b)) with Half/BFloat16 operands stored in any of the
// four layouts, their operands for lowerTensorCoreMatmul, and inputs; the
// fusion scheduled for tensor cores with given tiles.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "fusion/ops.h"
#include "lower/tensor_core_matmul.h"
#include "runtime/input_validation.h"
#include "scheduler/matmul/matmul_scheduler.h"

namespace smelt::testing::tensor_core {


enum class Epilogue { None, BiasRelu, Gelu };

struct Case {
  DataType dtype = DataType::Half;
  bool a_k_contiguous = true;
  bool b_k_contiguous = false;
  int64_t m = 40, n = 24, k = 48;  // none a multiple of the 32 x 32 x 32 tile
  Epilogue epilogue = Epilogue::None;
  bool static_sizes = false;  // extents fixed in the fusion, not symbolic
};

// Half and BFloat16 for tensor cores; Float for the cases that must keep CUDA cores.
inline at::ScalarType atenType(DataType t) {
  return t == DataType::Half ? at::kHalf : t == DataType::BFloat16 ? at::kBFloat16 : at::kFloat;
}

// A fusion out = epilogue(matmul(a, b)) and CPU inputs in the case's layouts.
struct TcFusion {
  std::unique_ptr<Fusion> fusion = std::make_unique<Fusion>();
  TensorCoreMatmulOperands operands;
  std::vector<at::Tensor> inputs;
};

inline TcFusion makeFusion(const Case& c, c10::Device device = c10::kCPU) {
  TcFusion f;
  FusionGuard guard(f.fusion.get());
  TensorView* a = c.static_sizes ? makeConcreteTensor({c.m, c.k}, c.dtype) : makeContigTensor(2, c.dtype);
  TensorView* b = c.static_sizes ? makeConcreteTensor({c.k, c.n}, c.dtype) : makeContigTensor(2, c.dtype);
  f.fusion->addInput(a);
  f.fusion->addInput(b);
  TensorView* out = matmul(a, b);
  at::manual_seed(7);
  auto opts = at::TensorOptions().dtype(atenType(c.dtype)).device(device);
  // Storage in the layout, seen as [M, K] and [K, N] through strides.
  at::Tensor ta = c.a_k_contiguous ? at::randn({c.m, c.k}, opts) : at::randn({c.k, c.m}, opts).t();
  at::Tensor tb = c.b_k_contiguous ? at::randn({c.n, c.k}, opts).t() : at::randn({c.k, c.n}, opts);
  f.inputs = {ta, tb};
  // Declared as the runtime declares them (a transposed view is no
  // contiguous tensor): index math takes a contiguous stride as a constant.
  a->setContiguity(contiguityOf(ta));
  b->setContiguity(contiguityOf(tb));
  if (c.epilogue == Epilogue::BiasRelu) {
    TensorView* bias = c.static_sizes ? makeConcreteTensor({c.n}, c.dtype) : makeContigTensor(1, c.dtype);
    f.fusion->addInput(bias);
    out = relu(add(out, broadcast(bias, {true, false})));
    f.inputs.push_back(at::randn({c.n}, opts));
  } else if (c.epilogue == Epilogue::Gelu) {
    // 0.5 x (1 + erf(x / sqrt(2))), computed in float, stored in the operand type.
    TensorView* x = castOp(DataType::Float, out);
    TensorView* erf_term = erf(mul(x, 0.7071067811865476));
    out = castOp(c.dtype, mul(mul(x, 0.5), add(erf_term, 1.0)));
  }
  f.fusion->addOutput(out);
  MatmulPattern pattern = findMatmul(*f.fusion);
  f.operands = {pattern.a, pattern.b, pattern.sum, pattern.output};
  return f;
}

// Schedules the case's fusion for tensor cores with `params`: the matmul
// scheduler puts an MmaOp tiled so in place of the matmul.
inline void scheduleTensorCores(TcFusion& f, const TensorCoreMatmulParams& params) {
  MatmulParams p;
  p.use_tensor_cores = true;
  p.tensor_core = params;
  scheduleMatmul(f.fusion.get(), p);
}

inline TensorCoreMatmulParams smallParams(const Case& c) {
  TensorCoreMatmulParams p;  // 32 x 32 x 32 block, 4 warps of 16 x 16, 2 stages
  p.a_k_contiguous = c.a_k_contiguous;
  p.b_k_contiguous = c.b_k_contiguous;
  return p;
}

inline std::string layoutName(const Case& c) {
  return std::string(c.a_k_contiguous ? "T" : "N") + (c.b_k_contiguous ? "N" : "T");
}

}  // namespace smelt::testing::tensor_core
