// Several kernels compiled as one NVRTC program.
//
// Most of an NVRTC compile of one of smelt's kernels is paid per program,
// not per kernel: NVRTC's start and its built-in declarations, and ptxas's
// start (sm_90, NVRTC 13, 2-core machine: an empty kernel takes 17 ms, GPT-2's
// kernels 42 ms each alone, 27 ms each in programs of 4). compileCudaBatch
// puts each kernel's source, as generated, in a namespace of its own
// (smelt_batch_<i>: its index_t, launch constants and prelude stay its own;
// its extern "C" name is unchanged) and the #include lines before them all,
// so one nvrtcCreateProgram / nvrtcCompileProgram / ptxas run serves them.
// ptxas compiles every entry function on its own (registers, spills, shared
// memory are each kernel's: the -v report is parsed per name), so each
// kernel's machine code is what compiling it alone gives.
//
// Each kernel's CompiledKernel holds the whole program's cubin (its function
// is looked up by name) and log; compile_ms is the program's time divided
// among its kernels. Callers cache each kernel under its own source
// (disk_kernel_cache.h), so a warm process reads each kernel alone and a
// kernel whose source changed is compiled again without its batch-mates.
#pragma once

#include <functional>
#include <future>
#include <string>
#include <vector>

#include "runtime/compile_pool.h"

#include "runtime/nvrtc_compiler.h"

namespace smelt {

// What NVRTC is asked to compile for one kernel (compileCuda's arguments).
struct NvrtcRequest {
  std::string source;
  std::string kernel_name;
  NvrtcOptions options;
};

// NVRTC's result for a request, compiled ahead of its kernel's compile (in a
// batch: see compileKernel, kernel_compile.h).
struct PrecompiledKernel {
  NvrtcRequest request;
  CompiledKernel compiled;
};

// The one program compileCudaBatch hands NVRTC for `requests`.
std::string batchSource(const std::vector<NvrtcRequest>& requests);

// Compiles `requests` (distinct kernel names, equal options) as one program;
// one CompiledKernel per request, in order. Throws smelt::Error with NVRTC's
// log when the program does not compile (compile the kernels one by one
// then: each error is then reported with its own kernel's source).
std::vector<CompiledKernel> compileCudaBatch(const std::vector<NvrtcRequest>& requests);

// Splits `requests` into at most `batches` groups to compile as one program
// each: requests of equal options only, sizes as even as the options allow,
// each group's requests in their order. Requests with a kernel name already
// taken by an earlier request (the same kernel asked for twice) are left out.
// Returns indices into `requests`.
std::vector<std::vector<size_t>> planBatches(const std::vector<NvrtcRequest>& requests, int batches);

// Compiles `requests` as at most max(1, pool.threads()) NVRTC programs on
// `pool` (planBatches), then calls finish(i, precompiled) for each request i
// on the thread that compiled its batch, with its result, or with nullptr
// where the kernel is to be compiled alone: a batch of one, or a batch NVRTC
// refused (each kernel's own compile then reports its own error). A request
// for a kernel name asked for before (two fusions of a graph sharing a
// kernel) is finished right after that one, with the same result: the
// kernel is compiled once. One future per request holds what its finish
// threw.
std::vector<std::shared_future<void>> compileInBatches(
    CompilePool& pool, const std::vector<NvrtcRequest>& requests,
    const std::function<void(size_t, const PrecompiledKernel*)>& finish);

}  // namespace smelt
