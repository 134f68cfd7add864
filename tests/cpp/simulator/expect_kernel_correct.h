// expectKernelCorrect: lowers a scheduled fusion, simulates the kernel with
// race detection in every thread order, and compares each output with the
// fusion evaluated by ATen. Link smelt_simulator, smelt_lower and
// smelt_aten_reference.
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "fusion/fusion.h"
#include "lower/lower.h"
#include "runtime/simulator/simulator.h"

namespace smelt::sim::testing {

using smelt::testing::randomInputs;

inline void expectKernelCorrect(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                                double rtol = 1e-5, double atol = 1e-5,
                                LowerOptions lower_options = {}) {
  GpuLower lower(&fusion, lower_options);
  const kir::Kernel& kernel = lower.run();
  std::vector<at::Tensor> expected = smelt::testing::evaluateWithATen(fusion, inputs);
  // The kernel takes tensors as arguments and scalars by symbol.
  std::vector<at::Tensor> tensors;
  std::map<std::string, double> scalars;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const Val* v = fusion.inputs()[i];
    if (v->asTensor()) {
      tensors.push_back(inputs[i]);
    } else if (const auto* s = dynamic_cast<const Scalar*>(v); s && !s->isConstant()) {
      scalars[s->symbol()] = inputs[i].item<double>();
    }
  }
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    SimOptions options;
    options.order = order;
    options.seed = 1234;
    SimResult result = simulate(kernel, tensors, {}, scalars, options);
    EXPECT_TRUE(result.report.clean())
        << result.report.toString() << kernel.toString() << kernel.summary();
    ASSERT_EQ(result.outputs.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      at::Tensor want = expected[i].to(result.outputs[i].scalar_type());
      EXPECT_TRUE(at::allclose(result.outputs[i].to(at::kDouble), want.to(at::kDouble), rtol,
                               atol, /*equal_nan=*/true))
          << "output " << i << " in thread order " << static_cast<int>(order) << "\n"
          << kernel.toString() << "simulated:\n"
          << result.outputs[i] << "\nATen:\n"
          << want;
    }
  }
}

}  // namespace smelt::sim::testing
