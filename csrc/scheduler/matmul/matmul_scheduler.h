// The matmul scheduler: C = A @ B, optionally followed by a pointwise
// epilogue (bias, activation, cast, other inputs), for float, half and
// bfloat16 operands with float accumulation (see matmul() in ops.h).
//
// Tensor cores (sm_80+, Half/BFloat16; see matmulHeuristics): the matmul
// becomes an MmaOp (fusion/ir.h) carrying its tiles, and GpuLower builds the
// mma.sync kernel of lower/tensor_core_matmul.h from it. Otherwise CUDA cores.
//
// The CUDA-core schedule: one block per block_m x block_n tile of C (BIDy over M tiles,
// BIDx over N tiles); each thread accumulates a thread_m x thread_n register
// tile whose rows and columns are strided by the thread counts (so
// consecutive threads touch consecutive columns); a serial K loop steps by
// block_k, staging the A and B tiles through shared memory (A_s, B_s), loaded
// cooperatively by all threads with consecutive threads on the operand's
// contiguous axis, circular-buffered over `stages`, and read into register
// fragments (thread_m values of A and thread_n of B per K step, reused for
// all thread_m x thread_n products); optionally the fp32
// output tile is staged through shared memory (C_s) and stored with a
// block-wide mapping. The operand tiles promote reuse when the params say so
// (decideOperandReuse: case D2 of shared/cases/smem_cases.md). M, N and K
// need not divide the tiles: accesses are predicated.
#pragma once

#include <string>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/matmul/matmul_params.h"
#include "scheduler/runtime_info.h"

namespace smelt {

// The matmul of a fusion, as matmul() builds it: out = sum(a3 * b3, K) with
// a3/b3 broadcasts of the fusion inputs a [M, K] and b [K, N] (through casts
// to float for half types).
// A batched matmul (torch.bmm) has a leading batch axis B everywhere: A
// [B, M, K], B [B, K, N], sum [B, M, rK, N], output [B, M, N]; each batch
// is a grid z index.
struct MatmulPattern {
  TensorView* a = nullptr;    // fusion input [M, K]
  TensorView* b = nullptr;    // fusion input [K, N]
  Expr* a_use = nullptr;      // the expression of the matmul reading a
  Expr* b_use = nullptr;
  TensorView* sum = nullptr;  // [M, rK, N]
  TensorView* output = nullptr;  // the fusion's output, [M, N]
  bool batched = false;
  // An operand (a or b) also read outside the matmul (`a @ b + a`), or null.
  const TensorView* operand_used_elsewhere = nullptr;
};

// Why the matmul scheduler cannot take this (unscheduled) fusion; empty if
// it can: not exactly one reduction that is a matmul, an operand computed in
// the fusion, not exactly one [M, N] output, an epilogue op that is not
// pointwise.
// `pattern`, when given, receives the matmul of a fusion it accepts.
std::string matmulRejectReason(const Fusion& fusion, MatmulPattern* pattern = nullptr);
// The matmul; throws smelt::Error with the reject reason.
MatmulPattern findMatmul(const Fusion& fusion);

// The matmuls of an unscheduled fusion as segmentation seeds (registry.h):
// for each sum over K of a product of two broadcasts, that core with the
// casts before the broadcasts, then the core alone.
std::vector<SeedCandidates> matmulSeeds(const Fusion& fusion);

// The operands' storage order in one launch (from the input strides).
MatmulLayout matmulLayout(const Fusion& fusion, const RuntimeInfo& runtime);

// Parameters for the fusion with these inputs on `device`: tiles shrink for
// small extents, stages and the shared epilogue are chosen to fit the
// per-block limit, and the operand reuse is decided by decideOperandReuse.
// Tensor cores (use_tensor_cores, with tiles from tensorCoreHeuristics) when
// the operands are Half/BFloat16 of one type, device.arch >= 80, and each
// operand's contiguous extent and other stride are multiples of 8 elements
// with 16-byte aligned data; else the CUDA-core schedule, with the reason in
// tensor_core_blocker.
MatmulParams matmulHeuristics(const Fusion& fusion, const RuntimeInfo& runtime,
                              const DeviceLimits& device = DeviceLimits::sm90());

// The tensors the schedule created or used. With tensor cores only `acc`
// (the MmaOp's output) and `output` are set.
struct MatmulSchedule {
  TensorView* a_smem = nullptr;  // "A_s"
  TensorView* b_smem = nullptr;  // "B_s"
  TensorView* acc = nullptr;     // the register accumulator (the sum)
  TensorView* c_smem = nullptr;  // "C_s", nullptr without the shared epilogue
  TensorView* output = nullptr;
};

// Schedules the fusion's matmul with `params`: the CUDA-core schedule, or
// with use_tensor_cores an MmaOp in place of the broadcast-multiply-sum.
// Throws smelt::Error for parameters that cannot form a schedule (tiles not
// divisible by the thread tile, too many threads, promotion while an operand
// is used elsewhere; tensor cores forced while tensor_core_blocker names a
// reason, for operands other than Half/BFloat16, or invalid tiles).
MatmulSchedule scheduleMatmul(Fusion* fusion, const MatmulParams& params);

}  // namespace smelt
