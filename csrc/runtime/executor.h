// FusionExecutor: compiles one fusion (scheduled, or lowered as it stands) and
// runs it on at::Tensor.
//
//   FusionExecutor fe;
//   fe.compile(&fusion, {t0, t1});       // lower, generate CUDA, NVRTC (cached)
//   std::vector<at::Tensor> outs = fe.run({t0, t1});
//
// Inputs: one at::Tensor per fusion input, in the fusion's input order. A
// scalar fusion input is passed as a 0-dim tensor (on any device; its value
// is read on the host). Inputs are checked against the fusion's definition
// (input_validation.h) and, for vectorized accesses, for alignment; every
// failure is a smelt::Error naming the input.
//
// Devices:
//   * CUDA tensors: the kernel compiled with NVRTC runs on torch's current
//     stream of the tensors' device; outputs are allocated there with ATen.
//   * CPU tensors: the kernel IR runs in the CPU simulator with race
//     detection (runtime/simulator). This is the reference/testing path, not
//     a fast one: a race, out-of-bounds access, read of never-written shared
//     memory or divergent barrier is a smelt::Error with the simulator's
//     report.
//   A fusion without tensor inputs runs on ExecutorOptions::device.
// The CUDA kernel is compiled in both cases, so ptxas's check applies to
// every compiled fusion: when the planned shared memory is a constant of at
// most 48 KiB the array is declared statically and ptxas must report exactly
// the planned bytes; otherwise it is dynamic and ptxas must report none.
//
// Index type: each launch picks 32-bit index arithmetic when every size and
// offset of its tensors fits (chooseIndexType, runtime/index_type.h), else
// 64-bit. The two are separate kernel variants (CodegenOptions::index_type),
// each compiled the first time a launch needs it; compile() compiles the one
// its example inputs need. CPU runs simulate the chosen variant (32-bit index
// arithmetic that overflows is an error there).
//
// Caching: compile() builds a key from the fusion (fusionCacheKey: math,
// schedule, declared contiguity, scalars), the target architecture, the
// lowering options and the index type, and looks it up in a KernelCache
// (process-wide unless ExecutorOptions::cache says otherwise). A hit neither
// lowers nor compiles for CUDA inputs (CPU inputs still lower: the simulator
// runs the kernel IR). A miss looks in the disk cache (disk_kernel_cache.h)
// for the launch description a process of the same build stored under that
// key, and for its cubin: found, nothing is lowered or compiled either (a
// second process compiling a model pays neither); otherwise the fusion is
// lowered and compiled, and both are stored.
//
// Lifetime: the fusion must outlive the executor and stay unchanged while it
// is used (the kernel IR refers to its tensors and expressions).
//
// Threads: once compiled, run(), prepareLaunch(), launch() and kernel() may
// be called from several threads at once (the Python frontend shares one
// executor per fusion and device); compile() must not overlap them. The
// "latest run" accessors then describe one of the concurrent runs.
#pragma once

#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "fusion/fusion.h"
#include "lower/kir.h"
#include "lower/lower_context.h"
#include "runtime/input_validation.h"
#include "runtime/kernel_arguments.h"
#include "runtime/kernel_cache.h"
#include "runtime/kernel_compile.h"
#include "runtime/simulator/sim_report.h"
#include "scheduler/runtime_info.h"

