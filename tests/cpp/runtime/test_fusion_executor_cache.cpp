// FusionExecutorCache on CPU tensors (the simulator): unscheduled fusions are
// segmented, scheduled and compiled per input signature and parameter set,
// reused when they repeat, and match ATen.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include <ATen/ATen.h>

#include "common/aten_reference.h"
#include "common/example_fusions.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "runtime/compile_pool.h"
#include "runtime/disk_kernel_cache.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/launch_info.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/pointwise.h"
#include "scheduler/reduction.h"

namespace smelt {
namespace {

using testing::evaluateWithATen;
using testing::expectOutputsMatch;

at::Tensor randn(std::vector<int64_t> shape) {
  return at::randn(shape, at::kDouble).to(at::kFloat);
}

std::unique_ptr<Fusion> addRelu() {
  return examples::fusionOf(
      {2, 2}, [](const std::vector<TensorView*>& in) { return relu(add(in[0], in[1])); });
}

// sum(x, {axis}) of a matrix.
std::unique_ptr<Fusion> sumOver(int64_t axis) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* x = makeContigTensor(2);
  fusion->addInput(x);
  fusion->addOutput(sum(x, {axis}));
  return fusion;
}

// Runs through the cache and compares with ATen on the cache's own fusion.
std::vector<at::Tensor> runAndCheck(FusionExecutorCache& cache,
                                    const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  Fusion& fusion = const_cast<Fusion&>(cache.fusion());
  expectOutputsMatch(fusion, outputs, evaluateWithATen(fusion, inputs), cache.lastRun().toString());
  return outputs;
}

// The latest run ran one segment per scheduler in `schedulers`, in order, as
// `segmentation` (SegmentedFusion::toString) says.
void expectSegments(const FusionExecutorCache& cache, const std::vector<SchedulerType>& schedulers,
                    const std::string& segmentation) {
  const FusionRun& run = cache.lastRun();
  ASSERT_EQ(run.segments.size(), schedulers.size()) << run.toString();
  for (size_t i = 0; i < schedulers.size(); ++i) {
    EXPECT_EQ(run.segments[i].scheduler, schedulers[i]) << run.toString();
  }
  EXPECT_EQ(cache.segmentation(run.signature).toString(), segmentation);
}

TEST(FusionExecutorCache, ReusesKernelsPerSignatureAndParameters) {
  FusionExecutorCache cache(addRelu());
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_TRUE(cache.lastRun().new_signature);
  ASSERT_EQ(cache.lastRun().segments.size(), 1u);
  const SegmentRun& first = cache.lastRun().segments[0];
  EXPECT_EQ(first.scheduler, SchedulerType::Pointwise);
  EXPECT_TRUE(first.compiled);
  EXPECT_EQ(first.params,
            "PointwiseParams{vector_width=4, block=(128, 1), split_grid_y=false, "
            "vectorized_inputs={0, 1}, vectorized_outputs={0}}");
  EXPECT_EQ(first.launch.grid[0], 1);
  EXPECT_EQ(first.launch.block[0], 128);

  // Same shapes: nothing new.
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_FALSE(cache.lastRun().segments[0].compiled);
  // Same size classes and the same parameters: the kernel is reused.
  runAndCheck(cache, {randn({7, 60}), randn({7, 60})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_FALSE(cache.lastRun().segments[0].compiled);
  // Same size classes, rows of 62 floats: only 2-wide vectors divide them.
  runAndCheck(cache, {randn({7, 62}), randn({7, 62})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_TRUE(cache.lastRun().segments[0].compiled);
  // Another size class.
  runAndCheck(cache, {randn({3, 1000}), randn({3, 1000})});
  EXPECT_TRUE(cache.lastRun().new_signature);
  EXPECT_EQ(cache.numSignatures(), 2);
  EXPECT_EQ(cache.numCompiledKernels(), 3);
}

// A segment's choice (parameters and kernel) is kept per exact input shape:
// a repeated shape runs no heuristics; any change the heuristics read (a
// size, a stride, the data pointer's alignment, a new override) runs them.
// A fusion without tensor inputs (an iota) runs on the device it is asked
// for; a device other than the tensor inputs' is refused by name.
TEST(FusionExecutorCache, DeviceOfAFusionWithoutTensorInputsIsTheRequestedOne) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    fusion->addOutput(iota(5, constant(2, DataType::Int), constant(3, DataType::Int)));
  }
  FusionExecutorCache cache(std::move(fusion));
  std::vector<at::Tensor> out = cache.runFusionWithInputs({}, c10::Device(c10::kCPU));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].device().is_cpu());
  EXPECT_TRUE(at::equal(out[0], at::arange(2, 17, 3, at::kLong)));

  FusionExecutorCache with_inputs(addRelu());
  EXPECT_SMELT_ERROR(with_inputs.runFusionWithInputs({randn({2, 2}), randn({2, 2})},
                                                     c10::Device(c10::kMeta)),
                     "tensor inputs are on cpu but it was asked to run on meta");
  runAndCheck(with_inputs, {randn({2, 2}), randn({2, 2})});
}

TEST(FusionExecutorCache, RepeatedShapesReuseTheSegmentChoice) {
  FusionExecutorCache cache(addRelu());
  auto heuristicsRan = [&] { return cache.lastRun().segments.at(0).heuristics; };
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_TRUE(heuristicsRan());
  EXPECT_FALSE(cache.lastRun().repeated_inputs);
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_TRUE(cache.lastRun().repeated_inputs);  // nothing looked up
  EXPECT_FALSE(heuristicsRan());
  EXPECT_FALSE(cache.lastRun().segments[0].compiled);
  EXPECT_EQ(cache.lastRun().segments[0].params,
            "PointwiseParams{vector_width=4, block=(128, 1), split_grid_y=false, "
            "vectorized_inputs={0, 1}, vectorized_outputs={0}}");
  // Same signature, other sizes: the heuristics run, the kernel is reused.
  runAndCheck(cache, {randn({7, 60}), randn({7, 60})});
  EXPECT_TRUE(heuristicsRan());
  EXPECT_FALSE(cache.lastRun().segments[0].compiled);
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_FALSE(heuristicsRan());
  // Rows of 62 floats (only 2-wide vectors divide them); then the same sizes
  // from a view of wider rows, and from one whose data pointer is 8 B
  // aligned: that input must not be read with the 16 B vectors chosen before.
  runAndCheck(cache, {randn({8, 62}), randn({8, 62})});
  EXPECT_TRUE(heuristicsRan());
  const at::Tensor wide = randn({8, 66});
  runAndCheck(cache, {wide.narrow(1, 0, 64), randn({8, 64})});
  EXPECT_TRUE(heuristicsRan());
  runAndCheck(cache, {wide.narrow(1, 2, 64), randn({8, 64})});
  EXPECT_FALSE(cache.lastRun().repeated_inputs);  // the same strides, another alignment
  EXPECT_TRUE(heuristicsRan());
  EXPECT_NE(cache.lastRun().segments[0].params.find("vectorized_inputs={1}"), std::string::npos)
      << cache.lastRun().segments[0].params;
  // An override given after runs applies to the next run of a known shape.
  cache.setHeuristicOverride([](HeuristicParams& params) {
    dynamic_cast<PointwiseParams&>(params).block_x = 32;
  });
  runAndCheck(cache, {randn({8, 64}), randn({8, 64})});
  EXPECT_TRUE(heuristicsRan());
  EXPECT_NE(cache.lastRun().segments[0].params.find("block=(32, 1)"), std::string::npos)
      << cache.lastRun().segments[0].params;
}

// out = x.permute(0, 2, 1, 3).reshape(B * T, H * D) @ w, x [B, H, T, D] (an
// attention output before the projection): the matmul scheduler takes no
// permute, so the permute and reshape are a segment of their own that only
// moves data. Where x is stored as [B, T, H, D] (how attention writes it),
// that segment's output is a view of x and no kernel runs for it; where x is
// contiguous, the reshape needs a copy and the segment's kernel makes it.
TEST(FusionExecutorCache, SegmentThatOnlyMovesDataIsAViewWhereStridesAllow) {
  const int64_t b = 2, h = 2, t = 8, d = 16;
  auto owned = std::make_unique<Fusion>();
  {
    FusionGuard guard(owned.get());
    TensorView* x = makeConcreteTensor({b, h, t, d});
    TensorView* w = makeConcreteTensor({h * d, 24});
    owned->addInput(x);
    owned->addInput(w);
    TensorView* rows = reshape(permute(x, {0, 2, 1, 3}), {IntExpr(b * t), IntExpr(h * d)});
    owned->addOutput(matmul(rows, w));
  }
  FusionExecutorCache cache(std::move(owned));
  const at::Tensor w = randn({h * d, 24});
  const at::Tensor stored_bthd = randn({b, t, h, d}).permute({0, 2, 1, 3});
  runAndCheck(cache, {stored_bthd, w});
  ASSERT_EQ(cache.lastRun().segments.size(), 2u) << cache.lastRun().toString();
  EXPECT_TRUE(cache.lastRun().segments[0].view) << cache.lastRun().toString();
  EXPECT_EQ(cache.lastRun().segments[1].scheduler, SchedulerType::Matmul);
  EXPECT_EQ(cache.numCompiledKernels(), 1);
  EXPECT_SMELT_ERROR(cache.lastExecutor(0), "ran no kernel");
  runAndCheck(cache, {randn({b, h, t, d}), w});
  ASSERT_EQ(cache.lastRun().segments.size(), 2u) << cache.lastRun().toString();
  EXPECT_FALSE(cache.lastRun().segments[0].view) << cache.lastRun().toString();
  EXPECT_EQ(cache.lastRun().segments[0].scheduler, SchedulerType::Pointwise);
}

// q = (x @ w).view(B, T, H, D).transpose(1, 2), returned in the layout of
// the matmul's result (stride order [B, T, H, D]): the view segment writes a
// fusion output, but it is the only reader of the matmul's fresh result, so
// the output is that buffer (no copy kernel). When the matmul's result is an
// output too, q would alias it: then the copy runs.
TEST(FusionExecutorCache, OutputThatOnlyViewsAFreshIntermediateIsThatBuffer) {
  const int64_t b = 2, t = 8, h = 2, d = 16;
  for (bool also_rows : {false, true}) {
    SCOPED_TRACE(also_rows ? "the matmul result is an output too" : "q only");
    auto owned = std::make_unique<Fusion>();
    {
      FusionGuard guard(owned.get());
      TensorView* x = makeConcreteTensor({b * t, 32});
      TensorView* w = makeConcreteTensor({32, h * d});
      owned->addInput(x);
      owned->addInput(w);
      TensorView* rows = matmul(x, w);
      TensorView* q = permute(reshape(rows, {IntExpr(b), IntExpr(t), IntExpr(h), IntExpr(d)}), {0, 2, 1, 3});
      owned->addOutput(permute(q, {0, 2, 1, 3}));  // q's memory order: add_output's stride_order
      if (also_rows) owned->addOutput(rows);
    }
    FusionExecutorCache cache(std::move(owned));
    const std::vector<at::Tensor> out = runAndCheck(cache, {randn({b * t, 32}), randn({32, h * d})});
    ASSERT_EQ(cache.lastRun().segments.size(), 2u) << cache.lastRun().toString();
    EXPECT_EQ(cache.lastRun().segments[1].view, !also_rows) << cache.lastRun().toString();
    if (also_rows) {
      EXPECT_NE(out[0].data_ptr(), out[1].data_ptr());
    }
  }
}

// nn.Linear on [B, T, C]: (x @ w + bias).view(B, T, N). The matmul scheduler
// takes the bias but no reshape: the segmenter grows the matmul's epilogue
// first, so only the view is left (no kernel), not a pointwise segment
// holding the bias and the view.
TEST(FusionExecutorCache, LinearThenViewIsOneMatmulKernel) {
  auto owned = std::make_unique<Fusion>();
  {
    FusionGuard guard(owned.get());
    TensorView* x = makeConcreteTensor({16, 32});
    TensorView* w = makeConcreteTensor({32, 96});
    TensorView* bias = makeConcreteTensor({96});
    owned->addInput(x);
    owned->addInput(w);
    owned->addInput(bias);
    TensorView* y = add(matmul(x, w), broadcast(bias, {true, false}));
    owned->addOutput(reshape(y, {IntExpr(2), IntExpr(8), IntExpr(96)}));
  }
  FusionExecutorCache cache(std::move(owned));
  runAndCheck(cache, {randn({16, 32}), randn({32, 96}), randn({96})});
  const FusionRun& run = cache.lastRun();
  ASSERT_EQ(run.segments.size(), 2u) << run.toString();
  EXPECT_EQ(run.segments[0].scheduler, SchedulerType::Matmul) << run.toString();
  EXPECT_TRUE(run.segments[1].view) << run.toString();
  EXPECT_EQ(cache.numCompiledKernels(), 1);
}

// A segment that only moves data but writes an output of the fusion from an
// input runs its kernel: a fusion output must not alias an input.
TEST(FusionExecutorCache, FusionOutputsAreNeverViewsOfInputs) {
  FusionExecutorCache cache(examples::fusionOf({4}, [](const std::vector<TensorView*>& in) {
    return permute(in[0], {0, 2, 1, 3});
  }));
  const at::Tensor x = randn({2, 8, 2, 16}).permute({0, 2, 1, 3});
  const std::vector<at::Tensor> out = runAndCheck(cache, {x});
  EXPECT_FALSE(cache.lastRun().segments.at(0).view);
  EXPECT_NE(out[0].data_ptr(), x.data_ptr());
}

TEST(FusionExecutorCache, SignatureNamesClassesContiguityAlignmentAndDevice) {
  at::Tensor x = randn({5, 1, 64});
  EXPECT_EQ(inputSignature({x, at::scalar_tensor(2.0, at::kDouble)}),
            "float[b3,1,b6]{c,c,c}@16:cpu; double[]{}@16:cpu");
  at::Tensor t = randn({6, 9}).t();
  at::Tensor offset = randn({65}).slice(0, 1, 65);
  EXPECT_EQ(inputSignature({t, offset}), "float[b4,b3]{n,n}@16:cpu; float[b6]{c}@4:cpu");
}

TEST(FusionExecutorCache, NonContiguousAndMisalignedInputs) {
  FusionExecutorCache cache(addRelu());
  at::Tensor transposed = randn({9, 12}).t();
  at::Tensor shifted = randn({12 * 9 + 1}).slice(0, 1, 12 * 9 + 1).view({12, 9});
  runAndCheck(cache, {transposed, shifted});
  EXPECT_NE(cache.lastRun().segments[0].params.find("vectorized_inputs={}"), std::string::npos);
  runAndCheck(cache, {randn({12, 9}), randn({12, 9})});
  EXPECT_EQ(cache.numSignatures(), 2);
}

TEST(FusionExecutorCache, SoftmaxIsOnePersistentKernel) {
  FusionExecutorCache cache(examples::rowSoftmaxFusion());
  runAndCheck(cache, {randn({6, 100})});
  ASSERT_EQ(cache.lastRun().segments.size(), 1u);
  EXPECT_EQ(cache.lastRun().segments[0].scheduler, SchedulerType::Persistent);
  EXPECT_EQ(cache.lastExecutor(0).launchParams().block[0], 25);  // 100 floats as 25 float4
}

// sum(x * rowsum(x)[:, None], 0) and rowsum(x): two reductions, two kernels.
std::unique_ptr<Fusion> twoReductions() {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeContigTensor(2);
    fusion->addInput(x);
    TensorView* s = sum(x, {1});
    fusion->addOutput(sum(mul(x, broadcast(s, {false, true})), {0}));
    fusion->addOutput(s);
  }
  return fusion;
}

