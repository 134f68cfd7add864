// The only translation unit of the simulator that includes torch: converts
// at::Tensor arguments to raw TensorArgs and back.
#include "runtime/simulator/simulator.h"

#include "fusion/symbols.h"
#include "lower/output_layout.h"

#include <limits>

#include <ATen/ATen.h>

#include "fusion/error.h"
#include "runtime/aten_dtype.h"
#include "runtime/simulator/interpreter.h"

namespace smelt::sim {
namespace {

TensorArg toArg(const at::Tensor& t, const kir::Buffer* buffer) {
  SMELT_CHECK(t.defined(), "simulator: tensor for ", buffer->name, " is undefined");
  SMELT_CHECK(t.device().is_cpu(), "simulator: tensor for ", buffer->name,
              " must be on the CPU, got ", t.device().str());
  SMELT_CHECK(t.scalar_type() == toAtenType(buffer->dtype), "simulator: ", buffer->name, " is ",
              buffer->dtype, ", got a ", t.scalar_type(), " tensor");
  TensorArg arg;
  arg.data = t.data_ptr();
  arg.dtype = buffer->dtype;
  arg.sizes = t.sizes().vec();
  arg.strides = t.strides().vec();
  return arg;
}

at::Tensor allocateOutput(const kir::Buffer* buffer, const kir::Kernel& kernel,
                          const std::vector<at::Tensor>& inputs,
                          const std::map<std::string, double>& scalars) {
  std::map<std::string, int64_t> values;
  for (const auto& [name, v] : scalars) values[name] = std::llround(v);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = kernel.inputs[i]->name;
    for (int64_t d = 0; d < inputs[i].dim(); ++d) {
      values[sizeSymbol(name, d)] = inputs[i].size(d);
      values[strideSymbol(name, d)] = inputs[i].stride(d);
    }
  }
  std::vector<int64_t> shape;
  for (const IntExpr& extent : buffer->shape) {
    try {
      shape.push_back(extent.evaluate(values));
    } catch (const Error& e) {
      throw Error(errorMessage("simulator: cannot size output ", buffer->name, " (", e.what(),
                               "); pass preallocated outputs"));
    }
  }
  auto options = at::TensorOptions().dtype(toAtenType(buffer->dtype));
  const std::vector<int64_t> allocated = allocatedExtents(shape, expandedDims(*buffer));
  return (isFloatingType(buffer->dtype)
              ? at::full(allocated, std::numeric_limits<double>::quiet_NaN(), options)
              : at::zeros(allocated, options))
      .expand(shape);
}

}  // namespace

SimResult simulate(const kir::Kernel& kernel, const std::vector<at::Tensor>& inputs,
                   const std::vector<at::Tensor>& outputs,
                   const std::map<std::string, double>& scalars, const SimOptions& options) {
  SMELT_CHECK(inputs.size() == kernel.inputs.size(), "simulator: the kernel has ",
              kernel.inputs.size(), " inputs, got ", inputs.size());
  SMELT_CHECK(outputs.empty() || outputs.size() == kernel.outputs.size(),
              "simulator: the kernel has ", kernel.outputs.size(), " outputs, got ",
              outputs.size());
  SimResult result;
  result.outputs = outputs;
  if (outputs.empty()) {
    for (const kir::Buffer* b : kernel.outputs) {
      result.outputs.push_back(allocateOutput(b, kernel, inputs, scalars));
    }
  }
  std::vector<TensorArg> in_args, out_args;
  for (size_t i = 0; i < inputs.size(); ++i) in_args.push_back(toArg(inputs[i], kernel.inputs[i]));
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    out_args.push_back(toArg(result.outputs[i], kernel.outputs[i]));
  }
  result.report = simulateBuffers(kernel, in_args, out_args, scalars, options);
  return result;
}

}  // namespace smelt::sim
