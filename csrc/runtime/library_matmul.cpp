#include "runtime/library_matmul.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>

#include "runtime/aten_dtype.h"

namespace smelt {

std::vector<at::Tensor> runLibraryMatmul(const LibraryMatmulCall& call,
                                         const std::vector<at::Tensor>& inputs) {
  RECORD_FUNCTION("smelt::library_matmul", std::vector<c10::IValue>());
  at::Tensor a = inputs.at(call.a_input);
  at::Tensor b = inputs.at(call.b_input);
  if (call.batched && a.size(0) != b.size(0)) {  // a broadcast batch axis (extent 1)
    const int64_t batch = std::max(a.size(0), b.size(0));
    a = a.expand({batch, a.size(1), a.size(2)});
    b = b.expand({batch, b.size(1), b.size(2)});
  }
  const at::ScalarType output = toAtenType(call.output_type);
  if (call.activation == MatmulActivation::Relu ||
      (call.activation == MatmulActivation::GeluTanh && a.is_cuda())) {
    // cuBLASLt's RELU_BIAS / GELU_BIAS epilogue on CUDA (its GELU is the tanh
    // form); ATen's CPU kernel runs addmm, then the activation on its result.
    return {at::_addmm_activation(inputs.at(*call.bias_input), a, b, 1, 1,
                                  call.activation == MatmulActivation::GeluTanh)};
  }
  // ATen's CPU _addmm_activation applies the erf GELU (torch 2.11): the tanh
  // form is applied after addmm there.
  if (call.activation == MatmulActivation::GeluTanh) {
    return {at::gelu(at::addmm(inputs.at(*call.bias_input), a, b), "tanh")};
  }
  if (call.bias_input) return {at::addmm(inputs.at(*call.bias_input), a, b)};  // of the operands' type
  if (a.scalar_type() == output) return {call.batched ? at::bmm(a, b) : at::mm(a, b)};
  // Float results of Half/BFloat16 operands: cuBLAS writes its fp32
  // accumulator directly; elsewhere the operands are widened first (the same
  // products, summed in fp32).
  if (a.is_cuda()) return {call.batched ? at::bmm(a, b, output) : at::mm(a, b, output)};
  a = a.to(output);
  b = b.to(output);
  return {call.batched ? at::bmm(a, b) : at::mm(a, b)};
}

}  // namespace smelt