TEST(FusionExecutorCache, TwoReductionsRunAsTwoKernels) {
  FusionExecutorCache cache(twoReductions());
  runAndCheck(cache, {randn({9, 21})});
  expectSegments(cache, {SchedulerType::Reduction, SchedulerType::Reduction},
                 "segment 0 (reduction): T0 -> T1\n"
                 "segment 1 (reduction): T1, T0 -> T4\n");
}

// compileFor on meta stand-ins segments, schedules, lowers and compiles every
// segment, each lowered once (by the segmentation's check); the run of real inputs of those sizes and strides then compiles
// nothing and matches ATen. Other strides are another signature.
// A second process (its own caches, the same disk cache) finds the first
// one's segmentation and kernels on disk: no search, no check, no NVRTC for
// compileFor; the same segments and launches; the run's values match ATen.
// For CUDA inputs nothing is lowered (the launch description is on disk);
// for CPU ones compileFor lowers each kernel on the pool for the simulator,
// and the run lowers nothing. A heuristic override, which may
// change the groups, segments afresh; a corrupt entry is warned about and
// the fusion segmented again.
TEST(FusionExecutorCache, ASecondProcessReadsTheSegmentationAndKernelsFromDisk) {
  testing::ScopedKernelCacheDir disk;
  const at::Tensor x = randn({9, 21});
  const std::vector<at::Tensor> meta{x.to(at::kMeta)};
  KernelCache first_kernels;
  ExecutorOptions first_options;
  first_options.cache = &first_kernels;
  FusionExecutorCache first(twoReductions(), first_options);
  first.compileFor(meta, c10::Device(c10::kCPU));
  const FusionRun cold = first.lastRun();
  EXPECT_EQ(cold.segmentation.segmentations_from_disk, 0);
  EXPECT_GT(cold.cost().lower_ms, 0);
  EXPECT_EQ(cold.cost().nvrtc_compiles + cold.cost().disk_cache_hits, 2);
  EXPECT_EQ(disk.entries("segments").size(), 1u);
  EXPECT_EQ(disk.entries("launch").size(), 2u);

  auto second_process = [&](FusionExecutorCache::HeuristicOverride override_params) {
    auto kernels = std::make_unique<KernelCache>();
    ExecutorOptions options;
    options.cache = kernels.get();
    auto cache = std::make_unique<FusionExecutorCache>(twoReductions(), options);
    if (override_params) cache->setHeuristicOverride(override_params);
    cache->compileFor(meta, c10::Device(c10::kCPU));
    return std::make_pair(std::move(kernels), std::move(cache));
  };
  auto [kernels, second] = second_process({});
  const FusionRun warm = second->lastRun();
  EXPECT_EQ(warm.segmentation.segmentations_from_disk, 1);
  EXPECT_GT(warm.cost().lower_ms, 0);  // for the simulator, on the pool
  EXPECT_EQ(warm.segmentation.lower_ms, 0);  // no check
  EXPECT_EQ(warm.cost().nvrtc_compiles, 0);
  EXPECT_EQ(warm.cost().disk_cache_hits, 2);
  EXPECT_EQ(second->segmentation(warm.signature).toString(), first.segmentation(cold.signature).toString());
  ASSERT_EQ(warm.segments.size(), cold.segments.size());
  for (size_t s = 0; s < warm.segments.size(); ++s) {
    const KernelLaunchInfo& stored = second->lastExecutor(s).launchInfo();
    const std::string bytes = serializeLaunchInfo(first.lastExecutor(s).launchInfo());
    EXPECT_EQ(serializeLaunchInfo(stored), bytes);
    EXPECT_EQ(serializeLaunchInfo(parseLaunchInfo(bytes)), bytes);
    EXPECT_EQ(warm.segments[s].launch.toString(), cold.segments[s].launch.toString());
  }
  runAndCheck(*second, {x});
  EXPECT_EQ(second->lastRun().cost().lower_ms, 0);

  auto [override_kernels, overridden] = second_process([](HeuristicParams&) {});
  EXPECT_EQ(overridden->lastRun().segmentation.segmentations_from_disk, 0);

  const std::filesystem::path entry = disk.entries("segments").front();
  std::filesystem::resize_file(entry, std::filesystem::file_size(entry) - 3);
  ::testing::internal::CaptureStderr();
  auto [again_kernels, again] = second_process({});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("ignoring the corrupt segments cache entry " + entry.string()), std::string::npos)
      << warning;
  EXPECT_EQ(again->lastRun().segmentation.segmentations_from_disk, 0);
  EXPECT_GT(again->lastRun().segmentation.lower_ms, 0);  // the checks' lowerings
  runAndCheck(*again, {x});
}

