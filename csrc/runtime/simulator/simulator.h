// The CPU kernel simulator on at::Tensor: runs a planned kir::Kernel with CUDA
// block/thread semantics and shared-memory race detection, for correctness
// checks without a GPU (docs/architecture.md §6). The reference/testing path, not a fast
// path. Semantics and the raw-buffer entry point: interpreter.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "lower/kir.h"
#include "runtime/simulator/sim_report.h"

namespace smelt::sim {

struct SimResult {
  std::vector<at::Tensor> outputs;  // one per kernel output
  SimReport report;
};

// `inputs`: CPU tensors (any strides) for kernel.inputs, dtypes matching.
// `outputs`: either empty, and the outputs are allocated contiguous with the
// shape of each output Buffer (evaluated from the inputs' sizes and `scalars`)
// and filled with NaN (floating) or 0 so unwritten elements show; or one CPU
// tensor per kernel output, written in place and returned.
// `scalars`: values of symbolic scalars by symbol name (e.g. "s0").
SimResult simulate(const kir::Kernel& kernel, const std::vector<at::Tensor>& inputs,
                   const std::vector<at::Tensor>& outputs = {},
                   const std::map<std::string, double>& scalars = {},
                   const SimOptions& options = {});

}  // namespace smelt::sim
