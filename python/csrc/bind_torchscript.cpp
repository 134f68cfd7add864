// TorchScript custom fusion (smelt.enable_torchscript_fusion): a post pass
// (it runs once the profiling executor has specialized the graph's tensor
// types) groups the nodes smelt supports into smelt::FusionGroup nodes (torch::jit::CustomFuseGraph), and the operator
// behind that node kind hands each group's subgraph to Python once (as IR
// text) and its input tensors at every run. The translation, execution and
// fallback live in python/smelt/torchscript.py.
//
// A node is fusable when Python listed its kind and every tensor it reads
// or writes has a complete type (dtype, sizes, strides, device: what the
// profiling executor records), and its non-tensor inputs are constants, so a
// group's inputs are tensors only.
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <pybind11/stl.h>
#include <torch/csrc/jit/passes/graph_fuser.h>
#include <torch/csrc/jit/passes/pass_manager.h>
#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/utils/pybind.h>

#include "bindings.h"

namespace py = pybind11;
using torch::jit::Node;
using torch::jit::Value;

namespace smelt::python {

namespace {

constexpr const char* kGroupKind = "smelt::FusionGroup";

struct TorchScriptFusion {
  std::optional<torch::jit::GraphPassNameType> pass;
  std::unordered_set<std::string> kinds;
  // Python: compile(graph_text) -> run(list[Tensor]) -> list[Tensor].
  std::shared_ptr<py::object> compile;
};

TorchScriptFusion& state() {
  // Never destroyed: its Python objects must not be released after the
  // interpreter has finalized (at process exit).
  static auto* s = new TorchScriptFusion;
  return *s;
}

bool completeTensor(const Value* v) {
  auto type = v->type()->cast<c10::TensorType>();
  return type && type->scalarType() && type->device() && type->sizes().concrete_sizes() &&
         type->strides().concrete_sizes();
}

bool isFusable(Node* node) {
  if (!state().kinds.count(node->kind().toQualString())) return false;
  for (const Value* out : node->outputs()) {
    if (!completeTensor(out)) return false;
  }
  for (const Value* in : node->inputs()) {
    bool tensor = in->type()->cast<c10::TensorType>() != nullptr;
    if (tensor ? !completeTensor(in) : in->node()->kind() != c10::prim::Constant) return false;
  }
  return true;
}

// A Python object whose last copy drops its reference under the GIL.
std::shared_ptr<py::object> holdUnderGil(py::object object) {
  return std::shared_ptr<py::object>(new py::object(std::move(object)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

torch::jit::Operation groupOperation(const Node* node) {
  auto subgraph = node->g(c10::attr::Subgraph);
  size_t num_inputs = subgraph->inputs().size();
  std::shared_ptr<py::object> run;
  {
    py::gil_scoped_acquire gil;
    run = holdUnderGil((*state().compile)(subgraph->toString()));
  }
  return [run, num_inputs](torch::jit::Stack& stack) {
    std::vector<at::Tensor> inputs;
    for (const c10::IValue& v : torch::jit::last(stack, num_inputs)) inputs.push_back(v.toTensor());
    torch::jit::drop(stack, num_inputs);
    std::vector<at::Tensor> outputs;
    {
      py::gil_scoped_acquire gil;
      outputs = (*run)(inputs).cast<std::vector<at::Tensor>>();
    }
    for (at::Tensor& t : outputs) torch::jit::push(stack, std::move(t));
  };
}

void registerGroupOperator() {
  static torch::jit::RegisterOperators registration({torch::jit::Operator(
      c10::Symbol::fromQualString(kGroupKind), groupOperation,
      c10::AliasAnalysisKind::PURE_FUNCTION)});
}

void enable(const std::vector<std::string>& kinds, py::object compile) {
  registerGroupOperator();
  TorchScriptFusion& s = state();
  s.kinds = {kinds.begin(), kinds.end()};
  s.compile = holdUnderGil(std::move(compile));
  if (!s.pass) {
    s.pass = torch::jit::registerPostPass([](std::shared_ptr<torch::jit::Graph>& graph) {
      torch::jit::CustomFuseGraph(graph, isFusable, c10::Symbol::fromQualString(kGroupKind));
    });
  }
}

void disable() {
  TorchScriptFusion& s = state();
  if (s.pass) torch::jit::clearPostPass(*s.pass);
  s.pass.reset();
}

}  // namespace

void bindTorchScript(py::module_& m) {
  m.def("enable_torchscript_fusion", &enable, py::arg("kinds"), py::arg("compile"));
  m.def("disable_torchscript_fusion", &disable);
  m.def("torchscript_fusion_enabled", [] { return state().pass.has_value(); });
}

}  // namespace smelt::python
