// compileForAll (issue 43): a graph's fusions compiled ahead together, their
// new kernels as one NVRTC program per pool thread across all the fusions,
// with each fusion's result what compiling it alone gives. Counted, not timed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "common/example_fusions.h"
#include "fusion/ops.h"
#include "runtime/compile_pool.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/kernel_compile.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/reduction.h"

namespace smelt {
namespace {

using testing::evaluateWithATen;
using testing::expectOutputsMatch;

constexpr int64_t kRows = 8, kCols = 64;

// Six fusions of one kernel each, all different (a CNN's fusions in small),
// then a seventh equal to the first (its own cache, the first's kernel).
std::vector<std::unique_ptr<Fusion>> oneKernelFusions() {
  using examples::fusionOf;
  using Inputs = std::vector<TensorView*>;
  std::vector<std::unique_ptr<Fusion>> fusions;
  fusions.push_back(fusionOf({2, 2}, [](const Inputs& in) { return relu(add(in[0], in[1])); }));
  fusions.push_back(fusionOf({2, 2}, [](const Inputs& in) { return mul(in[0], in[1]); }));
  fusions.push_back(fusionOf({2}, [](const Inputs& in) { return sum(in[0], {1}); }));
  fusions.push_back(fusionOf({2}, [](const Inputs& in) { return sum(in[0], {0}); }));
  fusions.push_back(fusionOf({2}, [](const Inputs& in) { return exp(in[0]); }));
  fusions.push_back(fusionOf({2, 2}, [](const Inputs& in) { return tanh(sub(in[0], in[1])); }));
  fusions.push_back(fusionOf({2, 2}, [](const Inputs& in) { return relu(add(in[0], in[1])); }));
  return fusions;
}
constexpr int64_t kDistinctKernels = 6;

ExecutorOptions optionsOn(KernelCache& kernels, CompilePool& pool) {
  ExecutorOptions options;
  options.cache = &kernels;
  options.compile_pool = &pool;
  return options;
}

// A process's view of a graph: its kernel cache and one executor cache per
// fusion (destroyed first).
struct Graph {
  std::shared_ptr<KernelCache> kernels = std::make_shared<KernelCache>();
  std::vector<std::unique_ptr<FusionExecutorCache>> caches;
  std::vector<std::vector<at::Tensor>> inputs;  // real ones, per fusion

  Graph(std::vector<std::unique_ptr<Fusion>> fusions, CompilePool& pool) {
    for (std::unique_ptr<Fusion>& fusion : fusions) {
      std::vector<at::Tensor>& in = inputs.emplace_back();
      for (size_t i = 0; i < fusion->inputs().size(); ++i) in.push_back(at::randn({kRows, kCols}));
      caches.push_back(std::make_unique<FusionExecutorCache>(std::move(fusion), optionsOn(*kernels, pool)));
    }
  }

