#include "runtime/nvrtc_compiler.h"

#include <nvrtc.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

#include "fusion/dump.h"
#include "fusion/error.h"

namespace smelt {
namespace {

void checkNvrtc(nvrtcResult result, const char* call) {
  SMELT_CHECK(result == NVRTC_SUCCESS, "NVRTC: ", call, " failed: ", nvrtcGetErrorString(result));
}

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  checkNvrtc(nvrtcGetProgramLogSize(program, &size), "nvrtcGetProgramLogSize");
  std::string log(size, '\0');
  checkNvrtc(nvrtcGetProgramLog(program, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

int64_t capture(const std::string& text, const std::regex& pattern) {
  std::smatch match;
  return std::regex_search(text, match, pattern) ? std::stoll(match[1].str()) : 0;
}

}  // namespace

std::string cudaIncludeDir() {
  const char* env = std::getenv("SMELT_CUDA_INCLUDE");
  if (env != nullptr && *env != '\0') return env;
  return SMELT_CUDA_INCLUDE_DIR;
}

std::string numberedSource(const std::string& source) {
  std::ostringstream os;
  std::istringstream lines(source);
  std::string text;
  for (int number = 1; std::getline(lines, text); ++number) {
    os << std::setw(4) << number << " | " << text << "\n";
  }
  return os.str();
}

std::vector<int> nvrtcSupportedArchs() {
  int count = 0;
  checkNvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(count);
  checkNvrtc(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

bool nvrtcCachesPrograms() {
  static const bool caches = [] {
    int major = 0, minor = 0;
    checkNvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return major > 12 || (major == 12 && minor >= 9);
  }();
  return caches;
}

PtxasInfo parsePtxasInfo(const std::string& log, const std::string& kernel_name) {
  // ptxas reports each entry function as a block starting with
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
  // followed by "Function properties for NAME" (stack frame, spills) and
  // "Used N registers, used B barriers, S bytes smem, ..." lines.
  const std::string header = "Compiling entry function '" + kernel_name + "'";
  const size_t begin = log.find(header);
  SMELT_CHECK(begin != std::string::npos, "ptxas: no report for kernel '", kernel_name,
              "' in the compilation log:\n", log);
  size_t end = log.find("Compiling entry function", begin + header.size());
  const std::string block = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  PtxasInfo info;
  info.registers = capture(block, std::regex(R"(Used (\d+) registers)"));
  info.barriers = capture(block, std::regex(R"(used (\d+) barriers)"));
  info.static_smem_bytes = capture(block, std::regex(R"((\d+) bytes smem)"));
  info.stack_frame_bytes = capture(block, std::regex(R"((\d+) bytes stack frame)"));
  info.spill_store_bytes = capture(block, std::regex(R"((\d+) bytes spill stores)"));
  info.spill_load_bytes = capture(block, std::regex(R"((\d+) bytes spill loads)"));
  SMELT_CHECK(block.find("registers") != std::string::npos, "ptxas: the report for '", kernel_name,
              "' has no register count:\n", block);
  return info;
}

void checkPtxasSharedMemory(const CompiledKernel& compiled, int64_t planned_static_bytes,
                            const std::string& plan_report) {
  SMELT_CHECK(compiled.ptxas.static_smem_bytes == planned_static_bytes, "ptxas reports ",
              compiled.ptxas.static_smem_bytes, " B of static shared memory for kernel ", compiled.kernel_name,
              " but the shared-memory plan accounts for ", planned_static_bytes, " B\n", plan_report);
}

namespace {
std::atomic<int64_t> programs_compiled{0};
}  // namespace

int64_t nvrtcProgramsCompiled() { return programs_compiled.load(); }

NvrtcOutput compileProgram(const std::string& source, const std::string& program_name,
                           const NvrtcOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram raw = nullptr;
  checkNvrtc(nvrtcCreateProgram(&raw, source.c_str(), (program_name + ".cu").c_str(), 0, nullptr, nullptr),
             "nvrtcCreateProgram");
  std::unique_ptr<_nvrtcProgram, void (*)(_nvrtcProgram*)> program(raw, [](_nvrtcProgram* p) {
    nvrtcDestroyProgram(&p);
  });

  // sm_XX (not compute_XX) makes NVRTC run ptxas and produce a cubin, which
  // is what lets ptxas -v report registers and shared memory.
  std::vector<std::string> args = {
      "--gpu-architecture=sm_" + std::to_string(options.arch) + (options.arch_specific ? "a" : ""),
      "-std=c++17",
      "-I" + cudaIncludeDir(),
      "--ptxas-options=-v",
      // Leaves out the texture/surface and CUDA runtime device function
      // declarations, which no generated kernel uses (the tests compile every
      // one with it): 3-4 ms less front-end work per kernel of 20-60 ms.
      "-minimal",
  };
  // NVRTC 12.9+ caches compiled programs (on disk, across processes), and a
  // cached compile runs no ptxas, so its log has no -v report: every kernel
  // smelt compiles is checked against that report (registers, spills, static
  // shared memory against the plan). Seen on an H200 machine whose NVRTC
  // cache was on: the second compile of a kernel failed with "ptxas: no
  // report". smelt keeps its own cache of compiled kernels per process.
  if (nvrtcCachesPrograms()) args.push_back("--no-cache");
  args.insert(args.end(), options.extra_options.begin(), options.extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());

  ++programs_compiled;
  const nvrtcResult result = nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  NvrtcOutput output;
  output.log = programLog(program.get());
  if (result != NVRTC_SUCCESS) {
    std::ostringstream options_text;
    for (const std::string& arg : args) options_text << " " << arg;
    throw Error(errorMessage("NVRTC failed to compile kernel '", program_name, "' (",
                             nvrtcGetErrorString(result), ") with options", options_text.str(),
                             "\n--- NVRTC log ---\n", output.log, "\n--- source ---\n",
                             numberedSource(source)));
  }
  size_t size = 0;
  checkNvrtc(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
  output.cubin.resize(size);
  checkNvrtc(nvrtcGetCUBIN(program.get(), output.cubin.data()), "nvrtcGetCUBIN");
  output.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return output;
}

void dumpPtxasInfo(const CompiledKernel& compiled) {
  if (!dumpEnabled("ptxas")) return;
  const PtxasInfo& p = compiled.ptxas;
  std::cout << "=== ptxas " << compiled.kernel_name << " sm_" << compiled.arch << " ===\n"
            << "registers " << p.registers << ", spill stores " << p.spill_store_bytes
            << " B, spill loads " << p.spill_load_bytes << " B, stack " << p.stack_frame_bytes
            << " B, static smem " << p.static_smem_bytes << " B, barriers " << p.barriers
            << ", compile " << compiled.compile_ms << " ms\n";
}

CompiledKernel compileCuda(const std::string& source, const std::string& kernel_name,
                           const NvrtcOptions& options) {
  if (dumpEnabled("cuda")) std::cout << "=== CUDA " << kernel_name << " ===\n" << source;
  NvrtcOutput output = compileProgram(source, kernel_name, options);
  CompiledKernel compiled;
  compiled.kernel_name = kernel_name;
  compiled.arch = options.arch;
  compiled.log = std::move(output.log);
  compiled.cubin = std::move(output.cubin);
  compiled.compile_ms = output.compile_ms;
  compiled.ptxas = parsePtxasInfo(compiled.log, kernel_name);
  dumpPtxasInfo(compiled);
  return compiled;
}

}  // namespace smelt
