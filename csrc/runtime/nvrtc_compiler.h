// CUDA source -> cubin with NVRTC, plus ptxas's resource report.
//
// Compilation needs only the toolkit (libnvrtc), never a driver or a GPU, so
// every generated kernel can be compiled on CPU-only build machines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smelt {

// What ptxas reports (--ptxas-options=-v) for one entry function.
struct PtxasInfo {
  int64_t registers = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t stack_frame_bytes = 0;
  int64_t static_smem_bytes = 0;  // static __shared__ only; dynamic smem is not counted
  int64_t barriers = 0;
};

struct NvrtcOptions {
  // Compute capability as major*10+minor: 90 compiles for sm_90.
  int arch = 90;
  // Compiles for the architecture-specific target (sm_90a): needed by the
  // instructions that are not forward compatible (wgmma, setmaxnreg).
  bool arch_specific = false;
  std::vector<std::string> extra_options;  // passed to NVRTC after smelt's own
};

struct CompiledKernel {
  std::string kernel_name;
  int arch = 0;
  std::vector<char> cubin;
  std::string log;  // NVRTC's log (ptxas's report included)
  PtxasInfo ptxas;
  double compile_ms = 0;  // nvrtcCreateProgram .. cubin retrieved
  bool from_disk_cache = false;  // read from the disk cache (disk_kernel_cache.h), no NVRTC
};

// Compiles `source` (whose extern "C" __global__ function is `kernel_name`)
// to a cubin for `options.arch` with -std=c++17, the toolkit's include
// directory (cudaIncludeDir()) and ptxas -v. On failure throws smelt::Error
// carrying NVRTC's log and the source with line numbers.
// SMELT_DUMP=cuda prints the source, SMELT_DUMP=ptxas the parsed report.
CompiledKernel compileCuda(const std::string& source, const std::string& kernel_name,
                           const NvrtcOptions& options = {});

// What NVRTC gives for one program: the cubin (every entry function of the
// program), NVRTC's log (ptxas's -v report included) and the wall time.
struct NvrtcOutput {
  std::vector<char> cubin;
  std::string log;
  double compile_ms = 0;  // nvrtcCreateProgram .. cubin retrieved
};

// Compiles `source` as one program (`program_name`.cu) with compileCuda's
// options. On failure throws smelt::Error carrying NVRTC's log and the source
// with line numbers.
NvrtcOutput compileProgram(const std::string& source, const std::string& program_name,
                           const NvrtcOptions& options);

// SMELT_DUMP=ptxas: prints `compiled`'s parsed report.
void dumpPtxasInfo(const CompiledKernel& compiled);

// NVRTC programs compiled in this process (each compileProgram counts one),
// for tests and benchmarks.
int64_t nvrtcProgramsCompiled();

// Parses ptxas's -v report for entry function `kernel_name` out of a
// compilation log. Throws smelt::Error when the log has no report for it.
PtxasInfo parsePtxasInfo(const std::string& log, const std::string& kernel_name);

// Throws smelt::Error, with `plan_report`, unless ptxas counted exactly
// `planned_static_bytes` of static shared memory for `compiled` (the planned
// total for a statically declared array, 0 for a dynamic one).
void checkPtxasSharedMemory(const CompiledKernel& compiled, int64_t planned_static_bytes,
                            const std::string& plan_report);

// The CUDA headers' directory: $SMELT_CUDA_INCLUDE if set, else the toolkit
// found when smelt was configured.
std::string cudaIncludeDir();

// "   1 | first line\n   2 | ..." for error messages.
std::string numberedSource(const std::string& source);

// The architectures this NVRTC can compile for (major*10+minor).
std::vector<int> nvrtcSupportedArchs();

// Whether this NVRTC caches compiled programs (12.9 and later). A cached
// compile runs no ptxas and logs no -v report, so compileCuda then passes
// --no-cache.
bool nvrtcCachesPrograms();

}  // namespace smelt
