#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "fusion/error.h"

namespace smelt::cuda {
namespace {

// The driver entry points smelt uses, resolved from libcuda.so.1. The names
// are the ABI symbols; cuda.h only supplies their types.
struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  // Optional: drivers before CUDA 12 have no TMA (checked where used).
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;

  int devices = 0;
  std::string error;  // non-empty: no usable device, and why
  std::mutex mutex;   // guards contexts
  std::vector<CUcontext> contexts;
};

template <typename Fn>
bool resolve(void* library, const char* name, Fn& fn, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (fn == nullptr && error.empty()) error = std::string("libcuda.so.1 has no symbol ") + name;
  return fn != nullptr;
}

std::string resultText(const Driver& d, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.getErrorName != nullptr) d.getErrorName(result, &name);
  if (d.getErrorString != nullptr) d.getErrorString(result, &text);
  return errorMessage(name != nullptr ? name : "CUresult", " (", static_cast<int>(result), ")",
                      text != nullptr ? std::string(": ") + text : std::string());
}

void load(Driver& d) {
  // Never closed: the driver stays loaded for the life of the process.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    d.error = std::string("cannot load the CUDA driver (libcuda.so.1): ") + (why ? why : "unknown");
    return;
  }
  std::string& e = d.error;
  resolve(library, "cuGetErrorName", d.getErrorName, e);
  resolve(library, "cuGetErrorString", d.getErrorString, e);
  resolve(library, "cuInit", d.init, e);
  resolve(library, "cuDeviceGetCount", d.deviceGetCount, e);
  resolve(library, "cuDeviceGet", d.deviceGet, e);
  resolve(library, "cuDeviceGetAttribute", d.deviceGetAttribute, e);
  resolve(library, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain, e);
  resolve(library, "cuCtxSetCurrent", d.ctxSetCurrent, e);
  resolve(library, "cuModuleLoadData", d.moduleLoadData, e);
  resolve(library, "cuModuleUnload", d.moduleUnload, e);
  resolve(library, "cuModuleGetFunction", d.moduleGetFunction, e);
  resolve(library, "cuFuncSetAttribute", d.funcSetAttribute, e);
  resolve(library, "cuLaunchKernel", d.launchKernel, e);
  d.tensorMapEncodeTiled =
      reinterpret_cast<decltype(d.tensorMapEncodeTiled)>(dlsym(library, "cuTensorMapEncodeTiled"));
  if (!e.empty()) return;
  if (CUresult r = d.init(0); r != CUDA_SUCCESS) {
    e = "cuInit failed: " + resultText(d, r);
    return;
  }
  if (CUresult r = d.deviceGetCount(&d.devices); r != CUDA_SUCCESS) {
    e = "cuDeviceGetCount failed: " + resultText(d, r);
  } else if (d.devices == 0) {
    e = "the CUDA driver reports no devices";
  }
}

// The driver, loaded on the first call (thread-safe static initialisation).
Driver& driverState() {
  static Driver driver;
  static const bool loaded = (load(driver), true);
  (void)loaded;
  return driver;
}

// The driver, or smelt::Error("no CUDA device: ...").
Driver& driver() {
  Driver& d = driverState();
  SMELT_CHECK(d.error.empty(), "no CUDA device: ", d.error);
  return d;
}

void check(CUresult result, const char* call) {
  SMELT_CHECK(result == CUDA_SUCCESS, "CUDA driver: ", call, " failed: ", resultText(driverState(), result));
}

CUdevice deviceHandle(Driver& d, int device) {
  SMELT_CHECK(device >= 0 && device < d.devices, "CUDA device ", device, " does not exist (",
              d.devices, " device(s))");
  CUdevice handle = 0;
  check(d.deviceGet(&handle, device), "cuDeviceGet");
  return handle;
}

}  // namespace

bool deviceAvailable() { return driverState().error.empty(); }

std::string unavailableReason() { return driverState().error; }

int deviceCount() { return driver().devices; }

int computeCapability(int device) {
  Driver& d = driver();
  const CUdevice handle = deviceHandle(d, device);
  int major = 0;
  int minor = 0;
  check(d.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
        "cuDeviceGetAttribute");
  check(d.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle),
        "cuDeviceGetAttribute");
  return major * 10 + minor;
}

CUcontext primaryContext(int device) {
  Driver& d = driver();
  const CUdevice handle = deviceHandle(d, device);
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.contexts.empty()) d.contexts.resize(d.devices, nullptr);
    if (d.contexts[device] == nullptr) check(d.primaryCtxRetain(&d.contexts[device], handle), "cuDevicePrimaryCtxRetain");
    context = d.contexts[device];
  }
  check(d.ctxSetCurrent(context), "cuCtxSetCurrent");
  return context;
}

Module::Module(const std::vector<char>& cubin, int device) : device_(device) {
  SMELT_CHECK(!cubin.empty(), "CUDA driver: cannot load an empty cubin");
  primaryContext(device);
  check(driver().moduleLoadData(&module_, cubin.data()), "cuModuleLoadData");
}

