// Resource limits and concurrency of the runtime, without a GPU:
//   * launches the GPU would refuse (block or grid over CUDA's limits,
//     shared memory or registers over the device's) are smelt::Errors naming
//     the limit, for simulated runs too;
//   * the kernel cache, a FusionExecutor shared by several threads and a
//     FusionExecutorCache hammered from several threads stay correct: every
//     result matches ATen and each kernel is compiled exactly once.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/aten_reference.h"
#include "common/example_fusions.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "runtime/executor.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/launch_limits.h"

namespace smelt::testing {
namespace {

LaunchResources launchOf(std::vector<int64_t> grid, std::vector<int64_t> block, int64_t smem = 0,
                         int64_t registers = 32) {
  LaunchResources r;
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = grid[static_cast<size_t>(i)];
    r.block[i] = block[static_cast<size_t>(i)];
  }
  r.shared_memory_bytes = smem;
  r.registers_per_thread = registers;
  return r;
}

TEST(LaunchLimits, EachLimitIsNamed) {
  const DeviceLimits sm90 = DeviceLimits::sm90();
  EXPECT_NO_THROW(checkLaunchLimits("k", launchOf({2147483647, 65535, 65535}, {1024, 1, 1}, 232448, 64), sm90));
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 1, 1}, {2048, 1, 1}), sm90), "kernel k",
                     "blockDim.x = 2048 exceeds the limit of 1024");
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 1, 1}, {1, 1, 65}), sm90), "blockDim.z = 65");
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 1, 1}, {32, 32, 2}), sm90),
                     "2048 threads per block exceed the limit of 1024");
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 70000, 1}, {1, 1, 1}), sm90),
                     "gridDim.y = 70000 exceeds the limit of 65535", "bind it to BIDx");
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 1, 1}, {1, 1, 1}, 232449), sm90),
                     "232449 bytes of shared memory per block, more than the device's 232448 bytes");
  // sm_86 has 99 KiB per block.
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 1, 1}, {1, 1, 1}, 101377), DeviceLimits::forArch(86)),
                     "more than the device's 101376 bytes");
  // 64 registers x 1024 threads fill the register file exactly; 65 round up
  // to 2304 per warp, 73728 for 32 warps.
  EXPECT_NO_THROW(checkLaunchLimits("k", launchOf({1, 1, 1}, {1024, 1, 1}, 0, 64), sm90));
  EXPECT_SMELT_ERROR(checkLaunchLimits("k", launchOf({1, 1, 1}, {1024, 1, 1}, 0, 65), sm90),
                     "65 registers per thread (ptxas) for 1024 threads need 73728 registers per block",
                     "launch fewer threads per block");
}

// out = neg(in) over a symbolic 1-D input, its axis bound to `pt`.
void buildNegBoundTo(ParallelType pt) {
  Fusion* fusion = Fusion::current();
  TensorView* in = makeContigTensor(1);
  fusion->addInput(in);
  TensorView* out = neg(in);
  fusion->addOutput(out);
  out->axis(0)->parallelize(pt);
}

TEST(LaunchLimits, TooManyThreadsIsAnErrorBeforeSimulating) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildNegBoundTo(ParallelType::TIDx);
  FusionExecutor fe;
  fe.compile(&fusion, {at::randn({8})});
  at::Tensor ok = at::randn({1024});
  EXPECT_TRUE(at::equal(fe.run({ok})[0], -ok));
  EXPECT_SMELT_ERROR(fe.run({at::randn({1025})}), "blockDim.x = 1025 exceeds the limit of 1024",
                     "split the axis bound to TIDx");
  // Compiling with such example inputs fails the same way.
  FusionExecutor again;
  EXPECT_SMELT_ERROR(again.compile(&fusion, {at::randn({4096})}), "blockDim.x = 4096");
}

TEST(LaunchLimits, GridOverTheLimitIsAnError) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildNegBoundTo(ParallelType::BIDy);
  FusionExecutor fe;
  fe.compile(&fusion, {at::randn({8})});
  EXPECT_SMELT_ERROR(fe.run({at::randn({65536})}), "gridDim.y = 65536 exceeds the limit of 65535");
}

TEST(LaunchLimits, SharedMemoryThatCannotFit) {
  // A symbolic Shared tile: the plan is an expression, checked at launch.
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* in = makeContigTensor(1);
    fusion.addInput(in);
    TensorView* tile = set(in)->setMemoryType(MemoryType::Shared);
    fusion.addOutput(set(tile));
    FusionExecutor fe;
    fe.compile(&fusion, {at::randn({16})});
    at::Tensor small = at::randn({100});
    EXPECT_TRUE(at::equal(fe.run({small})[0], small));
    EXPECT_SMELT_ERROR(fe.run({at::randn({60000})}),
                       "240000 bytes of shared memory per block, more than the device's 232448 bytes");
    // A lower limit from the options applies too (e.g. no opt-in above 48 KiB).
    ExecutorOptions options;
    options.lower.max_shared_memory_bytes = 48 * 1024;
    FusionExecutor small_limit;
    small_limit.compile(&fusion, {at::randn({16})}, options);
    EXPECT_SMELT_ERROR(small_limit.run({at::randn({12289})}), "49156 bytes of shared memory",
                       "more than the device's 49152 bytes");
  }
  // A constant tile too large is refused when the plan is made.
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* in = makeConcreteTensor({70000});
    fusion.addInput(in);
    TensorView* tile = set(in)->setMemoryType(MemoryType::Shared);
    fusion.addOutput(set(tile));
    FusionExecutor fe;
    EXPECT_SMELT_ERROR(fe.compile(&fusion, {at::randn({70000})}), "280000");
  }
}

