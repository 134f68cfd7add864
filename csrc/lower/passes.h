// The lowering pipeline: every pass, in order, in one place. Each pass is a
// free function over the LoweringContext; after any of them the kernel IR can
// be printed with SMELT_DUMP=after:<pass-name> (or SMELT_DUMP=kernel_ir for
// the final IR).
#pragma once

#include <string>
#include <vector>

#include "fusion/dump.h"
#include "lower/lower_context.h"

namespace smelt {

struct LoweringPass {
  const char* name;
  void (*run)(LoweringContext&);
};

// The passes that lower `fusion`, in the order they run: the loop-domain
// pipeline, or for a fusion holding an MmaOp the tensor-core one.
const std::vector<LoweringPass>& loweringPasses(const Fusion& fusion);
// The passes of a fusion holding an MmaOp: tensor_core_matmul builds the
// whole kernel IR, the others refine it.
const std::vector<LoweringPass>& tensorCorePasses();

// Each pass (documented in its own file).
void validateSchedule(LoweringContext& ctx);
void buildLoopNest(LoweringContext& ctx);
void insertAllocations(LoweringContext& ctx);
void computeIndices(LoweringContext& ctx);
void insertPredicates(LoweringContext& ctx);
void eliminatePredicates(LoweringContext& ctx);
void insertCircularBuffers(LoweringContext& ctx);
void simplifyPredicates(LoweringContext& ctx);
void insertSyncs(LoweringContext& ctx);
void assignSharedAddresses(LoweringContext& ctx);
// The tensor-core pipeline's first pass, buildTensorCoreMatmul, is in
// lower/tensor_core_matmul.h.

}  // namespace smelt
