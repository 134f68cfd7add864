// The parameters of a matmul schedule (scheduleMatmul), chosen against
// fusion/device_limits.h's DeviceLimits, and the arithmetic behind the choices: shared
// memory per block with and without reuse of the operand tiles by the
// epilogue tile, and blocks per SM. One printable struct; a user may change
// any field of what matmulHeuristics returns before scheduling.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fusion/device_limits.h"
#include "fusion/mma_params.h"
#include "fusion/types.h"
#include "scheduler/heuristic.h"

namespace smelt {

// Storage order of the operands of C[M, N] = A[M, K] @ B[K, N] (first letter
// A, second B, as nvFuser names them): A "T" is row-major [M, K] (K
// contiguous), A "N" is [K, M] storage (M contiguous); B "T" is row-major
// [K, N] (N contiguous), B "N" is [N, K] storage (K contiguous). The fusion
// always sees A as [M, K] and B as [K, N]: a transposed operand is a strided
// input. The layout only steers which tile axis consecutive threads load.
enum class MatmulLayout { TT, TN, NT, NN };
std::string toString(MatmulLayout layout);
bool aIsKContiguous(MatmulLayout layout);
bool bIsNContiguous(MatmulLayout layout);

struct MatmulParams : HeuristicParams {
  // Block tile C[block_m, block_n], stepping K by block_k.
  int64_t block_m = 128;
  int64_t block_n = 128;
  int64_t block_k = 32;
  // Each thread accumulates a thread_m x thread_n register tile; the block
  // has (block_n / thread_n) x (block_m / thread_m) threads (TIDx over N).
  int64_t thread_m = 8;
  int64_t thread_n = 8;
  // Operand tiles held in shared memory at once (circular buffering); 1
  // loads each K step's tiles in place, with a barrier before and after use.
  int64_t stages = 3;
  // Stage the fp32 output tile in shared memory (C_s) and store it with a
  // block-wide coalesced mapping.
  bool smem_epilogue = false;
  // promoteReuse() on the operand tiles, so the epilogue tile may take
  // their bytes after the main loop (case D2; see decideOperandReuse).
  bool promote_operand_reuse = false;
  MatmulLayout layout = MatmulLayout::TT;
  // Pad the rows of K-contiguous operand tiles (operandRowPadding) so the K
  // loop reads them without bank conflicts; off lays them out unpadded, as
  // nvFuser does (the planner cases D1/D2 reproduce its figures).
  bool pad_k_contiguous_tiles = true;
  // Why promote_operand_reuse has its value (set by the heuristics).
  std::string promotion_reason;
  // Tensor cores: scheduleMatmul replaces the matmul by an MmaOp tiled as
  // `tensor_core` (mma.sync m16n8k16, lower/tensor_core_matmul.h) instead of
  // the CUDA-core schedule above. The heuristics turn it on for Half/BFloat16
  // operands on sm_80+ when the inputs allow whole 16-byte cp.async chunks,
  // and otherwise say why in `tensor_core_blocker` ("K=13 is not a multiple
  // of 8"); `tensor_core` holds the tiles for the shape whenever the operand
  // types allow tensor cores, so a user may force them. Forcing them while
  // a blocker is recorded is a smelt::Error in scheduleMatmul.
  bool use_tensor_cores = false;
  TensorCoreMatmulParams tensor_core;
  std::string tensor_core_blocker;

  int64_t threadsX() const { return block_n / thread_n; }
  int64_t threadsY() const { return block_m / thread_m; }
  int64_t threads() const { return threadsX() * threadsY(); }

  SchedulerType type() const override { return SchedulerType::Matmul; }
  // Multi-line, one field per line.
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override {
    return std::make_unique<MatmulParams>(*this);
  }
};

// The padding (elements) after each block_k row of a K-contiguous operand
// tile (TensorView::padRows): one 4-byte word, so that lanes reading one k of
// consecutive rows reach different banks; 0 for an M- or N-contiguous tile,
// whose lanes read consecutive elements of one row.
int64_t operandRowPadding(bool k_contiguous, DataType dtype);

// Shared-memory bytes of one block of a schedule, from the tile sizes and
// the K-contiguous tiles' row padding.
struct MatmulSmemEstimate {
  int64_t operand_bytes = 0;   // stages x (A tile + B tile)
  int64_t epilogue_bytes = 0;  // the fp32 C_s tile, 0 without smem epilogue
  int64_t no_reuse_bytes = 0;  // operands + epilogue
  int64_t reuse_bytes = 0;     // max(operands, epilogue)
};
MatmulSmemEstimate estimateSmem(const MatmulParams& params, DataType a_type, DataType b_type);

// Resident blocks per SM for a block of `threads` threads using
// `smem_bytes` of shared memory (registers are not modelled).
int64_t blocksPerSm(int64_t threads, int64_t smem_bytes, const DeviceLimits& device);

// Case D2: promote the operand tiles' reuse when the schedule has a shared
// epilogue tile and either the no-reuse total exceeds the per-block limit
// (while the reuse total fits) or reuse raises the blocks per SM; never when
// an operand is used after the main loop (`a @ b + a`).
struct OperandReuseDecision {
  bool promote = false;
  std::string reason;
  MatmulSmemEstimate smem;
  int64_t blocks_per_sm_without = 0;
  int64_t blocks_per_sm_with = 0;
};
OperandReuseDecision decideOperandReuse(const MatmulParams& params, DataType a_type,
                                        DataType b_type, bool operand_used_after_main_loop,
                                        const DeviceLimits& device);

// Tensor-core tiles, warps and stages for an M x N x K matmul (nullopt:
// symbolic) on `device` (sm_80 or newer, smelt::Error otherwise):
//   * block_m, block_n: the extent rounded up to a power of two, in [16, 128]
//     for M and [16, 128] for N (skinny M keeps a 16-row block);
//   * warps: two rows of warps when both block sides reach 64, warp tiles
//     up to 64 x 32 (64 fp32 accumulators per thread: 128 x 128 blocks run
//     8 warps at 128 registers, two blocks per SM), else one warp per
//     32 x 32 (or smaller) piece;
//   * block_k 32 (16 for K <= 16), raised until every thread copies whole
//     16-byte chunks of both tiles;
//   * stages: the K tiles, clamped to [2, 4], then lowered until two blocks'
//     operand tiles fit in the SM's shared memory (one block's in the
//     per-block limit at least).
// The register epilogue is the default (smem_epilogue off).
TensorCoreMatmulParams tensorCoreHeuristics(std::optional<int64_t> m, std::optional<int64_t> n,
                                            std::optional<int64_t> k, bool a_k_contiguous,
                                            bool b_k_contiguous,
                                            const DeviceLimits& device = DeviceLimits::sm90());

// The epilogue of a tensor-core matmul with `output`'s dtype: the shared
// fp32 C_s tile (smem_epilogue, promote_reuse) where it makes every output
// store 16 bytes wide (the register epilogue stores a thread's pairs of
// adjacent columns: 4 or 8 bytes) at no cost in shared memory, its bytes
// taken from the operand tiles' (sharedEpilogueVector, fusion/mma_params.h,
// says where the vectors fit).
void chooseTensorCoreEpilogue(TensorCoreMatmulParams& p, std::optional<int64_t> n, DataType output);

}  // namespace smelt