TEST(FusionExecutorCache, CompileForMakesTheFirstRunCompileNothing) {
  testing::ScopedKernelCacheDir cold_disk;
  KernelCache kernels;  // not the process's: other tests compile these kernels too
  ExecutorOptions options;
  options.cache = &kernels;
  FusionExecutorCache cache(twoReductions(), options);
  const at::Tensor x = randn({9, 21});
  const std::vector<at::Tensor> meta = cache.compileFor({x.to(at::kMeta)}, c10::Device(c10::kCPU));
  ASSERT_EQ(meta.size(), 2u);
  EXPECT_TRUE(meta[0].is_meta());
  EXPECT_EQ(meta[0].sizes(), at::IntArrayRef({21}));
  EXPECT_EQ(meta[1].sizes(), at::IntArrayRef({9}));
  const FusionRun compiled = cache.lastRun();
  ASSERT_EQ(compiled.segments.size(), 2u);
  EXPECT_GT(compiled.segmentation.segment_ms, 0);
  EXPECT_GT(compiled.segmentation.lower_ms, 0);  // the checks' lowerings
  for (const SegmentRun& s : compiled.segments) {
    EXPECT_TRUE(s.compiled);
    // Lowered once, by the segmentation's check (in segmentation.lower_ms),
    // whose schedule and kernel IR the compile took as they were.
    EXPECT_EQ(s.cost.lower_ms, 0);
    EXPECT_EQ(s.cost.nvrtc_compiles + s.cost.disk_cache_hits, 1) << compiled.toString();
  }
  EXPECT_EQ(cache.numCompiledKernels(), 2);

  runAndCheck(cache, {x});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_EQ(cache.lastRun().segmentation.totalMs(), 0);
  for (const SegmentRun& s : cache.lastRun().segments) {
    EXPECT_FALSE(s.compiled);
    EXPECT_EQ(s.cost.lower_ms, 0);  // lowered by compileFor: the simulator reuses that kernel IR
    EXPECT_EQ(s.cost.nvrtc_compiles + s.cost.disk_cache_hits, 0);
  }
  EXPECT_EQ(cache.numCompiledKernels(), 2);
  const CompileCost total = cache.compileCost();
  EXPECT_EQ(total.nvrtc_compiles + total.disk_cache_hits, 2);
  EXPECT_EQ(total.lower_ms, compiled.segmentation.lower_ms);

  runAndCheck(cache, {randn({21, 9}).t()});  // column-major: a new signature
  EXPECT_TRUE(cache.lastRun().new_signature);
}

