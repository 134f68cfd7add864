// The library-matmul "scheduler": a segment that is exactly one matmul,
// computed at run time by a library (cuBLAS/cuBLASLt through ATen's mm,
// addmm, _addmm_activation and bmm) instead of a generated kernel, where
// chooseMatmul (matmul_choice.h) says so. It takes the matmul core as
// matmul() builds it (the casts of Half/BFloat16 operands to Float, the
// broadcasts, the product and the sum over K), for a 2-D matmul addmm's
// bias add (a row of the operands' type, which cuBLASLt adds in its
// epilogue) and after it a ReLU or a tanh-approximated GELU whose input
// nothing else reads (cuBLASLt's RELU_BIAS / GELU_BIAS epilogues, whose GELU
// is the tanh form: the erf form stays outside), and at most a cast of the
// result back to the operands' type, which the library's output is; the
// rest of the epilogue (other activations, residual) stays in the segments
// around it, fused with its neighbours by smelt's kernels.
// With 16-bit operands the library applies the activation to its fp32
// biased result and rounds once to the output type; the fusion may state the
// activation after the cast back (gelu() of a half tensor reads it rounded
// and rounds its own result: two roundings), so the library's value can
// differ from the fusion's in the last bit where the two roundings do.
// ReLU commutes with the rounding and gives the same bits either way.
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

// The activation cuBLASLt applies after addmm's bias add.
enum class MatmulActivation { None, Relu, GeluTanh };
std::string toString(MatmulActivation activation);  // "relu", "gelu_tanh"

// What the runtime calls for a library-matmul segment.
struct LibraryMatmulCall {
  size_t a_input = 0;  // positions of the operands among the fusion's inputs
  size_t b_input = 0;
  bool batched = false;             // bmm: [B, M, K] x [B, K, N]
  // addmm: the position of the [N] bias added to every row (2-D matmuls).
  std::optional<size_t> bias_input;
  // With a bias: at::_addmm_activation's, applied before the cast back.
  MatmulActivation activation = MatmulActivation::None;
  DataType operand_type = DataType::Float;
  DataType output_type = DataType::Float;  // the operands' type, or Float (the sum itself)
};

struct LibraryMatmulParams : HeuristicParams {
  LibraryMatmulCall call;
  std::string reason;  // chooseMatmul's

  SchedulerType type() const override { return SchedulerType::LibraryMatmul; }
  // "LibraryMatmul{aten::mm half -> half; library: ...}",
  // "LibraryMatmul{aten::_addmm_activation(relu) float -> float; library: ...}"
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
// first: addmm's bias add (with its row's broadcast and cast), then its
// activation and the cast back to the operands' type in the order the
// fusion states them; each shorter prefix of that chain; the cast alone
// (no bias). The segmenter grows a library matmul's core with the first the
// scheduler takes.
std::vector<std::vector<const Expr*>> libraryMatmulEpilogues(const TensorView* sum);
// The library scheduler's seed growth (registry.h): the epilogues of the
// seed's sum, each with the seed, largest first.
SeedCandidates libraryMatmulSeedGrowth(const std::vector<const Expr*>& seed);
// The call for an accepted fusion; throws smelt::Error with the reason otherwise.
LibraryMatmulParams libraryMatmulHeuristics(const Fusion& fusion, const RuntimeInfo& runtime);
// Always throws: a library matmul is not scheduled, the runtime calls the library.
void scheduleLibraryMatmul(Fusion& fusion, const LibraryMatmulParams& params);

}  // namespace smelt
