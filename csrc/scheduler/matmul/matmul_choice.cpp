#include "scheduler/matmul/matmul_choice.h"

#include <cmath>
#include <limits>

#include "fusion/error.h"

namespace smelt {

namespace {

// A matmul + bias + ReLU timed on a GPU: kernel µs of smelt's generated
// kernel and of the library (cuBLAS with Inductor's epilogue kernel), one run
// side by side. Sources: issue 41's H200 table (torch 2.11 + cu130, fp16),
// benchmarks/results/gpu_h100/session18/run1/triton_gpu.md (H100, fp16).
struct MeasuredMatmul {
  int arch;
  DataType operand_type;
  int64_t m, n, k;
  double generated_us;
  double library_us;
};

constexpr MeasuredMatmul kMeasuredMatmuls[] = {
    {90, DataType::Half, 4096, 4096, 4096, 464.0, 210.0},
    {90, DataType::Half, 8192, 8192, 8192, 3837.0, 1707.0},
    {90, DataType::Half, 2048, 2048, 2048, 62.8, 28.8},
    {90, DataType::Half, 512, 4096, 4096, 68.6, 28.1},
    {90, DataType::Half, 64, 4096, 4096, 47.6, 9.7},
    {90, DataType::Half, 4096, 11008, 4096, 1299.0, 623.0},
    {90, DataType::Half, 4096, 4096, 4096, 416.6, 205.1},  // H100
};

bool isTensorCoreType(DataType t) { return t == DataType::Half || t == DataType::BFloat16; }

// Measurements stand for problems of the same architecture and the same
// kind of operands (fp16 and bf16 run the same tensor-core instructions).
bool sameClass(const MeasuredMatmul& measured, const MatmulProblem& problem, int arch) {
  return measured.arch == arch &&
         (measured.operand_type == problem.operand_type ||
          (isTensorCoreType(measured.operand_type) && isTensorCoreType(problem.operand_type)));
}

// How far apart two problems' shapes are: summed |log2| of the extent ratios.
double shapeDistance(const MeasuredMatmul& measured, const MatmulProblem& problem) {
  auto log_ratio = [](int64_t a, int64_t b) {
    return std::abs(std::log2(static_cast<double>(std::max<int64_t>(a, 1)) /
                              static_cast<double>(std::max<int64_t>(b, 1))));
  };
  return log_ratio(measured.m, problem.m * problem.batch) + log_ratio(measured.n, problem.n) +
         log_ratio(measured.k, problem.k);
}

}  // namespace

std::string toString(MatmulImplementation implementation) {
  return implementation == MatmulImplementation::Library ? "library" : "generated";
}

bool libraryTakesOperandType(DataType type) {
  return type == DataType::Float || type == DataType::Double || isTensorCoreType(type);
}

MatmulChoice chooseMatmul(const MatmulProblem& problem, const ExecutionTarget& target) {
  const MatmulChoice generated{MatmulImplementation::Generated, ""};
  const MatmulChoice library{MatmulImplementation::Library, ""};
  auto because = [](MatmulChoice choice, std::string reason) {
    choice.reason = std::move(reason);
    return choice;
  };
  if (!problem.one_operand_type) {
    return because(generated, "generated: the operands differ in type");
  }
  if (!libraryTakesOperandType(problem.operand_type)) {
    return because(generated, errorMessage("generated: no library matmul takes ", problem.operand_type,
                                           " operands"));
  }
  switch (target.matmul) {
    case MatmulPolicy::Generated: return because(generated, "generated: asked for (matmul policy)");
    case MatmulPolicy::Library: return because(library, "library: asked for (matmul policy)");
    case MatmulPolicy::Auto: break;
  }
  if (!target.gpu) {
    return because(generated, "generated: the CPU simulator runs smelt's own kernels");
  }
  const MeasuredMatmul* nearest = nullptr;
  double best = std::numeric_limits<double>::infinity();
  for (const MeasuredMatmul& measured : kMeasuredMatmuls) {
    if (!sameClass(measured, problem, target.arch)) continue;
    const double distance = shapeDistance(measured, problem);
    if (distance < best) {
      best = distance;
      nearest = &measured;
    }
  }
  if (nearest == nullptr) {
    return because(library, errorMessage("library: no measurement of smelt's kernel on sm_",
                                         target.arch, " for ", problem.operand_type,
                                         " operands; cuBLAS is the reference"));
  }
  const double ratio = nearest->generated_us / nearest->library_us;
  return because(ratio < 1.0 ? generated : library,
                 errorMessage(ratio < 1.0 ? "generated" : "library", ": on sm_", target.arch,
                              " the generated kernel measured ", std::round(ratio * 100) / 100,
                              "x the library at the nearest measured shape ", nearest->m, "x",
                              nearest->n, "x", nearest->k, " (", nearest->operand_type, ")"));
}

MatmulProblem matmulProblem(const MatmulPattern& pattern, const RuntimeInfo& runtime) {
  const size_t batch = pattern.batched ? 1 : 0;
  const std::vector<IterDomain*> a = pattern.a->logicalNoReductions();
  MatmulProblem problem;
  problem.operand_type = pattern.a->dtype();
  problem.one_operand_type = pattern.b->dtype() == pattern.a->dtype();
  if (pattern.batched) problem.batch = runtime.extent(a[0]);
  problem.m = runtime.extent(a[batch]);
  problem.k = runtime.extent(a[batch + 1]);
  problem.n = runtime.extent(pattern.b->logicalNoReductions().at(batch + 1));
  return problem;
}

MatmulChoice chooseMatmul(const MatmulPattern& pattern, const RuntimeInfo& runtime) {
  return chooseMatmul(matmulProblem(pattern, runtime), runtime.target());
}

}  // namespace smelt