// `blocks` repeated blocks v = v @ w / rowsum(v @ w) + v (a transformer's
// layers in small): two segments per block, the blocks' kernels alike.
std::unique_ptr<Fusion> repeatedBlocks(int blocks, int64_t m, int64_t k) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* v = makeConcreteTensor({m, k});
  fusion->addInput(v);
  for (int b = 0; b < blocks; ++b) {
    TensorView* w = makeConcreteTensor({k, k});
    fusion->addInput(w);
    TensorView* h = matmul(v, w);
    v = add(div(h, broadcast(sum(h, {1}), {false, true})), v);
  }
  fusion->addOutput(v);
  return fusion;
}

// Issue 43: compileFor schedules the segments in order and hands each new
// kernel's lowering and NVRTC compile to the CompilePool, waiting once. The
// pool's compiles give what compiling one after another gives (a pool of no
// threads: each task runs as it is submitted): the same segments, kernels,
// cache keys, launches and outputs. Two caches of one fusion (a graph's
// equal fusions) compiled at once on the pool compile each kernel once: the
// KernelCache shares a compile in flight. A compile's error is the one the
// serial path reports, and a failed kernel is not kept.
TEST(FusionExecutorCache, CompileForCompilesTheSegmentsOnThePool) {
  testing::ScopedKernelCacheDir cold_disk;  // the serial cache compiles every kernel: the task counts below
  const int blocks = 3;
  const int64_t m = 8, k = 16;
  std::vector<at::Tensor> inputs = {randn({m, k})};
  for (int b = 0; b < blocks; ++b) inputs.push_back(randn({k, k}));
  std::vector<at::Tensor> meta;
  for (const at::Tensor& t : inputs) meta.push_back(t.to(at::kMeta));
  auto optionsFor = [](KernelCache& kernels, CompilePool& pool) {
    ExecutorOptions options;
    options.cache = &kernels;
    options.compile_pool = &pool;
    options.matmul = MatmulPolicy::Generated;
    return options;
  };

  CompilePool serial_pool(0), pool(4);
  KernelCache serial_kernels, kernels;
  FusionExecutorCache serial(repeatedBlocks(blocks, m, k), optionsFor(serial_kernels, serial_pool));
  FusionExecutorCache pooled(repeatedBlocks(blocks, m, k), optionsFor(kernels, pool));
  FusionExecutorCache twin(repeatedBlocks(blocks, m, k), optionsFor(kernels, pool));
  const std::vector<at::Tensor> serial_outputs = serial.compileFor(meta, c10::Device(c10::kCPU));
  auto twin_outputs = std::async(std::launch::async, [&] { return twin.compileFor(meta, c10::Device(c10::kCPU)); });
  const std::vector<at::Tensor> outputs = pooled.compileFor(meta, c10::Device(c10::kCPU));
  twin_outputs.get();

  const FusionRun& run = pooled.lastRun();
  const size_t segments = run.segments.size();
  ASSERT_EQ(segments, static_cast<size_t>(2 * blocks)) << run.toString();
  // A task preparing each kernel, then one compiling the NVRTC batch (a pool
  // of no threads: one batch). The pooled caches find every kernel on the
  // disk the serial one wrote: each kernel's preparing task does all of it.
  EXPECT_EQ(serial_pool.submitted(), static_cast<int64_t>(segments + 1));
  EXPECT_EQ(pool.submitted(), static_cast<int64_t>(2 * segments));
  EXPECT_LE(pool.peakRunning(), 4);
  EXPECT_EQ(run.cost().pool_compiles, static_cast<int64_t>(segments));
  EXPECT_EQ(run.toString(), serial.lastRun().toString());
  EXPECT_EQ(twin.lastRun().toString(), serial.lastRun().toString());
  for (size_t s = 0; s < segments; ++s) {
    EXPECT_TRUE(run.segments[s].compiled);
    EXPECT_EQ(pooled.lastExecutor(s).cacheKey(), serial.lastExecutor(s).cacheKey());
    EXPECT_EQ(twin.lastExecutor(s).cacheKey(), serial.lastExecutor(s).cacheKey());
    EXPECT_EQ(pooled.lastExecutor(s).cudaSource(), serial.lastExecutor(s).cudaSource());
  }
  // One compile per distinct kernel; the other cache's asks were hits.
  EXPECT_EQ(kernels.misses(), static_cast<int64_t>(segments));
  EXPECT_EQ(kernels.hits(), static_cast<int64_t>(segments));
  CompileCost both = pooled.compileCost();
  both += twin.compileCost();
  EXPECT_EQ(both.nvrtc_compiles + both.disk_cache_hits, static_cast<int64_t>(segments));
  ASSERT_EQ(outputs.size(), serial_outputs.size());
  EXPECT_EQ(outputs[0].sizes(), serial_outputs[0].sizes());
  EXPECT_EQ(outputs[0].strides(), serial_outputs[0].strides());

  // The run of real inputs finds every kernel ready, and matches ATen.
  runAndCheck(pooled, inputs);
  for (const SegmentRun& s : pooled.lastRun().segments) EXPECT_FALSE(s.compiled);

  // A kernel too large to launch fails in its compile (the launch's check):
  // the same error, naming the kernel, on the pool as one after another,
  // and again on a second try.
  auto failure = [&](CompilePool& on) {
    KernelCache failing_kernels;
    FusionExecutorCache cache(twoReductions(), optionsFor(failing_kernels, on));
    cache.setHeuristicOverride([](HeuristicParams& params) {
      if (auto* p = dynamic_cast<ReductionParams*>(&params)) p->block_y = 64;  // 128 x 64 threads
    });
    std::vector<std::string> errors;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const int64_t before = on.submitted();
      try {
        cache.compileFor({randn({9, 21}).to(at::kMeta)}, c10::Device(c10::kCPU));
        errors.push_back("no error");
      } catch (const Error& e) {
        EXPECT_GT(on.submitted(), before);  // it failed on the pool, not in scheduling
        errors.push_back(e.what());
      }
      errors.push_back(std::to_string(cache.numCompiledKernels()));
    }
    return errors;
  };
  const std::vector<std::string> serial_errors = failure(serial_pool);
  ASSERT_EQ(serial_errors.size(), 4u);
  EXPECT_NE(serial_errors[0].find("smelt_kernel_"), std::string::npos) << serial_errors[0];
  EXPECT_EQ(serial_errors[2], serial_errors[0]);
  EXPECT_EQ(failure(pool), serial_errors);
}

