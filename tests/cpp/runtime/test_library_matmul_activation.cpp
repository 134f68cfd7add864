// addmm's activation in the library segment (library_matmul.h): a ReLU or a
// tanh-GELU after a 2-D matmul's bias add, read by nothing else, is one call
// to at::_addmm_activation (cuBLASLt's RELU_BIAS / GELU_BIAS epilogue on
// CUDA) instead of a kernel of smelt's after the library's addmm. Forced on
// CPU tensors (MatmulPolicy::Library), against ATen; the erf GELU, an
// activation whose input is also read elsewhere and a batched matmul keep
// the activation outside.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <sstream>

#include "common/aten_reference.h"
#include "fusion/ops.h"
#include "runtime/aten_dtype.h"
#include "runtime/executor_test_util.h"
#include "runtime/fusion_executor_cache.h"

namespace smelt {
namespace {

using testing::evaluateWithATen;
using testing::expectOutputsMatch;

enum class Activation { Relu, GeluTanh, GeluErf };

TensorView* activate(TensorView* x, Activation activation) {
  switch (activation) {
    case Activation::Relu: return relu(x);
    case Activation::GeluTanh: return gelu(x, /*tanh_approximation=*/true);
    case Activation::GeluErf: return gelu(x, /*tanh_approximation=*/false);
  }
  return nullptr;
}

at::Tensor activate(const at::Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::Relu: return at::relu(x);
    case Activation::GeluTanh: return at::gelu(x, "tanh");
    case Activation::GeluErf: return at::gelu(x, "none");
  }
  return {};
}

// Where a 16-bit fusion applies the activation: to the Float biased result
// before the cast back, or to the cast (torch code on a bf16 Linear's output).
enum class Order { BeforeCast, AfterCast };

// act(a @ b + bias): a [M, K], b [K, N], bias [N], all of `type`.
std::unique_ptr<Fusion> addmmActivation(DataType type, Activation activation,
                                        Order order = Order::AfterCast) {
  auto fusion = std::make_unique<Fusion>();
  FusionGuard guard(fusion.get());
  TensorView* a = makeContigTensor(2, type);
  TensorView* b = makeContigTensor(2, type);
  TensorView* bias = makeContigTensor(1, type);
  fusion->addInput(a);
  fusion->addInput(b);
  fusion->addInput(bias);
  if (type == DataType::Float) {
    fusion->addOutput(activate(add(matmul(a, b), broadcast(bias, {true, false})), activation));
    return fusion;
  }
  // matmul()'s core without its cast back, the bias added in Float (as
  // linear() and the FX translation of a 16-bit addmm state it).
  TensorView* product = mul(broadcast(castOp(DataType::Float, a), {false, false, true}),
                            broadcast(castOp(DataType::Float, b), {true, false, false}));
  TensorView* biased = add(sum(product, {1}), broadcast(castOp(DataType::Float, bias), {true, false}));
  fusion->addOutput(order == Order::BeforeCast ? castOp(type, activate(biased, activation))
                                               : activate(castOp(type, biased), activation));
  return fusion;
}

std::vector<at::Tensor> addmmInputs(at::ScalarType type, int64_t m, int64_t n, int64_t k) {
  at::manual_seed(5);
  const auto options = at::TensorOptions().dtype(at::kDouble);
  return {(at::randn({m, k}, options) * 0.5).to(type), (at::randn({k, n}, options) * 0.5).to(type),
          at::randn({n}, options).to(type)};
}

ExecutorOptions libraryOptions() {
  ExecutorOptions options;
  options.matmul = MatmulPolicy::Library;
  return options;
}

struct Ran {
  std::vector<at::Tensor> outputs;
  std::vector<std::string> library_params;  // one per library segment
  size_t segments = 0;
  int64_t kernels = 0;
};

Ran runForcedLibrary(std::unique_ptr<Fusion> fusion, const std::vector<at::Tensor>& inputs) {
  FusionExecutorCache cache(std::move(fusion), libraryOptions());
  Ran ran;
  ran.outputs = cache.runFusionWithInputs(inputs);
  const FusionRun& run = cache.lastRun();
  ran.segments = run.segments.size();
  for (const SegmentRun& segment : run.segments) {
    if (segment.scheduler == SchedulerType::LibraryMatmul) ran.library_params.push_back(segment.params);
  }
  ran.kernels = cache.numCompiledKernels();
  Fusion& ran_fusion = const_cast<Fusion&>(cache.fusion());
  expectOutputsMatch(ran_fusion, ran.outputs, evaluateWithATen(ran_fusion, inputs), run.toString());
  return ran;
}

std::string libraryParams(const std::string& call) {
  return "LibraryMatmul{" + call + "; library: asked for (matmul policy)}";
}

TEST(LibraryMatmulActivation, ReluAndTanhGeluJoinTheFloatAddmm) {
  const std::vector<at::Tensor> inputs = addmmInputs(at::kFloat, 33, 24, 40);
  const at::Tensor biased = at::addmm(inputs[2], inputs[0], inputs[1]);
  for (const auto& [activation, name] : {std::pair{Activation::Relu, "relu"},
                                         std::pair{Activation::GeluTanh, "gelu_tanh"}}) {
    SCOPED_TRACE(name);
    const Ran ran = runForcedLibrary(addmmActivation(DataType::Float, activation), inputs);
    // The whole fusion is one library call: no kernel of smelt's.
    EXPECT_EQ(ran.segments, 1u);
    EXPECT_EQ(ran.kernels, 0);
    ASSERT_EQ(ran.library_params.size(), 1u);
    EXPECT_EQ(ran.library_params[0],
              libraryParams(std::string("aten::_addmm_activation(") + name + ") float -> float"));
    EXPECT_TRUE(at::allclose(ran.outputs[0], activate(biased, activation), 1e-5, 1e-5));
  }
}

TEST(LibraryMatmulActivation, ErfGeluStaysInAKernelAfterTheAddmm) {
  // cuBLASLt's GELU epilogue is the tanh form: the erf form is not its.
  for (DataType type : {DataType::Float, DataType::BFloat16}) {
    SCOPED_TRACE(::testing::Message() << type);
    const std::vector<at::Tensor> inputs = addmmInputs(toAtenType(type), 33, 24, 40);
    const Ran ran = runForcedLibrary(addmmActivation(type, Activation::GeluErf), inputs);
    EXPECT_EQ(ran.segments, 2u);
    EXPECT_EQ(ran.kernels, 1);
    ASSERT_EQ(ran.library_params.size(), 1u);
    std::ostringstream call;
    call << "aten::addmm " << type << " -> " << type;
    EXPECT_EQ(ran.library_params[0], libraryParams(call.str()));
  }
}

TEST(LibraryMatmulActivation, SixteenBitOperandsEitherSideOfTheCastBack) {
  for (DataType type : {DataType::Half, DataType::BFloat16}) {
    const at::ScalarType aten_type = toAtenType(type);
    const std::vector<at::Tensor> inputs = addmmInputs(aten_type, 37, 16, 24);
    const at::Tensor biased = at::addmm(inputs[2].to(at::kFloat), inputs[0].to(at::kFloat),
                                        inputs[1].to(at::kFloat));
    for (const auto& [activation, name] : {std::pair{Activation::Relu, "relu"},
                                           std::pair{Activation::GeluTanh, "gelu_tanh"}}) {
      for (Order order : {Order::BeforeCast, Order::AfterCast}) {
        SCOPED_TRACE(::testing::Message() << type << " " << name << " "
                                          << (order == Order::BeforeCast ? "before" : "after"));
        const Ran ran = runForcedLibrary(addmmActivation(type, activation, order), inputs);
        EXPECT_EQ(ran.segments, 1u);
        EXPECT_EQ(ran.kernels, 0);
        ASSERT_EQ(ran.library_params.size(), 1u);
        std::ostringstream call;
        call << "aten::_addmm_activation(" << name << ") " << type << " -> " << type;
        EXPECT_EQ(ran.library_params[0], libraryParams(call.str()));
        // The activation of the fp32 result, rounded once; ATen's CPU kernel
        // rounds addmm's result first: one 16-bit ulp apart at most.
        const at::Tensor want = activate(biased, activation).to(aten_type);
        const double ulp = type == DataType::Half ? 1.0 / 1024 : 1.0 / 128;
        EXPECT_TRUE(at::allclose(ran.outputs[0].to(at::kFloat), want.to(at::kFloat), ulp, ulp))
            << (ran.outputs[0].to(at::kFloat) - want.to(at::kFloat)).abs().max();
      }
    }
  }
}

TEST(LibraryMatmulActivation, ActivationInputReadElsewhereStaysOutside) {
  // The biased result is an output too, or a second op reads it: the
  // library must write it, so the activation runs in a kernel after it.
  for (bool as_output : {true, false}) {
    SCOPED_TRACE(as_output ? "output" : "second reader");
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard guard(fusion.get());
      TensorView* a = makeContigTensor(2);
      TensorView* b = makeContigTensor(2);
      TensorView* bias = makeContigTensor(1);
      fusion->addInput(a);
      fusion->addInput(b);
      fusion->addInput(bias);
      TensorView* biased = add(matmul(a, b), broadcast(bias, {true, false}));
      if (as_output) {
        fusion->addOutput(relu(biased));
        fusion->addOutput(biased);
      } else {
        fusion->addOutput(add(relu(biased), mul(biased, 0.5)));
      }
    }
    const std::vector<at::Tensor> inputs = addmmInputs(at::kFloat, 20, 12, 8);
    const Ran ran = runForcedLibrary(std::move(fusion), inputs);
    EXPECT_EQ(ran.segments, 2u);
    EXPECT_EQ(ran.kernels, 1);
    ASSERT_EQ(ran.library_params.size(), 1u);
    EXPECT_EQ(ran.library_params[0], libraryParams("aten::addmm float -> float"));
  }
}

