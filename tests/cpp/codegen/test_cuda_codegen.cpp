// CUDA generation from hand-built kernel IR: golden text for two kernels,
// the constructs of the others, stability, shared-memory sizes and errors.
// (NVRTC compiles all of them in tests/cpp/runtime.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <fstream>
#include <sstream>

#include "codegen/cuda_codegen.h"
#include "codegen/test_kernels.h"
#include "codegen/vectorize.h"
#include "fusion/error.h"

namespace smelt {
namespace {

using namespace codegen_testing;

// The generated text with the prelude every kernel shares cut to one line, so
// that a prelude change touches no golden file.
std::string withoutPrelude(const std::string& text) {
  const std::string prelude = cudaPrelude();
  const size_t begin = text.find(prelude);
  if (begin == std::string::npos) {
    ADD_FAILURE() << "the generated CUDA holds no prelude";
    return text;
  }
  return text.substr(0, begin) + "\n// (cudaPrelude())\n" + text.substr(begin + prelude.size());
}

// Compares with golden/<name>.cu, the prelude cut (withoutPrelude);
// SMELT_UPDATE_GOLDEN=1 rewrites the file.
void expectGolden(const std::string& name, const std::string& generated) {
  const std::string text = withoutPrelude(generated);
  const std::string path = std::string(SMELT_GOLDEN_DIR) + "/" + name + ".cu";
  const char* update = std::getenv("SMELT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << "missing golden file " << path << " (run with SMELT_UPDATE_GOLDEN=1)";
  std::stringstream golden;
  golden << file.rdbuf();
  EXPECT_EQ(text, golden.str()) << "generated CUDA differs from " << path
                                << " (if intended, rerun with SMELT_UPDATE_GOLDEN=1)";
}

// The kernel without the shared prelude, for readable expectations.
std::string kernelPart(const std::string& text) {
  const size_t begin = text.find("extern \"C\"");
  return begin == std::string::npos ? text : text.substr(begin);
}

TEST(CudaCodegen, PointwiseGolden) {
  auto t = pointwiseKernel();
  expectGolden("pointwise", generateCuda(t->kernel, t->name));
  // The 32-bit variant: the same code with `typedef int index_t;`.
  CodegenOptions narrow;
  narrow.index_type = DataType::Int32;
  std::string wide = generateCuda(t->kernel, t->name);
  const std::string typedef64 = "typedef int64_t index_t;";
  ASSERT_NE(wide.find(typedef64), std::string::npos);
  wide.replace(wide.find(typedef64), typedef64.size(), "typedef int index_t;");
  EXPECT_EQ(generateCuda(t->kernel, t->name, narrow), wide);
}

TEST(CudaCodegen, SharedTilesGolden) {
  auto t = sharedTilesKernel();
  expectGolden("shared_tiles", generateCuda(t->kernel, t->name));
}

TEST(CudaCodegen, VectorizedCopyGolden) {
  auto t = vectorizedCopyKernel();
  expectGolden("vectorized_copy", generateCuda(t->kernel, t->name));
}

TEST(CudaCodegen, PointwiseSignatureAndBindings) {
  auto t = pointwiseKernel();
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  EXPECT_NE(cuda.find("extern \"C\" __global__ void __launch_bounds__(128) pointwise(\n"
                      "    smelt::Tensor<float, 2> T0,\n"
                      "    smelt::Tensor<float, 2> T1,\n"
                      "    smelt::Tensor<float, 2> T4,\n"
                      "    float s0) {"),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("const index_t i0 = blockIdx.x;"), std::string::npos);
  EXPECT_NE(cuda.find("const index_t i1 = threadIdx.x;"), std::string::npos);
  EXPECT_NE(cuda.find("float T3[1];"), std::string::npos);
  EXPECT_EQ(cuda.find("for ("), std::string::npos) << "trivial loops must not be for loops";
  EXPECT_EQ(cuda.find("smem"), std::string::npos) << "no shared buffers, no smem";
}

TEST(CudaCodegen, BlockReduceThroughWorkspace) {
  auto t = reductionKernel();
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  EXPECT_NE(cuda.find("extern __shared__ __align__(128) unsigned char smem[];"), std::string::npos);
  EXPECT_NE(cuda.find("float* T5 = reinterpret_cast<float*>(smem + 0);  // 512 bytes"), std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("T3[0] = 0.0f;"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("for (index_t i2 = 0; i2 < smelt::ceilDiv(T0.size[1], 128); ++i2) {"),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("T3[0] = T3[0] + T0.data[(i0 * T0.stride[0]) + (((i2 * 128) + i1) * T0.stride[1])];"),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("T4[0] = smelt::blockReduce<true, false, false>(T3[0], T5, smelt::Sum());"),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("if (i1 == 0) {"), std::string::npos) << cuda;
  EXPECT_EQ(sharedMemoryBytes(t->kernel).constant(), 512);
}

// A thread failing the reduction's predicate (here: a row beyond the last)
// still takes part in the block reduction, which synchronizes the block, but
// must not store: its output index may be out of bounds.
TEST(CudaCodegen, PredicatedBlockReduceStoresOnlyWhereTheWritePredicateHolds) {
  // The predicate says which threads contribute, the write predicate which
  // store: a thread that contributed nothing (past a size-1 reduced axis'
  // extent) still holds the result of the allreduce.
  for (bool guarded_store : {true, false}) {
    auto t = reductionKernel();
    // The kernel is blockIdx.x { threadIdx.x { ..., BlockReduce, ... } }.
    auto* row = static_cast<kir::ForLoop*>(t->kernel.body.back().get());
    auto* thread = static_cast<kir::ForLoop*>(row->body.back().get());
    int reductions = 0;
    for (auto& s : thread->body) {
      if (auto* reduce = dynamic_cast<kir::BlockReduce*>(s.get())) {
        reduce->predicate.terms = {lt(sym("i0"), sym("T0.size[0]"))};
        reduce->write_predicate.terms.clear();
        if (guarded_store) reduce->write_predicate.terms = {lt(sym("i0"), sym("T0.size[0]"))};
        ++reductions;
      }
    }
    ASSERT_EQ(reductions, 1);
    const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
    const std::string reduced =
        "smelt::blockReduce<true, false, false>((i0 < T0.size[0] ? T3[0] : 0.0f), T5, smelt::Sum());";
    if (guarded_store) {
      EXPECT_NE(cuda.find("const auto reduced = " + reduced), std::string::npos) << cuda;
      EXPECT_NE(cuda.find("if (i0 < T0.size[0]) T4[0] = reduced;"), std::string::npos) << cuda;
    } else {
      EXPECT_NE(cuda.find("T4[0] = " + reduced), std::string::npos) << cuda;
    }
  }
}

TEST(CudaCodegen, HalfAndBFloat16ComputeInFloat) {
  auto t = halfCastKernel();
  const std::string cuda = generateCuda(t->kernel, t->name);
  EXPECT_EQ(cuda.find("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"), cuda.find("#include"));
  EXPECT_NE(cuda.find("smelt::Tensor<__half, 1> T0"), std::string::npos);
  EXPECT_NE(cuda.find("smelt::Tensor<__nv_bfloat16, 1> T3"), std::string::npos);
  EXPECT_NE(cuda.find("T2[i2] = __half2float(T0.data["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("T2[i2] = tanhf(T2[i2]);"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("= __float2bfloat16(T2[i2]);"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("= __float2half(__bfloat162float(T3.data["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("#pragma unroll\n"), std::string::npos);

  auto p = pointwiseKernel();
  EXPECT_EQ(generateCuda(p->kernel, p->name).find("#include"), std::string::npos)
      << "float-only kernels include no headers";
}

TEST(CudaCodegen, PaddedReadIsGuarded) {
  auto t = padKernel();
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  // The index spelled threadIdx.x is bound by the loop itself and widened to
  // 64 bits, so `- 2` cannot wrap around.
  EXPECT_NE(cuda.find("{  // threadIdx.x over [0, 64) bound to threadIdx.x\n"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("const int64_t threadIdx.x"), std::string::npos);
  EXPECT_NE(cuda.find("T1.data[((i0 * 64) + index_t(threadIdx.x)) * T1.stride[0]] = "
                      "(((i0 * 64) + index_t(threadIdx.x)) - 2 >= 0 && "
                      "((i0 * 64) + index_t(threadIdx.x)) - 2 < T0.size[0] ? "
                      "T0.data[(((i0 * 64) + index_t(threadIdx.x)) - 2) * T0.stride[0]] : 0.5f);"),
            std::string::npos)
      << cuda;
}

TEST(CudaCodegen, EveryOpEmits) {
  auto t = everyOpKernel();
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  for (const char* piece : {"= -T0.data[0];", "expf(T0.data[0])", "tanh(T1.data[0])", "fabsf(T0.data[0])",
                            "llabs(T3.data[0])", "smelt::relu(T0.data[0])", "static_cast<int>(T0.data[0])",
                            "static_cast<double>(T0.data[0]) + T1.data[0]", "T3.data[0] - T3.data[0]",
                            "T0.data[0] * 3.0f", "T1.data[0] / T1.data[0]",
                            "smelt::maximum<float>(T0.data[0], T0.data[0])",
                            "smelt::minimum<int64_t>(T3.data[0], T3.data[0])",
                            "T2.data[0] ? T0.data[0] : T0.data[0]", "= -1.5f;", "= -smelt::infinity<float>();",
                            "smelt::maximum(", "bool "}) {
    EXPECT_NE(cuda.find(piece), std::string::npos) << "missing `" << piece << "` in\n" << cuda;
  }
}

TEST(CudaCodegen, OutputIsStable) {
  auto a = sharedTilesKernel();
  auto b = sharedTilesKernel();
  const std::string first = generateCuda(a->kernel, "k");
  EXPECT_EQ(first, generateCuda(a->kernel, "k"));
  EXPECT_EQ(first, generateCuda(b->kernel, "k"));
}

TEST(CudaCodegen, SharedBuffersAtPlannedAddresses) {
  auto t = sharedTilesKernel();
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  EXPECT_NE(cuda.find("float* T1 = reinterpret_cast<float*>(smem + 0);  // 512 bytes\n"), std::string::npos);
  EXPECT_NE(cuda.find("float* T2 = reinterpret_cast<float*>(smem + 512);  // 512 bytes\n"), std::string::npos);
  EXPECT_NE(cuda.find("float* T3 = reinterpret_cast<float*>(smem + 0);  // 512 bytes, alias of T1\n"),
            std::string::npos);
  EXPECT_NE(cuda.find("__syncthreads();  // RAW T1"), std::string::npos);
  EXPECT_EQ(sharedMemoryBytes(t->kernel).constant(), 1024);

  CodegenOptions options;
  options.static_shared_memory = true;
  const std::string fixed = generateCuda(t->kernel, t->name, options);
  EXPECT_NE(fixed.find("  __shared__ __align__(128) unsigned char smem[1024];\n"), std::string::npos);
  EXPECT_EQ(fixed.find("extern __shared__"), std::string::npos);
}

TEST(CudaCodegen, SymbolicSharedMemorySize) {
  auto t = sharedTilesKernel();
  kir::Buffer* t2 = t->kernel.buffers[3].get();
  ASSERT_EQ(t2->name, "T2");
  t2->address = IntExpr::symbol("T0.size[0]") * 4;
  const IntExpr bytes = sharedMemoryBytes(t->kernel);
  EXPECT_FALSE(bytes.isConstant());
  EXPECT_EQ(bytes.evaluate({{"T0.size[0]", 1000}}), 4512);
  EXPECT_NE(generateCuda(t->kernel, "k").find("reinterpret_cast<float*>(smem + T0.size[0] * 4);"),
            std::string::npos);
  CodegenOptions options;
  options.static_shared_memory = true;
  EXPECT_THROW(generateCuda(t->kernel, "k", options), Error);
}

TEST(CudaCodegen, SharedBufferWithoutAddressIsAnError) {
  auto t = reductionKernel();
  for (auto& b : t->kernel.buffers) b->address.reset();
  try {
    generateCuda(t->kernel, t->name);
    FAIL() << "expected smelt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared buffer T5 has no planned address"), std::string::npos)
        << e.what();
  }
}

TEST(CudaCodegen, SymbolicLocalBufferIsAnError) {
  auto t = reductionKernel();
  kir::Buffer* partial = t->kernel.buffers[2].get();
  ASSERT_EQ(partial->name, "T3");
  partial->elements = IntExpr::symbol("T0.size[1]");
  try {
    generateCuda(t->kernel, t->name);
    FAIL() << "expected smelt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("local buffer T3 has symbolic size"), std::string::npos) << e.what();
  }
}

// The loops of vectorizedCopyKernel: [0] the load (T1 = T0), [1] the store.
kir::ForLoop* copyLoop(TestKernel& t, size_t which) {
  auto* bx = static_cast<kir::ForLoop*>(t.kernel.body.at(0).get());
  auto* tx = static_cast<kir::ForLoop*>(bx->body.at(0).get());
  return static_cast<kir::ForLoop*>(tx->body.at(1 + which).get());
}
kir::Compute& copyStmt(TestKernel& t, size_t which) {
  return static_cast<kir::Compute&>(*copyLoop(t, which)->body.at(0));
}

TEST(CudaVectorize, ContiguousAlignedCopiesBecomeVectorAccesses) {
  auto t = vectorizedCopyKernel();
  auto load = vectorizeLoop(*copyLoop(*t, 0));
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->width, 4);
  EXPECT_EQ(load->bytes, 16);
  ASSERT_EQ(load->copies.size(), 1u);
  EXPECT_EQ(load->copies[0].out_first.toString(), "0");
  EXPECT_EQ(load->copies[0].in_first.toString(), "((i0 * T0.stride[0]) + ((i1 * 4) * T0.stride[1]))");
  EXPECT_FALSE(load->scalar_tail);
  ASSERT_EQ(load->conditions.size(), 2u);
  EXPECT_EQ(load->conditions[0].toString(), "T0.stride[1] == 1");
  EXPECT_EQ(load->conditions[1].toString(), "T0.stride[0] % 4 == 0");
  auto bytes = vectorRequirements(t->kernel).bytes;
  EXPECT_EQ(bytes.size(), 3u);
  for (const kir::Buffer* b : {t->kernel.inputs[0], t->kernel.outputs[0], static_cast<const kir::Buffer*>(t->kernel.buffers[2].get())}) {
    EXPECT_EQ(bytes[b], 16) << b->name;
  }
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  EXPECT_NE(cuda.find("__align__(16) float T1[4];"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("#pragma unroll"), std::string::npos) << cuda;
}

TEST(CudaVectorize, OtherLoopsStayScalar) {
  // Each change breaks one condition of vectorize.h for the load only.
  auto not_vectorized = [](const std::function<void(TestKernel&)>& change, const char* what) {
    auto t = vectorizedCopyKernel();
    change(*t);
    EXPECT_FALSE(vectorizeLoop(*copyLoop(*t, 0)).has_value()) << what;
    EXPECT_TRUE(vectorizeLoop(*copyLoop(*t, 1)).has_value()) << what;
    const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
    EXPECT_NE(cuda.find("for (index_t i2 = 0; i2 < 4; ++i2) {"), std::string::npos)
        << what << "\n" << cuda;
    EXPECT_EQ(vectorRequirements(t->kernel).bytes.count(t->kernel.inputs[0]), 0u) << what;
  };
  not_vectorized(
      [](TestKernel& t) {
        const_cast<TensorView*>(t.kernel.inputs[0]->tv)->setContiguity({true, false});
      },
      "innermost dimension of T0 not declared contiguous");
  not_vectorized(
      [](TestKernel& t) {
        copyStmt(t, 0).predicate.terms = {eq(sym("i2"), 0)};
      },
      "predicate singling out a lane");
  not_vectorized(
      [](TestKernel& t) {
        kir::Access& in = *copyStmt(t, 0).operands[0].access;
        in.index = in.index + sym("T0.stride[1]");
      },
      "first element not a multiple of the width");
  not_vectorized(
      [](TestKernel& t) {
        kir::Access& in = *copyStmt(t, 0).operands[0].access;
        in.index = in.index + sym("i2") * sym("T0.stride[1]");
      },
      "two elements per iteration");
  not_vectorized(
      [](TestKernel& t) {
        FusionGuard guard(t.fusion.get());
        copyStmt(t, 0).operands[0].in_bounds.terms = {lt(sym("i2"), 4)};
        copyStmt(t, 0).operands[0].out_of_bounds_value = constant(0.0);
      },
      "padded read");
}

TEST(CudaVectorize, MergedContiguousDimensionsIndexAsOne) {
  // The load indexes T0 as a schedule merging its two dimensions does:
  // x / 64 and x % 64 with x = i0 * 64 + i1 * 4 + i2. With T0 contiguous in
  // dimension 0 that is x * stride[1], assuming stride[0] == 64 * stride[1].
  auto t = vectorizedCopyKernel();
  const IntExpr x = sym("i0") * 64 + sym("i1") * 4 + sym("i2");
  copyStmt(*t, 0).operands[0].access->index = (x / 64) * sym("T0.stride[0]") + (x % 64) * sym("T0.stride[1]");
  auto load = vectorizeLoop(*copyLoop(*t, 0));
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->copies[0].in_first.toString(), "(((i0 * 64) + (i1 * 4)) * T0.stride[1])");
  std::vector<std::string> conditions;
  for (const VectorCondition& c : load->conditions) conditions.push_back(c.toString());
  EXPECT_EQ(conditions, (std::vector<std::string>{"T0.stride[0] == (64 * T0.stride[1])", "T0.stride[1] == 1"}));
  EXPECT_EQ(load->conditions[0].violation({{"T0.stride[0]", 64}, {"T0.stride[1]", 1}}), std::nullopt);
  EXPECT_EQ(load->conditions[0].violation({{"T0.stride[0]", 65}, {"T0.stride[1]", 1}}),
            std::optional<std::string>("T0.stride[0] is 65 but (64 * T0.stride[1]) is 64"));
  // Not declared contiguous: no such identity, no vector.
  const_cast<TensorView*>(t->kernel.inputs[0]->tv)->setContiguity({false, true});
  EXPECT_FALSE(vectorizeLoop(*copyLoop(*t, 0)).has_value());
}

TEST(CudaVectorize, BoundOnTheVectorIndexRunsTheStraddlingVectorLaneByLane) {
  auto t = vectorizedCopyKernel();
  copyStmt(*t, 0).predicate.terms = {lt(sym("i1") * 4 + sym("i2"), sym("T0.size[1]"))};
  auto load = vectorizeLoop(*copyLoop(*t, 0));
  ASSERT_TRUE(load.has_value());
  EXPECT_TRUE(load->scalar_tail);
  ASSERT_EQ(load->copies[0].predicate.terms.size(), 1u);
  EXPECT_EQ(load->copies[0].predicate.terms[0].lhs.toString(), "((i1 * 4) + 3)");
  const std::string cuda = kernelPart(generateCuda(t->kernel, t->name));
  EXPECT_NE(cuda.find("      {  // i2 over [0, 4) vectorized: 16-byte accesses, lane by lane across a bound\n"
                      "        if ((i1 * 4) + 3 < T0.size[1]) {\n"
                      "          *reinterpret_cast<smelt::Vector<float, 4>*>(&T1[0]) = "),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("        } else {\n"
                      "          #pragma unroll\n"
                      "          for (index_t i2 = 0; i2 < 4; ++i2) {\n"
                      "            if ((i1 * 4) + i2 < T0.size[1]) {\n"),
            std::string::npos)
      << cuda;
  // A bound the index moves away from cannot be taken at the last lane.
  copyStmt(*t, 0).predicate.terms = {lt(sym("T0.size[1]") - sym("i2"), 4)};
  EXPECT_FALSE(vectorizeLoop(*copyLoop(*t, 0)).has_value());
}

TEST(CudaVectorize, WidthMustMakeAVectorType) {
  auto t = vectorizedCopyKernel();
  for (size_t which : {0, 1}) copyLoop(*t, which)->extent = 3;  // 12 bytes
  EXPECT_FALSE(vectorizeLoop(*copyLoop(*t, 0)).has_value());
  EXPECT_TRUE(vectorRequirements(t->kernel).bytes.empty());
  const std::string cuda = generateCuda(t->kernel, t->name);
  EXPECT_EQ(cuda.find("smelt::Vector"), std::string::npos) << "no vector prelude without vector accesses";
}

}  // namespace
}  // namespace smelt