// compileFor hands NVRTC the new kernels of a run as one program per pool
// thread (runtime/nvrtc_batch.h), counted: each kernel is the one compiling
// it alone gives (source, ptxas's report), the values are ATen's. A second
// process (a new in-memory cache on the same disk cache) compiles no
// program; when one kernel of a batch is not on disk (its source changed),
// only that kernel is compiled, the others are read from disk.
TEST(FusionExecutorCache, CompileForCompilesOneNvrtcProgramPerPoolThread) {
  const int blocks = 3;
  const int64_t m = 8, k = 16;
  // Positive values: each block divides by a row sum, which randn's can
  // bring near 0 (then float rounding decides the check, not the kernels).
  std::vector<at::Tensor> inputs = {at::rand({m, k}) + 0.5};
  for (int b = 0; b < blocks; ++b) inputs.push_back(at::rand({k, k}) + 0.5);
  std::vector<at::Tensor> meta;
  for (const at::Tensor& t : inputs) meta.push_back(t.to(at::kMeta));
  const int64_t kernels = 2 * blocks;
  for (int threads : {0, 2}) {
    SCOPED_TRACE(threads);
    testing::ScopedKernelCacheDir cold_disk;
    CompilePool pool(threads);
    auto compileFresh = [&](int64_t* programs) {
      auto kernel_cache = std::make_shared<KernelCache>();  // a new process's
      ExecutorOptions options;
      options.cache = kernel_cache.get();
      options.compile_pool = &pool;
      options.matmul = MatmulPolicy::Generated;
      auto cache = std::make_shared<FusionExecutorCache>(repeatedBlocks(blocks, m, k), options);
      const int64_t before = nvrtcProgramsCompiled();
      cache->compileFor(meta, c10::Device(c10::kCPU));
      *programs = nvrtcProgramsCompiled() - before;
      return std::make_pair(kernel_cache, cache);  // the cache goes first
    };
    int64_t programs = 0;
    auto [cold_kernels, cold] = compileFresh(&programs);
    const FusionRun run = cold->lastRun();
    ASSERT_EQ(static_cast<int64_t>(run.segments.size()), kernels) << run.toString();
    EXPECT_EQ(programs, std::max(threads, 1));
    EXPECT_EQ(run.cost().nvrtc_compiles, kernels);
    for (size_t s = 0; s < run.segments.size(); ++s) {
      const FusionExecutor& executor = cold->lastExecutor(s);
      const CompiledKernel alone = compileCuda(executor.cudaSource(), executor.kernelName());
      EXPECT_EQ(executor.ptxasInfo().registers, alone.ptxas.registers) << s;
      EXPECT_EQ(executor.ptxasInfo().stack_frame_bytes, alone.ptxas.stack_frame_bytes) << s;
      EXPECT_EQ(executor.ptxasInfo().static_smem_bytes, alone.ptxas.static_smem_bytes) << s;
    }
    runAndCheck(*cold, inputs);

    auto [warm_kernels, warm] = compileFresh(&programs);
    EXPECT_EQ(programs, 0);
    EXPECT_EQ(warm->lastRun().cost().disk_cache_hits, kernels);
    runAndCheck(*warm, inputs);

    const FusionExecutor& changed = cold->lastExecutor(1);
    ASSERT_TRUE(std::filesystem::remove(kernelCacheEntryPath(
        cold_disk.path(), kernelCacheKey(changed.cudaSource(), changed.kernelName(), NvrtcOptions{}))));
    auto [again_kernels, again] = compileFresh(&programs);
    EXPECT_EQ(programs, 1);
    EXPECT_EQ(again->lastRun().cost().disk_cache_hits, kernels - 1);
    EXPECT_EQ(again->lastRun().cost().nvrtc_compiles, 1);
    EXPECT_EQ(again->lastExecutor(1).cudaSource(), changed.cudaSource());
    runAndCheck(*again, inputs);
  }
}

