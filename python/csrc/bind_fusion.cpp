// Fusion IR bindings: enums, Fusion and FusionGuard, TensorView with its
// scheduling primitives, IterDomain, Scalar, and the op functions of
// fusion/ops.h under their Python names.
#include <algorithm>
#include <map>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "fusion/error.h"
#include "fusion/fusion.h"
#include "fusion/ops.h"
#include "fusion/symbols.h"
#include "fusion/transform_replay.h"
#include "bindings.h"

namespace py = pybind11;

namespace smelt::python {

namespace {

constexpr auto kRef = py::return_value_policy::reference;

std::optional<int64_t> constantOrNone(const IntExpr& e) { return e.constant(); }

// The symbols `e` reads, each once, in the order they first appear.
void collectSymbols(const IntExpr& e, std::vector<std::string>& names) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return;
    case IntExpr::Kind::Symbol:
      if (std::find(names.begin(), names.end(), e.symbolName()) == names.end()) {
        names.push_back(e.symbolName());
      }
      return;
    default:
      collectSymbols(e.lhs(), names);
      collectSymbols(e.rhs(), names);
  }
}

// A fusion input: -1 extents are symbolic ("T<n>.size[d]", bound from the
// tensor passed at run time), 1 is a broadcast dimension, others fixed.
// contiguity[d] is None where the stride does not matter (size 1).
TensorView* defineTensor(const std::vector<int64_t>& shape,
                         const std::vector<std::optional<bool>>& contiguity, DataType dtype) {
  SMELT_CHECK(contiguity.empty() || contiguity.size() == shape.size(), "define_tensor: shape has ",
              shape.size(), " dimensions but contiguity has ", contiguity.size(), " entries");
  Fusion* f = Fusion::current();
  // The tensor's number names its size symbols, so create it first.
  TensorView* tv = f->newTensor(dtype, {}, MemoryType::Global);
  std::vector<IterDomain*> axes;
  std::vector<bool> contiguous;
  for (size_t d = 0; d < shape.size(); ++d) {
    SMELT_CHECK(shape[d] == -1 || shape[d] > 0, "define_tensor: dimension ", d, " has extent ",
                shape[d], "; use a positive extent, or -1 for a size known at run time");
    IntExpr extent = shape[d] == -1 ? IntExpr::symbol(sizeSymbol(tv, static_cast<int64_t>(d)))
                                    : IntExpr(shape[d]);
    // Size 1 broadcasts against the other operands, as in PyTorch.
    axes.push_back(f->newIterDomain(extent, shape[d] == 1 ? IterType::Broadcast : IterType::Iteration));
    contiguous.push_back(contiguity.empty() || contiguity[d].value_or(true));
  }
  tv->setLogicalDomain(std::move(axes));
  tv->setContiguity(std::move(contiguous));
  return tv;
}

void bindEnums(py::module_& m) {
  py::enum_<DataType>(m, "DataType")
      .value("Float", DataType::Float)
      .value("Double", DataType::Double)
      .value("Half", DataType::Half)
      .value("BFloat16", DataType::BFloat16)
      .value("Int", DataType::Int)
      .value("Int32", DataType::Int32)
      .value("Int16", DataType::Int16)
      .value("Int8", DataType::Int8)
      .value("UInt8", DataType::UInt8)
      .value("Bool", DataType::Bool);
  py::enum_<MemoryType>(m, "MemoryType")
      .value("Global", MemoryType::Global)
      .value("Shared", MemoryType::Shared)
      .value("Local", MemoryType::Local);
  py::enum_<ParallelType>(m, "ParallelType")
      .value("Serial", ParallelType::Serial)
      .value("BIDx", ParallelType::BIDx)
      .value("BIDy", ParallelType::BIDy)
      .value("BIDz", ParallelType::BIDz)
      .value("TIDx", ParallelType::TIDx)
      .value("TIDy", ParallelType::TIDy)
      .value("TIDz", ParallelType::TIDz)
      .value("Vectorize", ParallelType::Vectorize)
      .value("Unroll", ParallelType::Unroll);
  py::enum_<IterType>(m, "IterType")
      .value("Iteration", IterType::Iteration)
      .value("Reduction", IterType::Reduction)
      .value("Broadcast", IterType::Broadcast);
  m.def("data_type_size", &dataTypeSize);
}