  // One job per fusion on meta stand-ins, then the first fusion's again.
  std::vector<CompileForJob> jobs() const {
    std::vector<CompileForJob> all;
    for (size_t f = 0; f <= caches.size(); ++f) {
      const size_t of = f % caches.size();
      std::vector<at::Tensor> meta;
      for (const at::Tensor& t : inputs[of]) meta.push_back(t.to(at::kMeta));
      all.push_back({caches[of].get(), meta, c10::Device(c10::kCPU)});
    }
    return all;
  }
  CompileCost cost() const {
    CompileCost total;
    for (const auto& cache : caches) total += cache->compileCost();
    return total;
  }
};

// What a stretch of a test compiled: NVRTC programs and disk-cache reads of kernels.
struct Counted {
  int64_t programs = nvrtcProgramsCompiled();
  int64_t reads = storedKernelReads();
  void stop() {
    programs = nvrtcProgramsCompiled() - programs;
    reads = storedKernelReads() - reads;
  }
};

// Seven fusions (six distinct kernels, one kernel shared by two fusions, one
// cache asked for twice) compile as max(1, pool threads) NVRTC programs, the
// shared kernel once; each fusion's run report, kernel source, ptxas report
// and outputs are those of compiling it alone, and its values are ATen's.
// Each executor asking for a kernel reads its disk entry once, cold or warm;
// a second process compiles no program.
TEST(CompileForAll, CompilesAGraphsKernelsAsOneProgramPerPoolThread) {
  for (int threads : {0, 2}) {
    SCOPED_TRACE(threads);
    CompilePool pool(threads);
    Graph alone(oneKernelFusions(), pool);
    std::vector<std::vector<at::Tensor>> alone_outputs;
    Counted lone;
    {
      testing::ScopedKernelCacheDir own_disk;
      for (const CompileForJob& job : alone.jobs()) {
        alone_outputs.push_back(job.cache->compileFor(job.inputs, job.device));
      }
    }
    lone.stop();
    EXPECT_EQ(lone.programs, kDistinctKernels);

    testing::ScopedKernelCacheDir disk;
    Graph cold(oneKernelFusions(), pool);
    Counted together;
    std::vector<CompileForResult> results = compileForAll(cold.jobs());
    together.stop();
    EXPECT_EQ(together.programs, std::max(threads, 1));
    EXPECT_EQ(together.reads, static_cast<int64_t>(cold.caches.size()));
    EXPECT_EQ(cold.cost().nvrtc_compiles, kDistinctKernels);  // the shared kernel once
    EXPECT_EQ(cold.kernels->misses(), kDistinctKernels);
    ASSERT_EQ(results.size(), alone_outputs.size());
    for (size_t j = 0; j < results.size(); ++j) {
      SCOPED_TRACE(j);
      ASSERT_FALSE(results[j].error);
      ASSERT_EQ(results[j].outputs.size(), 1u);
      EXPECT_EQ(results[j].outputs[0].sizes(), alone_outputs[j][0].sizes());
      EXPECT_EQ(results[j].outputs[0].strides(), alone_outputs[j][0].strides());
    }
    for (size_t f = 0; f < cold.caches.size(); ++f) {
      SCOPED_TRACE(f);
      FusionExecutorCache& cache = *cold.caches[f];
      ASSERT_EQ(cache.lastRun().segments.size(), 1u);
      EXPECT_EQ(cache.lastRun().toString(), alone.caches[f]->lastRun().toString());
      const FusionExecutor& executor = cache.lastExecutor(0);
      EXPECT_EQ(executor.cacheKey(), alone.caches[f]->lastExecutor(0).cacheKey());
      EXPECT_EQ(executor.cudaSource(), alone.caches[f]->lastExecutor(0).cudaSource());
      const CompiledKernel lone_compile = compileCuda(executor.cudaSource(), executor.kernelName());
      EXPECT_EQ(executor.ptxasInfo().registers, lone_compile.ptxas.registers);
      EXPECT_EQ(executor.ptxasInfo().stack_frame_bytes, lone_compile.ptxas.stack_frame_bytes);
      EXPECT_EQ(executor.ptxasInfo().static_smem_bytes, lone_compile.ptxas.static_smem_bytes);

      const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(cold.inputs[f]);
      EXPECT_FALSE(cache.lastRun().segments.at(0).compiled);
      Fusion& fusion = const_cast<Fusion&>(cache.fusion());
      expectOutputsMatch(fusion, outputs, evaluateWithATen(fusion, cold.inputs[f]), cache.lastRun().toString());
    }

    Graph warm(oneKernelFusions(), pool);
    Counted again;
    results = compileForAll(warm.jobs());
    again.stop();
    EXPECT_EQ(again.programs, 0);
    // One read per kernel, and one by the second fusion of the shared kernel
    // when its preparing task ran before the first's kernel was ready.
    EXPECT_GE(again.reads, kDistinctKernels);
    EXPECT_LE(again.reads, static_cast<int64_t>(warm.caches.size()));
    EXPECT_EQ(warm.cost().nvrtc_compiles, 0);
    EXPECT_EQ(warm.cost().disk_cache_hits, kDistinctKernels);
    for (const CompileForResult& result : results) EXPECT_FALSE(result.error);
  }
}

// A fusion whose kernel fails (too large a block for its launch) fails
// alone, with the error compileFor gives it, naming its kernel; the graph's
// other kernels, and the failing one, still share one program per pool thread.
TEST(CompileForAll, AFailingKernelFailsItsFusionAlone) {
  CompilePool pool(2);
  auto failingOn = [&](KernelCache& kernels) {
    auto cache = std::make_unique<FusionExecutorCache>(
        examples::fusionOf({2}, [](const std::vector<TensorView*>& in) { return sum(exp(in[0]), {1}); }),
        optionsOn(kernels, pool));
    cache->setHeuristicOverride([](HeuristicParams& params) {
      if (auto* p = dynamic_cast<ReductionParams*>(&params)) p->block_y = 64;  // 128 x 64 threads
    });
    return cache;
  };
  const std::vector<at::Tensor> meta = {at::empty({9, 21}, at::TensorOptions().device(at::kMeta))};
  std::string alone;
  {
    testing::ScopedKernelCacheDir own_disk;
    KernelCache own_kernels;
    try {
      failingOn(own_kernels)->compileFor(meta, c10::Device(c10::kCPU));
    } catch (const Error& e) {
      alone = e.what();
    }
  }
  ASSERT_NE(alone.find("smelt_kernel_"), std::string::npos) << alone;

  testing::ScopedKernelCacheDir disk;
  Graph graph(oneKernelFusions(), pool);
  std::unique_ptr<FusionExecutorCache> failing = failingOn(*graph.kernels);
  std::vector<CompileForJob> jobs = graph.jobs();
  jobs.insert(jobs.begin() + 2, CompileForJob{failing.get(), meta, c10::Device(c10::kCPU)});
  Counted together;
  const std::vector<CompileForResult> results = compileForAll(jobs);
  together.stop();
  EXPECT_EQ(together.programs, 2);
  for (size_t j = 0; j < results.size(); ++j) EXPECT_EQ(results[j].error != nullptr, j == 2) << j;
  ASSERT_TRUE(results[2].error != nullptr);
  try {
    std::rethrow_exception(results[2].error);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), alone);
  }
  EXPECT_EQ(failing->numCompiledKernels(), 0);
}

}  // namespace
}  // namespace smelt
