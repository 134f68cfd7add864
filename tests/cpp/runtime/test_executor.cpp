// FusionExecutor without a GPU: every case fusion compiled (NVRTC, ptxas
// check) and run on CPU tensors through the simulator against ATen; launch
// parameters; the kernel cache (hits neither lower nor compile, the key
// covers the schedule); every input error; "no CUDA device" only at launch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <sys/mman.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "common/smem_case_fusions.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "runtime/executor_test_util.h"
#include "runtime/launch_info.h"
#include "runtime/simulator/simulator.h"

namespace smelt {
namespace {

using testing::buildVectorizedCopy;
using testing::evaluateWithATen;
using testing::expectOutputsMatch;
using testing::randomInputs;

// ---------------------------------------------------------------------------
// Every case fusion on CPU tensors
// ---------------------------------------------------------------------------

class ExecutorCase : public ::testing::TestWithParam<cases::NamedCase> {};

TEST_P(ExecutorCase, SimulatedRunMatchesATen) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  GetParam().build();
  const std::vector<at::Tensor> inputs = randomInputs(fusion, 0, /*symbolic_extent=*/4);
  FusionExecutor fe;
  fe.compile(&fusion, inputs);
  const std::vector<at::Tensor> outputs = fe.run(inputs);
  expectOutputsMatch(fusion, outputs, evaluateWithATen(fusion, inputs), GetParam().name);
  EXPECT_TRUE(fe.simulationReport().clean()) << fe.simulationReport().toString();
  EXPECT_GT(fe.simulationReport().blocks_simulated, 0);

  // ptxas's shared memory is the plan: the whole of it when declared
  // statically, none when the array is dynamic.
  const LaunchParams& params = fe.launchParams();
  if (fe.launchInfo().static_shared_memory) {
    EXPECT_EQ(fe.ptxasInfo().static_smem_bytes, params.smem_bytes);
    EXPECT_EQ(params.dynamic_smem_bytes, 0);
  } else {
    EXPECT_EQ(fe.ptxasInfo().static_smem_bytes, 0);
    EXPECT_EQ(params.dynamic_smem_bytes, params.smem_bytes);
  }
  EXPECT_GT(fe.ptxasInfo().registers, 0);
  EXPECT_NE(fe.cudaSource().find(" " + fe.kernelName() + "("), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(SmemCases, ExecutorCase, ::testing::ValuesIn(cases::allCases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// Launch parameters and shared memory
// ---------------------------------------------------------------------------

// relu(a * s + b) on symbolic [N, M] inputs, merged and split by 128 into
// BIDx x TIDx; `s` a symbolic scalar input.
struct ScaledAdd {
  TensorView* a;
  TensorView* b;
};
ScaledAdd buildScaledAdd(DataType dtype = DataType::Float) {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeContigTensor(2, dtype);
  TensorView* b = makeContigTensor(2, dtype);
  Scalar* s = symbolicScalar(DataType::Float);
  fusion->addInput(a);
  fusion->addInput(s);
  fusion->addInput(b);
  TensorView* c = castOp(dtype, relu(add(mul(a, s), b)));
  fusion->addOutput(c);
  c->merge(0)->split(0, 128);
  c->axis(0)->parallelize(ParallelType::BIDx);
  c->axis(1)->parallelize(ParallelType::TIDx);
  propagateSchedule(c);
  inlineMost(fusion);
  return {a, b};
}

at::Tensor scaledAddReference(const at::Tensor& a, double s, const at::Tensor& b) {
  return at::relu(a.to(at::kFloat) * s + b.to(at::kFloat)).to(a.scalar_type());
}

TEST(Executor, ScalarInputIsAZeroDimTensor) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildScaledAdd();
  at::Tensor a = at::randn({10, 30});
  at::Tensor b = at::randn({10, 30});
  FusionExecutor fe;
  fe.compile(&fusion, {a, at::scalar_tensor(0.5), b});
  for (double s : {0.5, -2.0}) {
    // Any dtype of 0-dim tensor carries the value.
    auto outs = fe.run({a, at::scalar_tensor(s, at::kDouble), b});
    EXPECT_TRUE(at::allclose(outs[0], scaledAddReference(a, s, b))) << "s = " << s;
  }
}

TEST(Executor, LaunchParamsFollowTheInputSizes) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildScaledAdd();
  auto inputs = [](int64_t n, int64_t m) {
    return std::vector<at::Tensor>{at::randn({n, m}), at::scalar_tensor(1.0), at::randn({n, m})};
  };
  FusionExecutor fe;
  fe.compile(&fusion, inputs(10, 100));
  // ceilDiv(10 * 100, 128) blocks of 128 threads, no shared memory.
  EXPECT_EQ(fe.launchParams().toString(), "grid(8, 1, 1) block(128, 1, 1) smem 0 B (static)");
  const auto bigger = inputs(10, 300);
  auto outs = fe.run(bigger);
  EXPECT_EQ(fe.launchParams().grid[0], 24);
  EXPECT_EQ(fe.launchParams().block[0], 128);
  EXPECT_TRUE(at::allclose(outs[0], scaledAddReference(bigger[0], 1.0, bigger[2])));
  EXPECT_EQ(outs[0].sizes(), bigger[0].sizes());
}

TEST(Executor, TiledGemmLaunchAndStaticSharedMemory) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm();
  auto inputs = randomInputs(fusion);
  FusionExecutor fe;
  fe.compile(&fusion, inputs);
  const LaunchParams& p = fe.launchParams();
  EXPECT_EQ(p.grid[0], 2);
  EXPECT_EQ(p.grid[1], 2);
  EXPECT_EQ(p.block[0], 32);
  EXPECT_EQ(p.block[1], 32);
  // Asub, Bsub and Csub (4 KiB each) as the plan lays them out; ptxas agrees.
  EXPECT_TRUE(fe.launchInfo().static_shared_memory);
  EXPECT_EQ(p.smem_bytes, *fe.sharedMemoryPlan().plan.total_bytes.constant());
  EXPECT_EQ(fe.ptxasInfo().static_smem_bytes, p.smem_bytes);
  EXPECT_NE(fe.sharedMemoryReport().find("Asub"), std::string::npos) << fe.sharedMemoryReport();
}

TEST(Executor, SharedMemoryAbove48KiBIsDynamic) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPersistentRnnSlice(512, 256, 8);  // w_s: 64 rows x 256 floats per block
  auto inputs = randomInputs(fusion);
  FusionExecutor fe;
  fe.compile(&fusion, inputs);
  EXPECT_FALSE(fe.launchInfo().static_shared_memory);
  EXPECT_EQ(fe.launchParams().smem_bytes, 64 * 256 * 4);
  EXPECT_EQ(fe.launchParams().dynamic_smem_bytes, 64 * 256 * 4);
  EXPECT_EQ(fe.ptxasInfo().static_smem_bytes, 0);
  EXPECT_NE(fe.cudaSource().find("extern __shared__"), std::string::npos);
  expectOutputsMatch(fusion, fe.run(inputs), evaluateWithATen(fusion, inputs));
}

TEST(Executor, NonContiguousInputDeclaredSo) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  ScaledAdd t = buildScaledAdd();
  t.a->setContiguity({false, false});
  at::Tensor a = at::randn({30, 10}).t();  // strides (1, 10)
  at::Tensor b = at::randn({10, 30});
  FusionExecutor fe;
  fe.compile(&fusion, {a, at::scalar_tensor(2.0), b});
  auto outs = fe.run({a, at::scalar_tensor(2.0), b});
  EXPECT_TRUE(at::allclose(outs[0], scaledAddReference(a, 2.0, b)));
}

