#include "runtime/kernel_cache.h"

namespace smelt {

CUfunction CachedKernel::function(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (module_ == nullptr || module_->device() != device) {
    module_ = std::make_unique<cuda::Module>(compiled_.cubin, device);
    function_ = module_->function(compiled_.kernel_name);
  }
  return function_;
}

void CachedKernel::launch(const cuda::LaunchConfig& config, const std::vector<void*>& args, int device) {
  cuda::launchKernel(function(device), config, args);
}

std::shared_ptr<CachedKernel> KernelCache::getOrCompile(const std::string& key, const Compile& compile) {
  std::promise<std::shared_ptr<CachedKernel>> promise;
  std::shared_future<std::shared_ptr<CachedKernel>> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(key);
    if (it != kernels_.end()) {
      ++hits_;
      return it->second;
    }
    auto in_flight = compiling_.find(key);
    if (in_flight != compiling_.end()) {
      ++hits_;
      pending = in_flight->second;
    } else {
      ++misses_;
      compiling_.emplace(key, promise.get_future().share());
    }
  }
  if (pending.valid()) return pending.get();  // another thread's compile: its kernel or its error
  try {
    auto kernel = std::make_shared<CachedKernel>(compile());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      kernels_.emplace(key, kernel);
      compiling_.erase(key);
    }
    promise.set_value(kernel);
    return kernel;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      compiling_.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::shared_ptr<CachedKernel> KernelCache::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(key);
  return it == kernels_.end() ? nullptr : it->second;
}

size_t KernelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

int64_t KernelCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

int64_t KernelCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

void KernelCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.clear();
  hits_ = 0;
  misses_ = 0;
}

}  // namespace smelt
