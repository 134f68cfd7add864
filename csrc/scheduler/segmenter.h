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
// groups acyclic; among equal savings, a matmul's group first (its epilogue
// grows from the matmul, so a trailing view is left alone, and the runtime
// runs a segment that only moves data as views: fusion_executor_cache.h).
//
// Every segment chosen is then checked (SegmentCheck: the runtime schedules
// and lowers a copy). A segment the check refuses, such as one whose
// schedule leaves a register buffer of symbolic size, is taken out of the
// candidates and the segmentation is redone, so it becomes smaller segments
// rather than a fusion that fails at run time; `refused` reports it.
//
// Before all this, a scheduler may rewrite the fusion into an equivalent one
// of more, smaller steps (SchedulerEntry::rewrite: the scan scheduler's
// chunked scans of few long rows, chunked_scan.h), which is segmented
// instead; the segments stand for the complete fusion's inputs and outputs.
//
// A segment (the whole fusion included) whose scheduler splits it across
// blocks (SchedulerEntry::grid_split_chunks: the reduction scheduler's
// heuristics, or an override of them, set grid_split, reduction.h)
// becomes two segments instead: the partial segment (the reduction and the
// expressions it reads) runs on its inputs regrouped (inner: [.., R, N] to
// [.., R * P, N / P]; outer: [N, C, ..] to [N / P, P * C, ..]), so it writes
// partial results; the final segment (the reduction again and the rest of
// the segment) reads them regrouped ([.., R, P]; [P, C, ..]) as the
// reduction's input. The runtime regroups (runtime/fusion_executor_cache.h:
// segmentInputTensors), choosing P = gridSplitChunks(N, max_chunks) per
// launch.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

// A segment's part in a grid-split reduction (see above): N is the extent of
// `reduced_axis` (the innermost axis of the reduction's input in the
// complete fusion when `inner`, else the outermost), split into
// gridSplitChunks(N, max_chunks) chunks; the
// partial segment's output `partials` is read by the final segment as
// `final_input`. Both segments of a split carry the same description.
enum class GridSplitRole { None, Partials, Final };
struct GridSplit {
  GridSplitRole role = GridSplitRole::None;
  bool inner = true;
  const IterDomain* reduced_axis = nullptr;
  int64_t max_chunks = 1;
  const Val* partials = nullptr;
  const Val* final_input = nullptr;
};

struct Segment {
  // Unscheduled and closed; its inputs and outputs are Global. Tensors keep
  // the numbers they have in the complete fusion; extents are expressed in
  // the size symbols of the segment's own inputs (a fusion input whose
  // sizes an extent names, e.g. an expand to its size, is an input even
  // where the segment reads none of its elements). An input another
  // segment writes with an expanded dimension has that dimension's
  // expanded extent as size and stride 0.
  std::unique_ptr<Fusion> fusion;
  SchedulerType scheduler = SchedulerType::Pointwise;
  // Values of the complete fusion, in the order of fusion->inputs() and
  // fusion->outputs().
  std::vector<const Val*> inputs;
  std::vector<const Val*> outputs;
  GridSplit grid_split;
};

struct SegmentedFusion {
  std::vector<Segment> segments;  // in execution order
  // Segments a scheduler took whose schedule the check (below) refused, and
  // why ("T3, T5 (persistent): tensor T4 is in Local memory ..."); the
  // segmentation was redone without them. Each is a scheduler defect.
  std::vector<std::string> refused;
  // The expressions (indices into the complete fusion's exprs()) of each
  // group the segments were made from, in execution order; a grid split
  // makes two segments of one group. segmentFusionAs makes the segments
  // again from them (the runtime keeps them across processes). Empty for a
  // rewritten fusion (below), whose segmentation is made afresh.
  std::vector<std::vector<int>> groups;
  // The fusion segmented in place of the complete one when a scheduler
  // rewrote it (SchedulerEntry::rewrite, segment_rewrite.h): it owns the
  // values the segments pass between them. Null when none did.
  std::shared_ptr<const Fusion> rewritten;
  // The search's work: candidate groups made into a segment fusion and
  // offered to the schedulers (a candidate offered again is remembered, not
  // checked again). It grows linearly with repeated blocks of a fusion.
  int64_t candidates_checked = 0;
  // "segment 0 (reduction): T0 -> T2\nsegment 1 (pointwise): T0, T2 -> T5\n"
  std::string toString() const;
};

// Why a segment, scheduled for `runtime` (its inputs), cannot become a
// kernel; "" when it can. The runtime passes one that schedules and lowers
// a copy: a schedule the lowering refuses then makes smaller segments
// instead of a fusion that fails at run time.
using SegmentCheck = std::function<std::string(const Segment&, const RuntimeInfo& runtime)>;

// Throws smelt::Error when some expression is taken by no scheduler on its
// own, or when the parameters ask for a grid split of a fusion that cannot
// be split (gridSplitRejectReason).
SegmentedFusion segmentFusion(const Fusion& fusion, const RuntimeInfo& runtime,
                              const ParamsOverride& override_params = {},
                              const SegmentCheck& check = {});

// The segments of `groups` (SegmentedFusion::groups of an earlier
// segmentFusion of an identical fusion for the same inputs), made without the
// search or the checks: a scheduler must still take each group, and grid
// splits are decided again from the heuristics. nullopt when the groups do
// not fit `fusion` (not a partition of its expressions in an order that runs
// producers first, or a group no scheduler takes): then segment it afresh.
std::optional<SegmentedFusion> segmentFusionAs(const Fusion& fusion, const RuntimeInfo& runtime,
                                               const std::vector<std::vector<int>>& groups,
                                               const ParamsOverride& override_params = {});

// The chunks a row of `extent` elements is split into: the largest divisor
// of `extent` that is at most `max_chunks`.
int64_t gridSplitChunks(int64_t extent, int64_t max_chunks);
// The chunks P of a grid-split segment for a launch of the complete fusion
// with `whole`; 1 for other segments.
int64_t gridSplitChunksOf(const Segment& segment, const RuntimeInfo& whole);

// The inputs of one segment for a launch of the complete fusion: its inputs
// that are inputs of the complete fusion as given, the others (intermediates
// the runtime allocates) contiguous and 16-byte aligned, of their sizes.
// Grid-split segments get the shapes before regrouping (what selection
// sees); the runtime describes the regrouped tensors it passes.
std::vector<InputInfo> segmentInputInfos(const Segment& segment, const RuntimeInfo& whole);

}  // namespace smelt
