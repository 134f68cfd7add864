// Every acceptance-case fusion (shared/cases/smem_cases.md), lowered by
// GpuLower, generated and compiled with NVRTC for sm_90; with the shared array
// declared static, ptxas's shared memory equals the planned total.
#include <gtest/gtest.h>

#include "codegen/cuda_codegen.h"
#include "common/smem_case_fusions.h"
#include "lower/lower.h"
#include "runtime/nvrtc_compiler.h"

namespace smelt {
namespace {

class CaseKernel : public ::testing::TestWithParam<cases::NamedCase> {};

TEST_P(CaseKernel, CompilesAndPtxasSharedMemoryEqualsPlan) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  GetParam().build();
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  const std::string name = std::string("case_") + GetParam().name;

  const CompiledKernel compiled = compileCuda(generateCuda(kernel, name), name);
  EXPECT_GT(compiled.ptxas.registers, 0);
  EXPECT_EQ(compiled.ptxas.static_smem_bytes, 0) << "shared memory must all be the planned dynamic array";

  const IntExpr planned = sharedMemoryBytes(kernel);
  // A symbolic plan (A9_symbolic) cannot be a static array: compiled above, not compared.
  if (!planned.isConstant() || *planned.constant() == 0) return;
  CodegenOptions fixed;
  fixed.static_shared_memory = true;
  const CompiledKernel with_static = compileCuda(generateCuda(kernel, name, fixed), name);
  EXPECT_EQ(with_static.ptxas.static_smem_bytes, *planned.constant()) << with_static.log;
}

INSTANTIATE_TEST_SUITE_P(SmemCases, CaseKernel, ::testing::ValuesIn(cases::allCases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace smelt
