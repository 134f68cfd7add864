#include "scheduler/segment_rewrite.h"

#include <unordered_map>

#include "scheduler/registry.h"

namespace smelt {

std::shared_ptr<Fusion> rewrittenForSegmentation(const Fusion& fusion, const RuntimeInfo& runtime) {
  for (const SchedulerEntry& entry : schedulerEntries()) {
    if (!entry.rewrite) continue;
    if (std::unique_ptr<Fusion> rewritten = entry.rewrite(fusion, runtime)) return rewritten;
  }
  return nullptr;
}

SegmentedFusion standingForComplete(const Fusion& complete, std::shared_ptr<Fusion> rewritten,
                                    SegmentedFusion segmented) {
  std::unordered_map<const Val*, const Val*> complete_of;
  for (size_t i = 0; i < complete.inputs().size(); ++i) {
    complete_of[rewritten->inputs().at(i)] = complete.inputs()[i];
  }
  for (size_t i = 0; i < complete.outputs().size(); ++i) {
    complete_of[rewritten->outputs().at(i)] = complete.outputs()[i];
  }
  auto stand = [&](const Val*& v) {
    auto it = complete_of.find(v);
    if (it != complete_of.end()) v = it->second;
  };
  for (Segment& segment : segmented.segments) {
    for (const Val*& v : segment.inputs) stand(v);
    for (const Val*& v : segment.outputs) stand(v);
    stand(segment.grid_split.partials);
    stand(segment.grid_split.final_input);
  }
  segmented.groups.clear();
  segmented.rewritten = std::move(rewritten);
  return segmented;
}

}  // namespace smelt
