// Runs the tensor-core matmul kernel (lower/tensor_core_matmul.h) on CUDA
// tensors: lowers and compiles it once for the device's architecture, then
// launches it on torch's current stream. The GPU tests and the tensor-core
// benchmark use it; FusionExecutor does not route matmuls here yet.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "lower/tensor_core_matmul.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt {

class TensorCoreMatmulRunner {
 public:
  // `fusion` must outlive the runner; `arch` 0: the device's.
  TensorCoreMatmulRunner(Fusion* fusion, const TensorCoreMatmulOperands& operands,
                         const TensorCoreMatmulParams& params, int arch = 0);
  ~TensorCoreMatmulRunner();

  // One CUDA tensor per fusion input (no scalar inputs); returns the output
  // [M, N], contiguous. Throws "no CUDA device: ..." without a GPU.
  at::Tensor run(const std::vector<at::Tensor>& inputs);

  const kir::Kernel& kernel() const { return kernel_; }
  const std::string& source() const { return source_; }
  const CompiledKernel& compiled() const { return compiled_; }

 private:
  struct Loaded;
  TensorCoreMatmulOperands operands_;
  TensorCoreMatmulParams params_;
  kir::Kernel kernel_;
  std::string source_;
  CompiledKernel compiled_;
  std::unique_ptr<Loaded> loaded_;
};

}  // namespace smelt
