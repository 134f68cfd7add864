// Lowering and compilation bindings: GpuLower on a scheduled Fusion, the
// kernel IR as text, the shared-memory plan reports, CUDA generation and
// NVRTC compilation with ptxas's resource report.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "codegen/cuda_codegen.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/main_loop_guards.h"
#include "fusion/device_limits.h"
#include "runtime/nvrtc_compiler.h"

namespace py = pybind11;

namespace smelt::python {

namespace {

std::shared_ptr<LoweredKernel> lowerFusion(std::shared_ptr<Fusion> fusion, SmemHazards hazards,
                                           SmemAllocator allocator,
                                           int64_t max_shared_memory_bytes,
                                           int64_t min_shared_alignment) {
  LowerOptions options;
  options.min_shared_alignment = min_shared_alignment;
  options.smem_hazards = hazards;
  options.smem_allocator = allocator;
  options.max_shared_memory_bytes = max_shared_memory_bytes;
  auto lowered = std::make_shared<LoweredKernel>();
  lowered->fusion = std::move(fusion);
  lowered->lower = std::make_unique<GpuLower>(lowered->fusion.get(), options);
  lowered->lower->run();
  return lowered;
}

py::tuple dims(const IntExpr (&extents)[3]) {
  return py::make_tuple(intOrText(extents[0]), intOrText(extents[1]), intOrText(extents[2]));
}

// The abstract planner (smelt.planner): buffers as (name, bytes, alignment,
// first_write, last_read) tuples; conflicts from the intervals (Precise: any
// reuse of disjoint lifetimes is safe; Conservative: a barrier must lie in
// between) or, when `pairs` is given, exactly those index pairs.
py::dict planBuffers(const std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>>& list,
                     const std::optional<std::vector<std::pair<size_t, size_t>>>& pairs,
                     const std::vector<int64_t>& barriers, SmemHazards hazards,
                     SmemAllocator allocator, double time_limit_ms, bool exact_search) {
  using namespace alloc_reuse;
  std::vector<Buffer> buffers;
  int64_t end = 0;
  for (const auto& [name, bytes, alignment, first, last] : list) {
    Buffer b;
    b.name = name;
    b.bytes = IntExpr(bytes);
    b.alignment = alignment;
    b.first_write = first;
    b.last_read = last;
    b.creation_order = static_cast<int64_t>(buffers.size());
    end = std::max(end, last);
    buffers.push_back(std::move(b));
  }
  for (int64_t p : barriers) end = std::max(end, p);
  validateBuffers(buffers);
  ConflictGraph conflicts(buffers.size());
  if (pairs) {
    for (const auto& [i, j] : *pairs) {
      SMELT_CHECK(i < buffers.size() && j < buffers.size() && i != j,
                  "plan_buffers: bad conflict pair (", i, ", ", j, ")");
      conflicts.addConflict(i, j);
    }
  } else if (hazards == SmemHazards::Precise) {
    conflicts = conflictsFromIntervals(buffers);
  } else {
    conflicts = conflictsFromBarriers(buffers, barriers);
  }
  PlannerOptions options;
  options.search_time_limit_ms = time_limit_ms;
  if (!exact_search) options.exact_search_max_buffers = 0;
  AddressPlan plan, stack, conservative;
  std::optional<int64_t> stack_total;
  if (!pairs) {
    stack = planStackAddresses(buffers, barriers, end);
    stack_total = stack.total_bytes.constant();
    options.baseline = &stack;
  }
  if (allocator == SmemAllocator::Stack) {
    SMELT_CHECK(!pairs, "plan_buffers: the stack allocator needs live intervals, not conflict pairs");
    plan = stack;
    plan.lower_bound_bytes = lowerBoundBytes(buffers, conflicts);
    plan.lower_bound_reached = *plan.total_bytes.constant() <= plan.lower_bound_bytes;
    plan.optimal = plan.lower_bound_reached;
  } else {
    if (!pairs && hazards == SmemHazards::Precise) {
      // Conservative conflicts contain the Precise ones: their plan is a
      // baseline the Precise plan must beat (monotone by construction).
      conservative = planAddresses(buffers, conflictsFromBarriers(buffers, barriers), options);
      conservative.strategy = "conservative " + conservative.strategy;
      options.baseline = &conservative;
    }
    plan = planAddresses(buffers, conflicts, options);
  }
  py::dict addresses;
  for (size_t i = 0; i < buffers.size(); ++i) {
    addresses[py::str(buffers[i].name)] = *plan.addresses[i].constant();
  }
  py::list attempts;
  for (const PlanAttempt& a : plan.attempts) attempts.append(py::make_tuple(a.strategy, a.total_bytes));
  py::dict out;
  out["addresses"] = addresses;
  out["total_bytes"] = *plan.total_bytes.constant();
  out["lower_bound_bytes"] = plan.lower_bound_bytes;
  out["no_reuse_bytes"] = *plan.no_reuse_bytes.constant();
  out["optimal"] = plan.optimal;
  out["lower_bound_reached"] = plan.lower_bound_reached;
  out["status"] = planStatusName(plan);
  out["strategy"] = plan.strategy;
  out["attempts"] = attempts;
  out["stack_total_bytes"] = stack_total ? py::object(py::int_(*stack_total)) : py::none();
  out["conflicts"] = [&] {
    py::list l;
    for (size_t i = 0; i < buffers.size(); ++i) {
      for (size_t j : conflicts.neighbors(i)) {
        if (i < j) l.append(py::make_tuple(i, j));
      }
    }
    return l;
  }();
  return out;
}

}  // namespace

py::list bankConflictsToPython(const BankConflictReport& report) {
  py::list result;
  for (const BankConflictAccess& a : report.accesses) {
    py::dict d;
    d["position"] = a.position;
    d["kind"] = a.kind;
    d["buffer"] = a.buffer;
    d["bytes_per_lane"] = a.bytes_per_lane;
    d["ways"] = a.ways;
    d["wavefronts"] = a.wavefronts;
    d["ideal_wavefronts"] = a.ideal_wavefronts;
    d["in_loop"] = a.in_loop;
    result.append(d);
  }
  return result;
}

py::list mainLoopGuardsToPython(const kir::Kernel& kernel) {
  py::list result;
  for (const MainLoopGuard& g : findMainLoopGuards(kernel)) {
    py::dict d;
    d["position"] = g.position;
    d["buffer"] = g.buffer;
    d["guard"] = g.guard;
    result.append(d);
  }
  return result;
}

py::object intOrText(const IntExpr& e) {
  if (auto value = e.constant()) return py::int_(*value);
  return py::str(e.toString());
}

void bindLowering(py::module_& m) {
  py::enum_<SmemHazards>(m, "SmemHazards")
      .value("Precise", SmemHazards::Precise)
      .value("Conservative", SmemHazards::Conservative);
  py::enum_<SmemAllocator>(m, "SmemAllocator")
      .value("Best", SmemAllocator::Best)
      .value("Stack", SmemAllocator::Stack);
  LowerOptions defaults;

  py::class_<LoweredKernel, std::shared_ptr<LoweredKernel>>(m, "LoweredKernel")
      .def_property_readonly("fusion", [](const LoweredKernel& k) { return k.fusion; })
      .def_property_readonly("kernel_ir", [](const LoweredKernel& k) { return k.kernel().toString(); })
      .def_property_readonly("summary", [](const LoweredKernel& k) { return k.kernel().summary(); })
      .def_property_readonly("grid", [](const LoweredKernel& k) { return dims(k.kernel().launch.grid); })
      .def_property_readonly("block", [](const LoweredKernel& k) { return dims(k.kernel().launch.block); })
      .def_property_readonly("shared_memory_bytes",
                             [](const LoweredKernel& k) { return intOrText(sharedMemoryBytes(k.kernel())); })
      .def_property_readonly("smem_plan_text", [](const LoweredKernel& k) {
        return k.plan() ? k.plan()->report_text : std::string();
      })
      .def_property_readonly("smem_plan_json", [](const LoweredKernel& k) {
        return k.plan() ? k.plan()->report_json : std::string();
      })
      .def_property_readonly("smem_plan_svg", [](const LoweredKernel& k) {
        return k.plan() ? k.plan()->report_svg : std::string();
      })
      .def_property_readonly("bank_conflicts", [](const LoweredKernel& k) {
        return k.plan() ? bankConflictsToPython(k.plan()->bank_conflicts) : py::list();
      })
      .def_property_readonly("main_loop_guards",
                             [](const LoweredKernel& k) { return mainLoopGuardsToPython(k.kernel()); })
      .def_property_readonly("smem_tensor_bytes", [](const LoweredKernel& k) {
        return k.plan() ? intOrText(k.plan()->tensor_bytes) : py::object(py::int_(0));
      })
      .def("cuda", [](const LoweredKernel& k, const std::string& name, bool static_smem,
                      const std::string& index_type) {
        CodegenOptions options;
        options.static_shared_memory = static_smem;
        SMELT_CHECK(index_type == "int64" || index_type == "int32", "cuda(): index_type is 'int64' or "
                    "'int32', not '", index_type, "'");
        options.index_type = index_type == "int32" ? DataType::Int32 : DataType::Int;
        return generateCuda(k.kernel(), name, options);
      }, py::arg("kernel_name"), py::arg("static_shared_memory") = false, py::arg("index_type") = "int64");
  m.def("lower", &lowerFusion, py::arg("fusion"), py::arg("hazards") = defaults.smem_hazards,
        py::arg("allocator") = defaults.smem_allocator,
        py::arg("max_shared_memory_bytes") = defaults.max_shared_memory_bytes,
        py::arg("min_shared_alignment") = defaults.min_shared_alignment);

  m.def("plan_buffers", &planBuffers, py::arg("buffers"), py::arg("pairs"), py::arg("barriers"),
        py::arg("hazards"), py::arg("allocator"), py::arg("time_limit_ms"),
        py::arg("exact_search"));

  py::class_<PtxasInfo>(m, "PtxasInfo")
      .def_readonly("registers", &PtxasInfo::registers)
      .def_readonly("spill_store_bytes", &PtxasInfo::spill_store_bytes)
      .def_readonly("spill_load_bytes", &PtxasInfo::spill_load_bytes)
      .def_readonly("stack_frame_bytes", &PtxasInfo::stack_frame_bytes)
      .def_readonly("static_smem_bytes", &PtxasInfo::static_smem_bytes)
      .def_readonly("barriers", &PtxasInfo::barriers);
  py::class_<CompiledKernel>(m, "CompiledKernel")
      .def_readonly("kernel_name", &CompiledKernel::kernel_name)
      .def_readonly("arch", &CompiledKernel::arch)
      .def_readonly("log", &CompiledKernel::log)
      .def_readonly("ptxas", &CompiledKernel::ptxas)
      .def_readonly("compile_ms", &CompiledKernel::compile_ms)
      .def_readonly("from_disk_cache", &CompiledKernel::from_disk_cache)
      .def_property_readonly("cubin_bytes", [](const CompiledKernel& k) { return k.cubin.size(); })
      .def_property_readonly("cubin", [](const CompiledKernel& k) {
        return py::bytes(k.cubin.data(), k.cubin.size());
      });
  m.def("compile_cuda", [](const std::string& source, const std::string& name, int arch) {
    NvrtcOptions options;
    options.arch = arch;
    py::gil_scoped_release release;
    return compileCuda(source, name, options);
  }, py::arg("source"), py::arg("kernel_name"), py::arg("arch") = NvrtcOptions{}.arch);
  m.def("nvrtc_supported_archs", &nvrtcSupportedArchs);
  // NVRTC programs compiled in this process (compileFor compiles a graph's
  // kernels several to a program: see runtime/nvrtc_batch.h).
  m.def("nvrtc_programs_compiled", &nvrtcProgramsCompiled);
  // The per-architecture table the schedulers and the launch check use; the
  // kernel-quality report computes occupancy from it.
  m.def("device_limits", [](int arch) {
    DeviceLimits d = DeviceLimits::forArch(arch);
    py::dict out;
    out["arch"] = d.arch;
    out["max_shared_memory_per_block"] = d.max_shared_memory_per_block;
    out["shared_memory_per_sm"] = d.shared_memory_per_sm;
    out["reserved_shared_memory_per_block"] = d.reserved_shared_memory_per_block;
    out["max_threads_per_block"] = d.max_threads_per_block;
    out["max_threads_per_sm"] = d.max_threads_per_sm;
    out["max_blocks_per_sm"] = d.max_blocks_per_sm;
    out["max_registers_per_thread"] = d.max_registers_per_thread;
    out["registers_per_sm"] = d.registers_per_block;
    out["register_allocation_unit"] = d.register_allocation_unit;
    return out;
  }, py::arg("arch"));
}

}  // namespace smelt::python
