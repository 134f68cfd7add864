// The CUDA driver API, loaded with dlopen("libcuda.so.1") on first use.
//
// smelt never links libcuda: a machine without a driver or GPU builds, starts
// and compiles kernels (NVRTC) normally, and gets smelt::Error("no CUDA
// device: <why>") only from the calls below that need a device (module load,
// launch, device queries). cuda.h is used for its types only.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace smelt::cuda {

// True when libcuda loads, cuInit succeeds and there is at least one device.
// Never throws; the first call loads the driver.
bool deviceAvailable();
// Why deviceAvailable() is false ("" when it is true).
std::string unavailableReason();

int deviceCount();
// Compute capability as major*10+minor (90 for an H100/H200).
int computeCapability(int device = 0);
// Makes the device's primary context current on this thread (the context
// torch uses) and returns it. It is retained for the life of the process.
CUcontext primaryContext(int device = 0);

// A module loaded from a cubin into the device's primary context.
class Module {
 public:
  Module(const std::vector<char>& cubin, int device = 0);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  CUfunction function(const std::string& name) const;
  int device() const { return device_; }

 private:
  CUmodule module_ = nullptr;
  int device_ = 0;
};

struct LaunchConfig {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t dynamic_smem_bytes = 0;
  CUstream stream = nullptr;  // the legacy default stream unless given (torch's current one)
};

// Launches `function` with one pointer per kernel parameter (see
// KernelArguments). Raises the function's dynamic shared-memory limit first
// when the launch needs more than the default 48 KiB.
void launchKernel(CUfunction function, const LaunchConfig& config, const std::vector<void*>& args);

}  // namespace smelt::cuda
