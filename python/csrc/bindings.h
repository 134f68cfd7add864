// The pieces of the smelt._C extension module, one per file so that only
// bind_runtime.cpp and bind_torchscript.cpp pay for torch's headers.
//
// The module is private: the Python package (python/smelt) wraps it. Fusion
// nodes (TensorView, IterDomain, Scalar) are owned by their Fusion and handed
// to Python as plain references; the package keeps the Fusion alive while it
// holds them.
#pragma once

#include <memory>

#include <pybind11/pybind11.h>

#include "fusion/fusion.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/lower.h"

namespace smelt::python {

// A lowered kernel together with the fusion its IR points into.
struct LoweredKernel {
  std::shared_ptr<Fusion> fusion;
  std::unique_ptr<GpuLower> lower;
  const kir::Kernel& kernel() const { return lower->kernel(); }
  const alloc_reuse::SharedMemoryPlan* plan() const { return kernel().smem_plan.get(); }
};

// A size as a Python int when constant, else its expression text.
pybind11::object intOrText(const IntExpr& e);

// The kernel checks (issue 41) as lists of dicts: every shared access the
// bank-conflict analysis measured (position, kind, buffer, bytes_per_lane,
// ways, wavefronts, ideal_wavefronts, in_loop), and the guards inside main
// loops (lower/main_loop_guards.h: position, buffer, guard).
pybind11::list bankConflictsToPython(const BankConflictReport& report);
pybind11::list mainLoopGuardsToPython(const kir::Kernel& kernel);

void bindFusion(pybind11::module_& m);    // enums, Fusion, nodes, schedule primitives, ops
void bindLowering(pybind11::module_& m);  // GpuLower, kernel IR, CUDA, smem plan, NVRTC
void bindRuntime(pybind11::module_& m);   // executors on at::Tensor and their kernels
void bindTorchScript(pybind11::module_& m);  // the TorchScript custom fusion pass

}  // namespace smelt::python
