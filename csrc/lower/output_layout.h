// How the runtime lays out a kernel's Global output: an expanded broadcast
// dimension (expand()) is indexed with stride 0 by the kernel, so the output
// holds one slice along it and is returned as a stride-0 view of the full
// shape, as torch.expand returns. The GPU executor and the simulator both
// allocate outputs this way.
#pragma once

#include <vector>

#include "lower/kir.h"

namespace smelt {

// Per dimension of `buffer`: true where it is an expanded broadcast.
inline std::vector<bool> expandedDims(const kir::Buffer& buffer) {
  std::vector<bool> expanded(buffer.shape.size(), false);
  if (buffer.tv == nullptr) return expanded;
  const std::vector<IterDomain*> dims = buffer.tv->logicalNoReductions();
  for (size_t d = 0; d < dims.size() && d < expanded.size(); ++d) {
    expanded[d] = dims[d]->hasExpandedExtent();
  }
  return expanded;
}

// The extents to allocate: 1 along expanded dimensions.
inline std::vector<int64_t> allocatedExtents(const std::vector<int64_t>& shape,
                                             const std::vector<bool>& expanded) {
  std::vector<int64_t> allocated = shape;
  for (size_t d = 0; d < allocated.size() && d < expanded.size(); ++d) {
    if (expanded[d]) allocated[d] = 1;
  }
  return allocated;
}

}  // namespace smelt
