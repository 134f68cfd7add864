// Cases B3 and D1 of shared/cases/smem_cases.md as hand-built kernel IR: their
// pipelined loops and phases are beyond what the case fusions schedule. The
// kernels are complete programs (every statement computes a fusion
// expression over Global inputs and outputs), so the planner, the simulator
// and the mutation tests run them like lowered kernels. Shared buffers have
// no address: plan them (planned_kernel.h). Every barrier in them is needed
// by the default plan: deleting one makes the simulator report a race.
#pragma once

#include <memory>

#include "common/kir_builder.h"

namespace smelt::cases {

// D1, one block of 256 threads: a K loop of 8 steps staging fp16 operand
// tiles A_s [3, 128, 32] and B_s [3, 32, 128] (every thread copies 48
// elements of each, a WAR barrier opens each step, a RAW barrier follows the
// copies; each thread then reads 64 elements of each tile that other threads
// wrote, together covering both tiles) into 64 fp32 accumulators; then the
// fp32 epilogue tile C_s [128, 128] written from the accumulators and read
// back transposed by thread after a RAW barrier. `promote` flags A_s and B_s
// with promoteReuse.
// Inputs: a, b (fp16, [8 * 12288]); output: c (fp32, [16384]).
std::unique_ptr<kir_testing::TestKernel> buildMatmulEpilogueKernel(bool promote);

// B3, one block of 128 threads: A_tiles (16,640 fp16) and B_tiles (32,768 B,
// as 16,384 fp16: only bytes matter to the plan) loaded in each of 4 K steps
// between a RAW and a closing WAR barrier, every thread summing the elements
// other threads loaded; red_buf (65,536 fp16) filled over an 8-round
// cross-warp loop, then (after a RAW barrier) read whole by every thread; a
// phase barrier; C_tile (1,024 fp16) written and read back reversed after a
// RAW barrier.
// Inputs: a ([4 * 16640] fp16), b ([4 * 16384] fp16); output: c ([1024] fp16).
std::unique_ptr<kir_testing::TestKernel> buildStreamKKernel();

}  // namespace smelt::cases
