// The acceptance cases of shared/cases/smem_cases.md (sections A–C) as C++
// fusions, shared by the lowering, planning, codegen and simulator tests.
// Each builder creates its fusion in the active Fusion (hold a FusionGuard),
// schedules it as the case says, and returns the tensors the case names.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "fusion/fusion.h"

namespace smelt::cases {

// A1 SimpleCase (H=5, W=6): A = tv1 (Shared, 20 B), B = tv5 (Shared, 24 B).
// tv3 is the sum whose axis may be bound to TIDx (a block reduction).
struct SimpleCase {
  TensorView* a;
  TensorView* b;
  TensorView* sum;
};
SimpleCase buildSimpleCase(int64_t h = 5, int64_t w = 6);

// A2 NeedsReorderedPush (H=5): A = tv0, B = tv1 = pad(A), C = tv5; tv3 the sum.
// A3 is this fusion with a->promoteReuse().
struct NeedsReorderedPush {
  TensorView* a;
  TensorView* b;
  TensorView* c;
  TensorView* sum;
};
NeedsReorderedPush buildNeedsReorderedPush(int64_t h = 5);

// A4 PromoteReuseMultipleDownstream (H=7): Shared tv0 (28 B), tv2 (32 B), tv4 (36 B).
struct MultipleDownstream {
  TensorView* tv0;
  TensorView* tv2;
  TensorView* tv4;
};
MultipleDownstream buildPromoteReuseMultipleDownstream(int64_t h = 7);

// A5 MultiplePromoteReuse (H=7): Shared tv0 (28 B), tv2 (32), tv4 (36), tv6 (40).
struct MultiplePromote {
  TensorView* tv0;
  TensorView* tv2;
  TensorView* tv4;
  TensorView* tv6;
};
MultiplePromote buildMultiplePromoteReuse(int64_t h = 7);

// A6 SkippedSyncInterval (D=5, H=6, W=7): tv0 Shared, inlined into tv1; tv2 =
// pad(tv1) Shared ([5,6,8], 960 B); TIDx on axis 0 of every tensor. The caller
// decides on tv0->promoteReuse().
struct SkippedSync {
  TensorView* tv0;
  TensorView* tv2;
};
SkippedSync buildSkippedSyncInterval(int64_t d = 5, int64_t h = 6, int64_t w = 7);

// A7: a [16] chain; tv1 (split 2, vectorized) and tv3 (split 4, vectorized)
// Shared, tv2 split 4; inlineMost.
struct VectorChain {
  TensorView* tv1;
  TensorView* tv3;
};
VectorChain buildSmemVectorizationChain();
// A8: the same chain with Local buffers, tv1 split by vf1 and tv2/tv3 by vf2
// (vectorized when > 1), no inlining.
VectorChain buildRegisterVectorizationChain(int64_t vf1, int64_t vf2);

// A9: tv1 = set(input [4]) Shared, tv2 = broadcast Shared, tv3 = expand to [3, 4]
// Shared, tv4 = set(tv3) output. `concrete` picks a concrete or symbolic input.
struct ExpandChain {
  TensorView* tv1;
  TensorView* tv3;
};
ExpandChain buildExpandBetweenAliases(bool concrete);

// B1/B2: a tiled GEMM (32×32 tiles, block (32, 32)) staging Asub and Bsub
// through Shared memory in a K loop and the result tile Csub through Shared
// memory in the epilogue. `batch` > 0 wraps it in a serial batch loop (B2).
// `stages` > 1 circular-buffers Asub and Bsub over the K loop.
struct TiledGemm {
  TensorView* a_sub;
  TensorView* b_sub;
  TensorView* c_sub;
  TensorView* output;
};
TiledGemm buildTiledGemm(int64_t m = 64, int64_t n = 64, int64_t k = 64, int64_t batch = 0,
                         int64_t stages = 1);

// B3 as a scheduled fusion: a slice-K GEMM, the Stream-K shape inside one
// block. a [W, M, K] and b [W, K, N] hold W slices of the K dimension; the
// output is sum_w a[w] @ b[w], [M, N]. Block (TIDx N, TIDy M, TIDz W): every
// warp slice accumulates its partial product in a K loop over tiles of `k_tile`
// (A_tiles [W, M, k_tile], B_tiles [W, k_tile, N] in Shared, one element per
// thread), writes it to red_buf [W, M, N] (Shared) after the loop, and a
// cross-warp reduction over W, read transposed (TIDx on M), fills C_tile
// [M, N] (Shared), which the output reads transposed back:
//
//   phase     K loop          cross-warp sum    epilogue
//   A_tiles   |=========|
//   B_tiles   |=========|
//   red_buf              |==============|
//   C_tile                               |============|
struct SliceKGemm {
  TensorView* a_tiles;
  TensorView* b_tiles;
  TensorView* red_buf;
  TensorView* c_tile;
  TensorView* output;
};
SliceKGemm buildSliceKGemm(int64_t slices = 4, int64_t m = 16, int64_t n = 16, int64_t k = 32,
                           int64_t k_tile = 16);

// C1: w [256, 256] cached into Shared (w_s) and Local (w_l) copies whose rows
// are split into 8 parts bound to BIDx; the columns are bound to TIDx.
struct PersistentSlice {
  TensorView* w_shared;
  TensorView* w_local;
};
PersistentSlice buildPersistentRnnSlice(int64_t m = 256, int64_t n = 256, int64_t parts = 8);

// Not a case of the table: relu(a + b) over [10, 100] merged and split by 128
// (non-divisible) into BIDx x TIDx, shared by the lowering and simulator tests.
void buildPointwiseNonDivisible();

// Not a case of the table: sum over the columns of a [rows, cols] input, rows
// on BIDx, columns split by 128 onto TIDx (a serial partial per thread, then
// a block reduction), shared by the lowering, simulator and GPU tests.
void buildRowSumBlockReduce(int64_t rows = 8, int64_t cols = 500);

// Every case above under its table name, scheduled as the table says (A3 is
// A2 with promoteReuse, A6_promoted A6 with it, A9_symbolic A9 on a symbolic
// input of size 4), for suites that run them all.
struct NamedCase {
  const char* name;
  void (*build)();
};
const std::vector<NamedCase>& allCases();
// GoogleTest prints a parameter by its name.
inline void PrintTo(const NamedCase& c, std::ostream* os) { *os << c.name; }

}  // namespace smelt::cases