TEST(Executor, HalfAndBFloat16) {
  for (DataType dtype : {DataType::Half, DataType::BFloat16}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildScaledAdd(dtype);
    const auto type = testing::toScalarType(dtype);
    at::Tensor a = at::randn({7, 45}).to(type);
    at::Tensor b = at::randn({7, 45}).to(type);
    FusionExecutor fe;
    fe.compile(&fusion, {a, at::scalar_tensor(0.25), b});
    auto outs = fe.run({a, at::scalar_tensor(0.25), b});
    expectOutputsMatch(fusion, outs, {scaledAddReference(a, 0.25, b)}, toString(dtype));
  }
}

size_t countOf(const std::string& text, const std::string& piece) {
  size_t count = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++count;
  return count;
}

// buildVectorizedCopy() compiled for a [6, 8] example `a`.
struct CompiledVectorizedCopy {
  Fusion fusion;
  FusionExecutor fe;
  at::Tensor a = at::randn({6, 8});
  CompiledVectorizedCopy() {
    FusionGuard guard(&fusion);
    buildVectorizedCopy();
    fe.compile(&fusion, {a});
  }
};

TEST(Executor, VectorizedAccessesNeedAlignedInputs) {
  CompiledVectorizedCopy copy;
  FusionExecutor& fe = copy.fe;
  const at::Tensor& a = copy.a;
  EXPECT_EQ(countOf(fe.cudaSource(), "vectorized: 16-byte accesses"), 2u) << fe.cudaSource();
  EXPECT_EQ(fe.launchInfo().inputs[0].vector_bytes, 16);
  EXPECT_EQ(fe.launchInfo().outputs[0].vector_bytes, 16);
  EXPECT_TRUE(at::equal(fe.run({a})[0], a));

  // The host side of a CUDA launch checks alignment (the simulator needs none).
  EXPECT_NO_THROW(fe.prepareLaunch({a}));
  at::Tensor shifted = at::randn({6 * 8 + 1}).narrow(0, 1, 6 * 8).view({6, 8});
  EXPECT_SMELT_ERROR(fe.prepareLaunch({shifted}), "input 0 (T0) is read with 16-byte vector loads",
                     "is not 16-byte aligned");
  EXPECT_TRUE(at::equal(fe.run({shifted})[0], shifted));
  at::Tensor rows_of_10 = at::randn({6, 10}).narrow(1, 0, 8);
  EXPECT_SMELT_ERROR(fe.prepareLaunch({rows_of_10}),
                     "input 0 (T0) breaks what the kernel's vectorized (or cp.async) accesses assume: T0.stride[0] % 4 == 0 "
                     "(T0.stride[0] is 10, not a multiple of 4)");
  at::Tensor rows_of_12 = at::randn({6, 12}).narrow(1, 0, 8);
  EXPECT_NO_THROW(fe.prepareLaunch({rows_of_12}));
  EXPECT_TRUE(at::equal(fe.run({rows_of_12})[0], rows_of_12));
}