void bindNodes(py::module_& m) {
  py::class_<Fusion, std::shared_ptr<Fusion>>(m, "Fusion")
      .def(py::init<>())
      .def("add_input", &Fusion::addInput)
      .def("add_output", &Fusion::addOutput)
      .def("inputs", &Fusion::inputs, kRef)
      .def("outputs", &Fusion::outputs, kRef)
      .def("all_tensors", &Fusion::allTensors, kRef)
      .def("clone", [](const Fusion& f) { return std::shared_ptr<Fusion>(f.clone()); })
      .def("math_string", &Fusion::mathString)
      .def("transforms_string", &Fusion::transformsString)
      .def("__str__", &Fusion::toString);

  // `with fusion_guard(fusion):` makes `fusion` the one ops build into.
  struct PyFusionGuard {
    std::shared_ptr<Fusion> fusion;
    std::unique_ptr<FusionGuard> guard;
  };
  py::class_<PyFusionGuard>(m, "FusionGuard")
      .def(py::init([](std::shared_ptr<Fusion> f) { return PyFusionGuard{std::move(f), {}}; }))
      .def("__enter__", [](PyFusionGuard& g) { g.guard = std::make_unique<FusionGuard>(g.fusion.get()); })
      .def("__exit__", [](PyFusionGuard& g, py::args) { g.guard.reset(); });

  py::class_<Val>(m, "Val")
      .def_property_readonly("dtype", &Val::dtype)
      .def_property_readonly("is_tensor", [](const Val& v) { return v.asTensor() != nullptr; })
      .def("__str__", &Val::toString);

  py::class_<Scalar, Val>(m, "Scalar")
      .def_property_readonly("is_constant", &Scalar::isConstant)
      .def_property_readonly("value", [](const Scalar& s) -> std::optional<double> {
        if (!s.isConstant()) return std::nullopt;
        return s.value();
      })
      .def_property_readonly("symbol", &Scalar::symbol);

  py::class_<IterDomain>(m, "IterDomain")
      .def_property_readonly("extent", [](const IterDomain& id) { return id.extent().toString(); })
      .def_property_readonly("extent_value",
                             [](const IterDomain& id) { return constantOrNone(id.extent()); })
      // The dimension's size as torch sees it: 1 for a plain broadcast, the
      // expanded extent for an expanded one.
      .def_property_readonly("size", [](const IterDomain& id) {
        return id.isBroadcast() && !id.hasExpandedExtent() ? IntExpr(1) : id.loopExtent();
      })
      .def_property_readonly("iter_type", &IterDomain::iterType)
      .def_property_readonly("parallel_type", &IterDomain::parallelType)
      .def("parallelize", &IterDomain::parallelize, kRef)
      .def("__str__", &IterDomain::toString);

  py::class_<TensorView, Val>(m, "TensorView")
      .def_property_readonly("name", &TensorView::name)
      .def_property_readonly("number", &TensorView::number)  // its size symbols' T<n>
      .def("set_name", &TensorView::setName, kRef)
      .def_property_readonly("ndim", &TensorView::nDims)
      .def_property_readonly("logical_domain", &TensorView::logicalDomain, kRef)
      .def_property_readonly("logical_no_reductions", &TensorView::logicalNoReductions, kRef)
      .def_property_readonly("loop_domain", &TensorView::loopDomain, kRef)
      .def("axis", &TensorView::axis, kRef)
      .def_property_readonly("contiguity", &TensorView::contiguity)
      .def_property_readonly("memory_type", &TensorView::memoryType)
      .def("set_memory_type", &TensorView::setMemoryType, kRef)
      .def("split", &TensorView::split, py::arg("axis"), py::arg("factor"),
           py::arg("inner_split") = true, kRef)
      .def("merge", py::overload_cast<int64_t, int64_t>(&TensorView::merge), kRef)
      .def("reorder", &TensorView::reorder, kRef)
      .def("compute_at", &TensorView::computeAt, kRef)
      .def("inline_at", &TensorView::inlineAt, kRef)
      .def("inline_most", &TensorView::inlineMost, kRef)
      .def_property_readonly("compute_position", &TensorView::computePosition)
      .def("cache_after", &TensorView::cacheAfter, kRef)
      .def("cache_before", &TensorView::cacheBefore, kRef)
      .def("promote_reuse", &TensorView::promoteReuse, py::arg("enable") = true, kRef)
      .def_property_readonly("promotes_reuse", &TensorView::shouldPromoteReuse)
      .def("circular_buffer", &TensorView::circularBuffer, py::arg("stages"), kRef)
      .def_property_readonly("circular_buffer_stages", &TensorView::circularBufferStages)
      .def("transforms_string", &TensorView::transformsString);

  py::class_<IntExpr>(m, "IntExpr")
      .def(py::init<int64_t>())
      .def_static("symbol", &IntExpr::symbol)
      .def_property_readonly("value", [](const IntExpr& e) { return e.constant(); })
      // Its value with every size symbol bound ({"T0.size[1]": 8, ...}).
      .def("evaluate", &IntExpr::evaluate, py::arg("bindings"))
      .def("__mul__", [](const IntExpr& a, const IntExpr& b) { return a * b; })
      .def_property_readonly("symbols",
                             [](const IntExpr& e) {
                               std::vector<std::string> names;
                               collectSymbols(e, names);
                               return names;
                             })
      .def("__str__", &IntExpr::toString);
  py::implicitly_convertible<int64_t, IntExpr>();

  // The names fusion/symbols.h owns, for the Python layers that bind sizes
  // by name: nothing in Python spells or parses them itself.
  m.def("size_symbol", py::overload_cast<const TensorView*, int64_t>(&sizeSymbol),
        py::arg("tensor"), py::arg("dim"));
  m.def("is_size_symbol",
        [](const std::string& symbol) { return parseSizeSymbol(symbol).has_value(); },
        py::arg("symbol"));
}

