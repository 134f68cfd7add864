// Lowering of a matmul fusion to a tensor-core kernel (sm_80+): the kernel
// IR is built directly from the matmul's operands and its pointwise epilogue
// rather than from a loop-domain schedule, because warp-level fragments
// (which lane holds which element, fusion/mma_fragment.h) do not map to
// per-thread loop nests.
//
// The kernel, for C[M, N] = A[M, K] @ B[K, N] with Half or BFloat16 operands:
//   * one block per block_m x block_n tile (blockIdx.y over M, blockIdx.x
//     over N), one warp per warp_m x warp_n sub-tile (threadIdx.x / 32);
//   * the K loop steps by block_k through `stages` shared-memory copies of
//     the A and B tiles (A_s, B_s), each tile stored with its contiguous axis
//     innermost and, with `swizzle`, its 16-byte chunks XOR-permuted per
//     128-byte line so that the cp.async stores and the ldmatrix loads touch
//     each bank once per 8-row phase (the tiles then need 128-byte alignment,
//     which the shared-memory planner honours);
//   * every thread copies 16-byte chunks with cp.async (zero-filled past the
//     tensor's edge), a prologue fills stages - 1 tiles, and iteration k waits
//     for tile k (wait_group stages - 2), synchronizes, prefetches tile
//     k + stages - 1 into the stage tile k - 1 used, and multiplies tile k:
//     ldmatrix (x4 for A, x2 for each n8 of B, .trans for the layouts whose
//     contiguous axis is M or N) and mma.sync m16n8k16 into fp32 registers;
//   * after the loop every copy is drained (wait_group 0), so the operand
//     tiles' bytes may be reused;
//   * the epilogue: each accumulator element (or, with `smem_epilogue`, each
//     element of a block-wide fp32 C_s tile that takes over the operand
//     tiles' bytes when `promote_reuse`) runs the fusion's pointwise ops after
//     the matmul (bias, activation, casts) and is stored, guarded by
//     row < M && col < N.
// Requirements (checkTensorCoreParams, smelt::Error otherwise): tile sizes
// are powers of two, warp_m % 16 == 0, warp_n % 8 == 0, block_k % 16 == 0,
// the warp tile divides the block tile, stages >= 2, and each operand tile's
// 16-byte chunks divide evenly among the threads. At run time the contiguous extent of each operand must be a multiple
// of 8 elements (16-byte aligned rows for cp.async); the simulator reports a
// misaligned cp.async otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fusion/fusion.h"
#include "lower/kir.h"
#include "lower/lower_context.h"

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
  std::string toString() const;
};

// The matmul in the fusion: inputs a [M, K] and b [K, N], the sum over K
// (the accumulator), and the fusion output computed from it by pointwise
// ops (or the sum itself).
struct TensorCoreMatmulOperands {
  const TensorView* a = nullptr;
  const TensorView* b = nullptr;
  const TensorView* sum = nullptr;
  const TensorView* output = nullptr;
};

// The limits a tensor-core schedule is chosen against.
struct TensorCoreTarget {
  int arch = 90;  // compute capability, major * 10 + minor; 80 or more
  int64_t max_shared_memory_per_block = 232448;  // opt-in limit
  int64_t shared_memory_per_sm = 233472;
  int64_t max_registers_per_thread = 255;
  static TensorCoreTarget sm80() { return {80, 166912, 167936, 255}; }  // A100: 163 / 164 KiB
  static TensorCoreTarget sm90() { return {}; }                         // H100/H200: 227 / 228 KiB
};

// Tiles, warps and stages for an M x N x K matmul (nullopt: symbolic):
//   * block_m, block_n: the extent rounded up to a power of two, in [16, 128]
//     for M and [16, 128] for N (skinny M keeps a 16-row block);
//   * warps: 2 x 2 when both block sides reach 64 (warp tiles up to 64 x 64:
//     128 fp32 accumulators per thread, within the register budget), else
//     one warp per 32 x 32 (or smaller) piece;
//   * block_k 32 (16 for K <= 16), raised until every thread copies whole
//     16-byte chunks of both tiles;
//   * stages: the K tiles, clamped to [2, 4], then lowered until two blocks'
//     operand tiles fit in the SM's shared memory (one block's in the
//     per-block limit at least).
// The register epilogue is the default (smem_epilogue off).
TensorCoreMatmulParams tensorCoreHeuristics(std::optional<int64_t> m, std::optional<int64_t> n,
                                            std::optional<int64_t> k, bool a_k_contiguous,
                                            bool b_k_contiguous,
                                            const TensorCoreTarget& target = TensorCoreTarget::sm90());

// Shared-memory bytes of the operand tiles (all stages) and of the C_s tile.
int64_t operandTileBytes(const TensorCoreMatmulParams& params);
int64_t epilogueTileBytes(const TensorCoreMatmulParams& params);

// Throws smelt::Error naming the parameter when `params` cannot form a kernel.
void checkTensorCoreParams(const TensorCoreMatmulParams& params);

// The kernel IR, with shared memory planned by the plan_shared_memory pass
// under `options` (the operand tiles' 128-byte alignment, the C_s tile's
// reuse of their bytes when they promote it). Adds to `fusion` the tensors
// of the shared tiles and a set() of the sum (the expression of copies), so
// the fusion must outlive the kernel. Throws smelt::Error for operand
// types other than Half/BFloat16 and for epilogue ops it cannot run.
kir::Kernel lowerTensorCoreMatmul(Fusion* fusion, const TensorCoreMatmulOperands& operands,
                                  const TensorCoreMatmulParams& params,
                                  const LowerOptions& options = {});

// The shared-memory index of element (row, col) of a rows x cols tile stored
// row-major, with 16-byte chunks XOR-swizzled per 128-byte line when
// `swizzle` (cols a power of two >= 8 of 16-bit elements).
IntExpr operandTileIndex(const IntExpr& row, const IntExpr& col, int64_t cols, bool swizzle);

}  // namespace smelt