// rowsum(relu(a @ b)): the matmul kernel writes a @ b (T5) to a global
// intermediate, the reduction kernel applies relu and sums; both run in
// order.
TEST(FusionExecutorCache, MatmulThenReductionRunsAsTwoKernels) {
  FusionExecutorCache cache(examples::fusionOf({2, 2}, [](const std::vector<TensorView*>& in) {
    return sum(relu(matmul(in[0], in[1])), {1});
  }));
  runAndCheck(cache, {randn({19, 23}), randn({23, 45})});
  // The relu is the matmul's epilogue (ties in saved bytes go to the matmul).
  expectSegments(cache, {SchedulerType::Matmul, SchedulerType::Reduction},
                 "segment 0 (matmul): T0, T1 -> T6\n"
                 "segment 1 (reduction): T6 -> T7\n");
}

// Two rows of 65,536 floats: the heuristics split each row into 16 chunks
// (a partial kernel of 32 blocks, then a final kernel over the [2, 16]
// partial sums).
TEST(FusionExecutorCache, FewLongRowsRunAsPartialAndFinalKernels) {
  FusionExecutorCache cache(sumOver(1));
  runAndCheck(cache, {randn({2, 65536})});
  expectSegments(
      cache, {SchedulerType::Reduction, SchedulerType::Reduction},
      "segment 0 (reduction): T0 -> T1 (partial results, rows in at most 16 chunks)\n"
      "segment 1 (reduction): T0 -> T1 (reduces the partial results)\n");
  EXPECT_EQ(cache.lastExecutor(0).launchParams().grid[0], 32);
  // Rows of another length in the same size class keep the segmentation:
  // 15 chunks of 3,333 (the largest divisor of 49,995 up to 16).
  runAndCheck(cache, {randn({2, 49995})});
  EXPECT_FALSE(cache.lastRun().new_signature);
  EXPECT_EQ(cache.lastExecutor(0).launchParams().grid[0], 30);
}