void bindOps(py::module_& m) {
  // The active fusion (see FusionGuard) gains an input or output.
  m.def("add_input", [](Val* v) { Fusion::current()->addInput(v); });
  m.def("add_output", [](Val* v) { Fusion::current()->addOutput(v); });
  m.def("inline_all", [] { inlineMost(Fusion::current()); });
  m.def("propagate_schedule", &propagateSchedule);
  m.def("define_tensor", &defineTensor, kRef);
  m.def("constant", &constant, kRef);
  m.def("symbolic_scalar", &symbolicScalar, kRef);
  // Shape entries are ints or extents (another input's size symbol).
  m.def("full", [](const std::vector<IntExpr>& shape, Val* value, DataType dtype) {
    return full(shape, value, dtype);
  }, kRef);
  using Unary = TensorView* (*)(TensorView*);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Unary>>{
           {"set", &set}, {"neg", &neg}, {"exp", &exp}, {"tanh", &tanh}, {"abs", &abs},
           {"relu", &relu}, {"sqrt", &sqrt}, {"rsqrt", &rsqrt}, {"log", &log}, {"log2", &log2},
           {"log1p", &log1p}, {"exp2", &exp2}, {"expm1", &expm1}, {"sigmoid", &sigmoid},
           {"erf", &erf}, {"reciprocal", &reciprocal}, {"sin", &sin}, {"cos", &cos},
           {"tan", &tan}, {"asin", &asin}, {"acos", &acos}, {"atan", &atan}, {"sinh", &sinh}, {"cosh", &cosh}, {"asinh", &asinh}, {"acosh", &acosh}, {"atanh", &atanh}, {"log10", &log10}, {"erfc", &erfc}, {"lgamma", &lgamma},
           {"floor", &floor}, {"ceil", &ceil}, {"round", &round}, {"trunc", &trunc},
           {"logical_not", &logicalNot}, {"signbit", &signbit}, {"bitwise_not", &bitwiseNot}}) {
    m.def(name, fn, kRef);
  }
