// Checking kernels with the simulator: each run simulates with race detection
// in every thread order (forward, reverse, random) and compares the outputs
// with a reference — ATen's evaluation of the fusion, or for a hand-built
// kernel the same kernel simulated with no shared-memory reuse.
// expectKernelCorrect lowers a scheduled fusion and does this. Link
// smelt_simulator, smelt_lower and smelt_aten_reference.
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "fusion/fusion.h"
#include "lower/lower.h"
#include "runtime/simulator/simulator.h"

namespace smelt::sim::testing {

using smelt::testing::randomInputs;

// What a simulated kernel is checked against.
struct Reference {
  std::vector<at::Tensor> inputs;  // the kernel's tensor arguments
  std::map<std::string, double> scalars;
  std::vector<at::Tensor> expected;  // one per kernel output
  double rtol = 1e-5;
  double atol = 1e-5;
};

// ATen's evaluation of `fusion` on `inputs` (one per fusion input).
inline Reference atenReference(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                               double rtol = 1e-5, double atol = 1e-5) {
  Reference ref;
  ref.expected = smelt::testing::evaluateWithATen(fusion, inputs);
  ref.rtol = rtol;
  ref.atol = atol;
  // The kernel takes tensors as arguments and scalars by symbol.
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const Val* v = fusion.inputs()[i];
    if (v->asTensor()) {
      ref.inputs.push_back(inputs[i]);
    } else if (const auto* s = dynamic_cast<const Scalar*>(v); s && !s->isConstant()) {
      ref.scalars[s->symbol()] = inputs[i].item<double>();
    }
  }
  return ref;
}

// One line for the first finding of a report ("" when clean).
inline std::string firstFindingOf(const SimReport& report) {
  std::ostringstream os;
  if (!report.races.empty()) {
    const RaceReport& r = report.races.front();
    os << toString(r.kind) << " race: " << (r.first.is_write ? "write" : "read") << " of "
       << r.first.buffer << " at " << r.first.position << " vs "
       << (r.second.is_write ? "write" : "read") << " of " << r.second.buffer << " at "
       << r.second.position;
  } else if (!report.errors.empty()) {
    const SimError& e = report.errors.front();
    os << toString(e.kind);
    if (!e.buffer.empty()) os << " of " << e.buffer;
    os << " at " << e.position;
  } else if (report.dropped_findings > 0) {
    os << report.dropped_findings << " findings over the cap";
  }
  return os.str();
}

// "" when output `index`, `got`, has the sizes of `want` and its values at
// the tolerances (compared in got's dtype); else the worst element.
inline std::string outputMismatch(size_t index, const at::Tensor& got, const at::Tensor& want,
                                  double rtol, double atol) {
  std::ostringstream os;
  if (got.sizes() != want.sizes()) {
    os << "wrong result: output " << index << " has sizes " << got.sizes() << ", expected "
       << want.sizes();
    return os.str();
  }
  const at::Tensor got_d = got.to(at::kDouble);
  const at::Tensor want_d = want.to(got.scalar_type()).to(at::kDouble);
  if (at::allclose(got_d, want_d, rtol, atol, /*equal_nan=*/true)) return "";
  const at::Tensor diff = (got_d - want_d).abs().nan_to_num(INFINITY).flatten();
  const int64_t worst = diff.argmax().item<int64_t>();
  os << "wrong result: output " << index << " element " << worst << " is "
     << got_d.flatten()[worst].item<double>() << ", expected " << want_d.flatten()[worst].item<double>();
  return os.str();
}

// Simulates `kernel` in every thread order; returns the first problem — a
// race, an error, or an output that differs from the reference — with the
// order that showed it, or "" when every order runs clean and matches.
inline std::string firstFinding(const kir::Kernel& kernel, const Reference& ref) {
  const char* names[] = {"forward", "reverse", "random"};
  const ThreadOrder orders[] = {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random};
  for (int o = 0; o < 3; ++o) {
    SimOptions options;
    options.order = orders[o];
    options.seed = 1234;
    SimResult result = simulate(kernel, ref.inputs, {}, ref.scalars, options);
    std::string finding = firstFindingOf(result.report);
    for (size_t i = 0; finding.empty() && i < ref.expected.size(); ++i) {
      finding = outputMismatch(i, result.outputs.at(i), ref.expected[i], ref.rtol, ref.atol);
    }
    if (!finding.empty()) return finding + " (" + names[o] + " order)";
  }
  return "";
}

inline void expectKernelCorrect(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                                double rtol = 1e-5, double atol = 1e-5,
                                LowerOptions lower_options = {}) {
  // The kernel may rely on the contiguity its inputs declare (an innermost
  // stride of 1 is a literal): as the executor cache does, declare what the
  // given tensors have, so tests may pass strided inputs to any fusion.
  for (size_t i = 0; i < fusion.inputs().size() && i < inputs.size(); ++i) {
    TensorView* tv = fusion.inputs()[i]->asTensor();
    const at::Tensor& t = inputs[i];
    if (tv == nullptr || !t.defined() || static_cast<int64_t>(tv->contiguity().size()) != t.dim()) continue;
    std::vector<bool> contiguity = tv->contiguity();
    int64_t expected = 1;
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (t.size(d) == 1 || t.stride(d) == 0) continue;
      if (t.stride(d) != expected) contiguity[d] = false;
      expected = t.stride(d) * t.size(d);
    }
    tv->setContiguity(contiguity);
  }
  GpuLower lower(&fusion, lower_options);
  const kir::Kernel& kernel = lower.run();
  EXPECT_EQ(firstFinding(kernel, atenReference(fusion, inputs, rtol, atol)), "")
      << kernel.toString() << kernel.summary();
}

}  // namespace smelt::sim::testing