// A segmentation on disk is used only where its groups make the same
// segments: 130 and 200 rows of 65,536 are one signature, but 130 rows split
// into partial and final kernels (fewer blocks than SMs) and 200 do not, so
// a process compiling 200 rows after one that compiled 130 segments afresh
// (the unsplit reduction was never checked), stores that, and a third finds it.
TEST(FusionExecutorCache, ASegmentationOnDiskIsUsedOnlyWhereItMakesTheSameSegments) {
  testing::ScopedKernelCacheDir disk;
  auto compileIn = [](int64_t rows) {
    auto kernels = std::make_unique<KernelCache>();
    ExecutorOptions options;
    options.cache = kernels.get();
    auto cache = std::make_unique<FusionExecutorCache>(sumOver(1), options);
    cache->compileFor({at::empty({rows, 65536}, at::TensorOptions().dtype(at::kFloat).device(at::kMeta))},
                      c10::Device(c10::kCPU));
    return std::make_pair(std::move(kernels), std::move(cache));
  };
  auto [first_kernels, first] = compileIn(130);
  auto [second_kernels, second] = compileIn(200);
  auto [third_kernels, third] = compileIn(200);
  EXPECT_EQ(first->lastRun().signature, second->lastRun().signature);
  EXPECT_EQ(first->lastRun().segments.size(), 2u) << first->lastRun().toString();
  EXPECT_EQ(first->lastRun().segmentation.segmentations_from_disk, 0);
  EXPECT_EQ(second->lastRun().segments.size(), 1u) << second->lastRun().toString();
  EXPECT_EQ(second->lastRun().segmentation.segmentations_from_disk, 0);
  EXPECT_EQ(third->lastRun().segments.size(), 1u) << third->lastRun().toString();
  EXPECT_EQ(third->lastRun().segmentation.segmentations_from_disk, 1);
}