namespace smelt {

class GpuLower;
class CompilePool;
namespace alloc_reuse {
struct SharedMemoryPlan;
}  // namespace alloc_reuse

struct ExecutorOptions {
  LowerOptions lower;
  // Compute capability (major*10+minor) to compile for; 0: the CUDA inputs'
  // device, else device 0, else sm_90 when there is no GPU.
  int arch = 0;
  sim::SimOptions simulator;
  // Where a fusion without tensor inputs runs: CPU (the simulator) or a CUDA
  // device ("cuda" means cuda:0). With tensor inputs, their device decides.
  c10::Device device = c10::Device(c10::kCPU);
  // nullptr: FusionExecutor::globalCache().
  KernelCache* cache = nullptr;
  // Where FusionExecutorCache::compileFor lowers and compiles its segments'
  // kernels; nullptr: CompilePool::global().
  CompilePool* compile_pool = nullptr;
  // Who computes the matmuls of automatically scheduled fusions
  // (scheduler/matmul/matmul_choice.h): by the measured rules, or forced.
  MatmulPolicy matmul = MatmulPolicy::Auto;
};

// The compute capability kernels for inputs on `device` are compiled for:
// options.arch when set, else the device's (device 0 for CPU inputs), else
// sm_90 when there is no GPU. The schedulers' heuristics target it too.
int targetArch(const ExecutorOptions& options, c10::Device device);
// targetArch, whether `device` is a GPU, and the options' matmul policy.
ExecutionTarget executionTarget(const ExecutorOptions& options, c10::Device device);

// What of `options` and the target architecture decides a kernel, as text
// for cache keys ("sm_90 smem_limit=... hazards=precise allocator=best").
std::string optionsKey(const ExecutorOptions& options, int arch);

// The outputs a FusionExecutor of `fusion` gives for `inputs`, as meta
// tensors of the sizes, strides and dtypes it allocates (an expanded
// dimension a stride-0 view), from the fusion's output extents alone:
// nothing is lowered or compiled.
std::vector<at::Tensor> metaOutputsOf(const Fusion& fusion, const std::vector<at::Tensor>& inputs);

// The launch configuration for given inputs, evaluated from the kernel's
// symbolic launch dimensions and shared-memory plan.
struct LaunchParams {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  // Bytes passed to cuLaunchKernel (0 when the array is declared statically).
  int64_t dynamic_smem_bytes = 0;
  // The planned shared memory per block, static or dynamic.
  int64_t smem_bytes = 0;
  std::string toString() const;
};

// A CUDA launch prepared on the host (FusionExecutor::prepareLaunch).
struct PreparedLaunch {
  std::shared_ptr<CachedKernel> kernel;  // the variant of the launch's index type
  DataType index_type = DataType::Int;
  LaunchParams params;
  KernelArguments arguments;  // points into `outputs`' and the inputs' storage
  std::vector<at::Tensor> outputs;
  c10::Device device = c10::Device(c10::kCPU);
};

// What a launch derives from its inputs' sizes, strides, dtypes and scalar
// values alone (not from their addresses): the executor keeps it for the
// latest such inputs, so a model calling a kernel with the same shapes again
// skips binding symbols, choosing the index type, evaluating the launch and
// the output shapes, and checking the vector conditions (host time per
// launch).
struct LaunchPlan {
  std::vector<int64_t> key;  // launchPlanKey(inputs)
  DataType index_type = DataType::Int;
  std::shared_ptr<CachedKernel> kernel;  // the variant of index_type
  LaunchParams params;
  struct Output {
    std::vector<int64_t> allocated;  // allocated dense, then expanded to `shape`
    std::vector<int64_t> shape;
    std::vector<int64_t> kernel_strides;
    at::ScalarType dtype = at::kFloat;
    // The input whose values the output starts with (a scatter's self,
    // copied before the kernel writes into it); -1 for none.
    int64_t initial_input = -1;
  };
  std::vector<Output> outputs;
  // Why these shapes break what the kernel's vector accesses assume ("" when
  // they do not): an error at launch, not when only compiling.
  std::string vector_violation;
};

class FusionExecutor {
 public:
  FusionExecutor();
  ~FusionExecutor();
  FusionExecutor(const FusionExecutor&) = delete;
  FusionExecutor& operator=(const FusionExecutor&) = delete;

