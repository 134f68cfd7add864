// Who computes a matmul: smelt's generated kernel (the matmul scheduler) or
// a library (cuBLAS/cuBLASLt through ATen: scheduler/matmul/library_matmul.h),
// as Inductor sends matmuls to cuBLAS by default and nvFuser lets ATen
// evaluate them unless matmul fusion is enabled.
//
// The rules are backed by measurements kept here (kMeasuredMatmuls in
// matmul_choice.cpp, from the GPU runs under benchmarks/results/gpu_*): on a
// GPU, the generated kernel is chosen for a problem only where a measurement
// of the same architecture, operand type and shape class found it faster
// than the library; everywhere else the library computes it. The CPU
// simulator (no GPU) always runs the generated kernel, which is what the
// tests check. A policy other than Auto forces one side where it can run.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/types.h"
#include "scheduler/matmul/matmul_scheduler.h"
#include "scheduler/runtime_info.h"

namespace smelt {

enum class MatmulImplementation { Generated, Library };
std::string toString(MatmulImplementation implementation);

// One matmul problem as the rules see it: C[B, M, N] = A[B, M, K] @ B[B, K, N].
struct MatmulProblem {
  DataType operand_type = DataType::Float;  // A's
  bool one_operand_type = true;              // B's is A's
  int64_t batch = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

struct MatmulChoice {
  MatmulImplementation implementation = MatmulImplementation::Generated;
  std::string reason;  // "library: on sm_90 the generated kernel measured 2.21x cuBLAS at 4096^3 (fp16)"
};

// Whether a library computes matmuls of this operand type (ATen's CUDA
// matmul: float, double, half, bfloat16).
bool libraryTakesOperandType(DataType type);

MatmulChoice chooseMatmul(const MatmulProblem& problem, const ExecutionTarget& target);

// The problem of a fusion's matmul (matmul_scheduler.h's pattern) for these
// inputs, and the choice for it on the runtime's target.
MatmulProblem matmulProblem(const MatmulPattern& pattern, const RuntimeInfo& runtime);
MatmulChoice chooseMatmul(const MatmulPattern& pattern, const RuntimeInfo& runtime);

}  // namespace smelt
