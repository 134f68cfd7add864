// The hand-written Hopper tile kernel (tests/cpp/simulator/hopper_tile.h:
// TMA loads through a 2-stage mbarrier ring, wgmma) launched on an sm_90 GPU
// with the tensor maps the driver encodes (cuTensorMapEncodeTiled), against
// ATen's matmul. It skips without an sm_90 device; the simulator tests check
// the same kernel everywhere (test_hopper_pipeline.cpp).
#include <gtest/gtest.h>

#include <ATen/cuda/CUDAContext.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>

#include "codegen/cuda_codegen.h"
#include "fusion/symbols.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_arguments.h"
#include "runtime/kernel_cache.h"
#include "simulator/hopper_tile.h"

namespace smelt {
namespace {

using namespace hopper_testing;

TEST(HopperGpu, TileKernelWithEncodedTensorMapsEqualsATen) {
  if (!cuda::deviceAvailable()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailableReason();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "torch sees no CUDA device";
  const int arch = cuda::computeCapability(0);
  if (arch != 90) GTEST_SKIP() << "wgmma and TMA need sm_90a; this device is sm_" << arch;

  std::unique_ptr<TestKernel> t = pipelineKernel({});
  const kir::Kernel& k = t->kernel;
  const std::vector<at::Tensor> host = operands();
  const at::Tensor a = host[0].cuda(), b = host[1].cuda();
  const at::Tensor c = at::full({kM, kN}, -1.0f, a.options().dtype(at::kFloat));
  ASSERT_EQ(k.inputs.size(), 2u);
  ASSERT_EQ(k.outputs.size(), 1u);

  // Tensors in generateCuda's parameter order (inputs, outputs), then the
  // tensor maps after the (absent) scalars.
  KernelArguments args;
  std::map<std::string, int64_t> bindings;
  const std::vector<std::pair<const kir::Buffer*, at::Tensor>> tensors = {
      {k.inputs[0], a}, {k.inputs[1], b}, {k.outputs[0], c}};
  for (const auto& [buffer, tensor] : tensors) {
    for (int64_t d = 0; d < tensor.dim(); ++d) {
      bindings[sizeSymbol(buffer->name, d)] = tensor.size(d);
      bindings[strideSymbol(buffer->name, d)] = tensor.stride(d);
    }
    args.addTensor(tensor.data_ptr(), tensor.sizes().vec(), tensor.strides().vec());
  }
  ASSERT_EQ(k.tensor_maps.size(), 2u);
  for (const auto& map : k.tensor_maps) {
    const at::Tensor& tensor = map->tensor == k.inputs[0] ? a : b;
    args.addScalar(cuda::encodeTensorMap(cuda::tiledTensorMap(
        map->tensor->name, tensor.data_ptr(), map->tensor->dtype, tensor.sizes().vec(),
        tensor.strides().vec(), map->box_rows, map->box_cols,
        map->swizzle == kir::TmaSwizzle::Bytes128)));
  }

  KernelCache cache;
  auto kernel = cache.getOrCompile("hopper_tile|sm_90a", [&] { return compileSm90a(k, "hopper_tile"); });
  cuda::LaunchConfig config;
  for (int i = 0; i < 3; ++i) {
    config.grid[i] = k.launch.grid[i].evaluate(bindings);
    config.block[i] = k.launch.block[i].evaluate(bindings);
  }
  config.dynamic_smem_bytes = sharedMemoryBytes(k).evaluate(bindings);
  config.stream = at::cuda::getCurrentCUDAStream(0).stream();
  kernel->launch(config, args.pointers(), 0);
  at::cuda::getCurrentCUDAStream(0).synchronize();

  const at::Tensor expected = at::matmul(host[0].to(at::kFloat), host[1].to(at::kFloat).t());
  EXPECT_TRUE(at::equal(c.cpu(), expected));  // small integers: exact in fp32
}

}  // namespace
}  // namespace smelt