// A launch reuses the plan of the latest shapes (index type, launch, output
// shapes, the vector conditions' verdict); what depends on the data pointers
// is checked on every launch.
TEST(Executor, LaunchPlansAreKeptForTheLatestShapes) {
  CompiledVectorizedCopy copy;
  FusionExecutor& fe = copy.fe;
  const at::Tensor& a = copy.a;
  const int64_t made = fe.plansMade();
  const PreparedLaunch first = fe.prepareLaunch({a});
  const PreparedLaunch again = fe.prepareLaunch({at::randn({6, 8})});
  EXPECT_EQ(fe.plansMade(), made + 1);
  EXPECT_EQ(again.outputs[0].sizes(), first.outputs[0].sizes());
  EXPECT_EQ(again.outputs[0].strides(), first.outputs[0].strides());
  EXPECT_NE(again.outputs[0].data_ptr(), first.outputs[0].data_ptr());
  // Same sizes and strides, a misaligned pointer: the plan is reused and the
  // alignment still refused.
  at::Tensor shifted = at::randn({6 * 8 + 1}).narrow(0, 1, 6 * 8).view({6, 8});
  EXPECT_SMELT_ERROR(fe.prepareLaunch({shifted}), "is not 16-byte aligned");
  EXPECT_EQ(fe.plansMade(), made + 1);
  // Shapes that break a vector condition: refused each time, the plan kept.
  at::Tensor rows_of_10 = at::randn({6, 10}).narrow(1, 0, 8);
  for (int i = 0; i < 2; ++i) {
    EXPECT_SMELT_ERROR(fe.prepareLaunch({rows_of_10}), "T0.stride[0] is 10, not a multiple of 4");
  }
  EXPECT_EQ(fe.plansMade(), made + 2);
  // Other strides that meet the conditions make a plan of their own; the
  // values are right.
  at::Tensor rows_of_12 = at::randn({6, 12}).narrow(1, 0, 8);
  EXPECT_EQ(fe.prepareLaunch({rows_of_12}).outputs[0].strides(), first.outputs[0].strides());
  EXPECT_EQ(fe.plansMade(), made + 3);
  EXPECT_TRUE(at::equal(fe.run({rows_of_12})[0], rows_of_12));
}

TEST(Executor, MergedDimensionsVectorizeWithAScalarTail) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  testing::buildMergedVectorizedAdd();
  FusionExecutor fe;
  fe.compile(&fusion, {at::randn({6, 8})});
  EXPECT_EQ(countOf(fe.cudaSource(), "vectorized: 16-byte accesses, lane by lane across a bound"), 2u)
      << fe.cudaSource();
  std::vector<std::string> conditions;
  for (const VectorCondition& c : fe.launchInfo().vector_conditions) conditions.push_back(c.toString());
  // The innermost strides are the literal 1 (declared contiguous), so only
  // the row strides are conditions.
  EXPECT_EQ(conditions, (std::vector<std::string>{"T0.stride[0] == T0.size[1]", "T1.stride[0] == T0.size[1]"}));
  // Any contiguous input meets them, whatever its sizes (the rows need not
  // hold whole vectors: the merged index is one flat offset); a size-1
  // dimension's stride is normalized for the kernel.
  for (auto shape : {std::vector<int64_t>{6, 8}, std::vector<int64_t>{3, 5}, std::vector<int64_t>{1, 1031}}) {
    at::Tensor x = at::randn(shape);
    EXPECT_NO_THROW(fe.prepareLaunch({x}));
    EXPECT_TRUE(at::allclose(fe.run({x})[0], x + 1)) << at::IntArrayRef(shape);
  }
  EXPECT_NO_THROW(fe.prepareLaunch({at::randn({7, 1}).t()}));  // [1, 7] with strides (1, 1)
}

