// Helpers for the scheduler tests: the checks every scheduled fusion goes
// through (simulated with race detection against ATen; compiled with NVRTC
// with ptxas' shared memory equal to the plan).
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "common/aten_reference.h"
#include "lower/lower.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/runtime_info.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt::testing {

// Lowers the scheduled fusion, compiles its kernel with NVRTC for sm_90 and,
// when the planned shared memory is a constant that fits a static array,
// checks that ptxas reports exactly the planned bytes.
inline void expectCompilesWithPlannedSharedMemory(const kir::Kernel& kernel,
                                                  const std::string& name) {
  const CompiledKernel compiled = compileCuda(generateCuda(kernel, name), name);
  EXPECT_GT(compiled.ptxas.registers, 0);
  EXPECT_EQ(compiled.ptxas.static_smem_bytes, 0);
  const IntExpr planned = sharedMemoryBytes(kernel);
  if (!planned.isConstant() || *planned.constant() == 0 || *planned.constant() > 48 * 1024) {
    return;
  }
  CodegenOptions fixed;
  fixed.static_shared_memory = true;
  const CompiledKernel with_static = compileCuda(generateCuda(kernel, name, fixed), name);
  EXPECT_EQ(with_static.ptxas.static_smem_bytes, *planned.constant()) << with_static.log;
}

inline void expectCompilesWithPlannedSharedMemory(Fusion& fusion, const std::string& name) {
  GpuLower lower(&fusion);
  expectCompilesWithPlannedSharedMemory(lower.run(), name);
}

// Seeded once per process (ctest runs one test per process), so a test
// draws the same values in every run: a tolerance that one draw in a
// thousand breaks (a half output rounding the other way after the
// reduction's order changed the float sum) breaks every run or none.
inline at::Tensor randn(const std::vector<int64_t>& shape, at::ScalarType type = at::kFloat) {
  [[maybe_unused]] static const bool seeded = (at::manual_seed(1127), true);
  return at::randn(shape, at::kDouble).to(type);
}

// Computes a scheduler's heuristics for `inputs`, lets `adjust` change them,
// schedules the fusion, then checks its kernel in the simulator against ATen
// and compiles it with NVRTC. Returns the parameters used.
template <typename ParamsT>
ParamsT scheduleAndCheck(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                         const std::string& name,
                         ParamsT (*heuristics)(const Fusion&, const RuntimeInfo&),
                         void (*schedule)(Fusion&, const ParamsT&),
                         const std::function<void(ParamsT&)>& adjust = {}) {
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  ParamsT params = heuristics(fusion, runtime);
  if (adjust) adjust(params);
  schedule(fusion, params);
  sim::testing::expectKernelCorrect(fusion, inputs, 1e-5, 1e-4);
  expectCompilesWithPlannedSharedMemory(fusion, name);
  return params;
}

}  // namespace smelt::testing

#include <unordered_map>

#include "scheduler/registry.h"
#include "scheduler/segmenter.h"

namespace smelt::testing {

// Runs every segment in order on the simulator (selection, heuristics and
// scheduling as the executor cache does them), checking each kernel for
// races and compiling it with NVRTC, and returns the complete fusion's
// outputs.
inline std::vector<at::Tensor> runSegmentsInSimulator(const Fusion& fusion,
                                                      const SegmentedFusion& segmented,
                                                      const std::vector<at::Tensor>& inputs) {
  const RuntimeInfo whole(fusion, inputInfosOf(fusion, inputs));
  std::unordered_map<const Val*, at::Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[fusion.inputs()[i]] = inputs[i];
  for (const Segment& segment : segmented.segments) {
    const std::vector<at::Tensor> segment_inputs =
        segmentInputTensors(segment, values, gridSplitChunksOf(segment, whole));
    std::unique_ptr<Fusion> scheduled = segment.fusion->clone();
    RuntimeInfo runtime(*scheduled, inputInfosOf(*scheduled, segment_inputs));
    scheduleFusion(*scheduled, runtime);
    GpuLower lower(scheduled.get());
    const kir::Kernel& kernel = lower.run();
    std::vector<at::Tensor> tensors;
    std::map<std::string, double> scalars;
    for (size_t i = 0; i < segment.inputs.size(); ++i) {
      const Val* v = segment.inputs[i];
      if (v->asTensor() != nullptr) {
        tensors.push_back(segment_inputs[i]);
      } else {
        scalars[static_cast<const Scalar*>(v)->symbol()] = segment_inputs[i].item<double>();
      }
    }
    expectCompilesWithPlannedSharedMemory(kernel, "segment");
    sim::SimResult result = sim::simulate(kernel, tensors, {}, scalars);
    EXPECT_TRUE(result.report.clean()) << result.report.toString();
    for (size_t j = 0; j < segment.outputs.size(); ++j) {
      values[segment.outputs[j]] = result.outputs.at(j);
    }
  }
  std::vector<at::Tensor> outputs;
  for (const Val* out : fusion.outputs()) outputs.push_back(values.at(out));
  return outputs;
}

}  // namespace smelt::testing
