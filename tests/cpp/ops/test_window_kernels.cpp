// Window ops (slice, pad, cat) and iota through the pointwise scheduler, GpuLower, the
// simulator (against ATen) and NVRTC; recomputeWindowInputs rewrites windows
// over computed tensors so every pad reads a fusion input, and the rewritten
// fusion computes what the original does.
#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "ops/pointwise_kernel_checks.h"
#include "runtime/fusion_executor_cache.h"
#include "scheduler/registry.h"
#include "scheduler/window_inputs.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt {
namespace {

using sim::testing::expectKernelCorrect;
using smelt::testing::evaluateWithATen;
using smelt::testing::expectCompiles;
using smelt::testing::randomInputs;

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

struct WindowCase {
  const char* name;
  std::vector<std::vector<int64_t>> shapes;
  TensorView* (*build)(const std::vector<TensorView*>& in);
  int64_t rewritten;  // windows recomputeWindowInputs rewrites
};

void PrintTo(const WindowCase& c, std::ostream* os) { *os << c.name; }

class WindowKernel : public ::testing::TestWithParam<WindowCase> {};

// Every pad of the rewritten fusion reads a fusion input; the rewritten
// fusion equals the original (ATen, bitwise) and its kernel matches ATen in
// the simulator and compiles.
TEST_P(WindowKernel, RecomputedWindowsMatchATenAndCompile) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  std::vector<TensorView*> inputs;
  for (const auto& shape : GetParam().shapes) {
    inputs.push_back(makeConcreteTensor(shape));
    fusion.addInput(inputs.back());
  }
  TensorView* out = GetParam().build(inputs);
  fusion.addOutput(out);
  std::unique_ptr<Fusion> original = fusion.clone();

  EXPECT_EQ(recomputeWindowInputs(fusion), GetParam().rewritten);
  for (const Expr* e : fusion.exprs()) {
    if (e->type() == ExprType::Pad) {
      EXPECT_TRUE(e->input(0)->asTensor()->isFusionInput()) << e->toString() << "\n" << fusion.mathString();
    }
  }
  std::vector<at::Tensor> values = randomInputs(fusion, 3);
  std::vector<at::Tensor> want = evaluateWithATen(*original, values);
  std::vector<at::Tensor> got = evaluateWithATen(fusion, values);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], want[i])) << fusion.mathString();

  // The pointwise scheduler takes the whole rewritten fusion: one kernel.
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, values));
  ASSERT_EQ(selectScheduler(fusion, runtime), SchedulerType::Pointwise);
  scheduleFusion(fusion, runtime);
  expectKernelCorrect(fusion, values);
  expectCompiles(fusion, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    WindowKernels, WindowKernel,
    ::testing::Values(
        WindowCase{"slice_of_input", {{4, 9}},
                   [](const auto& in) { return exp(slice(in[0], {1, 2}, {3, -2})); }, 0},
        WindowCase{"pad_of_size_one_dim", {{5, 1}},
                   [](const auto& in) { return pad(in[0], {2, 1}, -3.0); }, 0},
        WindowCase{"cat_of_three_inputs", {{3, 2}, {3, 5}, {3, 1}},
                   [](const auto& in) { return cat({in[0], in[1], in[2]}, 1); }, 0},
        WindowCase{"iota_row_offsets", {{6, 4}},
                   [](const auto& in) {
                     TensorView* rows = iota(6, constant(10, DataType::Int), constant(-3, DataType::Int));
                     return add(in[0], broadcast(rows, {false, true}));
                   },
                   0},
        // rotate_half(q) * sin + q * cos: both slices and the neg run at the
        // cat's positions.
        WindowCase{"rotate_half", {{2, 3, 8}, {3, 8}},
                   [](const auto& in) {
                     TensorView* first = slice(in[0], {0, 0, 0}, {kEnd, kEnd, 4});
                     TensorView* second = slice(in[0], {0, 0, 4}, {kEnd, kEnd, kEnd});
                     TensorView* rotated = cat({neg(second), first}, -1);
                     TensorView* sin = broadcast(in[1], {true, false, false});
                     return add(mul(rotated, sin), mul(in[0], sin));
                   },
                   2},
        // A pad with a value over a permuted computed tensor, and a slice of
        // that pad: nested windows compose into one pad of the input.
        WindowCase{"slice_of_pad_of_permute", {{5, 3}},
                   [](const auto& in) {
                     TensorView* padded = pad(tanh(permute(in[0], {1, 0})), {2, 1}, 7.0);  // [3, 8]
                     return mul(slice(padded, {1, 1}, {kEnd, 6}), 2.0);
                   },
                   2},
        // cat of a tensor with itself (llama's cat(freqs, freqs)), computed
        // from a broadcast product.
        WindowCase{"cat_of_itself", {{4}, {3}},
                   [](const auto& in) {
                     TensorView* freqs = mul(broadcast(in[0], {false, true}), broadcast(in[1], {true, false}));
                     return cos(cat({freqs, freqs}, -1));
                   },
                   2}),
    [](const auto& info) { return std::string(info.param.name); });

// A window over a reduction is not recomputed: the pad reads the reduction's
// output, which segmentation makes a segment input.
TEST(WindowKernels, AWindowOverAReductionIsLeftToSegmentation) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({4, 6});
  fusion.addInput(x);
  TensorView* total = sum(x, {1});
  TensorView* out = slice(exp(total), {1}, {3});
  fusion.addOutput(out);
  EXPECT_EQ(recomputeWindowInputs(fusion), 1);
  // out = set(exp(pad(total))): exp runs at the window's positions.
  const Expr* recomputed = out->definition()->input(0)->asTensor()->definition();
  ASSERT_EQ(recomputed->type(), ExprType::Unary) << fusion.mathString();
  const Expr* pad = recomputed->input(0)->asTensor()->definition();
  ASSERT_EQ(pad->type(), ExprType::Pad) << fusion.mathString();
  EXPECT_EQ(pad->input(0), total);
}

TEST(WindowKernels, ErrorsNameTheTensorAndDimension) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({2, 3});
  TensorView* b = makeConcreteTensor({2, 4});
  TensorView* s = makeContigTensor(2);
  EXPECT_SMELT_ERROR(cat({a, b}, 0), "cat: dimension 1 of T0 (extent 3) does not match dimension 1 of T1");
  EXPECT_SMELT_ERROR(cat({a, s}, 1), "cat: dimension 1 of T2 has the symbolic extent");
  EXPECT_SMELT_ERROR(slice(a, {0, 3}, {2, kEnd}), "slice: dimension 1 of T0 (extent 3) takes [3, ");
  EXPECT_SMELT_ERROR(slice(s, {0, 1}, {kEnd, kEnd}), "slice: dimension 1 of T2 has the symbolic extent");
  EXPECT_SMELT_ERROR(pad(a, {-2, -1}), "pad: dimension 1 of T0 (extent 3) with widths {-2, -1} leaves no element");
  EXPECT_SMELT_ERROR(iota(0, constant(0, DataType::Int), constant(1, DataType::Int)), "iota: dimension 0 of extent 0");
}

}  // namespace
}  // namespace smelt
