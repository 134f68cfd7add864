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
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/heuristic.h"
#include "scheduler/runtime_info.h"

namespace smelt {

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
};

struct SegmentedFusion {
  std::vector<Segment> segments;  // in execution order
  // "segment 0 (reduction): T0 -> T2\nsegment 1 (pointwise): T0, T2 -> T5\n"
  std::string toString() const;
};

// Throws smelt::Error when some expression is taken by no scheduler on its own.
SegmentedFusion segmentFusion(const Fusion& fusion, const RuntimeInfo& runtime);

// The inputs of one segment for a launch of the complete fusion: its inputs
// that are inputs of the complete fusion as given, the others (intermediates
// the runtime allocates) contiguous and 16-byte aligned, of their sizes.
std::vector<InputInfo> segmentInputInfos(const Segment& segment, const RuntimeInfo& whole);

}  // namespace smelt
