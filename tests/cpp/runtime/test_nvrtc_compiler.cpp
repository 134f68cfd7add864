// NVRTC compiles every hand-built kernel for sm_90 and sm_80 (no GPU needed),
// ptxas's report is parsed and matches the shared-memory plan, failures carry
// the log and the numbered source, and compile times are measured.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "codegen/cuda_codegen.h"
#include "codegen/test_kernels.h"
#include "common/expect_error.h"
#include "fusion/error.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt {
namespace {

using namespace codegen_testing;

class EveryKernel : public ::testing::TestWithParam<int> {};

TEST_P(EveryKernel, CompilesWithPtxasReport) {
  const int arch = GetParam();
  for (const auto& t : allTestKernels()) {
    SCOPED_TRACE(t->name);
    NvrtcOptions options;
    options.arch = arch;
    const CompiledKernel compiled = compileCuda(generateCuda(t->kernel, t->name), t->name, options);
    EXPECT_EQ(compiled.arch, arch);
    EXPECT_FALSE(compiled.cubin.empty());
    EXPECT_GT(compiled.ptxas.registers, 0) << compiled.log;
    EXPECT_EQ(compiled.ptxas.spill_store_bytes, 0) << compiled.log;
    // Shared memory is all dynamic: codegen declares nothing ptxas would count.
    EXPECT_EQ(compiled.ptxas.static_smem_bytes, 0) << compiled.log;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, EveryKernel, ::testing::Values(90, 80),
                         [](const auto& info) { return "sm_" + std::to_string(info.param); });

// With the shared array declared static, ptxas counts it: it must equal the
// plan's total (address + bytes of the highest buffer).
TEST(NvrtcCompiler, PtxasSharedMemoryEqualsPlan) {
  CodegenOptions fixed;
  fixed.static_shared_memory = true;
  int checked = 0;
  for (const auto& t : allTestKernels()) {
    const IntExpr planned = sharedMemoryBytes(t->kernel);
    ASSERT_TRUE(planned.isConstant());
    if (*planned.constant() == 0) continue;
    SCOPED_TRACE(t->name);
    const CompiledKernel compiled = compileCuda(generateCuda(t->kernel, t->name, fixed), t->name);
    EXPECT_EQ(compiled.ptxas.static_smem_bytes, *planned.constant()) << compiled.log;
    EXPECT_NO_THROW(checkPtxasSharedMemory(compiled, *planned.constant(), "plan"));
    EXPECT_SMELT_ERROR(checkPtxasSharedMemory(compiled, *planned.constant() - 16, "the plan's report"),
                       "ptxas reports ", " B of static shared memory for kernel ", "the plan's report");
    ++checked;
  }
  EXPECT_EQ(checked, 2);  // row_sum (workspace) and shared_tiles
}

TEST(NvrtcCompiler, FailureCarriesLogAndNumberedSource) {
  const std::string source =
      "extern \"C\" __global__ void broken(float* out) {\n"
      "  out[threadIdx.x] = undeclared_value;\n"
      "}\n";
  try {
    compileCuda(source, "broken");
    FAIL() << "expected smelt::Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NVRTC failed to compile kernel 'broken'"), std::string::npos) << what;
    EXPECT_NE(what.find("--- NVRTC log ---"), std::string::npos) << what;
    EXPECT_NE(what.find("identifier \"undeclared_value\" is undefined"), std::string::npos) << what;
    EXPECT_NE(what.find("   2 |   out[threadIdx.x] = undeclared_value;"), std::string::npos) << what;
    EXPECT_NE(what.find("--gpu-architecture=sm_90"), std::string::npos) << what;
  }
}