TEST(Executor, SimulatorFindingIsAnError) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm();
  auto inputs = randomInputs(fusion);
  FusionExecutor fe;
  fe.compile(&fusion, inputs);
  // Take out the first barrier (the RAW one after staging the tiles) of the
  // kernel IR the executor simulates.
  auto& kernel = const_cast<kir::Kernel&>(fe.kernel());
  std::function<bool(kir::StmtList&)> dropFirstSync = [&](kir::StmtList& list) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      if ((*it)->kind() == kir::StmtKind::BlockSync) {
        list.erase(it);
        return true;
      }
      if (auto* loop = dynamic_cast<kir::ForLoop*>(it->get()); loop && dropFirstSync(loop->body)) return true;
    }
    return false;
  };
  ASSERT_TRUE(dropFirstSync(kernel.body));
  EXPECT_SMELT_ERROR(fe.run(inputs), "the CPU simulator found errors", "RAW");
  EXPECT_FALSE(fe.simulationReport().clean());
}

// ---------------------------------------------------------------------------
// The kernel cache
// ---------------------------------------------------------------------------

// A second process (a fresh KernelCache over the same disk cache) finds the
// launch description and the cubin the first one stored: nothing is lowered
// or compiled, the launch is the same and the kernel runs as the first did.
// A corrupt launch entry is warned about and the kernel lowered again.
TEST(ExecutorCache, ASecondProcessFindsTheKernelOnDisk) {
  testing::ScopedKernelCacheDir disk;
  auto compileIn = [](KernelCache& process_cache, Fusion& fusion) {
    FusionGuard guard(&fusion);
    cases::buildTiledGemm();
    ExecutorOptions options;
    options.cache = &process_cache;
    auto fe = std::make_unique<FusionExecutor>();
    fe->compile(&fusion, randomInputs(fusion), options);
    return fe;
  };
  KernelCache first_process;
  Fusion first_fusion;
  auto first = compileIn(first_process, first_fusion);
  EXPECT_TRUE(first->isLowered());
  EXPECT_FALSE(first->compiledKernel().from_disk_cache);
  ASSERT_EQ(disk.entries("launch").size(), 1u);
  EXPECT_EQ(disk.entries("kernel").size(), 1u);

  KernelCache second_process;
  Fusion fusion;
  auto second = compileIn(second_process, fusion);
  EXPECT_FALSE(second->compiledFromCache());  // not in this process's cache
  EXPECT_FALSE(second->isLowered());
  EXPECT_TRUE(second->compiledKernel().from_disk_cache);
  EXPECT_EQ(second->cudaSource(), first->cudaSource());
  EXPECT_EQ(second->launchParams().toString(), first->launchParams().toString());
  EXPECT_EQ(serializeLaunchInfo(second->launchInfo()), serializeLaunchInfo(first->launchInfo()));
  const std::vector<at::Tensor> inputs = randomInputs(fusion, 3);
  expectOutputsMatch(fusion, second->run(inputs), evaluateWithATen(fusion, inputs));

  const std::filesystem::path entry = disk.entries("launch").front();
  std::filesystem::resize_file(entry, 40);
  KernelCache third_process;
  Fusion third_fusion;
  ::testing::internal::CaptureStderr();
  auto third = compileIn(third_process, third_fusion);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("ignoring the corrupt launch cache entry " + entry.string()), std::string::npos)
      << warning;
  EXPECT_TRUE(third->isLowered());
  EXPECT_EQ(third->cudaSource(), first->cudaSource());
}

