#include "runtime/kernel_compile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <sstream>

#include "codegen/cuda_codegen.h"
#include "codegen/hopper_ops.h"
#include "codegen/vectorize.h"
#include "fusion/device_limits.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/output_layout.h"
#include "runtime/build_id.h"
#include "runtime/disk_kernel_cache.h"
#include "runtime/launch_info.h"

namespace smelt {
namespace {

// Shared memory up to this size can be a static array (no opt-in needed).
constexpr int64_t kStaticSharedMemoryLimit = 48 * 1024;
// Blocks at least this large ask ptxas for full occupancy (compileKernel).
constexpr int64_t kFullOccupancyMinThreads = 256;

// The tensor parameter a TMA map reads: an index into inputs, then outputs.
TensorMapParam tensorMapParam(const kir::Kernel& kernel, const kir::TensorMap& map) {
  std::vector<const kir::Buffer*> tensors = kernel.inputs;
  tensors.insert(tensors.end(), kernel.outputs.begin(), kernel.outputs.end());
  const auto it = std::find(tensors.begin(), tensors.end(), map.tensor);
  SMELT_INTERNAL_CHECK(it != tensors.end(), "tensor map ", map.name, " reads ", map.tensor->name,
                       ", which is not a kernel parameter");
  return {it - tensors.begin(), map.box_rows, map.box_cols, map.swizzle == kir::TmaSwizzle::Bytes128};
}

// How a kernel is generated and compiled first: its launch description so
// far (shared memory, source), codegen's and NVRTC's options.
struct KernelPlan {
  KernelLaunchInfo info;
  std::optional<int64_t> fixed_smem;
  CodegenOptions codegen;
  NvrtcOptions nvrtc;
};

KernelPlan planKernel(const kir::Kernel& kernel, const std::string& name, int arch, DataType index_type) {
  KernelPlan plan;
  KernelLaunchInfo& info = plan.info;
  info.shared_memory_bytes = sharedMemoryBytes(kernel);
  plan.fixed_smem = info.shared_memory_bytes.constant();
  info.static_shared_memory =
      plan.fixed_smem && *plan.fixed_smem > 0 && *plan.fixed_smem <= kStaticSharedMemoryLimit;
  plan.codegen.static_shared_memory = info.static_shared_memory;
  plan.codegen.index_type = index_type;
  plan.nvrtc.arch = arch;
  plan.nvrtc.arch_specific = info.arch_specific = codegen::needsArchSpecificTarget(kernel);
  // A block of 256 threads or more asks ptxas for the SM's full thread count
  // (e.g. 4 blocks of 512: at most 32 registers), kept unless that costs a
  // stack frame or spills; then the kernel is compiled without the request.
  int64_t threads = 1;
  for (const IntExpr& dim : kernel.launch.block) threads *= dim.constant().value_or(0);
  const int64_t max_threads = DeviceLimits::forArch(arch).max_threads_per_sm;
  if (threads >= kFullOccupancyMinThreads && max_threads % threads == 0) {
    plan.codegen.min_blocks_per_sm = max_threads / threads;
  }
  info.cuda_source = generateCuda(kernel, name, plan.codegen);
  return plan;
}

bool sameOptions(const NvrtcOptions& a, const NvrtcOptions& b) {
  return a.arch == b.arch && a.arch_specific == b.arch_specific && a.extra_options == b.extra_options;
}

// What a kernel's launch description is kept under in the disk cache: its
// executor key (the scheduled fusion, options, arch, index type) and the
// build that lowered it.
std::string launchEntryKey(const std::string& key) {
  return errorMessage("smelt build ", buildId(), "\n", key);
}

std::atomic<int64_t> stored_kernel_reads{0};

}  // namespace

std::string kernelNameFor(const std::string& key) {
  std::ostringstream os;
  os << "smelt_kernel_" << std::hex << std::setw(16) << std::setfill('0') << std::hash<std::string>{}(key);
  return os.str();
}

NvrtcRequest firstNvrtcRequest(const kir::Kernel& kernel, const std::string& name, int arch,
                               DataType index_type) {
  KernelPlan plan = planKernel(kernel, name, arch, index_type);
  return NvrtcRequest{std::move(plan.info.cuda_source), name, plan.nvrtc};
}

KernelEntry compileKernel(const kir::Kernel& kernel, const std::string& name, int arch,
                          DataType index_type, const PrecompiledKernel* precompiled) {
  KernelPlan plan = planKernel(kernel, name, arch, index_type);
  KernelLaunchInfo& info = plan.info;
  CompiledKernel compiled;
  if (precompiled != nullptr && precompiled->request.kernel_name == name &&
      precompiled->request.source == info.cuda_source &&
      sameOptions(precompiled->request.options, plan.nvrtc)) {
    compiled = precompiled->compiled;
    storeCompiledCuda(info.cuda_source, name, plan.nvrtc, compiled);
  } else {
    compiled = compileCudaCached(info.cuda_source, name, plan.nvrtc);
  }
  const PtxasInfo& ptxas = compiled.ptxas;
  if (plan.codegen.min_blocks_per_sm > 0 &&
      (ptxas.stack_frame_bytes > 0 || ptxas.spill_store_bytes > 0 || ptxas.spill_load_bytes > 0)) {
    plan.codegen.min_blocks_per_sm = 0;
    info.cuda_source = generateCuda(kernel, name, plan.codegen);
    const double first_ms = compiled.compile_ms;
    compiled = compileCudaCached(info.cuda_source, name, plan.nvrtc);
    compiled.compile_ms += first_ms;
  }

  if (kernel.smem_plan) info.smem_report = kernel.smem_plan->report_text;
  // A dynamic array is not ptxas's to count: then it must count nothing.
  checkPtxasSharedMemory(compiled, info.static_shared_memory ? *plan.fixed_smem : 0, info.smem_report);

  const VectorRequirements vectors = vectorRequirements(kernel);
  auto tensorParam = [&](const kir::Buffer* buffer) {
    auto vector = vectors.bytes.find(buffer);
    return TensorParam{buffer->name, buffer->dtype, buffer->shape,
                       vector == vectors.bytes.end() ? 0 : vector->second, expandedDims(*buffer)};
  };
  info.vector_conditions = vectors.conditions;
  for (const kir::Buffer* b : kernel.inputs) info.inputs.push_back(tensorParam(b));
  for (const kir::Buffer* b : kernel.outputs) info.outputs.push_back(tensorParam(b));
  for (const Scalar* s : kernel.scalar_inputs) info.scalars.push_back(ScalarParam{s->symbol(), s->dtype()});
  for (const auto& map : kernel.tensor_maps) info.tensor_maps.push_back(tensorMapParam(kernel, *map));
  for (int i = 0; i < 3; ++i) {
    info.grid[i] = kernel.launch.grid[i];
    info.block[i] = kernel.launch.block[i];
  }
  return KernelEntry(std::move(compiled), std::move(info));
}

std::optional<KernelEntry> loadStoredKernel(const std::string& key, const std::string& name, int arch) {
  const std::optional<std::filesystem::path> dir = kernelCacheDir();
  if (!dir) return std::nullopt;
  ++stored_kernel_reads;
  const auto start = std::chrono::steady_clock::now();
  std::optional<KernelLaunchInfo> info =
      loadCacheEntryAs(*dir, "launch", launchEntryKey(key), parseLaunchInfo);
  if (!info) return std::nullopt;
  NvrtcOptions nvrtc;
  nvrtc.arch = arch;
  nvrtc.arch_specific = info->arch_specific;
  std::optional<CompiledKernel> compiled = loadCachedKernel(*dir, kernelCacheKey(info->cuda_source, name, nvrtc));
  if (!compiled) return std::nullopt;
  compiled->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return KernelEntry(*std::move(compiled), *std::move(info));
}

int64_t storedKernelReads() { return stored_kernel_reads.load(); }

void storeKernel(const std::string& key, const KernelEntry& entry) {
  if (const std::optional<std::filesystem::path> dir = kernelCacheDir()) {
    storeCacheEntry(*dir, "launch", launchEntryKey(key), serializeLaunchInfo(entry.launch));
  }
}

}  // namespace smelt