Module::~Module() {
  // Unloading needs the module's context current; errors here (e.g. at
  // process exit, after the driver shut down) cannot be reported, so ignored.
  Driver& d = driverState();
  if (d.error.empty() && module_ != nullptr && d.contexts.size() > static_cast<size_t>(device_)) {
    d.ctxSetCurrent(d.contexts[device_]);
    d.moduleUnload(module_);
  }
}

CUfunction Module::function(const std::string& name) const {
  CUfunction function = nullptr;
  const CUresult result = driver().moduleGetFunction(&function, module_, name.c_str());
  SMELT_CHECK(result == CUDA_SUCCESS, "CUDA driver: the module has no kernel '", name, "': ",
              resultText(driverState(), result));
  return function;
}

void launchKernel(CUfunction function, const LaunchConfig& config, const std::vector<void*>& args) {
  Driver& d = driver();
  SMELT_CHECK(function != nullptr, "CUDA driver: launch of a null function");
  constexpr int64_t kDefaultDynamicSmem = 48 * 1024;
  if (config.dynamic_smem_bytes > kDefaultDynamicSmem) {
    check(d.funcSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(config.dynamic_smem_bytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
  for (int i = 0; i < 3; ++i) {
    SMELT_CHECK(config.grid[i] > 0 && config.block[i] > 0, "CUDA launch: grid (", config.grid[0], ", ",
                config.grid[1], ", ", config.grid[2], ") and block (", config.block[0], ", ",
                config.block[1], ", ", config.block[2], ") must be positive");
  }
  check(d.launchKernel(function, static_cast<unsigned>(config.grid[0]), static_cast<unsigned>(config.grid[1]),
                       static_cast<unsigned>(config.grid[2]), static_cast<unsigned>(config.block[0]),
                       static_cast<unsigned>(config.block[1]), static_cast<unsigned>(config.block[2]),
                       static_cast<unsigned>(config.dynamic_smem_bytes), config.stream,
                       const_cast<void**>(args.data()), nullptr),
        "cuLaunchKernel");
}

TiledTensorMap tiledTensorMap(const std::string& name, void* data, DataType dtype,
                              const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides, int64_t box_rows,
                              int64_t box_cols, bool swizzle128) {
  SMELT_CHECK(sizes.size() == 2 && strides.size() == 2, "TMA: tensor ", name, " has rank ",
              sizes.size(), "; its tensor map is 2-D");
  TiledTensorMap map;
  switch (dtype) {
    case DataType::Half: map.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case DataType::BFloat16: map.dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DataType::Float: map.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    default: SMELT_CHECK(false, "TMA: tensor ", name, " is ", dtype, ", which no tensor map here reads");
  }
  const int64_t element = dataTypeSize(dtype);
  const int64_t row_stride_bytes = strides[0] * element;
  SMELT_CHECK(strides[1] == 1 || sizes[1] == 1, "TMA: tensor ", name,
              " is not contiguous along its last dimension (stride ", strides[1], ")");
  SMELT_CHECK(reinterpret_cast<uintptr_t>(data) % 16 == 0, "TMA: tensor ", name,
              "'s data is not 16-byte aligned");
  SMELT_CHECK(row_stride_bytes % 16 == 0 && row_stride_bytes > 0, "TMA: tensor ", name,
              "'s row stride of ", row_stride_bytes, " bytes is not a positive multiple of 16");
  SMELT_CHECK(box_rows >= 1 && box_rows <= 256 && box_cols >= 1 && box_cols <= 256 &&
                  (box_cols * element) % 16 == 0,
              "TMA: box ", box_rows, "x", box_cols, " of ", name,
              " needs 1..256 elements per side and rows of a multiple of 16 bytes");
  SMELT_CHECK(!swizzle128 || box_cols * element == 128, "TMA: the 128-byte swizzle of ", name,
              " needs box rows of 128 bytes, not ", box_cols * element);
  map.address = data;
  map.dims[0] = static_cast<cuuint64_t>(sizes[1]);
  map.dims[1] = static_cast<cuuint64_t>(sizes[0]);
  map.row_stride_bytes = static_cast<cuuint64_t>(row_stride_bytes);
  map.box[0] = static_cast<cuuint32_t>(box_cols);
  map.box[1] = static_cast<cuuint32_t>(box_rows);
  map.swizzle = swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
  return map;
}

CUtensorMap encodeTensorMap(const TiledTensorMap& map) {
  Driver& d = driver();
  SMELT_CHECK(d.tensorMapEncodeTiled != nullptr,
              "CUDA driver: no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)");
  CUtensorMap encoded;
  const cuuint32_t element_strides[2] = {1, 1};
  check(d.tensorMapEncodeTiled(&encoded, map.dtype, 2, map.address, map.dims, &map.row_stride_bytes,
                               map.box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, map.swizzle,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
  return encoded;
}

}  // namespace smelt::cuda
