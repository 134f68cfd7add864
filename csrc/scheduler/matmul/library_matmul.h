// The library-matmul "scheduler": a segment that is exactly one matmul,
// computed at run time by a library (cuBLAS/cuBLASLt through ATen's mm and
// bmm) instead of a generated kernel, where chooseMatmul (matmul_choice.h)
// says so. It takes the matmul core as matmul() builds it (the casts of
// Half/BFloat16 operands to Float, the broadcasts, the product and the sum
// over K), for a 2-D matmul addmm's bias add (a row of the operands' type,
// which cuBLASLt adds in its epilogue), and at most a cast of the result back
// to the operands' type, which the library's output is; the rest of the
// epilogue (activation, residual) stays in the segments around it, fused
// with its neighbours by smelt's kernels.
// Nothing is scheduled or lowered: the runtime calls the library
// (runtime/library_matmul.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/matmul/matmul_scheduler.h"
#include "scheduler/runtime_info.h"

namespace smelt {

// What the runtime calls for a library-matmul segment.
struct LibraryMatmulCall {
  size_t a_input = 0;  // positions of the operands among the fusion's inputs
  size_t b_input = 0;
  bool batched = false;             // bmm: [B, M, K] x [B, K, N]
  // addmm: the position of the [N] bias added to every row (2-D matmuls).
  std::optional<size_t> bias_input;
  DataType operand_type = DataType::Float;
  DataType output_type = DataType::Float;  // the operands' type, or Float (the sum itself)
};

struct LibraryMatmulParams : HeuristicParams {
  LibraryMatmulCall call;
  std::string reason;  // chooseMatmul's

  SchedulerType type() const override { return SchedulerType::LibraryMatmul; }
  // "LibraryMatmul{aten::mm Half -> Half; library: ...}"
  std::string toString() const override;
  std::unique_ptr<HeuristicParams> clone() const override {
    return std::make_unique<LibraryMatmulParams>(*this);
  }
};

// Why the fusion is not one matmul a library computes for these inputs on
// the runtime's target; empty when it is.
std::string libraryMatmulRejectReason(const Fusion& fusion, const RuntimeInfo& runtime);
// Why the library computes `pattern`, the matmul of a fusion the matmul
// scheduler takes (its core carved out into a segment of its own, the
// epilogue left to the segments around it): then the matmul scheduler
// declines it. "" when the library does not.
std::string libraryTakesMatmul(const MatmulPattern& pattern, const RuntimeInfo& runtime);
// What the library computes with a matmul after `sum` (the sum over K of
// the product of broadcast operands, as matmul() builds it), as sets of
// expressions a library segment may take beyond the core, the largest
// first: addmm's bias add (with its row's broadcast and cast) and the cast
// back to the operands' type; the bias add alone; the cast alone. The
// segmenter grows a library matmul's core with the first the scheduler takes.
std::vector<std::vector<const Expr*>> libraryMatmulEpilogues(const TensorView* sum);
// The library scheduler's seed growth (registry.h): the epilogues of the
// seed's sum, each with the seed, largest first.
SeedCandidates libraryMatmulSeedGrowth(const std::vector<const Expr*>& seed);
// The call for an accepted fusion; throws smelt::Error with the reason otherwise.
LibraryMatmulParams libraryMatmulHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
// Always throws: a library matmul is not scheduled, the runtime calls the library.
void scheduleLibraryMatmul(Fusion& fusion, const LibraryMatmulParams& params);

}  // namespace smelt
