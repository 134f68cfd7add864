// How a segment's extents are spelled: in the size symbols of the segment's
// own inputs, the kernel parameters the runtime binds (segmenter.h builds
// each segment's fusion with these). segmentInputInfos (declared in
// segmenter.h, which the runtime reads) is defined here too.
#pragma once

#include <vector>

#include "fusion/clone.h"
#include "fusion/fusion.h"

namespace smelt {

// Size symbols of tensors outside the segment become the symbols of a
// segment input whose extent they are; so does a whole extent over them
// (a reshape's merged extent, T0.size[1] * T0.size[0]), where it stands as
// an extent of its own.
ExtentRewrite segmentExtentRewrite(const std::vector<const Val*>& inputs);

// Fusion inputs whose sizes an extent of `exprs` still names after the
// rewrite to `inputs`' symbols, though none of `inputs` carries them: a
// reshape that splits a merged extent back into an input's sizes, in a
// segment that reads only the merged tensor. The segment takes such an
// input too, for its sizes (it reads no element of it). Likewise an integer
// scalar input that an extent names (a full() sized by a defined scalar).
std::vector<const Val*> sizeOnlyInputs(const Fusion& fusion, const std::vector<const Expr*>& exprs,
                                       const std::vector<const Val*>& inputs);

// Throws smelt::Error unless every size symbol left in `segment` names one
// of its inputs (a kernel parameter the runtime binds).
void checkSegmentSymbols(const Fusion& segment);

}  // namespace smelt
