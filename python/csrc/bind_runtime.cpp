// Runtime bindings on at::Tensor (the one file that includes torch's Python
// headers): FusionExecutor (a scheduled fusion), FusionExecutorCache (an
// unscheduled one, scheduled automatically per input signature) and a view of
// each kernel they compiled. CUDA tensors run on the GPU, CPU tensors in the
// simulator.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "bindings.h"
#include "runtime/compile_pool.h"
#include "runtime/disk_kernel_cache.h"
#include "runtime/executor.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/index_type.h"
#include "scheduler/matmul/matmul_params.h"
#include "scheduler/reduction.h"

namespace py = pybind11;

namespace smelt::python {

namespace {

// The integer field of ReductionParams called `name`; SmeltError naming the
// fields otherwise.
int64_t ReductionParams::*reductionField(const std::string& name) {
  if (name == "vector_width") return &ReductionParams::vector_width;
  if (name == "block_x") return &ReductionParams::block_x;
  if (name == "block_y") return &ReductionParams::block_y;
  SMELT_CHECK(name == "grid_split", "reduction_params: no field '", name,
              "' (vector_width, block_x, block_y, grid_split)");
  return &ReductionParams::grid_split;
}

// One compiled kernel, kept alive by the executor (or cache) that owns it.
struct KernelView {
  std::shared_ptr<const void> owner;
  const FusionExecutor* executor = nullptr;
  const alloc_reuse::SharedMemoryPlan& plan() const { return executor->sharedMemoryPlan(); }
};

// An executor with the fusion it refers to (which must outlive it).
struct PyFusionExecutor {
  explicit PyFusionExecutor(std::shared_ptr<Fusion> f) : fusion(std::move(f)) {}
  std::shared_ptr<Fusion> fusion;
  FusionExecutor executor;
};

py::tuple launchDims(const int64_t (&dims)[3]) { return py::make_tuple(dims[0], dims[1], dims[2]); }

py::dict costDict(const CompileCost& cost) {
  py::dict d;
  d["segment_ms"] = cost.segment_ms;
  d["schedule_ms"] = cost.schedule_ms;
  d["lower_ms"] = cost.lower_ms;
  d["nvrtc_ms"] = cost.nvrtc_ms;
  d["nvrtc_compiles"] = cost.nvrtc_compiles;
  d["disk_cache_hits"] = cost.disk_cache_hits;
  d["segmentations_from_disk"] = cost.segmentations_from_disk;
  d["segment_candidates"] = cost.segment_candidates;
  d["pool_compiles"] = cost.pool_compiles;
  return d;
}

// "auto", "library" or "generated" (matmul_choice.h).
MatmulPolicy matmulPolicy(const std::string& name) {
  for (MatmulPolicy policy : {MatmulPolicy::Auto, MatmulPolicy::Library, MatmulPolicy::Generated}) {
    if (toString(policy) == name) return policy;
  }
  throw Error(errorMessage("matmul must be \"auto\", \"library\" or \"generated\", got \"",
                           name, "\""));
}

ExecutorOptions executorOptions(const std::string& device, SmemHazards hazards,
                                SmemAllocator allocator) {
  ExecutorOptions options;
  options.device = c10::Device(device);
  options.lower.smem_hazards = hazards;
  options.lower.smem_allocator = allocator;
  return options;
}

void bindKernelView(py::module_& m) {
  py::class_<KernelView>(m, "KernelView")
      .def_property_readonly("kernel_name", [](const KernelView& k) { return k.executor->kernelName(); })
      .def_property_readonly("cuda_source", [](const KernelView& k) { return k.executor->cudaSource(); })
      .def_property_readonly("index_type",
                             [](const KernelView& k) { return indexTypeName(k.executor->indexType()); })
      .def_property_readonly("compiled", [](const KernelView& k) { return k.executor->compiledKernel(); })
      .def_property_readonly("grid",
                             [](const KernelView& k) { return launchDims(k.executor->launchParams().grid); })
      .def_property_readonly("block",
                             [](const KernelView& k) { return launchDims(k.executor->launchParams().block); })
      .def_property_readonly("shared_memory_bytes",
                             [](const KernelView& k) { return k.executor->launchParams().smem_bytes; })
      .def_property_readonly("kernel_ir", [](const KernelView& k) { return k.executor->kernel().toString(); })
      .def_property_readonly("summary", [](const KernelView& k) { return k.executor->kernel().summary(); })
      .def_property_readonly("smem_plan_text", [](const KernelView& k) { return k.plan().report_text; })
      .def_property_readonly("smem_plan_json", [](const KernelView& k) { return k.plan().report_json; })
      .def_property_readonly("smem_plan_svg", [](const KernelView& k) { return k.plan().report_svg; })
      .def_property_readonly("bank_conflicts",
                             [](const KernelView& k) { return bankConflictsToPython(k.plan().bank_conflicts); })
      .def_property_readonly("main_loop_guards",
                             [](const KernelView& k) { return mainLoopGuardsToPython(k.executor->kernel()); })
      .def_property_readonly("smem_tensor_bytes",
                             [](const KernelView& k) { return intOrText(k.plan().tensor_bytes); })
      .def_property_readonly("simulation_report",
                             [](const KernelView& k) { return k.executor->simulationReport().toString(); });
}

void bindFusionExecutor(py::module_& m) {
  const LowerOptions defaults;
  py::class_<PyFusionExecutor, std::shared_ptr<PyFusionExecutor>>(m, "FusionExecutor")
      .def(py::init<std::shared_ptr<Fusion>>())
      .def("compile", [](PyFusionExecutor& e, const std::vector<at::Tensor>& example_inputs,
                         const std::string& device, SmemHazards hazards, SmemAllocator allocator) {
        ExecutorOptions options = executorOptions(device, hazards, allocator);
        py::gil_scoped_release release;
        e.executor.compile(e.fusion.get(), example_inputs, options);
      }, py::arg("example_inputs"), py::arg("device") = "cpu",
         py::arg("hazards") = defaults.smem_hazards, py::arg("allocator") = defaults.smem_allocator)
      .def("run", [](PyFusionExecutor& e, const std::vector<at::Tensor>& inputs) {
        py::gil_scoped_release release;
        return e.executor.run(inputs);
      })
      .def("kernel", [](const std::shared_ptr<PyFusionExecutor>& e) {
        return KernelView{e, &e->executor};
      });
}

void bindFusionExecutorCache(py::module_& m) {
  const LowerOptions defaults;
  py::class_<FusionExecutorCache, std::shared_ptr<FusionExecutorCache>>(m, "FusionExecutorCache")
      .def(py::init([](const Fusion& fusion, const std::string& device, SmemHazards hazards,
                       SmemAllocator allocator, std::optional<bool> tensor_cores, int arch,
                       const std::map<std::string, int64_t>& reduction_params,
                       const std::string& matmul) {
        ExecutorOptions options = executorOptions(device, hazards, allocator);
        options.arch = arch;  // 0: the device's
        options.matmul = matmulPolicy(matmul);
        auto cache = std::make_shared<FusionExecutorCache>(fusion.clone(), options);
        for (const auto& [name, value] : reduction_params) reductionField(name);  // checks names
        // None: the matmul heuristics choose; True/False: forced either way
        // (scheduleMatmul refuses a forced choice the inputs cannot take).
        // reduction_params: fields of every reduction segment's parameters
        // set by name (a tuning hook for benchmarks).
        if (tensor_cores || !reduction_params.empty()) {
          cache->setHeuristicOverride([tensor_cores, reduction_params](HeuristicParams& params) {
            if (auto* matmul = dynamic_cast<MatmulParams*>(&params); matmul && tensor_cores) {
              matmul->use_tensor_cores = *tensor_cores;
            }
            if (auto* reduction = dynamic_cast<ReductionParams*>(&params)) {
              for (const auto& [name, value] : reduction_params) reduction->*reductionField(name) = value;
            }
          });
        }
        return cache;
      }), py::arg("fusion"), py::arg("device") = "cpu", py::arg("hazards") = defaults.smem_hazards,
          py::arg("allocator") = defaults.smem_allocator, py::arg("tensor_cores") = std::nullopt,
          py::arg("arch") = 0, py::arg("reduction_params") = std::map<std::string, int64_t>{},
          py::arg("matmul") = "auto")
      .def("run", [](FusionExecutorCache& c, const std::vector<at::Tensor>& inputs,
                     const std::optional<std::string>& device) {
        std::optional<c10::Device> target;
        if (device) target = c10::Device(*device);
        py::gil_scoped_release release;
        return c.runFusionWithInputs(inputs, target);
      }, py::arg("inputs"), py::arg("device") = std::nullopt)
      .def("compile_for", [](FusionExecutorCache& c, const std::vector<at::Tensor>& inputs,
                             const std::string& device) {
        py::gil_scoped_release release;
        return c.compileFor(inputs, c10::Device(device));
      }, py::arg("inputs"), py::arg("device"))
      .def_property_readonly("compile_cost", [](const FusionExecutorCache& c) {
        return costDict(c.compileCost());
      })
      .def_property_readonly("last_run_cost", [](const FusionExecutorCache& c) {
        return costDict(c.lastRun().cost());
      })
      .def("last_kernels", [](const std::shared_ptr<FusionExecutorCache>& c) {
        std::vector<KernelView> views;
        for (size_t s = 0; s < c->lastRun().segments.size(); ++s) {
          const SegmentRun& run = c->lastRun().segments[s];
          if (!run.view && !run.library) views.push_back(KernelView{c, &c->lastExecutor(s)});
        }
        return views;
      })
      .def_property_readonly("last_run", [](const FusionExecutorCache& c) { return c.lastRun().toString(); })
      // How the latest run's inputs were segmented: per segment (execution
      // order) a copy of its unscheduled fusion, its scheduler, and the values
      // of the complete fusion it reads and writes ("T<n>" for a tensor, the
      // symbol for a scalar), in the order of the segment fusion's inputs and
      // outputs. Empty when no kernel ran (an input with an empty dimension).
      .def("last_segments", [](const FusionExecutorCache& c) {
        const FusionRun& run = c.lastRun();
        SMELT_CHECK(!run.signature.empty(), "last_segments: the fusion has not run");
        py::list segments;
        if (run.empty_input) return segments;
        auto keys = [](const std::vector<const Val*>& vals) {
          std::vector<std::string> out;
          for (const Val* v : vals) {
            const TensorView* tv = v->asTensor();
            out.push_back(tv ? "T" + std::to_string(tv->number())
                             : static_cast<const Scalar*>(v)->symbol());
          }
          return out;
        };
        for (const Segment& segment : c.segmentation(run.signature).segments) {
          py::dict d;
          d["fusion"] = std::shared_ptr<Fusion>(segment.fusion->clone());
          d["scheduler"] = toString(segment.scheduler);
          d["inputs"] = keys(segment.inputs);
          d["outputs"] = keys(segment.outputs);
          segments.append(d);
        }
        return segments;
      })
      .def_property_readonly("num_signatures", &FusionExecutorCache::numSignatures)
      .def_property_readonly("num_compiled_kernels", &FusionExecutorCache::numCompiledKernels);
  // compile_for of every (cache, inputs, device), the new kernels of all of
  // them compiled together (compileForAll); per job None, or its error as
  // "SmeltError: message" (another exception: "RuntimeError: message").
  m.def("compile_for_all", [](const std::vector<std::tuple<std::shared_ptr<FusionExecutorCache>,
                                                          std::vector<at::Tensor>, std::string>>& jobs) {
    std::vector<CompileForJob> all;
    for (const auto& [cache, inputs, device] : jobs) all.push_back({cache.get(), inputs, c10::Device(device)});
    std::vector<CompileForResult> results;
    {
      py::gil_scoped_release release;
      results = compileForAll(all);
    }
    std::vector<std::optional<std::string>> errors;
    for (const CompileForResult& result : results) {
      std::optional<std::string>& error = errors.emplace_back();
      if (!result.error) continue;
      try {
        std::rethrow_exception(result.error);
      } catch (const Error& e) {
        error = std::string("SmeltError: ") + e.what();
      } catch (const std::exception& e) {
        error = std::string("RuntimeError: ") + e.what();
      }
    }
    return errors;
  }, py::arg("jobs"));
}

// The compile pool's size, and the disk cache's entries of other kinds
// (disk_kernel_cache.h) for the Python side's decisions (the matmul
// autotuner's): None when the cache is off, there is no entry, or it is
// corrupt (with a warning).
void bindCompileResources(py::module_& m) {
  m.def("compile_threads", &CompilePool::configuredThreads,
        "SMELT_COMPILE_THREADS, else the machine's hardware threads: the compile pools' size.");
  m.def("load_cache_entry", [](const std::string& kind, const std::string& key) -> std::optional<py::bytes> {
    const std::optional<std::filesystem::path> dir = kernelCacheDir();
    if (!dir) return std::nullopt;
    std::optional<std::string> payload = loadCacheEntry(*dir, kind, key);
    if (!payload) return std::nullopt;
    return py::bytes(*payload);
  }, py::arg("kind"), py::arg("key"));
  m.def("store_cache_entry", [](const std::string& kind, const std::string& key, const std::string& payload) {
    const std::optional<std::filesystem::path> dir = kernelCacheDir();
    return dir && storeCacheEntry(*dir, kind, key, payload);
  }, py::arg("kind"), py::arg("key"), py::arg("payload"));
}

}  // namespace

void bindRuntime(py::module_& m) {
  bindKernelView(m);
  bindFusionExecutor(m);
  bindFusionExecutorCache(m);
  bindCompileResources(m);
}

}  // namespace smelt::python
