// Runtime pieces that need no GPU: the lazily loaded driver's "no CUDA
// device" error, the kernel cache, and kernel-argument packing.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <iostream>

#include "codegen/cuda_codegen.h"
#include "codegen/test_kernels.h"
#include "fusion/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_arguments.h"
#include "runtime/kernel_cache.h"

namespace smelt {
namespace {

using namespace codegen_testing;

void expectNoDeviceError(const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "expected smelt::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
  }
}

TEST(CudaDriver, WithoutDeviceEveryDeviceCallSaysSo) {
  if (cuda::deviceAvailable()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(cuda::unavailableReason().empty());
  std::cout << "driver unavailable: " << cuda::unavailableReason() << "\n";
  expectNoDeviceError([] { cuda::deviceCount(); });
  expectNoDeviceError([] { cuda::computeCapability(0); });
  expectNoDeviceError([] { cuda::primaryContext(0); });
  expectNoDeviceError([] { cuda::Module module(std::vector<char>(16, 1)); });
  expectNoDeviceError([] { cuda::launchKernel(nullptr, cuda::LaunchConfig{}, {}); });

  // A compiled kernel is fine; only loading it needs the device.
  auto t = pointwiseKernel();
  CachedKernel kernel(compileCuda(generateCuda(t->kernel, t->name), t->name));
  expectNoDeviceError([&] { kernel.function(); });
  expectNoDeviceError([&] { kernel.launch(cuda::LaunchConfig{}, {}); });
}

TEST(KernelCache, HitDoesNotRecompile) {
  KernelCache cache;
  int compiles = 0;
  auto t = pointwiseKernel();
  const std::string source = generateCuda(t->kernel, t->name);
  auto compile = [&] {
    ++compiles;
    return compileCuda(source, t->name);
  };
  const std::string key = "pointwise|float[2,c,c],float[2,c,c],float|sm_90";
  EXPECT_EQ(cache.find(key), nullptr);
  auto first = cache.getOrCompile(key, compile);
  auto second = cache.getOrCompile(key, compile);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(first, second);
  EXPECT_EQ(cache.find(key), first);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);

  // Another key (here: a non-contiguous input) is another kernel.
  auto other = cache.getOrCompile("pointwise|float[2,c,n],float[2,c,c],float|sm_90", compile);
  EXPECT_EQ(compiles, 2);
  EXPECT_NE(other, first);
  EXPECT_EQ(cache.size(), 2u);

  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.hits(), 0);
}

TEST(KernelCache, FailedCompileCachesNothing) {
  KernelCache cache;
  int compiles = 0;
  auto failing = [&]() -> CompiledKernel {
    ++compiles;
    return compileCuda("extern \"C\" __global__ void k() { nope; }", "k");
  };
  EXPECT_THROW(cache.getOrCompile("k", failing), Error);
  EXPECT_THROW(cache.getOrCompile("k", failing), Error);
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(KernelArguments, TensorLayoutMatchesTheGeneratedStruct) {
  float storage[6];
  KernelArguments args;
  args.addTensor(storage, {2, 3}, {3, 1});
  args.addScalar(0.5f);
  args.addTensor(storage, {}, {});
  ASSERT_EQ(args.size(), 3u);

  // smelt::Tensor<float, 2>: { float* data; int64_t size[2]; int64_t stride[2]; }
  const auto* words = static_cast<const int64_t*>(args.pointers()[0]);
  void* data = nullptr;
  std::memcpy(&data, &words[0], sizeof(void*));
  EXPECT_EQ(data, storage);
  EXPECT_EQ(words[1], 2);
  EXPECT_EQ(words[2], 3);
  EXPECT_EQ(words[3], 3);
  EXPECT_EQ(words[4], 1);
  EXPECT_EQ(*static_cast<const float*>(args.pointers()[1]), 0.5f);
  void* data0 = nullptr;
  std::memcpy(&data0, args.pointers()[2], sizeof(void*));
  EXPECT_EQ(data0, storage);

  EXPECT_THROW(args.addTensor(storage, {2}, {1, 1}), Error);
}

}  // namespace
}  // namespace smelt