TEST(NvrtcCompiler, IncludeDirOverride) {
  auto t = halfCastKernel();
  const std::string source = generateCuda(t->kernel, t->name);
  ASSERT_EQ(setenv("SMELT_CUDA_INCLUDE", "/nonexistent/cuda/include", 1), 0);
  EXPECT_EQ(cudaIncludeDir(), "/nonexistent/cuda/include");
  try {
    compileCuda(source, t->name);
    ADD_FAILURE() << "cuda_fp16.h should not be found";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda_fp16.h"), std::string::npos) << e.what();
  }
  unsetenv("SMELT_CUDA_INCLUDE");
  EXPECT_NO_THROW(compileCuda(source, t->name));
}

TEST(NvrtcCompiler, ParsesPtxasReportOfTheNamedEntry) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers, 16 bytes smem\n"
      "ptxas info    : Compiling entry function 'mine' for 'sm_90'\n"
      "ptxas info    : Function properties for mine\n"
      "ptxas         .     32 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compile time = 2.5 ms\n";
  const PtxasInfo info = parsePtxasInfo(log, "mine");
  EXPECT_EQ(info.registers, 255);
  EXPECT_EQ(info.barriers, 1);
  EXPECT_EQ(info.static_smem_bytes, 4096);
  EXPECT_EQ(info.stack_frame_bytes, 32);
  EXPECT_EQ(info.spill_store_bytes, 12);
  EXPECT_EQ(info.spill_load_bytes, 8);
  EXPECT_EQ(parsePtxasInfo(log, "other").registers, 8);
  EXPECT_THROW(parsePtxasInfo(log, "absent"), Error);
}

// NVRTC 12.9+ caches programs, and a compile served from that cache has no
// ptxas report (on a GPU machine the second compile of a kernel failed with
// "ptxas: no report"; this machine's NVRTC kept no cache without a driver):
// compiling one source twice reports the same resources both times.
TEST(NvrtcCompiler, RecompilingTheSameSourceStillReportsPtxas) {
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcCachesPrograms(), major > 12 || (major == 12 && minor >= 9));
  const std::vector<std::unique_ptr<TestKernel>> kernels = allTestKernels();
  const TestKernel& t = *kernels.front();
  const std::string source = generateCuda(t.kernel, t.name);
  const CompiledKernel first = compileCuda(source, t.name);
  const CompiledKernel second = compileCuda(source, t.name);
  EXPECT_GT(second.ptxas.registers, 0) << second.log;
  EXPECT_EQ(second.ptxas.registers, first.ptxas.registers);
  EXPECT_EQ(second.ptxas.static_smem_bytes, first.ptxas.static_smem_bytes);
}

TEST(NvrtcCompiler, SupportsTheDefaultArchs) {
  const std::vector<int> archs = nvrtcSupportedArchs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), 80), archs.end());
}

// Not a pass/fail bound (the machine is shared): prints the medians so the
// numbers can be tracked. The first compile in a process also pays NVRTC's
// own start-up and is reported separately.
TEST(NvrtcCompiler, CompileTimes) {
  auto median = [](const std::string& source, const std::string& name) {
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) ms.push_back(compileCuda(source, name).compile_ms);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  auto pointwise = pointwiseKernel();
  auto reduction = reductionKernel();
  auto half = halfCastKernel();
  const std::string pointwise_cu = generateCuda(pointwise->kernel, pointwise->name);
  const double first = compileCuda(pointwise_cu, pointwise->name).compile_ms;
  const double pw = median(pointwise_cu, pointwise->name);
  const double red = median(generateCuda(reduction->kernel, reduction->name), reduction->name);
  const double fp16 = median(generateCuda(half->kernel, half->name), half->name);
  std::cout << "NVRTC sm_90 compile (median of 5): first in process " << first << " ms, pointwise " << pw
            << " ms, block reduction " << red << " ms, half/bf16 (cuda_fp16.h + cuda_bf16.h) " << fp16
            << " ms\n";
  ::testing::Test::RecordProperty("pointwise_ms", std::to_string(pw));
  ::testing::Test::RecordProperty("fp16_bf16_ms", std::to_string(fp16));
  EXPECT_GT(pw, 0);
}

}  // namespace
}  // namespace smelt