#define SMELT_BIND_SPECIAL(Enum, name) \
  m.def(#name, [](TensorView* in) { return special(UnaryOpType::Enum, in); }, kRef);
  SMELT_SPECIAL_UNARY_OPS(SMELT_BIND_SPECIAL)
#undef SMELT_BIND_SPECIAL
#define SMELT_BIND_SPECIAL(Enum, name) \
  m.def(#name, [](Val* a, Val* b) { return special(BinaryOpType::Enum, a, b); }, kRef);
  SMELT_SPECIAL_BINARY_OPS(SMELT_BIND_SPECIAL)
#undef SMELT_BIND_SPECIAL
  m.def("cast", [](TensorView* in, DataType dtype) { return castOp(dtype, in); }, kRef);
  using Binary = TensorView* (*)(Val*, Val*);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Binary>>{
           {"add", &add}, {"sub", &sub}, {"mul", &mul}, {"div", &div}, {"truediv", &truediv}, {"maximum", &maximum},
           {"minimum", &minimum}, {"pow", &pow}, {"remainder", &remainder}, {"fmod", &fmod},
           {"atan2", &atan2}, {"hypot", &hypot}, {"copysign", &copysign}, {"nextafter", &nextafter},
           {"bitwise_left_shift", &bitwiseLeftShift}, {"bitwise_right_shift", &bitwiseRightShift},
           {"gcd", &gcd}, {"lcm", &lcm},
           {"eq", &eq}, {"ne", &ne}, {"lt", &lt}, {"le", &le}, {"gt", &gt}, {"ge", &ge},
           {"logical_and", &logicalAnd}, {"logical_or", &logicalOr}, {"bitwise_and", &bitwiseAnd},
           {"bitwise_or", &bitwiseOr}, {"bitwise_xor", &bitwiseXor}}) {
    m.def(name, fn, kRef);
  }
  m.def("where", &where, kRef);
  using Reduction = TensorView* (*)(TensorView*, const std::vector<int64_t>&);
  m.def("sum", static_cast<Reduction>(&sum), kRef);
  m.def("max", static_cast<Reduction>(&max), kRef);
  m.def("prod", static_cast<Reduction>(&prod), kRef);
  m.def("broadcast", &broadcast, kRef);
  // Entries are ints (-1 keeps the dimension) or extents such as another
  // input's size symbol.
  m.def("expand", [](TensorView* in, const std::vector<IntExpr>& shape) {
    return expand(in, shape);
  }, kRef);
  m.def("pad", &pad, py::arg("input"), py::arg("widths"), py::arg("value") = 0.0, kRef);
  m.def("slice", &slice, py::arg("input"), py::arg("starts"), py::arg("stops"), kRef);
  m.def("cat", &cat, py::arg("inputs"), py::arg("dim"), kRef);
  m.def("index_select", &indexSelect, py::arg("table"), py::arg("dim"), py::arg("index"), kRef);
  m.def("gather", &gather, py::arg("table"), py::arg("dim"), py::arg("index"), kRef);
  // combine: "set", "add", "mul", "max" or "min" (ScatterCombine).
  m.def("scatter", [](TensorView* self, int64_t dim, TensorView* index, Val* src,
                      const std::string& combine, bool wrap_negative) {
    static const std::map<std::string, ScatterCombine> kCombines = {
        {"set", ScatterCombine::Set}, {"add", ScatterCombine::Add}, {"mul", ScatterCombine::Mul},
        {"max", ScatterCombine::Max}, {"min", ScatterCombine::Min}};
    const auto it = kCombines.find(combine);
    SMELT_CHECK(it != kCombines.end(), "scatter: unknown combine mode '", combine,
                "' (set, add, mul, max, min)");
    return scatter(self, dim, index, src, it->second, wrap_negative);
  }, py::arg("self"), py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("combine") = "set",
     py::arg("wrap_negative") = false, kRef);
  // combine: "add", "mul", "max", "min" or "logaddexp" (ScanCombine).
  m.def("scan", [](TensorView* in, int64_t dim, const std::string& combine) {
    static const std::map<std::string, ScanCombine> kCombines = {
        {"add", ScanCombine::Add}, {"mul", ScanCombine::Mul}, {"max", ScanCombine::Max},
        {"min", ScanCombine::Min}, {"logaddexp", ScanCombine::LogAddExp}};
    const auto it = kCombines.find(combine);
    SMELT_CHECK(it != kCombines.end(), "scan: unknown combine '", combine,
                "' (add, mul, max, min, logaddexp)");
    return scan(in, dim, it->second);
  }, py::arg("input"), py::arg("dim"), py::arg("combine"), kRef);
  m.def("iota", static_cast<TensorView* (*)(const IntExpr&, Val*, Val*, DataType)>(&iota),
        py::arg("length"), py::arg("start"), py::arg("step"), py::arg("dtype"), kRef);
  m.def("uniform", &uniform, py::arg("shape"), py::arg("low"), py::arg("high"), py::arg("seed"),
        py::arg("offset"), py::arg("dtype"), kRef);
  m.def("normal", &normal, py::arg("shape"), py::arg("mean"), py::arg("std"), py::arg("seed"),
        py::arg("offset"), py::arg("dtype"), kRef);
  m.def("matmul", &matmul, kRef);
  m.def("permute", &permute, kRef);
  m.def("transpose", &transpose, kRef);
  m.def("squeeze", &squeeze, kRef);
  m.def("unsqueeze", &unsqueeze, kRef);
  m.def("reshape", &reshape, kRef);
  m.def("flatten", &flatten, py::arg("input"), py::arg("start_dim") = 0, py::arg("end_dim") = -1,
        kRef);
  m.def("linear", &linear, py::arg("x"), py::arg("weight"), py::arg("bias") = nullptr, kRef);
  m.def("gelu", &gelu, py::arg("x"), py::arg("tanh_approximation") = false, kRef);
}

}  // namespace

void bindFusion(py::module_& m) {
  bindEnums(m);
  bindNodes(m);
  bindOps(m);
}

}  // namespace smelt::python
