// GPU tests (label gpu): the hand-built kernels compiled for the device's
// architecture, launched through the driver wrapper on torch's current
// stream, against torch's CUDA results. Skipped where there is no device.
#include <gtest/gtest.h>

#include <ATen/cuda/CUDAContext.h>
#include <torch/torch.h>

#include <map>

#include "codegen/cuda_codegen.h"
#include "codegen/test_kernels.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_arguments.h"
#include "runtime/kernel_cache.h"

namespace smelt {
namespace {

using namespace codegen_testing;

class GpuLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::deviceAvailable()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailableReason();
    if (!torch::cuda::is_available()) GTEST_SKIP() << "torch sees no CUDA device";
  }

  // Binds T<n>.size[d] / T<n>.stride[d] of every tensor parameter, packs the
  // arguments in generateCuda's order and launches on torch's current stream.
  void launch(const TestKernel& t, const std::vector<at::Tensor>& inputs,
              const std::vector<at::Tensor>& outputs, const std::vector<float>& scalars = {}) {
    const kir::Kernel& k = t.kernel;
    ASSERT_EQ(inputs.size(), k.inputs.size());
    ASSERT_EQ(outputs.size(), k.outputs.size());
    std::map<std::string, int64_t> bindings;
    KernelArguments args;
    auto bind = [&](const kir::Buffer* buffer, const at::Tensor& tensor) {
      ASSERT_EQ(static_cast<size_t>(tensor.dim()), buffer->shape.size()) << buffer->name;
      for (int64_t d = 0; d < tensor.dim(); ++d) {
        bindings[buffer->name + ".size[" + std::to_string(d) + "]"] = tensor.size(d);
        bindings[buffer->name + ".stride[" + std::to_string(d) + "]"] = tensor.stride(d);
      }
      args.addTensor(tensor.data_ptr(), tensor.sizes().vec(), tensor.strides().vec());
    };
    for (size_t i = 0; i < inputs.size(); ++i) bind(k.inputs[i], inputs[i]);
    for (size_t i = 0; i < outputs.size(); ++i) bind(k.outputs[i], outputs[i]);
    for (float s : scalars) args.addScalar(s);

    const int device = inputs.at(0).get_device();
    NvrtcOptions options;
    options.arch = cuda::computeCapability(device);
    auto kernel = cache_.getOrCompile(t.name + "|sm_" + std::to_string(options.arch), [&] {
      return compileCuda(generateCuda(k, t.name), t.name, options);
    });
    cuda::LaunchConfig config;
    for (int i = 0; i < 3; ++i) {
      config.grid[i] = k.launch.grid[i].evaluate(bindings);
      config.block[i] = k.launch.block[i].evaluate(bindings);
    }
    config.dynamic_smem_bytes = sharedMemoryBytes(k).evaluate(bindings);
    config.stream = at::cuda::getCurrentCUDAStream(device).stream();
    kernel->launch(config, args.pointers(), device);
    at::cuda::getCurrentCUDAStream(device).synchronize();
  }

  KernelCache cache_;
};

const auto kCuda = torch::TensorOptions().device(torch::kCUDA);

TEST_F(GpuLaunch, Pointwise) {
  auto t = pointwiseKernel();
  auto t0 = torch::randn({37, 50}, kCuda);
  auto t1 = torch::randn({50, 37}, kCuda).t();  // non-contiguous
  auto out = torch::empty({37, 50}, kCuda);
  launch(*t, {t0, t1}, {out}, {0.5f});
  EXPECT_TRUE(torch::allclose(out, torch::exp(t0) * 0.5 + t1, 1e-5, 1e-5));
}

TEST_F(GpuLaunch, BlockReduction) {
  auto t = reductionKernel();
  auto t0 = torch::randn({33, 1000}, kCuda);
  auto out = torch::empty({33}, kCuda);
  launch(*t, {t0}, {out});
  EXPECT_TRUE(torch::allclose(out, t0.sum(1), 1e-4, 1e-4));
}

TEST_F(GpuLaunch, SharedTilesWithAliasAndSyncs) {
  auto t = sharedTilesKernel();
  auto t0 = torch::randn({1024}, kCuda);
  auto out = torch::empty({1024}, kCuda);
  launch(*t, {t0}, {out});
  // out[b*128 + x] = 2 * T0[b*128 + (x - 1) mod 128]
  EXPECT_TRUE(torch::equal(out, (t0.view({8, 128}).roll(1, 1) * 2).view({1024})));
}

TEST_F(GpuLaunch, HalfAndBFloat16Casts) {
  auto t = halfCastKernel();
  auto t0 = torch::randn({1000}, kCuda.dtype(torch::kHalf));
  auto bf = torch::empty({1000}, kCuda.dtype(torch::kBFloat16));
  auto h = torch::empty({1000}, kCuda.dtype(torch::kHalf));
  launch(*t, {t0}, {bf, h});
  auto expected = torch::tanh(t0.to(torch::kFloat)).to(torch::kBFloat16);
  EXPECT_TRUE(torch::allclose(bf.to(torch::kFloat), expected.to(torch::kFloat), 1e-2, 1e-2));
  EXPECT_TRUE(torch::equal(h, bf.to(torch::kHalf)));
}

TEST_F(GpuLaunch, PaddedRead) {
  auto t = padKernel();
  auto t0 = torch::randn({100}, kCuda);
  auto out = torch::empty({105}, kCuda);
  launch(*t, {t0}, {out});
  namespace F = torch::nn::functional;
  EXPECT_TRUE(torch::equal(out, F::pad(t0, F::PadFuncOptions({2, 3}).value(0.5))));
}

TEST_F(GpuLaunch, VectorizedCopy) {
  auto t = vectorizedCopyKernel();
  auto t0 = torch::randn({300, 64}, kCuda);
  auto out = torch::empty({300, 64}, kCuda);
  launch(*t, {t0}, {out});
  EXPECT_TRUE(torch::equal(out, t0));
}

TEST_F(GpuLaunch, LargeDynamicSharedMemory) {
  // 64 KiB of dynamic smem needs the attribute raised above 48 KiB.
  auto t = sharedTilesKernel();
  t->kernel.buffers[3]->address = IntExpr(64 * 1024 - 512);  // T2 at the top of 64 KiB
  ASSERT_EQ(t->kernel.buffers[3]->name, "T2");
  auto t0 = torch::randn({1024}, kCuda);
  auto out = torch::empty({1024}, kCuda);
  t->name = "shared_tiles_64k";
  launch(*t, {t0}, {out});
  EXPECT_TRUE(torch::equal(out, (t0.view({8, 128}).roll(1, 1) * 2).view({1024})));
}

}  // namespace
}  // namespace smelt