TEST(LibraryMatmulActivation, BatchedMatmulKeepsBiasAndActivationOutside) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard guard(fusion.get());
    TensorView* a = makeContigTensor(3);
    TensorView* b = makeContigTensor(3);
    TensorView* bias = makeContigTensor(1);
    fusion->addInput(a);
    fusion->addInput(b);
    fusion->addInput(bias);
    fusion->addOutput(relu(add(matmul(a, b), broadcast(bias, {true, true, false}))));
  }
  at::manual_seed(9);
  const std::vector<at::Tensor> inputs = {at::randn({3, 10, 8}), at::randn({3, 8, 6}), at::randn({6})};
  const Ran ran = runForcedLibrary(std::move(fusion), inputs);
  EXPECT_EQ(ran.segments, 2u);
  EXPECT_EQ(ran.kernels, 1);
  ASSERT_EQ(ran.library_params.size(), 1u);
  EXPECT_EQ(ran.library_params[0], libraryParams("aten::bmm float -> float"));
  const at::Tensor want = at::relu(at::bmm(inputs[0], inputs[1]) + inputs[2]);
  EXPECT_TRUE(at::allclose(ran.outputs[0], want, 1e-5, 1e-5));
}

// What a GPU run would do, decided without one (compileFor on meta inputs
// for a CUDA device): the tanh-GELU of a bf16 Linear joins the library call.
TEST(LibraryMatmulActivation, CompileForACudaDeviceTakesTheActivation) {
  FusionExecutorCache cache(addmmActivation(DataType::BFloat16, Activation::GeluTanh));
  std::vector<at::Tensor> meta;
  for (const at::Tensor& t : addmmInputs(at::kBFloat16, 256, 128, 64)) meta.push_back(t.to(at::kMeta));
  const std::vector<at::Tensor> outputs = cache.compileFor(meta, c10::Device(c10::kCUDA, 0));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].sizes(), at::IntArrayRef({256, 128}));
  EXPECT_EQ(outputs[0].scalar_type(), at::kBFloat16);
  const FusionRun& run = cache.lastRun();
  ASSERT_EQ(run.segments.size(), 1u) << run.toString();
  EXPECT_NE(run.segments[0].params.find("aten::_addmm_activation(gelu_tanh) bfloat16 -> bfloat16; "
                                        "library: on sm_"),
            std::string::npos)
      << run.segments[0].params;
}

}  // namespace
}  // namespace smelt