TEST(ExecutorCache, HitNeitherLowersNorCompiles) {
  testing::ScopedKernelCacheDir cold_disk;
  KernelCache cache;
  ExecutorOptions options;
  options.cache = &cache;
  const CompiledKernel* first = nullptr;
  std::string first_key;
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    cases::buildTiledGemm();
    FusionExecutor fe;
    fe.compile(&fusion, randomInputs(fusion), options);
    EXPECT_FALSE(fe.compiledFromCache());
    EXPECT_TRUE(fe.isLowered());
    EXPECT_EQ(cache.misses(), 1);
    EXPECT_EQ(cache.hits(), 0);
    first = &fe.compiledKernel();
    first_key = fe.cacheKey();
  }  // the fusion and executor are gone; the cache entry does not refer to them

  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildTiledGemm();
  auto inputs = randomInputs(fusion, 7);
  FusionExecutor fe;
  fe.compile(&fusion, inputs, options);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_TRUE(fe.compiledFromCache());
  EXPECT_FALSE(fe.isLowered()) << "a cache hit must not lower the fusion";
  EXPECT_EQ(&fe.compiledKernel(), first) << "a cache hit must not compile again";
  EXPECT_EQ(fe.cacheKey(), first_key);
  EXPECT_EQ(fe.launchParams().grid[0], 2);
  // Running on CPU tensors needs the kernel IR, so the simulator lowers now.
  expectOutputsMatch(fusion, fe.run(inputs), evaluateWithATen(fusion, inputs));
  EXPECT_TRUE(fe.isLowered());
  EXPECT_EQ(cache.size(), 1u);
}

// One pointwise fusion with a cached copy of its input; each field changes
// one thing the generated kernel depends on.
struct Variant {
  ParallelType thread = ParallelType::TIDx;
  MemoryType cache_memory = MemoryType::Local;
  bool promote_reuse = false;
  bool inline_cache = true;
  bool contiguous = true;
  double offset = 1.0;
  DataType dtype = DataType::Float;
};

void buildVariant(const Variant& v) {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeContigTensor(2, v.dtype);
  if (!v.contiguous) a->setContiguity({false, true});
  fusion->addInput(a);
  TensorView* b = add(a, v.offset);
  fusion->addOutput(b);
  TensorView* a_cache = a->cacheAfter()->setMemoryType(v.cache_memory);
  b->merge(0)->split(0, 64);
  b->axis(0)->parallelize(ParallelType::BIDx);
  b->axis(1)->parallelize(v.thread);
  propagateSchedule(b);
  if (v.inline_cache) inlineMost(fusion);
  if (v.promote_reuse) a_cache->promoteReuse();
}

TEST(ExecutorCache, KeyCoversScheduleContiguityScalarsArchAndOptions) {
  KernelCache cache;
  std::vector<std::pair<std::string, Variant>> variants = {{"base", {}}};
  auto vary = [&](const char* what, auto change) {
    Variant v;
    change(v);
    variants.emplace_back(what, v);
  };
  vary("parallel type", [](Variant& v) { v.thread = ParallelType::TIDy; });
  vary("memory type", [](Variant& v) { v.cache_memory = MemoryType::Shared; });
  vary("promoteReuse", [](Variant& v) {
    v.cache_memory = MemoryType::Shared;
    v.promote_reuse = true;
  });
  vary("compute position", [](Variant& v) { v.inline_cache = false; });
  vary("contiguity", [](Variant& v) { v.contiguous = false; });
  // Differs in the 11th digit, below Scalar::toString's precision.
  vary("scalar value", [](Variant& v) { v.offset = 1.00000000001; });
  vary("dtype", [](Variant& v) { v.dtype = DataType::Double; });

  std::set<std::string> keys;
  auto compile = [&](const Variant& v, ExecutorOptions options) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    buildVariant(v);
    options.cache = &cache;
    FusionExecutor fe;
    fe.compile(&fusion, randomInputs(fusion, 0, 8), options);
    keys.insert(fe.cacheKey());
    return fe.compiledFromCache();
  };
  for (const auto& [what, v] : variants) EXPECT_FALSE(compile(v, {})) << what << " did not change the key";
  ExecutorOptions sm80;
  sm80.arch = 80;
  EXPECT_FALSE(compile({}, sm80)) << "the architecture did not change the key";
  ExecutorOptions conservative;
  conservative.lower.smem_hazards = SmemHazards::Conservative;
  EXPECT_FALSE(compile({}, conservative)) << "the lowering options did not change the key";
  const size_t distinct = variants.size() + 2;
  EXPECT_EQ(keys.size(), distinct);
  EXPECT_EQ(cache.misses(), static_cast<int64_t>(distinct));
  // The same fusion built again is a hit.
  EXPECT_TRUE(compile({}, {}));
  EXPECT_EQ(cache.hits(), 1);
}

// ---------------------------------------------------------------------------
// Index type: 32-bit index math per launch when everything fits
// ---------------------------------------------------------------------------

