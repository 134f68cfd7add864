// Runtime pieces that need no GPU: the lazily loaded driver's "no CUDA
// device" error, the kernel cache, kernel-argument packing, and the choice of
// a launch's index type.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <set>
#include <thread>
#include <functional>
#include <iostream>

#include "codegen/cuda_codegen.h"
#include "codegen/test_kernels.h"
#include "fusion/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/index_type.h"
#include "runtime/kernel_arguments.h"
#include "runtime/compile_pool.h"
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

// Threads asking for a key while it compiles wait for that compile: one
// compile, one kernel for all; its error reaches every waiter, and nothing
// is cached. Distinct keys compile at once (the lock is not held).
TEST(KernelCache, KeyCompilingOnAnotherThreadCompilesOnce) {
  KernelCache cache;
  std::atomic<int> compiles{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  auto blocked = [&](bool fail) {
    return [&, fail]() -> KernelEntry {
      ++compiles;
      ++started;
      released.wait();
      if (fail) throw Error("the compile failed for kernel k");
      CompiledKernel compiled;
      compiled.kernel_name = "k";
      return compiled;
    };
  };
  for (bool fail : {false, true}) {
    compiles = 0;
    started = 0;
    release = std::promise<void>();
    released = release.get_future().share();
    const std::string key = fail ? "failing" : "k";
    std::vector<std::future<std::string>> callers;
    for (int i = 0; i < 4; ++i) {
      callers.push_back(std::async(std::launch::async, [&] {
        try {
          return std::to_string(reinterpret_cast<uintptr_t>(cache.getOrCompile(key, blocked(fail)).get()));
        } catch (const Error& e) {
          return std::string(e.what());
        }
      }));
    }
    // Every caller is in: one compiling (held), three waiting for it.
    while (started.load() == 0 || cache.hits() < (fail ? 6 : 3)) std::this_thread::yield();
    // Another key compiles while the first one is held.
    auto other = cache.getOrCompile(fail ? "other failing" : "other", [] {
      CompiledKernel compiled;
      compiled.kernel_name = "other";
      return KernelEntry(compiled);
    });
    EXPECT_NE(other, nullptr);
    release.set_value();
    std::set<std::string> results;
    for (auto& caller : callers) results.insert(caller.get());
    EXPECT_EQ(compiles.load(), 1);
    ASSERT_EQ(results.size(), 1u);
    if (fail) {
      EXPECT_EQ(*results.begin(), "the compile failed for kernel k");
      EXPECT_EQ(cache.find(key), nullptr);
    } else {
      EXPECT_EQ(*results.begin(), std::to_string(reinterpret_cast<uintptr_t>(cache.find(key).get())));
    }
  }
  EXPECT_EQ(cache.misses(), 4);  // k, other, failing, other failing
  EXPECT_EQ(cache.hits(), 6);    // the three waiters of each held key
}

// A pool runs what it is given and keeps each task's error in its future;
// with no threads a task runs inside submit().
TEST(CompilePool, RunsTasksAndKeepsTheirErrors) {
  for (int threads : {0, 3}) {
    CompilePool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    std::atomic<int> ran{0};
    std::vector<std::shared_future<void>> done;
    for (int i = 0; i < 8; ++i) done.push_back(pool.submit([&] { ++ran; }));
    auto failed = pool.submit([] { throw Error("task failed"); });
    for (auto& d : done) d.get();
    EXPECT_EQ(ran.load(), 8);
    try {
      failed.get();
      ADD_FAILURE() << "the task's error was lost";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "task failed");
    }
    EXPECT_EQ(pool.submitted(), 9);
    EXPECT_GE(pool.peakRunning(), 1);
    EXPECT_LE(pool.peakRunning(), std::max(threads, 1));
  }
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

// The 32-bit variant's struct: { T* data; int size[N]; int stride[N]; }.
TEST(KernelArguments, Int32IndexTypePacksSizesAndStridesAsInt32) {
  float storage[6];
  KernelArguments args;
  args.addTensor(storage, {2, 3}, {3, 1}, DataType::Int32);
  const auto* bytes = static_cast<const unsigned char*>(args.pointers()[0]);
  void* data = nullptr;
  std::memcpy(&data, bytes, sizeof(void*));
  EXPECT_EQ(data, storage);
  int32_t extents[4];
  std::memcpy(extents, bytes + sizeof(void*), sizeof(extents));
  EXPECT_EQ(extents[0], 2);
  EXPECT_EQ(extents[1], 3);
  EXPECT_EQ(extents[2], 3);
  EXPECT_EQ(extents[3], 1);
  // A launch whose index type is 32-bit never has such a stride; packing one
  // would truncate it silently.
  EXPECT_THROW(args.addTensor(storage, {2, 3}, {int64_t{1} << 31, 1}, DataType::Int32), Error);
  EXPECT_THROW(args.addTensor(storage, {2}, {1}, DataType::Float), Error);
}

TEST(IndexType, NormalLaunchesAreInt32) {
  EXPECT_EQ(chooseIndexType({{{8192, 4096}, {4096, 1}}, {{4096}, {1}}}), DataType::Int32);
  // [8192, 8192] read transposed: the same offsets.
  EXPECT_EQ(chooseIndexType({{{8192, 8192}, {1, 8192}}}), DataType::Int32);
  // Exactly 2^30 elements (the largest offset 2^30 - 1).
  EXPECT_EQ(chooseIndexType({{{int64_t{1} << 15, int64_t{1} << 15}, {int64_t{1} << 15, 1}}}),
            DataType::Int32);
  EXPECT_EQ(chooseIndexType({}), DataType::Int32);
}

TEST(IndexType, ElementCountOrOffsetBeyondTheBoundIsInt64) {
  const int64_t big = int64_t{1} << 31;
  // 2^31 elements: offsets pass int32's range.
  EXPECT_EQ(chooseIndexType({{{int64_t{1} << 16, int64_t{1} << 15}, {int64_t{1} << 15, 1}}}), DataType::Int);
  // One element past the bound.
  EXPECT_EQ(chooseIndexType({{{(int64_t{1} << 30) + 1}, {1}}}), DataType::Int);
  // Twelve elements, but the second row starts 2^31 elements in.
  EXPECT_EQ(chooseIndexType({{{3, 4}, {big, 1}}}), DataType::Int);
  EXPECT_EQ(chooseIndexType({{{3, 4}, {-big, 1}}}), DataType::Int);  // |stride|
  // A broadcast (stride 0) adds no offset; an empty tensor launches nothing.
  EXPECT_EQ(chooseIndexType({{{1 << 20, 1 << 9}, {0, 1}}}), DataType::Int32);
  EXPECT_EQ(chooseIndexType({{{0, 4}, {big, 1}}}), DataType::Int32);
  // Any one tensor decides; so does an integer scalar extents may use.
  EXPECT_EQ(chooseIndexType({{{4}, {1}}, {{3, 4}, {big, 1}}}), DataType::Int);
  EXPECT_EQ(chooseIndexType({{{4}, {1}}}, {big}), DataType::Int);
  EXPECT_EQ(chooseIndexType({{{4}, {1}}}, {-7, 1 << 20}), DataType::Int32);
}

TEST(IndexType, MalformedExtentsAreErrors) {
  EXPECT_THROW(chooseIndexType({{{2, 3}, {1}}}), Error);
  EXPECT_THROW(chooseIndexType({{{-1}, {1}}}), Error);
  EXPECT_STREQ(indexTypeName(DataType::Int32), "int32");
  EXPECT_STREQ(indexTypeName(DataType::Int), "int64");
  EXPECT_THROW(indexTypeName(DataType::Float), Error);
}

}  // namespace
}  // namespace smelt
