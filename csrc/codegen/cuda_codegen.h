// CUDA C++ generation from a planned kernel IR (kir::Kernel).
//
// The emitted translation unit is self-contained for NVRTC (no host headers):
// a short prelude in namespace `smelt` (the Tensor parameter struct and small
// __device__ helpers), then one `extern "C" __global__` kernel.
//
// Kernel parameters, in order:
//   * one `smelt::Tensor<T, N> <name>` per Global input buffer, then per Global
//     output buffer: { T* data; index_t size[N]; index_t stride[N]; } with N =
//     Buffer::shape.size() (the rank of the tensor the runtime passes; strides
//     in elements). Index expressions refer to "T0.size[1]", "T0.stride[1]";
//   * each scalar input, by its symbol ("s0"), as its CUDA type.
//
// Index type: all index arithmetic (loop indices, offsets, extents, the
// Tensor struct's sizes and strides) is in `index_t`, int64_t or int as
// CodegenOptions::index_type says. The runtime picks int per launch when every
// size and offset fits (runtime/index_type.h): 32-bit math is about half the
// integer instructions (no 64-bit multiply-adds, 32-bit registers).
//
// Memory:
//   * shared memory is one `extern __shared__ __align__(128) unsigned char
//     smem[]`; every Shared buffer (block-reduction workspaces included) is a
//     typed pointer declared at the top of the kernel at its planned byte
//     offset `Buffer::address` (an alias uses its target's offset). Every
//     Shared buffer must have an address;
//   * Local buffers are register arrays `T t[n]`, declared where their
//     Allocate is (n must be a constant);
//   * Global buffers are the parameters (their Allocate emits nothing).
//
// Statements:
//   * a non-trivial ForLoop is a `for` (`#pragma unroll` when Unroll or
//     Vectorize); a trivial one is a scoped block that binds its index:
//     `const index_t i3 = threadIdx.x;` (or `= 0` for a trip count of 1); an
//     index already spelled "threadIdx.x" needs no binding;
//   * predicates are `if`s; BlockSync is `__syncthreads()`;
//   * element-wise math on Half/BFloat16 is done in float (loads convert with
//     __half2float/__bfloat162float, stores with __float2half/__float2bfloat16);
//     an operand with an `in_bounds` predicate reads `out_of_bounds_value`
//     outside it (pad) without touching memory;
//   * maximum/minimum and max-reductions propagate NaN, as torch does.
//
// Block reduction and broadcast (smelt::blockReduce / smelt::blockBroadcast in
// the prelude). Every thread of the block must reach the statement (it
// contains barriers). Threads with equal indices on the thread axes NOT listed
// in `thread_axes` form one group.
//   * BlockReduce: each thread writes its value (the statement's predicate
//     false: the reduction's init value) to workspace[group * G + lane], where
//     G is the product of blockDim over the reduced axes; __syncthreads; a
//     tree reduction with a barrier after each level; every thread reads its
//     group's result from workspace[group * G]; __syncthreads. The workspace
//     needs one element per thread of the block and has the workspace
//     buffer's dtype (values convert to it).
//   * BlockBroadcast: the thread with index 0 on every listed axis writes its
//     value to workspace[group]; __syncthreads; every thread reads it;
//     __syncthreads. Every thread evaluates `in` (it must be readable by all,
//     as registers and shared memory are).
//   Both end with a barrier, so the workspace (and any buffer whose last read
//   precedes the statement) may be rewritten right after: they synchronize
//   the block, as Stmt::synchronizesBlock() says.
#pragma once

#include <string>

#include "fusion/int_expr.h"
#include "lower/kir.h"

namespace smelt {

struct CodegenOptions {
  // Declares `__shared__ __align__(128) unsigned char smem[N]` (N the planned
  // total) instead of the dynamic array, so ptxas reports the kernel's shared
  // memory and a test can compare it with the plan. Needs a constant total of
  // at most 48 KiB (the static limit).
  bool static_shared_memory = false;
  // Int (64-bit) or Int32: the type of index arithmetic and of the Tensor
  // struct's sizes and strides (the runtime packs them to match). With Int32
  // an index constant beyond int32 is an error.
  DataType index_type = DataType::Int;
  // With a constant block size: `__launch_bounds__(threads, min_blocks_per_sm)`
  // when > 0, asking ptxas to keep that many blocks resident per SM (it caps
  // registers per thread accordingly, spilling if it must).
  int64_t min_blocks_per_sm = 0;
};

// The CUDA source of `kernel` as one extern "C" __global__ function named
// `kernel_name`. Identical kernel IR gives identical text. Throws smelt::Error
// for IR it cannot emit (a Shared buffer without address, a Local buffer of
// symbolic size, an op on a type it does not support).
std::string generateCuda(const kir::Kernel& kernel, const std::string& kernel_name,
                         const CodegenOptions& options = {});

// The prelude every generated kernel holds (smelt::Tensor, index and math
// helpers), after the index typedef and launch constants.
const char* cudaPrelude();

// Bytes of dynamic shared memory a launch needs: the maximum over Shared
// buffers of address + bytes (0 when there are none). Symbolic when sizes are.
IntExpr sharedMemoryBytes(const kir::Kernel& kernel);

}  // namespace smelt