  // Validates `example_inputs` against the fusion and compiles (or finds in
  // the cache) its kernel. May be called again to compile another fusion.
  void compile(Fusion* fusion, const std::vector<at::Tensor>& example_inputs,
               ExecutorOptions options = {});
  // compile() with `fusion` already lowered (`lowered`: a GpuLower of it with
  // options.lower, run), so it is not lowered again.
  void compileLowered(Fusion* fusion, std::unique_ptr<GpuLower> lowered,
                      const std::vector<at::Tensor>& example_inputs, ExecutorOptions options = {});
  // compileLowered in its steps, so that several executors' kernels can be
  // compiled as one NVRTC program (FusionExecutorCache::compileFor, see
  // nvrtc_batch.h): beginCompile validates and keys; nvrtcRequest lowers and
  // generates the kernel and says what compiling it will ask NVRTC for
  // (nullopt: the process's cache or the disk cache has the kernel; what it
  // read from disk is kept for finishCompile, which then reads nothing);
  // finishCompile compiles, taking `precompiled` for that request when given.
  void beginCompile(Fusion* fusion, std::unique_ptr<GpuLower> lowered,
                    const std::vector<at::Tensor>& example_inputs, ExecutorOptions options = {});
  std::optional<NvrtcRequest> nvrtcRequest();
  void finishCompile(const PrecompiledKernel* precompiled = nullptr);
  bool isCompiled() const { return current_.load() >= 0; }

  // Runs the compiled fusion: on the GPU for CUDA inputs, in the simulator
  // for CPU inputs; for meta inputs nothing runs (compile for a shape: the
  // launch is evaluated and the outputs are meta tensors). Returns one tensor
  // per fusion output.
  // `device`: where a fusion without tensor inputs runs (default
  // ExecutorOptions::device); FusionExecutorCache passes its run's device.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs,
                              std::optional<c10::Device> device = std::nullopt);

  // run() on CUDA inputs in its two steps. prepareLaunch does all the host
  // work before cuLaunchKernel: validation, binding sizes, evaluating the
  // launch parameters, allocating outputs on the inputs' device and packing
  // the arguments. It accepts tensors on any device (so the host overhead can
  // be measured without a GPU). launch() loads the module (first time) and
  // launches on torch's current stream; it throws "no CUDA device: ..."
  // without a usable GPU, and rejects a launch prepared from non-CUDA tensors.
  PreparedLaunch prepareLaunch(const std::vector<at::Tensor>& inputs) const;
  std::vector<at::Tensor> launch(const PreparedLaunch& prepared);

  // ---- what was chosen (valid after compile) ----
  // Of the latest run, or of the example inputs until the first run: the
  // launch, and the kernel variant (index type, name, source, cubin, key).
  const LaunchParams& launchParams() const;
  // How many launch plans (LaunchPlan) this executor has made since compile():
  // a launch with the latest plan's shapes makes none.
  int64_t plansMade() const { return plans_made_.load(); }
  DataType indexType() const;
  const std::string& kernelName() const;
  const std::string& cudaSource() const;
  const CompiledKernel& compiledKernel() const;  // cubin, NVRTC log, compile time
  const PtxasInfo& ptxasInfo() const { return compiledKernel().ptxas; }
  const KernelLaunchInfo& launchInfo() const;
  // The kernel IR and its shared-memory plan. After a cache hit the fusion
  // is lowered here, on the first request (inspection only).
  const kir::Kernel& kernel() const;
  const alloc_reuse::SharedMemoryPlan& sharedMemoryPlan() const;
  const std::string& sharedMemoryReport() const { return launchInfo().smem_report; }
  const std::string& cacheKey() const;
  // The index type a launch on `inputs` uses (validated like run()'s).
  DataType indexTypeFor(const std::vector<at::Tensor>& inputs) const;
  // True when compile() found the kernel in the process's KernelCache (not
  // the disk cache: compiledKernel().from_disk_cache says that).
  bool compiledFromCache() const { return from_cache_; }
  // True once this executor holds the kernel IR: compile() lowered the
  // fusion (a cache miss), a CPU run needed it, or kernel() was asked for.
  bool isLowered() const { return lower_ != nullptr; }
  // Wall milliseconds lowering took (0 until lowered).
  double loweringMs() const {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return lowering_ms_;
  }
  // The simulator's report of the latest CPU run (empty before one).
  const sim::SimReport& simulationReport() const { return sim_report_; }

  static KernelCache& globalCache();