// `bytes` of address space reserved without memory: only the pages a kernel
// touches are ever backed, so a tensor can have offsets beyond 2^31 elements.
class SparseRegion {
 public:
  explicit SparseRegion(size_t bytes) : bytes_(bytes) {
    ptr_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~SparseRegion() {
    if (ptr_ != MAP_FAILED) munmap(ptr_, bytes_);
  }
  float* floats() const { return ptr_ == MAP_FAILED ? nullptr : static_cast<float*>(ptr_); }

 private:
  size_t bytes_;
  void* ptr_;
};

// A kernel's source with its name and the index_t typedef blanked out.
std::string normalizedSource(std::string source, const std::string& name) {
  for (const std::string& text : {name, std::string("typedef int index_t;"), std::string("typedef int64_t index_t;")}) {
    for (size_t at = source.find(text); at != std::string::npos; at = source.find(text, at)) {
      source.replace(at, text.size(), "@");
    }
  }
  return source;
}

TEST(ExecutorIndexType, NormalLaunchIs32BitInTheSourceAndTheSimulator) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildScaledAdd();
  const at::Tensor a = at::randn({10, 30});
  const at::Tensor b = at::randn({10, 30});
  FusionExecutor fe;
  fe.compile(&fusion, {a, at::scalar_tensor(0.5), b});
  EXPECT_EQ(fe.indexType(), DataType::Int32);
  const std::string& cuda = fe.cudaSource();
  EXPECT_NE(cuda.find("typedef int index_t;"), std::string::npos);
  EXPECT_NE(cuda.find("index_t size[N];"), std::string::npos);
  EXPECT_EQ(cuda.find("int64_t("), std::string::npos) << cuda;
  EXPECT_NE(fe.cacheKey().find("index=int32"), std::string::npos);
  const auto outs = fe.run({a, at::scalar_tensor(0.5), b});
  EXPECT_TRUE(at::allclose(outs[0], scaledAddReference(a, 0.5, b)));
  EXPECT_EQ(fe.indexType(), DataType::Int32);
}

// Compile for a shape (meta tensors): 2^31 elements need 64-bit indices;
// both variants are cached under their own keys, and each launch picks its own.
TEST(ExecutorIndexType, CacheHoldsBothVariantsAndEachLaunchPicksItsOwn) {
  KernelCache cache;
  ExecutorOptions options;
  options.cache = &cache;
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildScaledAdd();
  const auto meta = at::device(at::kMeta);
  const std::vector<at::Tensor> huge = {at::empty({int64_t{1} << 16, int64_t{1} << 15}, meta),
                                        at::scalar_tensor(1.0),
                                        at::empty({int64_t{1} << 16, int64_t{1} << 15}, meta)};
  const std::vector<at::Tensor> small = {at::randn({4, 5}), at::scalar_tensor(2.0), at::randn({4, 5})};
  FusionExecutor fe;
  fe.compile(&fusion, huge, options);
  EXPECT_EQ(fe.indexType(), DataType::Int);
  EXPECT_EQ(fe.indexTypeFor(small), DataType::Int32);
  const std::string key64 = fe.cacheKey();
  const std::string cuda64 = fe.cudaSource();
  const std::string name64 = fe.kernelName();
  EXPECT_NE(cuda64.find("typedef int64_t index_t;"), std::string::npos);
  EXPECT_EQ(fe.launchParams().grid[0], (int64_t{1} << 31) / 128);
  EXPECT_EQ(cache.size(), 1u);

  const auto outs = fe.run(small);  // compiles the 32-bit variant
  EXPECT_TRUE(at::allclose(outs[0], scaledAddReference(small[0], 2.0, small[2])));
  EXPECT_EQ(fe.indexType(), DataType::Int32);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_NE(fe.cacheKey(), key64);
  EXPECT_NE(fe.cudaSource(), cuda64);
  EXPECT_NE(fe.cudaSource().find("typedef int index_t;"), std::string::npos);
  // The same code, index_t and the name apart.
  EXPECT_EQ(normalizedSource(fe.cudaSource(), fe.kernelName()), normalizedSource(cuda64, name64));

  // Both are now cached: running either again compiles nothing.
  fe.run(huge);
  EXPECT_EQ(fe.indexType(), DataType::Int);
  fe.run(small);
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.hits(), 0);
  // A second executor finds the variant its example inputs need.
  FusionExecutor again;
  again.compile(&fusion, small, options);
  EXPECT_TRUE(again.compiledFromCache());
  EXPECT_EQ(again.indexType(), DataType::Int32);
  EXPECT_EQ(cache.hits(), 1);
}

