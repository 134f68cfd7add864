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

#include "fusion/types.h"

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

// The arguments of cuTensorMapEncodeTiled for boxes of box_rows x box_cols
// elements of the 2-D row-major tensor `name` at `data` (dimensions and
// strides innermost first, strides in bytes), computed without a driver.
// Throws smelt::Error naming the tensor when TMA cannot read it: not 2-D,
// not contiguous along its rows, a base address or row stride not a
// multiple of 16 bytes, a box outside 1..256 per side, rows of other than 128
// bytes with the 128-byte swizzle, or a dtype without a TMA element type.
struct TiledTensorMap {
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  void* address = nullptr;
  cuuint64_t dims[2] = {0, 0};
  cuuint64_t row_stride_bytes = 0;
  cuuint32_t box[2] = {0, 0};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
};
TiledTensorMap tiledTensorMap(const std::string& name, void* data, DataType dtype,
                              const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides, int64_t box_rows,
                              int64_t box_cols, bool swizzle128);

// Encodes the map with the driver's cuTensorMapEncodeTiled (zero fill out of
// bounds, no interleave, 128-byte L2 promotion).
CUtensorMap encodeTensorMap(const TiledTensorMap& map);

}  // namespace smelt::cuda
