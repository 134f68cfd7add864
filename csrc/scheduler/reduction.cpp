#include "scheduler/reduction.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "scheduler/reduction_utils.h"

namespace smelt {

using namespace scheduler_utils;

namespace {

// Threads per block the heuristics aim for.
constexpr int64_t kBlockThreads = 256;
// SMs of the device the heuristics aim at (an H200).
constexpr int64_t kSmCount = 132;
// An outer reduction that would have fewer blocks than SMs narrows its
// blocks down to row segments of this many bytes (one DRAM sector) and puts
// kOuterFewBlocksThreads threads in each: on an H100, a column sum of
// [8192, 4096] fp16 took 69.5 us with 64 blocks of (8, 32) threads and
// 33.8 us with 256 blocks of (2, 256); of [16384, 1024], 80.8 us and 18.1 us
// (benchmarks/results/gpu_h100/session16/run2/reduction_sweep.json).
constexpr int64_t kOuterMinSegmentBytes = 32;
constexpr int64_t kOuterFewBlocksThreads = 512;

// Bytes of one element of the outer reduction's loads: the widest
// vectorized input's, else 4.
int64_t outerLoadBytes(const Fusion& fusion, const VectorChoice& vector) {
  int64_t bytes = 0;
  for (int64_t i : vector.inputs) {
    bytes = std::max(bytes, dataTypeSize(fusion.inputs()[i]->asTensor()->dtype()));
  }
  return bytes > 0 ? bytes : 4;
}

ReductionLayout checkedLayout(const Fusion& fusion) {
  std::string reason = reductionRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "reduction scheduler cannot take this fusion: ", reason);
  ReductionLayout layout;
  analyzeReductions(fusion, &layout);
  return layout;
}

}  // namespace

std::string ReductionParams::toString() const {
  std::ostringstream os;
  os << "ReductionParams{" << (inner ? "inner" : "outer") << ", vector_width=" << vector_width
     << ", block=(" << block_x << ", " << block_y
     << "), vectorized_inputs=" << scheduler_utils::toString(vectorized_inputs);
  if (grid_split > 1) os << ", grid_split=" << grid_split;
  os << "}";
  return os.str();
}

std::unique_ptr<HeuristicParams> ReductionParams::clone() const {
  return std::make_unique<ReductionParams>(*this);
}

std::string reductionRejectReason(const Fusion& fusion) {
  ReductionLayout layout;
  std::string reason = analyzeReductions(fusion, &layout);
  if (!reason.empty()) return reason;
  if (layout.broadcasts_back) {
    return "the reduced value of " + layout.reference->name() +
           " is broadcast back (a normalization)";
  }
  if (layout.full_output != nullptr) {
    return "output " + layout.full_output->name() + " keeps the reduced dimensions";
  }
  return serialIterationReason(fusion, layout);
}

std::string gridSplitRejectReason(const Fusion& fusion) {
  std::string reason = reductionRejectReason(fusion);
  if (!reason.empty()) return reason;
  ReductionLayout layout;
  analyzeReductions(fusion, &layout);
  if (layout.reductions.size() > 1) {
    return "it has " + std::to_string(layout.reductions.size()) + " reductions; a grid split regroups one";
  }
  const TensorView* ref = layout.reference;
  const int64_t rank = static_cast<int64_t>(ref->logicalDomain().size());
  if (rank < 2) return "it reduces a whole tensor; a grid split regroups rows";
  const bool outer = layout.reduced_dims == std::vector<int64_t>{0};
  if (!outer && layout.reduced_dims != std::vector<int64_t>{rank - 1}) {
    return "reduction " + ref->name() + " reduces neither its innermost nor its outermost "
           "dimension alone";
  }
  const TensorView* reduced_input = ref->definition()->input(0)->asTensor();
  if (reduced_input->dtype() != ref->dtype()) {
    return "reduction " + ref->name() + " changes the dtype of " + reduced_input->name();
  }
  std::unordered_set<const Val*> upstream{reduced_input};
  const std::vector<Expr*> exprs = fusion.exprs();
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    const Expr* e = *it;
    if (!upstream.count(e->output())) continue;
    if (e->type() == ExprType::Pad || e->type() == ExprType::Expand) {
      return e->toString() + " changes extents before the reduction";
    }
    upstream.insert(e->inputs().begin(), e->inputs().end());
  }
  for (const Val* in : fusion.inputs()) {
    const TensorView* tv = in->asTensor();
    if (tv == nullptr) continue;
    // The runtime regroups every tensor input of the partial segment.
    if (fusion.consumersOf(tv).empty()) {
      return "input " + tv->name() + " is read for its sizes alone and would be regrouped";
    }
    if (!upstream.count(tv)) continue;
    if (static_cast<int64_t>(tv->logicalNoReductions().size()) != rank) {
      return "input " + tv->name() + " is read before the reduction without the reduction's shape";
    }
    for (int64_t d : outer ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{rank - 2, rank - 1}) {
      if (layout.map->role(tv, d) != DimensionMap::Role::Iteration) {
        return "input " + tv->name() + " is broadcast along dimension " + std::to_string(d);
      }
      if (tv->logicalNoReductions()[d]->extent().isConstant()) {
        return "input " + tv->name() + " has a constant extent in dimension " + std::to_string(d);
      }
    }
  }
  return "";
}

int64_t reductionGridSplitChunks(const Fusion& fusion, const RuntimeInfo& runtime,
                                 const ParamsOverride& override_params) {
  ReductionParams params = reductionHeuristics(fusion, runtime);
  if (override_params) override_params(params);
  if (params.grid_split <= 1) return 1;
  const std::string reason = gridSplitRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "cannot split the reduction across blocks (grid_split = ",
              params.grid_split, "): ", reason);
  return params.grid_split;
}

