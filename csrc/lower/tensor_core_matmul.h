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
//     row < M && col < N. With a static, even N the register epilogue
//     takes each thread's pairs of adjacent columns: the pair is computed
//     into registers and stored, and global inputs read along the columns
//     loaded, by Vectorize loops of two (one 4-byte access for fp16 where
//     codegen/vectorize.h proves it); n tiles are the outer loop, so an
//     input varying along the columns alone (a bias) is loaded once per n
//     tile. The shared epilogue with a static N, a multiple of the output's
//     16-byte vector (8 fp16), takes 16 bytes of consecutive columns of C_s
//     per thread at a time: those inputs loaded, and the output stored, by
//     Vectorize loops of the vector (16-byte accesses).
// Requirements: checkTensorCoreParams (fusion/mma_params.h). At run time
// the contiguous extent and the other stride of each operand must be
// multiples of 8 elements and its data 16-byte aligned (whole 16-byte
// cp.async chunks): the kernel's VectorConditions (codegen/vectorize.h)
// record this, so the executor refuses such inputs naming the tensor and
// axis, and the simulator reports a misaligned cp.async.
//
// Entered from GpuLower for a fusion holding an MmaOp (the matmul
// scheduler's tensor-core choice; lower/passes.cpp), or directly with the
// operands of matmul()'s broadcast-multiply-sum (the tests of the kernel).
#pragma once

#include <cstdint>

#include "fusion/fusion.h"
#include "lower/kir.h"
#include "lower/lower_context.h"

namespace smelt {

// The matmul in the fusion: inputs a [M, K] and b [K, N], the sum over K
// (the accumulator: a ReductionOp's or an MmaOp's output), and the fusion
// output computed from it by pointwise ops (or the sum itself).
struct TensorCoreMatmulOperands {
  const TensorView* a = nullptr;
  const TensorView* b = nullptr;
  const TensorView* sum = nullptr;
  const TensorView* output = nullptr;
};

// The kernel IR, with shared memory planned by the plan_shared_memory pass
// under `options` (the operand tiles' 128-byte alignment, the C_s tile's
// reuse of their bytes when they promote it). Adds to `fusion` the tensors
// of the shared tiles, a set() of the sum (the expression of copies) and a
// zero full() (the accumulators' init), none reachable from the outputs, so
// the fusion must outlive the kernel. Throws smelt::Error for operand
// types other than Half/BFloat16 and for epilogue ops it cannot run.
kir::Kernel lowerTensorCoreMatmul(Fusion* fusion, const TensorCoreMatmulOperands& operands,
                                  const TensorCoreMatmulParams& params,
                                  const LowerOptions& options = {});

// The lowering pass of a fusion holding an MmaOp: its kernel IR (without the
// shared-memory plan, which the smem_addresses pass adds), from the MmaOp's
// operands and tiles and the fusion's one output. smelt::Error when the
// fusion holds more than one MmaOp or more than one output, or a tensor
// scheduled by hand (the tiles are the MmaOp's to say).
void buildTensorCoreMatmul(LoweringContext& ctx);
// The fusion's MmaOp, or nullptr.
const MmaOp* findMmaOp(const Fusion& fusion);

// The shared-memory index of element (row, col) of a rows x cols tile stored
// row-major, with 16-byte chunks XOR-swizzled per 128-byte line when
// `swizzle` (cols a power of two >= 8 of 16-bit elements).
IntExpr operandTileIndex(const IntExpr& row, const IntExpr& col, int64_t cols, bool swizzle);

}  // namespace smelt
