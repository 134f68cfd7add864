// Compiled kernels by a key the caller builds from everything that changes
// the generated code: the fusion's structure and schedule, the inputs'
// dtypes, ranks and contiguity, and the target architecture. A hit returns
// the kernel compiled (and, once launched, loaded) before: no re-lowering,
// no NVRTC, no module load.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/launch_info.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt {

// What a cache entry holds: the cubin and what launching it needs. A plain
// CompiledKernel converts (with an empty launch description).
struct KernelEntry {
  KernelEntry(CompiledKernel compiled, KernelLaunchInfo launch = {})  // NOLINT: implicit on purpose
      : compiled(std::move(compiled)), launch(std::move(launch)) {}
  CompiledKernel compiled;
  KernelLaunchInfo launch;
};

// One compiled kernel; its module is loaded into the device on first use.
class CachedKernel {
 public:
  explicit CachedKernel(KernelEntry entry)
      : compiled_(std::move(entry.compiled)), launch_(std::move(entry.launch)) {}
  const CompiledKernel& compiled() const { return compiled_; }
  const KernelLaunchInfo& launchInfo() const { return launch_; }

  // The kernel's function on `device`, loading the cubin the first time
  // (throws "no CUDA device: ..." without one).
  CUfunction function(int device = 0);
  void launch(const cuda::LaunchConfig& config, const std::vector<void*>& args, int device = 0);

 private:
  CompiledKernel compiled_;
  KernelLaunchInfo launch_;
  std::mutex mutex_;
  std::unique_ptr<cuda::Module> module_;
  CUfunction function_ = nullptr;
};

class KernelCache {
 public:
  using Compile = std::function<KernelEntry()>;

  // The kernel cached under `key`; on a miss, calls `compile` once and caches
  // its result (a throwing compile caches nothing). Threads asking for a key
  // while it compiles wait for that compile (counted as hits) and get its
  // kernel, or its error: identical kernels compiled at once on several
  // threads compile once. `compile` runs without the cache's lock, so
  // distinct keys compile in parallel.
  std::shared_ptr<CachedKernel> getOrCompile(const std::string& key, const Compile& compile);
  // nullptr when `key` is not cached.
  std::shared_ptr<CachedKernel> find(const std::string& key) const;

  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<CachedKernel>> kernels_;
  // Keys compiling now, and what their compile will give.
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<CachedKernel>>> compiling_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace smelt
