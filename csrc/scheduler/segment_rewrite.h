// The rewrites the segmenter applies before it segments (SchedulerEntry::
// rewrite: the first scheduler's that rewrites the fusion), and the
// segments of a rewritten fusion made to stand for the complete one: their
// inputs and outputs that are the rewritten fusion's are the complete
// fusion's values (same positions); the values they pass between them stay
// the rewritten fusion's, which the segmentation keeps alive.
#pragma once

#include <memory>

#include "fusion/fusion.h"
#include "scheduler/runtime_info.h"
#include "scheduler/segmenter.h"

namespace smelt {

// nullptr when no scheduler rewrites `fusion` for these inputs.
std::shared_ptr<Fusion> rewrittenForSegmentation(const Fusion& fusion, const RuntimeInfo& runtime);

// `segmented`, a segmentation of `rewritten`, in terms of `complete`. Its
// groups are dropped: they index the rewritten fusion's expressions, so such
// a segmentation is not replayed (segmentFusionAs) but made afresh.
SegmentedFusion standingForComplete(const Fusion& complete, std::shared_ptr<Fusion> rewritten,
                                    SegmentedFusion segmented);

}  // namespace smelt
