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

// The passes, in the order they run.
const std::vector<LoweringPass>& loweringPasses();

// Each pass (documented in its own file).
void validateSchedule(LoweringContext& ctx);
void buildLoopNest(LoweringContext& ctx);
void insertAllocations(LoweringContext& ctx);
void computeIndices(LoweringContext& ctx);
void insertPredicates(LoweringContext& ctx);
void insertCircularBuffers(LoweringContext& ctx);
void insertSyncs(LoweringContext& ctx);
void assignSharedAddresses(LoweringContext& ctx);

}  // namespace smelt
