// Runs a library-matmul segment (scheduler/matmul/library_matmul.h) with
// ATen: at::mm / at::addmm / at::_addmm_activation / at::bmm, which call
// cuBLAS/cuBLASLt on CUDA tensors (addmm's bias, and its ReLU or tanh-GELU,
// in cuBLASLt's epilogue) and
// follow torch's precision settings (TF32 only where the user allowed it,
// reduced-precision reductions as configured). On the CPU and meta devices
// the same calls run ATen's own matmul, so forcing the library there
// (MatmulPolicy::Library) checks the segmentation and the values without a
// GPU.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "scheduler/matmul/library_matmul.h"

namespace smelt {

// `inputs`: the segment's, in its fusion's input order. Returns its one
// output, contiguous, of call.output_type.
std::vector<at::Tensor> runLibraryMatmul(const LibraryMatmulCall& call,
                                         const std::vector<at::Tensor>& inputs);

}  // namespace smelt