ReductionParams reductionHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  ReductionLayout layout = checkedLayout(fusion);
  const DimensionMap& map = *layout.map;
  TensorView* ref = layout.reference;
  const int64_t n_iter = layout.iteration_runs.empty()
                             ? 1
                             : extentOf(ref, map, layout.iteration_runs.back(), runtime);
  const std::vector<int64_t>& inner_reduced = layout.reduction_runs.back();
  const int64_t n_red = std::max<int64_t>(extentOf(ref, map, inner_reduced, runtime), 1);
  int64_t iterations = 1;
  for (const std::vector<int64_t>& run : layout.iteration_runs) {
    iterations *= extentOf(ref, map, run, runtime);
  }
  ReductionParams params;
  params.inner = layout.inner;
  // Blocks of a launch with these parameters: rows over block_y (inner), or
  // columns over block_x vectors (outer).
  const auto blocks_of = [&](const ReductionParams& p) {
    return ceilDiv(iterations, p.inner ? p.block_y : p.block_x * p.vector_width);
  };
  if (!layout.inner) {
    VectorChoice vector = layout.iteration_runs.empty()
                              ? VectorChoice{}
                              : chooseVectorWidth(fusion, map, layout.iteration_runs.back(), runtime,
                                                  /*with_outputs=*/false);
    params.vector_width = vector.width;
    params.vectorized_inputs = vector.inputs;
    const int64_t max_block_x = vector.width > 1 ? kOuterVectorColumns / vector.width : 128;
    params.block_x = std::min(max_block_x, nextPowerOfTwo(ceilDiv(n_iter, vector.width)));
    int64_t threads = kBlockThreads;
    if (blocks_of(params) < kSmCount) {
      const int64_t segment_bytes = vector.width * outerLoadBytes(fusion, vector);
      while (blocks_of(params) < kSmCount &&
             params.block_x / 2 * segment_bytes >= kOuterMinSegmentBytes) {
        params.block_x /= 2;
      }
      threads = kOuterFewBlocksThreads;
    }
    params.block_y = std::min(threads / params.block_x, nextPowerOfTwo(n_red));
  } else {
    VectorChoice vector = chooseVectorWidth(fusion, map, inner_reduced, runtime,
                                            /*with_outputs=*/false);
    params.vector_width = vector.width;
    params.vectorized_inputs = vector.inputs;
    params.block_x = std::min(kBlockThreads, nextPowerOfTwo(ceilDiv(n_red, params.vector_width)));
    params.block_y = std::min(kBlockThreads / params.block_x, nextPowerOfTwo(n_iter));
  }
  const int64_t blocks = blocks_of(params);
  if (blocks < kSmCount && n_red >= kGridSplitMinRow && gridSplitRejectReason(fusion).empty()) {
    // Two blocks per SM, chunks of at least kGridSplitMinChunk elements.
    const int64_t chunks = std::min(ceilDiv(2 * kSmCount, blocks), n_red / kGridSplitMinChunk);
    params.grid_split = std::max<int64_t>(1, nextPowerOfTwo(chunks + 1) / 2);
  }
  return params;
}

void scheduleReduction(Fusion& fusion, const ReductionParams& params) {
  FusionGuard guard(&fusion);
  ReductionLayout layout = checkedLayout(fusion);
  SMELT_CHECK(params.inner == layout.inner, "reduction scheduler: the fusion's reduction is ",
              layout.inner ? "inner" : "outer", " but the parameters say otherwise (",
              params.toString(), ")");
  SMELT_CHECK(params.vector_width >= 1 && params.block_x >= 1 && params.block_y >= 1,
              "reduction scheduler: vector width and block sizes must be positive in ",
              params.toString());
  std::vector<TensorView*> vectorized =
      cacheForReductions(fusion, params.vectorized_inputs, {}, "reduction", &layout);
  TensorView* ref = layout.reference;

  std::vector<std::vector<int64_t>> groups = layout.iteration_runs;
  groups.insert(groups.end(), layout.reduction_runs.begin(), layout.reduction_runs.end());
  std::vector<int64_t> positions = mergeGroups(ref, *layout.map, groups);
  std::vector<int64_t> iteration_positions(positions.begin(),
                                           positions.begin() + layout.iteration_runs.size());
  const int64_t reduced = positions.back();
  if (params.inner) {
    if (params.vector_width > 1) ref->split(reduced, params.vector_width);
    ref->split(reduced, params.block_x);
    ref->axis(reduced + 1)->parallelize(ParallelType::TIDx);
    bindIterationRuns(ref, iteration_positions, params.block_y, ParallelType::TIDy);
  } else {
    // [.., I, R] -> [.., I, V, R] -> [.., I, V, R, TIDy] -> [.., I, R, TIDy, V], then I is
    // bound to [BIDx, TIDx].
    SMELT_CHECK(params.vector_width == 1 || !iteration_positions.empty(),
                "reduction scheduler: an outer reduction without iterated dimensions cannot vectorize");
    int64_t reduction_axis = reduced;
    if (params.vector_width > 1) {
      ref->split(iteration_positions.back(), params.vector_width);
      ++reduction_axis;
    }
    if (params.block_y > 1) {
      ref->split(reduction_axis, params.block_y);
      ref->axis(reduction_axis + 1)->parallelize(ParallelType::TIDy);
    }
    if (params.vector_width > 1) ref->reorder({{iteration_positions.back() + 1, ref->nDims() - 1}});
    bindIterationRuns(ref, iteration_positions, params.block_x, ParallelType::TIDx);
  }
  propagateSchedule(ref);
  vectorizeInnermost(vectorized, params.vector_width);
  inlineMost(&fusion);
}

}  // namespace smelt