// 32,768 rows of 4 floats summed over the rows: one block would do all the
// work; the heuristics split the columns into 8 chunks (partial rows of
// every 8th row, then their sum).
TEST(FusionExecutorCache, LongColumnsRunAsPartialAndFinalKernels) {
  FusionExecutorCache cache(sumOver(0));
  runAndCheck(cache, {randn({32768, 4})});
  expectSegments(
      cache, {SchedulerType::Reduction, SchedulerType::Reduction},
      "segment 0 (reduction): T0 -> T1 (partial results, rows in at most 8 chunks)\n"
      "segment 1 (reduction): T0 -> T1 (reduces the partial results)\n");
}

TEST(FusionExecutorCache, ScalarInputsAndHeuristicOverride) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* x = makeContigTensor(1);
    Scalar* alpha = symbolicScalar(DataType::Double);
    fusion->addInput(x);
    fusion->addInput(alpha);
    fusion->addOutput(mul(x, alpha));
  }
  FusionExecutorCache cache(std::move(fusion));
  cache.setHeuristicOverride([](HeuristicParams& params) {
    auto& p = dynamic_cast<PointwiseParams&>(params);
    p.vector_width = 2;
    p.block_x = 32;
    p.vectorized_outputs = {};
  });
  runAndCheck(cache, {randn({100}), at::scalar_tensor(0.5, at::kDouble)});
  EXPECT_EQ(cache.lastRun().segments[0].params,
            "PointwiseParams{vector_width=2, block=(32, 1), split_grid_y=false, "
            "vectorized_inputs={0}, vectorized_outputs={}}");
  EXPECT_EQ(cache.lastExecutor(0).launchParams().grid[0], 2);
  // A scalar's value is part of what a repeated run must match (a value may
  // set an extent); the kernel takes each run's value.
  const at::Tensor x = randn({100});
  runAndCheck(cache, {x, at::scalar_tensor(2.0, at::kDouble)});
  EXPECT_FALSE(cache.lastRun().repeated_inputs);
  runAndCheck(cache, {x, at::scalar_tensor(2.0, at::kDouble)});
  EXPECT_TRUE(cache.lastRun().repeated_inputs);
}

TEST(FusionExecutorCache, Errors) {
  auto scheduled = addRelu();
  scheduled->outputs()[0]->asTensor()->split(1, 4);
  EXPECT_SMELT_ERROR(FusionExecutorCache(std::move(scheduled)), "unscheduled fusion", "T3");
  FusionExecutorCache cache(addRelu());
  // Inputs are validated like FusionExecutor's, strides aside.
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2})}), "the fusion has 2 inputs",
                     "got 1");
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2}), randn({2})}),
                     "input 1 (T1) must have rank 2", "shape [2]");
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2}), randn({2, 2}).to(at::kDouble)}),
                     "input 1 (T1) must be a float tensor", "Double");
  EXPECT_SMELT_ERROR(cache.runFusionWithInputs({randn({2, 2}), randn({2, 3})}), "input 1 (T1)",
                     "dimension 1");
  EXPECT_EQ(cache.numSignatures(), 0);
}

}  // namespace
}  // namespace smelt
