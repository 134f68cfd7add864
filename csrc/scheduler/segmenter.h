// Segmentation: a fusion that no single scheduler takes (two reductions over
// different dimensions, a matmul followed by a reduction, a row too long to
// keep on chip) is split into segments, each a fusion of its own that some
// scheduler takes; the values passed between segments become Global tensors
// and the segments run one after another.
//
// The whole fusion is one segment when a scheduler takes it. Otherwise every
// expression starts as its own group, and groups are merged greedily along
// producer-consumer edges: each round merges the pair that keeps the most
// bytes out of global memory (the tensors only the pair reads) among the
// pairs whose union a scheduler still takes and whose merge leaves the
// groups acyclic.
//
// A fusion the reduction scheduler takes whole, but whose heuristics (or an
// override of them) set grid_split (reduction.h), becomes two segments
// instead: the partial segment (the expressions up to the reduction) runs
// on its inputs regrouped from [.., R, N] to [.., R * P, N / P], so it
// writes [.., R * P] partial results; the final segment (the reduction and
// everything else) reads them regrouped to [.., R, P] as the reduction's
// input. The runtime regroups (runtime/fusion_executor_cache.h:
// segmentInputTensors), choosing P = gridSplitChunks(N, max_chunks) per
// launch.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

// A segment's part in a grid-split reduction (see above).
enum class GridSplitRole { None, Partials, Final };

struct Segment {
  // Unscheduled and closed; its inputs and outputs are Global. Tensors keep
  // the numbers they have in the complete fusion; extents are expressed in
  // the size symbols of the segment's own inputs.
  std::unique_ptr<Fusion> fusion;
  SchedulerType scheduler = SchedulerType::Pointwise;
  // Values of the complete fusion, in the order of fusion->inputs() and
  // fusion->outputs().
  std::vector<const Val*> inputs;
  std::vector<const Val*> outputs;
  GridSplitRole grid_split_role = GridSplitRole::None;
};

// The regrouping of a grid-split reduction: N is the extent of `reduced_axis`
// (an axis of the complete fusion's reduction input), split into
// gridSplitChunks(N, max_chunks) chunks; the partial segment's output
// `partials` is read by the final segment as `final_input`.
struct GridSplit {
  const IterDomain* reduced_axis = nullptr;
  int64_t max_chunks = 1;
  const Val* partials = nullptr;
  const Val* final_input = nullptr;
};

struct SegmentedFusion {
  std::vector<Segment> segments;  // in execution order
  GridSplit grid_split;           // max_chunks > 1 when split
  // "segment 0 (reduction): T0 -> T2\nsegment 1 (pointwise): T0, T2 -> T5\n"
  std::string toString() const;
};

// Called with the heuristics of a fusion taken whole before a grid split is
// decided from them (the executor cache passes its heuristic override).
using ParamsOverride = std::function<void(HeuristicParams&)>;

// Throws smelt::Error when some expression is taken by no scheduler on its
// own, or when the parameters ask for a grid split of a fusion that cannot
// be split (gridSplitRejectReason).
SegmentedFusion segmentFusion(const Fusion& fusion, const RuntimeInfo& runtime,
                              const ParamsOverride& override_params = {});

// The chunks P of the grid split for a launch of the complete fusion with
// `whole`; 1 when the fusion is not split.
int64_t gridSplitChunksOf(const SegmentedFusion& segmented, const RuntimeInfo& whole);

// The inputs of one segment for a launch of the complete fusion: its inputs
// that are inputs of the complete fusion as given, the others (intermediates
// the runtime allocates) contiguous and 16-byte aligned, of their sizes.
// Grid-split segments get the shapes before regrouping (what selection
// sees); the runtime describes the regrouped tensors it passes.
std::vector<InputInfo> segmentInputInfos(const Segment& segment, const RuntimeInfo& whole);

}  // namespace smelt
