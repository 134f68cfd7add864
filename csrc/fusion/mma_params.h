// The tile configuration of a tensor-core matmul: the attributes of MmaOp
// (fusion/ir.h), chosen by the matmul scheduler (tensorCoreHeuristics) and
// read by the tensor-core lowering (lower/tensor_core_matmul.h). It lives in
// the fusion layer because it is part of the IR: two MmaOps with different
// tiles print differently, so they never share a cached kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fusion/types.h"

namespace smelt {

struct TensorCoreMatmulParams {
  int64_t block_m = 32;
  int64_t block_n = 32;
  int64_t block_k = 32;
  int64_t warp_m = 16;
  int64_t warp_n = 16;
  int64_t stages = 2;
  // Storage of the operands: A [M, K] with K contiguous (else M), B [K, N]
  // with K contiguous (stored [N, K]; else N).
  bool a_k_contiguous = true;
  bool b_k_contiguous = false;
  bool swizzle = true;
  bool smem_epilogue = false;
  bool promote_reuse = false;  // the C_s tile may take the operand tiles' bytes

  int64_t warps() const { return (block_m / warp_m) * (block_n / warp_n); }
  int64_t threads() const { return 32 * warps(); }
  // One line with every field.
  std::string toString() const;
};

// Shared-memory bytes of the operand tiles (all stages) and of the C_s tile.
int64_t operandTileBytes(const TensorCoreMatmulParams& params);
int64_t epilogueTileBytes(const TensorCoreMatmulParams& params);

// The elements of `output` in the 16-byte vectors the shared epilogue
// moves along a row of C_s, or 0 where it cannot: N (`n`, the kernel's
// static extent) must be a multiple of the vector, and so must the block's
// columns and each thread's share of the block.
int64_t sharedEpilogueVector(const TensorCoreMatmulParams& params, std::optional<int64_t> n, DataType output);

// Throws smelt::Error naming the parameter when `params` cannot form a
// kernel: tile sizes are powers of two, warp_m % 16 == 0, warp_n % 8 == 0,
// block_k % 16 == 0, the warp tile divides the block tile, stages >= 2, at
// most DeviceLimits::max_threads_per_block threads, each operand tile's 16-byte chunks divide evenly among
// the threads, promote_reuse only with smem_epilogue.
void checkTensorCoreParams(const TensorCoreMatmulParams& params);

}  // namespace smelt
