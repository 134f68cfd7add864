#include "lower/passes.h"

#include <iostream>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "lower/lower.h"
#include "lower/tensor_core_matmul.h"
#include "lower/transform_index.h"

namespace smelt {

const std::vector<LoweringPass>& tensorCorePasses() {
  static const std::vector<LoweringPass> passes = {
      {"tensor_core_matmul", buildTensorCoreMatmul},
      {"simplify_predicates", simplifyPredicates},
      {"smem_addresses", assignSharedAddresses},
  };
  return passes;
}

const std::vector<LoweringPass>& loweringPasses(const Fusion& fusion) {
  // A fusion holding an MmaOp (the matmul scheduler chose tensor cores) has
  // no loop-domain schedule to lower: which lane holds which element of a
  // warp's mma.sync fragments does not map to per-thread loop nests, so one
  // pass builds its whole kernel IR (cp.async pipeline, ldmatrix, mma,
  // epilogue, barriers) from the MmaOp's tiles, and the shared-memory
  // planner then runs on it as on any kernel.
  if (findMmaOp(fusion) != nullptr) return tensorCorePasses();
  static const std::vector<LoweringPass> passes = {
      {"validate_schedule", validateSchedule},
      {"loop_nest", buildLoopNest},
      {"allocation", insertAllocations},
      {"indexing", computeIndices},
      {"predicates", insertPredicates},
      {"predicate_elimination", eliminatePredicates},
      {"circular_buffer", insertCircularBuffers},
      {"simplify_predicates", simplifyPredicates},
      {"syncs", insertSyncs},
      {"smem_addresses", assignSharedAddresses},
  };
  return passes;
}

std::pair<const TensorView*, int64_t> LoweringContext::loopOwner(const TensorView* tv,
                                                                 int64_t axis) const {
  SMELT_INTERNAL_CHECK(loop_owners.has_value(), "loop owners are asked for before validate_schedule");
  return loop_owners->owner(tv, axis);
}

kir::ForLoop* LoweringContext::loopOf(const TensorView* tv, int64_t axis,
                                      const kir::Stmt* stmt) const {
  if (auto own = statement_loops.find(stmt); stmt != nullptr && own != statement_loops.end()) {
    if (auto it = own->second.find(axis); it != own->second.end()) return it->second;
  }
  auto it = loops.find(loopOwner(tv, axis));
  SMELT_INTERNAL_CHECK(it != loops.end(), "no loop for axis ", axis, " of ", tv->name());
  return it->second;
}

IntExpr LoweringContext::loopIndex(const TensorView* tv, int64_t axis,
                                   const kir::Stmt* stmt) const {
  return loopIndexValue(*loopOf(tv, axis, stmt));
}

kir::Buffer* LoweringContext::bufferOf(const TensorView* tv) const {
  auto it = buffers.find(tv);
  SMELT_INTERNAL_CHECK(it != buffers.end(), "no buffer for ", tv->name());
  return it->second;
}

GpuLower::GpuLower(Fusion* fusion, LowerOptions options) {
  SMELT_CHECK(fusion != nullptr, "GpuLower: fusion is null");
  ctx_.fusion = fusion;
  ctx_.options = options;
}

const kir::Kernel& GpuLower::run() {
  SMELT_CHECK(!ran_, "GpuLower::run: this fusion was already lowered");
  ran_ = true;
  FusionGuard guard(ctx_.fusion);
  if (dumpEnabled("fusion")) std::cout << ctx_.fusion->toString();
  for (const LoweringPass& pass : loweringPasses(*ctx_.fusion)) {
    pass.run(ctx_);
    if (dumpEnabled(std::string("after:") + pass.name)) {
      std::cout << "=== kernel IR after " << pass.name << " ===\n" << ctx_.kernel.toString();
    }
  }
  if (dumpEnabled("kernel_ir")) {
    std::cout << "=== kernel IR ===\n" << ctx_.kernel.toString() << ctx_.kernel.summary();
  }
  return ctx_.kernel;
}

}  // namespace smelt