// The simulator runs the 64-bit variant on a tensor whose second row starts
// 2^31 elements in (its storage is reserved address space, two pages of it
// backed) and matches ATen; the same kernel IR simulated as the 32-bit
// variant stops with the overflow.
TEST(ExecutorIndexType, OffsetsBeyondInt32RunAs64BitInTheSimulator) {
  const int64_t row_stride = int64_t{1} << 31;
  SparseRegion region((row_stride + 64) * sizeof(float));
  if (region.floats() == nullptr) GTEST_SKIP() << "cannot reserve 8 GiB of address space";
  Fusion fusion;
  FusionGuard guard(&fusion);
  Variant v;
  v.contiguous = false;
  buildVariant(v);
  const at::Tensor a = at::from_blob(region.floats(), {2, 7}, {row_stride, 1}, at::kFloat);
  a.select(0, 0).copy_(at::arange(7, at::kFloat));
  a.select(0, 1).copy_(at::arange(7, at::kFloat) * -3);
  FusionExecutor fe;
  fe.compile(&fusion, {at::randn({3, 7})});
  EXPECT_EQ(fe.indexType(), DataType::Int32);
  EXPECT_EQ(fe.indexTypeFor({a}), DataType::Int);
  const auto outs = fe.run({a});
  EXPECT_EQ(fe.indexType(), DataType::Int);
  EXPECT_TRUE(fe.simulationReport().clean()) << fe.simulationReport().toString();
  EXPECT_TRUE(at::equal(outs[0], a + 1.0));

  sim::SimOptions narrow;
  narrow.index_type = DataType::Int32;
  EXPECT_SMELT_ERROR(sim::simulate(fe.kernel(), {a}, {}, {}, narrow),
                     "index arithmetic overflows the 32-bit index type");
}

// ---------------------------------------------------------------------------
// Input errors
// ---------------------------------------------------------------------------

class ExecutorErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    guard_ = std::make_unique<FusionGuard>(&fusion_);
    buildScaledAdd();
    fe_.compile(&fusion_, {at::randn({4, 5}), at::scalar_tensor(1.0), at::randn({4, 5})});
  }
  Fusion fusion_;
  std::unique_ptr<FusionGuard> guard_;
  FusionExecutor fe_;
  at::Tensor s_ = at::scalar_tensor(1.0);
};

TEST_F(ExecutorErrors, WrongNumberOfInputs) {
  EXPECT_SMELT_ERROR(fe_.run({at::randn({4, 5})}), "the fusion has 3 inputs (T0, s0, T1), got 1");
}

TEST_F(ExecutorErrors, WrongRank) {
  EXPECT_SMELT_ERROR(fe_.run({at::randn({20}), s_, at::randn({4, 5})}),
                     "input 0 (T0) must have rank 2", "shape [20]");
}

TEST_F(ExecutorErrors, WrongDtype) {
  EXPECT_SMELT_ERROR(fe_.run({at::randn({4, 5}), s_, at::randn({4, 5}, at::kDouble)}),
                     "input 2 (T1) must be a float tensor, got Double");
}

TEST_F(ExecutorErrors, MixedDevices) {
  EXPECT_SMELT_ERROR(fe_.run({at::randn({4, 5}), s_, at::empty({4, 5}, at::device(at::kMeta))}),
                     "input 2 (T1) is on meta but input 0 (T0) is on cpu", "same device");
}

// Meta inputs compile only: nothing runs, the outputs are meta tensors of
// the launch's sizes (compile for a shape, as nvFuser schedules on meta).
TEST_F(ExecutorErrors, MetaInputsCompileWithoutRunning) {
  auto meta = at::device(at::kMeta);
  std::vector<at::Tensor> outs = fe_.run({at::empty({4, 5}, meta), s_, at::empty({4, 5}, meta)});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].is_meta());
  EXPECT_EQ(outs[0].sizes(), at::IntArrayRef({4, 5}));
  EXPECT_GE(fe_.launchParams().block[0], 1);  // the launch was evaluated
}

TEST_F(ExecutorErrors, SizesThatTheFusionMapsTogetherDiffer) {
  EXPECT_SMELT_ERROR(fe_.run({at::randn({4, 5}), s_, at::randn({4, 6})}),
                     "input 2 (T1) dimension 1 has size 6 but input 0 (T0) dimension 1 has size 5");
}

TEST_F(ExecutorErrors, StrideTheDeclaredContiguityForbids) {
  at::Tensor transposed = at::randn({5, 4}).t();
  EXPECT_SMELT_ERROR(fe_.run({transposed, s_, at::randn({4, 5})}),
                     "input 0 (T0) dimension 1 has stride 4 but the fusion declares it contiguous, "
                     "which needs stride 1");
  // A row slice keeps rows contiguous but steps over the skipped columns.
  at::Tensor sliced = at::randn({4, 8}).narrow(1, 0, 5);
  EXPECT_SMELT_ERROR(fe_.run({at::randn({4, 5}), s_, sliced}),
                     "input 2 (T1) dimension 0 has stride 8", "needs stride 5");
  // Size-1 dimensions may have any stride.
  at::Tensor one_row = at::randn({5, 1}).t();
  EXPECT_NO_THROW(fe_.run({one_row, s_, at::randn({1, 5})}));
}