 private:
  void checkCompiled(const char* what) const;
  const kir::Kernel& lowered() const;
  // Sizes and strides of the tensor inputs, and integer scalars, by symbol.
  std::map<std::string, int64_t> bind(const std::vector<at::Tensor>& inputs) const;
  DataType chooseIndexTypeFor(const std::vector<at::Tensor>& inputs,
                              const std::map<std::string, int64_t>& bindings) const;
  // What finishCompile has for its variant ahead of compiling it: the disk
  // cache's answer nvrtcRequest read, NVRTC's result compiled in a batch.
  struct CompiledAhead {
    bool disk_read = false;  // the disk cache was read: `stored` is its answer
    std::optional<KernelEntry> stored;
    const PrecompiledKernel* precompiled = nullptr;
  };
  // The kernel variant for `index_type`, compiled (or found in the cache)
  // the first time; `compiled_here` says whether this call compiled it.
  std::shared_ptr<CachedKernel> variant(DataType index_type, bool* compiled_here = nullptr,
                                        CompiledAhead* ahead = nullptr) const;
  // The latest launch's variant becomes what the accessors describe.
  void setCurrent(DataType index_type) const;
  const CachedKernel& current() const;
  LaunchParams evaluateLaunch(const CachedKernel& kernel,
                              const std::map<std::string, int64_t>& bindings) const;
  // `load_module`: load the variant's module (the first step needing a GPU)
  // before allocating anything on the device.
  PreparedLaunch prepare(const std::vector<at::Tensor>& inputs, c10::Device device,
                         bool load_module) const;
  c10::Device validate(const std::vector<at::Tensor>& inputs,
                       std::optional<c10::Device> device = std::nullopt) const;
  // "input 1 (T1)" or "output T4" for a kernel tensor parameter.
  std::string describeParam(const std::string& name) const;
  std::vector<at::Tensor> simulate(const std::vector<at::Tensor>& inputs);
  // Meta tensors: the kernel is compiled and its launch evaluated (limits
  // checked), nothing runs; the outputs are meta tensors of the right sizes.
  std::vector<at::Tensor> runOnMeta(const std::vector<at::Tensor>& inputs);
  // The plan for these inputs' shapes: the latest one if its key matches.
  std::shared_ptr<const LaunchPlan> planFor(const std::vector<at::Tensor>& inputs) const;
  std::shared_ptr<const LaunchPlan> makePlan(const std::vector<at::Tensor>& inputs,
                                             std::vector<int64_t> key) const;
  // With `inputs`, outputs with an initial input start as a copy of it.
  static std::vector<at::Tensor> allocateOutputs(const LaunchPlan& plan, c10::Device device,
                                                 const std::vector<at::Tensor>* inputs = nullptr);

  Fusion* fusion_ = nullptr;
  ExecutorOptions options_;
  InputValidator validator_;
  int arch_ = 0;
  // Per index type (variantSlot: 0 Int, 1 Int32): the cache key and the kernel
  // once compiled. Set under variants_mutex_, never reset until compile().
  std::string keys_[2];
  mutable std::shared_ptr<CachedKernel> variants_[2];
  mutable std::mutex variants_mutex_;
  // The slot of the variant the accessors describe; -1 before compile().
  mutable std::atomic<int> current_{-1};
  bool from_cache_ = false;
  // Between beginCompile and finishCompile: the example inputs' bindings and
  // index type, and what nvrtcRequest read from the disk cache.
  std::map<std::string, int64_t> compile_bindings_;
  DataType compile_index_type_ = DataType::Int;
  CompiledAhead compile_ahead_;
  // Guards lower_ (created on first need) and the latest-run state below.
  mutable std::mutex state_mutex_;
  mutable std::unique_ptr<GpuLower> lower_;  // lowered on demand after a cache hit
  mutable double lowering_ms_ = 0;
  LaunchParams launch_params_;
  sim::SimReport sim_report_;
  mutable std::shared_ptr<const LaunchPlan> plan_;  // the latest launch's
  mutable std::atomic<int64_t> plans_made_{0};
};

}  // namespace smelt
