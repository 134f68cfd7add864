#include "runtime/tensor_core_runner.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "codegen/cuda_codegen.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "runtime/aten_dtype.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_arguments.h"

namespace smelt {

struct TensorCoreMatmulRunner::Loaded {
  cuda::Module module;
  CUfunction function;
  explicit Loaded(const std::vector<char>& cubin, int device, const std::string& name)
      : module(cubin, device), function(module.function(name)) {}
};

TensorCoreMatmulRunner::TensorCoreMatmulRunner(Fusion* fusion,
                                               const TensorCoreMatmulOperands& operands,
                                               const TensorCoreMatmulParams& params, int arch)
    : operands_(operands), params_(params) {
  kernel_ = lowerTensorCoreMatmul(fusion, operands, params);
  SMELT_CHECK(kernel_.scalar_inputs.empty(), "TensorCoreMatmulRunner: scalar fusion inputs are "
              "not supported");
  source_ = generateCuda(kernel_, "smelt_tc_matmul");
  NvrtcOptions options;
  options.arch = arch != 0 ? arch : cuda::deviceAvailable() ? cuda::computeCapability() : 90;
  compiled_ = compileCuda(source_, "smelt_tc_matmul", options);
}

TensorCoreMatmulRunner::~TensorCoreMatmulRunner() = default;

at::Tensor TensorCoreMatmulRunner::run(const std::vector<at::Tensor>& inputs) {
  SMELT_CHECK(inputs.size() == kernel_.inputs.size(), "TensorCoreMatmulRunner: the fusion has ",
              kernel_.inputs.size(), " tensor inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    SMELT_CHECK(inputs[i].is_cuda(), "TensorCoreMatmulRunner: input ", i, " (",
                kernel_.inputs[i]->name, ") is not a CUDA tensor");
  }
  const int device = inputs[0].device().index();
  if (loaded_ == nullptr) {
    loaded_ = std::make_unique<Loaded>(compiled_.cubin, device, "smelt_tc_matmul");
  }
  const int64_t m = inputs[0].size(0);
  const int64_t n = inputs[1].size(1);
  at::Tensor out = at::empty({m, n}, inputs[0].options().dtype(toAtenType(operands_.output->dtype())));
  KernelArguments args;
  for (const at::Tensor& t : inputs) args.addTensor(t.data_ptr(), t.sizes().vec(), t.strides().vec());
  args.addTensor(out.data_ptr(), out.sizes().vec(), out.strides().vec());
  cuda::LaunchConfig config;
  config.grid[0] = (n + params_.block_n - 1) / params_.block_n;
  config.grid[1] = (m + params_.block_m - 1) / params_.block_m;
  config.block[0] = params_.threads();
  config.dynamic_smem_bytes = *kernel_.smem_plan->plan.total_bytes.constant();
  config.stream = at::cuda::getCurrentCUDAStream(device).stream();
  cuda::launchKernel(loaded_->function, config, args.pointers());
  return out;
}

}  // namespace smelt
