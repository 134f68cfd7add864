// A hand-written Hopper tile kernel in kernel IR (not a production builder):
// one warpgroup computes a 64 x 128 tile of A (64 x 256) times B^T (B given
// 128 x 256, K-major), TMA-loading 64-wide k blocks of A and B with 128-byte
// swizzle into a 2-stage ring guarded by full/empty mbarriers (thread 0 the
// producer: it refills a stage once all 128 threads arrived on its empty
// barrier), four wgmma k16 steps per block. The simulator's result equals
// ATen's matmul in every thread order; dropping the full-barrier wait, the
// arrive.expect_tx or the fence after init is reported; NVRTC compiles it
// for sm_90a and the SASS has HGMMA, UTMALDG and SYNCS and no local memory.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "runtime/simulator/simulator.h"
#include "simulator/hopper_kernels.h"

namespace smelt {
namespace {

using namespace hopper_testing;

constexpr int64_t kM = 64, kN = 128, kK = 256, kBlockK = 64, kStages = 2;
constexpr int64_t kABlock = kM * kBlockK, kBBlock = kN * kBlockK;  // elements per stage
constexpr int64_t kBlocks = kK / kBlockK;

struct PipelineCase {
  bool full_wait = true;
  bool expect_tx = true;
  bool fence = true;
};

std::unique_ptr<TestKernel> pipelineKernel(const PipelineCase& c) {
  HopperKernel k = hopperKernel({{{kM, kK}, DataType::Half}, {{kN, kK}, DataType::Half}},
                                {{kM, kN}, DataType::Float}, 128);
  kir::Kernel& kernel = k.t->kernel;
  // bars[0..1]: stage s full (TMA bytes landed); bars[2..3]: stage s empty.
  kir::Buffer* bars = k.t->shared("bars", DataType::Int, 2 * kStages, 0);
  kir::Buffer* a = k.t->shared("A", DataType::Half, kStages * kABlock, 1024);
  kir::Buffer* b = k.t->shared("B", DataType::Half, kStages * kBBlock, 1024 + kStages * kABlock * 2);
  kir::Buffer* acc = k.t->local("acc", DataType::Float, kN / 2);
  const kir::TensorMap* a_map = tensorMap(kernel, k.in[0], kM, kBlockK, kir::TmaSwizzle::Bytes128);
  const kir::TensorMap* b_map = tensorMap(kernel, k.in[1], kN, kBlockK, kir::TmaSwizzle::Bytes128);
  constexpr int64_t kStageBytes = (kABlock + kBBlock) * 2;
  kir::StmtList& body = *k.body;
  for (kir::Buffer* buffer : {bars, a, b, acc}) allocate(body, buffer);

  kir::IfThenElse* init = ifThen(body, all({eq(tx(), 0)}));
  kir::ForLoop* init_stages = loop(init->then_body, "i0", kStages);
  mbarrierInit(init_stages->body, bars, sym("i0"), 1);
  mbarrierInit(init_stages->body, bars, sym("i0") + kStages, 128);
  if (c.fence) fenceProxyAsync(init->then_body);
  sync(body, "mbarrier init");

  // Fills stage `stage` with k block `block` (thread 0 only).
  auto fill = [&](kir::StmtList& list, const IntExpr& stage, const IntExpr& block) {
    if (c.expect_tx) mbarrierArrive(list, bars, stage, kStageBytes);
    tmaLoad(list, at(a, stage * kABlock), a_map, 0, block * kBlockK, at(bars, stage));
    tmaLoad(list, at(b, stage * kBBlock), b_map, 0, block * kBlockK, at(bars, stage));
  };
  kir::IfThenElse* prologue = ifThen(body, all({eq(tx(), 0)}));
  kir::ForLoop* first_fill = loop(prologue->then_body, "i1", kStages);
  fill(first_fill->body, sym("i1"), sym("i1"));

  kir::ForLoop* zero = loop(body, "i2", kN / 2);
  {
    FusionGuard guard(k.t->fusion.get());
    compute(zero->body, k.cast, at(acc, sym("i2")), {scalar(constant(0.0))});
  }
  kir::ForLoop* blocks = loop(body, "i3", kBlocks);
  const IntExpr block = sym("i3");
  const IntExpr stage = block % kStages;
  const IntExpr parity = block / kStages % 2;
  if (c.full_wait) mbarrierWait(blocks->body, bars, stage, parity);
  wgmmaFence(blocks->body, acc);
  kir::ForLoop* steps = loop(blocks->body, "i4", kBlockK / 16);
  wgmma(steps->body, at(acc, 0), at(a, stage * kABlock + sym("i4") * 16),
        at(b, stage * kBBlock + sym("i4") * 16), kN);
  wgmmaCommit(blocks->body);
  wgmmaWait(blocks->body, 0, acc);
  mbarrierArrive(blocks->body, bars, stage + kStages);
  kir::IfThenElse* refill = ifThen(blocks->body, all({eq(tx(), 0), lt(block + kStages, kBlocks)}));
  mbarrierWait(refill->then_body, bars, stage + kStages, parity);
  fill(refill->then_body, stage, block + kStages);

  kir::ForLoop* store = loop(body, "i5", kN / 2);
  const IntExpr i = sym("i5");
  compute(store->body, k.cast, at(k.out, accumulatorRow(tx(), i) * kN + accumulatorCol(tx(), i)),
          {read(acc, i)});
  return std::move(k.t);
}

std::vector<at::Tensor> operands() {
  at::manual_seed(7);
  return {at::randint(-4, 5, {kM, kK}, at::kFloat).to(at::kHalf),
          at::randint(-4, 5, {kN, kK}, at::kFloat).to(at::kHalf)};
}

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
