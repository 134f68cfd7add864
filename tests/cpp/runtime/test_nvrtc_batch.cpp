// Several kernels as one NVRTC program (runtime/nvrtc_batch.h): each kernel's
// machine code and ptxas report are what compiling it alone gives, one
// program is compiled per batch, and the batches are planned and finished as
// documented. Counted, not timed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <stdexcept>

#include "codegen/cuda_codegen.h"
#include "codegen/test_kernels.h"
#include "common/expect_error.h"
#include "fusion/error.h"
#include "runtime/compile_pool.h"
#include "runtime/nvrtc_batch.h"

namespace smelt {
namespace {

using namespace codegen_testing;

// The bytes of the ELF section `name` of a cubin ("" when it has none):
// `.text.<kernel>` is the kernel's machine code.
std::string elfSection(const std::vector<char>& elf, const std::string& name) {
  auto read = [&](size_t offset, size_t bytes) {
    uint64_t value = 0;
    std::memcpy(&value, elf.data() + offset, bytes);
    return value;
  };
  const uint64_t table = read(0x28, 8);
  const uint64_t entry_size = read(0x3A, 2), entries = read(0x3C, 2), names_index = read(0x3E, 2);
  const uint64_t names = read(table + names_index * entry_size + 0x18, 8);
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t header = table + i * entry_size;
    if (std::strcmp(elf.data() + names + read(header, 4), name.c_str()) != 0) continue;
    return std::string(elf.data() + read(header + 0x18, 8), read(header + 0x20, 8));
  }
  return "";
}

std::vector<NvrtcRequest> testKernelRequests() {
  std::vector<NvrtcRequest> requests;
  for (const auto& t : allTestKernels()) requests.push_back({generateCuda(t->kernel, t->name), t->name, {}});
  return requests;
}

// Every hand-built kernel (one of them includes cuda_fp16.h) in one program:
// one NVRTC program, and per kernel the machine code and ptxas's report of
// compiling it alone.
TEST(NvrtcBatch, EachKernelIsTheCodeItsOwnCompileGives) {
  const std::vector<NvrtcRequest> requests = testKernelRequests();
  ASSERT_GE(requests.size(), 5u);
  const std::string source = batchSource(requests);
  EXPECT_EQ(source.find("#include <cuda_fp16.h>"), source.find("#include"));  // hoisted, once
  EXPECT_EQ(source.find("#include <cuda_fp16.h>", source.find("#include") + 1), std::string::npos);

  const int64_t before = nvrtcProgramsCompiled();
  const std::vector<CompiledKernel> batch = compileCudaBatch(requests);
  EXPECT_EQ(nvrtcProgramsCompiled() - before, 1);
  ASSERT_EQ(batch.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(requests[i].kernel_name);
    const CompiledKernel alone = compileCuda(requests[i].source, requests[i].kernel_name);
    const CompiledKernel& together = batch[i];
    EXPECT_EQ(together.kernel_name, requests[i].kernel_name);
    EXPECT_EQ(together.cubin, batch[0].cubin);  // one module holds them all
    const std::string code = elfSection(alone.cubin, ".text." + alone.kernel_name);
    EXPECT_GT(code.size(), 0u);
    EXPECT_EQ(elfSection(together.cubin, ".text." + together.kernel_name), code);
    EXPECT_EQ(together.ptxas.registers, alone.ptxas.registers);
    EXPECT_EQ(together.ptxas.spill_store_bytes, alone.ptxas.spill_store_bytes);
    EXPECT_EQ(together.ptxas.spill_load_bytes, alone.ptxas.spill_load_bytes);
    EXPECT_EQ(together.ptxas.stack_frame_bytes, alone.ptxas.stack_frame_bytes);
    EXPECT_EQ(together.ptxas.static_smem_bytes, alone.ptxas.static_smem_bytes);
    EXPECT_EQ(together.ptxas.barriers, alone.ptxas.barriers);
    EXPECT_GT(together.compile_ms, 0);
  }
}

TEST(NvrtcBatch, RefusesWhatOneProgramCannotHold) {
  std::vector<NvrtcRequest> requests = testKernelRequests();
  requests.resize(2);
  std::vector<NvrtcRequest> twice = {requests[0], requests[0]};
  const std::string asked_twice = "kernel " + requests[0].kernel_name + " is asked for twice";
  EXPECT_SMELT_ERROR(compileCudaBatch(twice), asked_twice.c_str());
  std::vector<NvrtcRequest> mixed = requests;
  mixed[1].options.arch = 80;
  EXPECT_SMELT_ERROR(compileCudaBatch(mixed), "has other NVRTC options than");
  std::vector<NvrtcRequest> broken = requests;
  broken[1].source += "\nthis is not CUDA;\n";
  EXPECT_SMELT_ERROR(compileCudaBatch(broken), "NVRTC failed to compile");
}

std::vector<NvrtcRequest> named(const std::vector<std::string>& names) {
  std::vector<NvrtcRequest> requests;
  for (const std::string& name : names) requests.push_back({"", name, {}});
  return requests;
}

TEST(NvrtcBatch, PlansEvenBatchesOfEqualOptions) {
  using Plan = std::vector<std::vector<size_t>>;
  EXPECT_EQ(planBatches(named({"a", "b", "c", "d", "e"}), 2), (Plan{{0, 1}, {2, 3, 4}}));
  EXPECT_EQ(planBatches(named({"a", "b", "c"}), 8), (Plan{{0}, {1}, {2}}));
  EXPECT_EQ(planBatches(named({"a", "b", "c"}), 1), (Plan{{0, 1, 2}}));
  EXPECT_EQ(planBatches(named({"a", "b", "a", "c"}), 1), (Plan{{0, 1, 3}}));  // "a" again: left out
  std::vector<NvrtcRequest> mixed = named({"a", "b", "c", "d"});
  mixed[2].options.arch_specific = true;
  EXPECT_EQ(planBatches(mixed, 1), (Plan{{0, 1, 3}, {2}}));
  EXPECT_SMELT_ERROR(planBatches(mixed, 0), "planBatches: 0 batches");
}

// compileInBatches: one program per batch of more than one kernel; a
// repeated name is finished with its first request's result (the kernel is
// compiled once); a finish that throws fails its own kernel only.
TEST(NvrtcBatch, CompilesOneProgramPerBatchAndFinishesEachKernel) {
  std::vector<NvrtcRequest> requests = testKernelRequests();
  requests.push_back(requests[1]);  // the same kernel asked for again
  const size_t repeated = requests.size() - 1;
  for (int threads : {0, 2}) {
    SCOPED_TRACE(threads);
    CompilePool pool(threads);
    std::mutex mutex;
    std::map<size_t, std::string> finished;  // request -> the name its result is for, "" for none
    const int64_t before = nvrtcProgramsCompiled();
    std::vector<std::shared_future<void>> done =
        compileInBatches(pool, requests, [&](size_t i, const PrecompiledKernel* precompiled) {
          if (i == 0) throw std::runtime_error("finish of request 0");
          std::lock_guard<std::mutex> lock(mutex);
          finished[i] = precompiled == nullptr ? "" : precompiled->compiled.kernel_name;
          if (precompiled != nullptr) {
            EXPECT_EQ(precompiled->request.source, requests[i].source);
          }
        });
    ASSERT_EQ(done.size(), requests.size());
    for (size_t i = 0; i < done.size(); ++i) {
      if (i == 0) {
        EXPECT_THROW(done[i].get(), std::runtime_error);
      } else {
        EXPECT_NO_THROW(done[i].get());
      }
    }
    EXPECT_EQ(nvrtcProgramsCompiled() - before, std::max(threads, 1));
    EXPECT_EQ(finished.size(), requests.size() - 1);
    for (size_t i = 1; i < requests.size(); ++i) EXPECT_EQ(finished[i], requests[i].kernel_name) << i;
    EXPECT_EQ(finished[repeated], finished[1]);
  }
}

}  // namespace
}  // namespace smelt