// a * b + exp(a) over [rows, 16], one block per row and a thread per column.
std::unique_ptr<Fusion> scheduledFusion(double scale) {
  std::unique_ptr<Fusion> fusion =
      examples::fusionOf({2, 2}, [scale](const std::vector<TensorView*>& in) {
        return add(mul(mul(in[0], in[1]), scale), exp(in[0]));
      });
  FusionGuard guard(fusion.get());
  TensorView* out = fusion->outputs()[0]->asTensor();
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(out);
  inlineMost(fusion.get());
  return fusion;
}

constexpr int kThreads = 8;
constexpr int kRunsPerThread = 6;

// Runs `body(thread)` on kThreads threads; returns how many threw.
template <typename Body>
int64_t hammer(Body body) {
  std::atomic<int64_t> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        failures++;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return failures.load();
}

TEST(ConcurrentCache, ThreadsCompilingTheSameAndDifferentFusionsCompileEachOnce) {
  KernelCache cache;
  ExecutorOptions options;
  options.cache = &cache;
  std::atomic<int64_t> mismatches{0};
  // Thread t compiles the shared fusion (scale 2) and one of two others.
  EXPECT_EQ(hammer([&](int t) {
              for (double scale : {2.0, 3.0 + t % 2}) {
                std::unique_ptr<Fusion> fusion = scheduledFusion(scale);
                FusionGuard guard(fusion.get());
                for (int run = 0; run < kRunsPerThread; ++run) {
                  std::vector<at::Tensor> inputs = {at::randn({3, 16}), at::randn({3, 16})};
                  FusionExecutor fe;
                  fe.compile(fusion.get(), inputs, options);
                  const at::Tensor out = fe.run(inputs)[0];
                  const at::Tensor want = inputs[0] * inputs[1] * scale + at::exp(inputs[0]);
                  if (!at::allclose(out, want, 1e-5, 1e-5)) mismatches++;
                }
              }
            }),
            0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.misses(), 3);  // scales 2, 3 and 4: each compiled exactly once
  EXPECT_EQ(cache.hits(), kThreads * kRunsPerThread * 2 - 3);
}

TEST(ConcurrentCache, OneExecutorSharedByThreadsAfterACacheHit) {
  KernelCache cache;
  ExecutorOptions options;
  options.cache = &cache;
  std::unique_ptr<Fusion> fusion = scheduledFusion(0.5);
  FusionGuard guard(fusion.get());
  const std::vector<at::Tensor> example = {at::randn({2, 16}), at::randn({2, 16})};
  FusionExecutor first;
  first.compile(fusion.get(), example, options);
  // A hit: not lowered until a run needs the kernel IR, which every thread
  // then asks for at once.
  FusionExecutor shared;
  shared.compile(fusion.get(), example, options);
  ASSERT_TRUE(shared.compiledFromCache());
  ASSERT_FALSE(shared.isLowered());
  std::atomic<int64_t> mismatches{0};
  EXPECT_EQ(hammer([&](int t) {
              for (int run = 0; run < kRunsPerThread; ++run) {
                std::vector<at::Tensor> inputs = {at::randn({1 + (t + run) % 4, 16}), at::randn({1 + (t + run) % 4, 16})};
                const at::Tensor out = shared.run(inputs)[0];
                if (!at::allclose(out, inputs[0] * inputs[1] * 0.5 + at::exp(inputs[0]), 1e-5, 1e-5)) mismatches++;
              }
            }),
            0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(cache.misses(), 1);
}

TEST(ConcurrentCache, FusionExecutorCacheFromManyThreads) {
  // A softmax: the normalization scheduler, one kernel per size class.
  FusionExecutorCache executor_cache(examples::rowSoftmaxFusion());
  std::atomic<int64_t> mismatches{0};
  EXPECT_EQ(hammer([&](int t) {
              for (int run = 0; run < kRunsPerThread; ++run) {
                // Two size classes of the inner extent: 8 and 64.
                const int64_t cols = (t + run) % 2 == 0 ? 8 : 64;
                at::Tensor x = at::randn({2, cols});
                const at::Tensor out = executor_cache.runFusionWithInputs({x})[0];
                if (!at::allclose(out, at::softmax(x, 1), 1e-5, 1e-5)) mismatches++;
              }
            }),
            0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(executor_cache.numSignatures(), 2);
  // The same count as one thread running both signatures once.
  FusionExecutorCache sequential(examples::rowSoftmaxFusion());
  sequential.runFusionWithInputs({at::randn({2, 8})});
  sequential.runFusionWithInputs({at::randn({2, 64})});
  EXPECT_EQ(executor_cache.numCompiledKernels(), sequential.numCompiledKernels());
}

}  // namespace
}  // namespace smelt::testing