TEST_F(ExecutorErrors, ScalarNotZeroDim) {
  EXPECT_SMELT_ERROR(fe_.run({at::randn({4, 5}), at::ones({1}), at::randn({4, 5})}),
                     "input 1 (s0) is a scalar: pass it as a 0-dim tensor");
}

TEST_F(ExecutorErrors, UndefinedAndEmptyTensors) {
  EXPECT_SMELT_ERROR(fe_.run({at::Tensor(), s_, at::randn({4, 5})}), "input 0 (T0) is an undefined tensor");
}

// An empty input launches no kernel: the outputs come from ATen, empty here.
TEST_F(ExecutorErrors, EmptyTensorsGiveEmptyOutputs) {
  std::vector<at::Tensor> outs = fe_.run({at::randn({0, 5}), s_, at::randn({0, 5})});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].sizes(), at::IntArrayRef({0, 5}));
  EXPECT_EQ(outs[0].scalar_type(), at::kFloat);
  // Sizes are still checked against each other.
  EXPECT_ANY_THROW(fe_.run({at::randn({0, 5}), s_, at::randn({4, 5})}));
}

TEST(ExecutorInputErrors, ConstantExtent) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPointwiseNonDivisible();  // a and b are [10, 100]
  FusionExecutor fe;
  fe.compile(&fusion, randomInputs(fusion));
  EXPECT_SMELT_ERROR(fe.run({at::randn({10, 100}), at::randn({10, 99})}),
                     "input 1 (T1) dimension 1 must have size 100 (fixed by the fusion), got 99");
}

TEST(ExecutorInputErrors, SizesMappedThroughAReduction) {
  // out = sum(x, {1}) + y: x's rows and y's elements must agree.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  TensorView* y = makeContigTensor(1);
  fusion.addInput(x);
  fusion.addInput(y);
  fusion.addOutput(add(sum(x, {1}), y));
  inlineMost(&fusion);  // unscheduled otherwise: serial loops in one thread
  FusionExecutor fe;
  at::Tensor xs = at::randn({3, 4});
  at::Tensor ys = at::randn({3});
  fe.compile(&fusion, {xs, ys});
  EXPECT_TRUE(at::allclose(fe.run({xs, ys})[0], xs.sum(1) + ys));
  EXPECT_SMELT_ERROR(fe.run({at::randn({3, 4}), at::randn({4})}),
                     "input 1 (T1) dimension 0 has size 4 but input 0 (T0) dimension 0 has size 3");
}

TEST(ExecutorInputErrors, NotCompiled) {
  FusionExecutor fe;
  EXPECT_SMELT_ERROR(fe.run({}), "FusionExecutor::run: call compile() first");
  EXPECT_SMELT_ERROR(fe.launchParams(), "call compile() first");
}

// ---------------------------------------------------------------------------
// Without a GPU: compiling and simulating work; a launch says why it cannot
// ---------------------------------------------------------------------------

TEST(ExecutorWithoutGpu, NoCudaDeviceOnlyWhenLaunching) {
  if (cuda::deviceAvailable()) GTEST_SKIP() << "a CUDA device is present";
  Fusion fusion;
  FusionGuard guard(&fusion);
  buildScaledAdd();
  std::vector<at::Tensor> inputs = {at::randn({4, 5}), at::scalar_tensor(1.0), at::randn({4, 5})};
  FusionExecutor fe;
  fe.compile(&fusion, inputs);  // sm_90, no driver needed
  EXPECT_EQ(fe.compiledKernel().arch, 90);
  fe.run(inputs);  // the simulator
  // The host side of a CUDA launch works on any tensors ...
  PreparedLaunch prepared = fe.prepareLaunch(inputs);
  EXPECT_EQ(prepared.arguments.size(), 4u);  // T0, T1, the output, s0
  EXPECT_EQ(prepared.outputs.at(0).sizes(), inputs[0].sizes());
  // ... the launch itself needs the device.
  EXPECT_SMELT_ERROR(fe.launch(prepared), "no CUDA device: ");

  // A fusion without inputs aimed at a CUDA device: compiles, then fails at run.
  Fusion no_inputs;
  FusionGuard guard2(&no_inputs);
  cases::buildSimpleCase();
  ExecutorOptions on_gpu;
  on_gpu.device = at::Device(at::kCUDA);
  FusionExecutor fe2;
  fe2.compile(&no_inputs, {}, on_gpu);
  EXPECT_SMELT_ERROR(fe2.run({}), "no CUDA device: ");
}

}  // namespace
}  // namespace smelt
