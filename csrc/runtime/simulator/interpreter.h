// The simulator's torch-free entry point: runs a planned kir::Kernel on raw
// tensor buffers. simulator.h wraps it for at::Tensor; use this one where
// libtorch is not wanted (it is also what the tests of the race detector use).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fusion/types.h"
#include "lower/kir.h"
#include "runtime/simulator/sim_report.h"

namespace smelt::sim {

// A Global tensor's storage: `data` points at element 0; sizes and strides are
// in elements and bind the symbols "<buffer name>.size[d]" / ".stride[d]".
struct TensorArg {
  void* data = nullptr;
  DataType dtype = DataType::Float;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// Runs every sampled block of `kernel` with `inputs` and `outputs` bound to
// kernel.inputs / kernel.outputs (same order, dtypes must match), writing the
// outputs in place. Index symbols resolve to loop indices, threadIdx/blockIdx/
// blockDim/gridDim, tensor sizes and strides, and integer `scalars`; operand
// scalars that are symbolic take their values from `scalars` by symbol name.
//
// Semantics (the generated CUDA's): per block, threads run one at a time in
// SimOptions::order, each until it reaches a barrier (BlockSync, BlockReduce,
// BlockBroadcast) or exits; when all threads wait at the same barrier the
// phase ends. Shared memory is one byte array per block laid out by the
// planned Buffer::address (an alias without an address uses its base's), so a
// wrong plan gives wrong numbers; it starts filled with 0xff bytes (NaN for
// floating types), as do the per-thread Local buffers. BlockReduce: each
// thread's contribution (its `in`, or the init value where `predicate` fails)
// goes to workspace[linear thread index]; after the barrier every thread whose
// predicate holds reads its group's slots (threads equal on the axes not
// reduced) in linear order, combines them and writes `out`; a second barrier
// ends the statement. BlockBroadcast: the threads with index 0 on
// `thread_axes` write `in` to their workspace slot, and after the barrier every
// thread reads its group's source slot into `out`; then a barrier. A null
// workspace passes the values directly. Out-of-bounds reads yield NaN and
// out-of-bounds writes are dropped (both reported). A divergent barrier is
// reported and ends the simulation of that block.
//
// Throws smelt::Error for malformed kernels and arguments (argument counts,
// dtypes, unbound symbols, shared buffers without an address); everything
// found while running goes into the returned report.
SimReport simulateBuffers(const kir::Kernel& kernel, const std::vector<TensorArg>& inputs,
                          const std::vector<TensorArg>& outputs,
                          const std::map<std::string, double>& scalars,
                          const SimOptions& options = {});

}  // namespace smelt::sim
