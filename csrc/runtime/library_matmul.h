// Runs a library-matmul segment (scheduler/matmul/library_matmul.h) with
// ATen: at::mm / at::addmm / at::bmm, which call cuBLAS/cuBLASLt on CUDA
// tensors (addmm's bias in cuBLASLt's epilogue) and
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
