// Runtime bindings on at::Tensor (the one file that includes torch's Python
// headers): FusionExecutor, which runs CUDA tensors on the GPU and CPU
// tensors in the simulator, and what it compiled.
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "bindings.h"
#include "runtime/executor.h"

namespace py = pybind11;

namespace smelt::python {

namespace {

// An executor with the fusion it refers to (which must outlive it).
struct PyFusionExecutor {
  explicit PyFusionExecutor(std::shared_ptr<Fusion> f) : fusion(std::move(f)) {}
  std::shared_ptr<Fusion> fusion;
  FusionExecutor executor;
};

py::tuple launchDims(const int64_t (&dims)[3]) { return py::make_tuple(dims[0], dims[1], dims[2]); }

const alloc_reuse::SharedMemoryPlan& planOf(const PyFusionExecutor& e) {
  return e.executor.sharedMemoryPlan();
}

}  // namespace

void bindRuntime(py::module_& m) {
  LowerOptions defaults;
  py::class_<PyFusionExecutor>(m, "FusionExecutor")
      .def(py::init<std::shared_ptr<Fusion>>())
      .def("compile", [](PyFusionExecutor& e, const std::vector<at::Tensor>& example_inputs,
                         const std::string& device, SmemHazards hazards, SmemAllocator allocator) {
        ExecutorOptions options;
        options.device = c10::Device(device);
        options.lower.smem_hazards = hazards;
        options.lower.smem_allocator = allocator;
        py::gil_scoped_release release;
        e.executor.compile(e.fusion.get(), example_inputs, options);
      }, py::arg("example_inputs"), py::arg("device") = "cpu",
         py::arg("hazards") = defaults.smem_hazards, py::arg("allocator") = defaults.smem_allocator)
      .def("run", [](PyFusionExecutor& e, const std::vector<at::Tensor>& inputs) {
        py::gil_scoped_release release;
        return e.executor.run(inputs);
      })
      .def_property_readonly("fusion", [](const PyFusionExecutor& e) { return e.fusion; })
      .def_property_readonly("from_cache",
                             [](const PyFusionExecutor& e) { return e.executor.compiledFromCache(); })
      .def_property_readonly("kernel_name",
                             [](const PyFusionExecutor& e) { return e.executor.kernelName(); })
      .def_property_readonly("cuda_source",
                             [](const PyFusionExecutor& e) { return e.executor.cudaSource(); })
      .def_property_readonly("compiled",
                             [](const PyFusionExecutor& e) { return e.executor.compiledKernel(); })
      .def_property_readonly("grid", [](const PyFusionExecutor& e) {
        return launchDims(e.executor.launchParams().grid);
      })
      .def_property_readonly("block", [](const PyFusionExecutor& e) {
        return launchDims(e.executor.launchParams().block);
      })
      .def_property_readonly("shared_memory_bytes", [](const PyFusionExecutor& e) {
        return e.executor.launchParams().smem_bytes;
      })
      .def_property_readonly("kernel_ir",
                             [](const PyFusionExecutor& e) { return e.executor.kernel().toString(); })
      .def_property_readonly("summary",
                             [](const PyFusionExecutor& e) { return e.executor.kernel().summary(); })
      .def_property_readonly("smem_plan_text",
                             [](const PyFusionExecutor& e) { return planOf(e).report_text; })
      .def_property_readonly("smem_plan_json",
                             [](const PyFusionExecutor& e) { return planOf(e).report_json; })
      .def_property_readonly("smem_plan_svg",
                             [](const PyFusionExecutor& e) { return planOf(e).report_svg; })
      .def_property_readonly("smem_tensor_bytes",
                             [](const PyFusionExecutor& e) { return intOrText(planOf(e).tensor_bytes); })
      .def_property_readonly("simulation_report", [](const PyFusionExecutor& e) {
        return e.executor.simulationReport().toString();
      });
}

}  // namespace smelt::python
