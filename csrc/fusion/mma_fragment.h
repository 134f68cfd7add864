// Fragment layouts of the warp-level tensor-core instructions smelt emits:
// which lane of a warp holds which element of each operand, as the PTX ISA
// defines them for mma.m16n8k16 with .f16/.bf16 operands and .f32
// accumulators, and for ldmatrix.m8n8 (.b16). The CPU simulator executes
// Mma/LdMatrix statements with these functions and the tensor-core matmul
// lowering indexes with them, so both agree with the hardware by construction
// (and a mutation of one index shows as a wrong simulated result).
//
// Lane l of a warp: group g = l / 4 (0..7), thread-in-group t = l % 4 (0..3).
//   A (16 x 16, row-major "row"): element i of 8 (4 registers of 2 halves)
//     row = g + 8 * ((i / 2) % 2),  col = 2 t + i % 2 + 8 * (i / 4)
//   B (16 x 8, K x N, "col"): element i of 4 (2 registers of 2 halves)
//     row (k) = 2 t + i % 2 + 8 * (i / 2),  col (n) = g
//   C/D (16 x 8 fp32): element i of 4
//     row = g + 8 * (i / 2),  col = 2 t + i % 2
//   ldmatrix, matrix j: lane 8 j + r supplies the address of row r (8
//   consecutive 16-bit elements); lane l receives element e (0, 1) of matrix
//   j at row g, column 2 t + e, or with .trans at row 2 t + e, column g.
#pragma once

#include <cstdint>

namespace smelt::mma {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kM = 16;
constexpr int64_t kN = 8;
constexpr int64_t kK = 16;
constexpr int64_t kAElementsPerLane = 8;
constexpr int64_t kBElementsPerLane = 4;
constexpr int64_t kCElementsPerLane = 4;

struct RowCol {
  int64_t row = 0;
  int64_t col = 0;
};

constexpr RowCol aElement(int64_t lane, int64_t i) {
  return {lane / 4 + 8 * ((i / 2) % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)};
}

constexpr RowCol bElement(int64_t lane, int64_t i) {
  return {2 * (lane % 4) + i % 2 + 8 * (i / 2), lane / 4};
}

constexpr RowCol cElement(int64_t lane, int64_t i) {
  return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2};
}

// Element e (0 or 1) of the register lane `lane` receives from one 8 x 8
// matrix of an ldmatrix: (row, column) in that matrix.
constexpr RowCol ldmatrixElement(int64_t lane, int64_t e, bool transpose) {
  return transpose ? RowCol{2 * (lane % 4) + e, lane / 4} : RowCol{lane / 4, 2 * (lane % 4) + e};
}

}  // namespace smelt::mma
