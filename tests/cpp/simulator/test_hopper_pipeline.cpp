// The hand-written Hopper tile kernel of simulator/hopper_tile.h (a 2-stage
// TMA/mbarrier ring and wgmma) in the simulator: its result equals ATen's
// matmul in every thread order; dropping the full-barrier wait, the
// arrive.expect_tx or the fence after init is reported; NVRTC compiles it
// for sm_90a and the SASS has HGMMA, UTMALDG and SYNCS and no local memory.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "runtime/simulator/simulator.h"
#include "simulator/hopper_tile.h"

namespace smelt {
namespace {

using namespace hopper_testing;

TEST(HopperPipeline, TwoStageRingEqualsATenMatmulInEveryThreadOrder) {
  std::unique_ptr<TestKernel> t = pipelineKernel({});
  const std::vector<at::Tensor> in = operands();
  const at::Tensor expected = at::matmul(in[0].to(at::kFloat), in[1].to(at::kFloat).t());
  for (auto order : {sim::ThreadOrder::Forward, sim::ThreadOrder::Reverse, sim::ThreadOrder::Random}) {
    sim::SimOptions options;
    options.order = order;
    sim::SimResult r = sim::simulate(t->kernel, in, {}, {}, options);
    ASSERT_TRUE(r.report.clean()) << r.report.toString();
    EXPECT_TRUE(at::equal(r.outputs[0], expected));  // small integers: exact in fp32
  }
}

TEST(HopperPipeline, MutationsAreCaught) {
  PipelineCase no_wait;
  no_wait.full_wait = false;
  sim::SimResult r = sim::simulate(pipelineKernel(no_wait)->kernel, operands());
  ASSERT_FALSE(r.report.races.empty()) << "no full-barrier wait: " << r.report.toString();
  EXPECT_NE(r.report.races[0].first.statement.find("TMA load"), std::string::npos);
  EXPECT_NE(r.report.races[0].second.statement.find("wgmma"), std::string::npos);

  PipelineCase no_expect_tx;
  no_expect_tx.expect_tx = false;
  r = sim::simulate(pipelineKernel(no_expect_tx)->kernel, operands());
  ASSERT_FALSE(r.report.errors.empty()) << "no arrive.expect_tx";
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::Deadlock);
  EXPECT_NE(r.report.errors[0].message.find("mbarrier bars[0]"), std::string::npos);

  PipelineCase no_fence;
  no_fence.fence = false;
  r = sim::simulate(pipelineKernel(no_fence)->kernel, operands());
  ASSERT_FALSE(r.report.errors.empty()) << "no fence.proxy.async after init";
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::MissingFence);
}

// cuobjdump from $SMELT_CUOBJDUMP, else the one the triton wheel ships.
std::string cuobjdumpPath() {
  if (const char* env = std::getenv("SMELT_CUOBJDUMP")) return env;
  FILE* pipe = popen("python3 -c 'import triton, os; print(os.path.dirname(triton.__file__))' 2>/dev/null", "r");
  if (pipe == nullptr) return "";
  std::array<char, 512> line{};
  std::string dir = fgets(line.data(), line.size(), pipe) ? std::string(line.data()) : "";
  pclose(pipe);
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  const std::string path = dir + "/backends/nvidia/bin/cuobjdump";
  return !dir.empty() && std::ifstream(path).good() ? path : "";
}

std::string sassOf(const CompiledKernel& compiled, const std::string& tool) {
  const std::string file = ::testing::TempDir() + "/" + compiled.kernel_name + ".cubin";
  std::ofstream(file, std::ios::binary).write(compiled.cubin.data(), static_cast<std::streamsize>(compiled.cubin.size()));
  FILE* pipe = popen((tool + " -sass " + file).c_str(), "r");
  std::string sass;
  std::array<char, 4096> chunk{};
  while (pipe != nullptr && fgets(chunk.data(), chunk.size(), pipe)) sass += chunk.data();
  if (pipe != nullptr) pclose(pipe);
  return sass;
}

TEST(HopperPipeline, CompilesForSm90aToHgmmaUtmaldgAndSyncsWithoutLocalMemory) {
  CompiledKernel compiled = compileSm90a(pipelineKernel({})->kernel, "hopper_tile");
  EXPECT_EQ(compiled.ptxas.stack_frame_bytes, 0) << compiled.log;
  EXPECT_EQ(compiled.ptxas.spill_store_bytes, 0) << compiled.log;
  std::cout << "hopper_tile sm_90a: " << compiled.ptxas.registers << " registers, stack "
            << compiled.ptxas.stack_frame_bytes << " B\n";
  const std::string tool = cuobjdumpPath();
  if (tool.empty()) GTEST_SKIP() << "no cuobjdump (set SMELT_CUOBJDUMP or install triton)";
  const std::string sass = sassOf(compiled, tool);
  ASSERT_NE(sass.find("Function : hopper_tile"), std::string::npos) << sass.substr(0, 2000);
  for (const char* op : {"HGMMA", "UTMALDG", "SYNCS"}) {
    EXPECT_NE(sass.find(op), std::string::npos) << op << " missing from the SASS";
  }
  for (const char* local : {"LDL", "STL"}) {
    EXPECT_EQ(sass.find(local), std::string::npos) << local << " (local memory) in the SASS";
  }
}

}  // namespace
}  // namespace smelt
