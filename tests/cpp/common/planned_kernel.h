// A kernel with its shared-memory plan (kir::Kernel::smem_plan), either
// lowered from a fusion by GpuLower or hand-built (kir_builder.h) and planned
// by the same plan_shared_memory pass, with the figures the planning tests,
// benchmarks and mutation tests read off it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/kir_builder.h"
#include "fusion/device_limits.h"
#include "fusion/error.h"
#include "fusion/fusion.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/lower.h"
#include "lower/passes.h"

namespace smelt::testing {

struct PlannedKernel {
  // A lowered fusion: the fusion and its lowering (which owns the kernel) ...
  std::unique_ptr<Fusion> fusion;
  std::unique_ptr<GpuLower> lower;
  // ... or a hand-built kernel.
  std::unique_ptr<kir_testing::TestKernel> handbuilt;
  kir::Kernel* kernel = nullptr;  // mutable: mutation tests edit it

  const alloc_reuse::SharedMemoryPlan& plan() const { return *kernel->smem_plan; }
  // max(address + bytes) over the tensors' Shared buffers (nvFuser's figure).
  int64_t tensorBytes() const { return plan().tensor_bytes.constant().value_or(-1); }
  // The same with block-op workspaces.
  int64_t totalBytes() const { return plan().plan.total_bytes.constant().value_or(-1); }
  int64_t lowerBound() const { return plan().plan.lower_bound_bytes; }
  int64_t noReuseBytes() const { return plan().plan.no_reuse_bytes.constant().value_or(-1); }
  int insertedBarriers() const {
    int count = 0;
    kir::forEachStmt(kernel->body, [&](const kir::Stmt* s, int) {
      auto* sync = dynamic_cast<const kir::BlockSync*>(s);
      if (sync != nullptr && sync->inserted_for_reuse) ++count;
    });
    return count;
  }
  const kir::Buffer* buffer(const TensorView* tv) const {
    for (const auto& b : kernel->buffers) {
      if (b->tv == tv) return b.get();
    }
    throw Error("no buffer for " + tv->name());
  }
  const kir::Buffer* buffer(const std::string& name) const {
    for (const auto& b : kernel->buffers) {
      if (b->name == name) return b.get();
    }
    throw Error("no buffer named " + name);
  }
  template <typename Key>
  int64_t address(const Key& key) const {
    return buffer(key)->address.value_or(IntExpr(-1)).constant().value_or(-1);
  }
  const kir::Buffer* aliasOf(const TensorView* tv) const { return buffer(tv)->alias_of; }
};

inline LowerOptions planOptions(SmemHazards hazards, SmemAllocator allocator, int64_t limit,
                                int64_t min_alignment = 16) {
  LowerOptions options;
  options.min_shared_alignment = min_alignment;
  options.smem_hazards = hazards;
  options.smem_allocator = allocator;
  options.max_shared_memory_bytes = limit;
  return options;
}

// Lowers the fusion `build` makes (it runs with a FusionGuard on the new
// fusion and may keep pointers to its tensors for the caller's checks).
inline PlannedKernel lowerWith(const std::function<void()>& build, SmemHazards hazards,
                               SmemAllocator allocator = SmemAllocator::Best,
                               int64_t limit = DeviceLimits::sm90().max_shared_memory_per_block,
                               int64_t min_alignment = 16) {
  PlannedKernel result;
  result.fusion = std::make_unique<Fusion>();
  FusionGuard guard(result.fusion.get());
  build();
  result.lower = std::make_unique<GpuLower>(result.fusion.get(),
                                            planOptions(hazards, allocator, limit, min_alignment));
  result.kernel = const_cast<kir::Kernel*>(&result.lower->run());
  return result;
}

// Runs the plan_shared_memory pass (as GpuLower's last pass) on a hand-built
// kernel whose Shared buffers have no address yet.
inline PlannedKernel planHandBuilt(std::unique_ptr<kir_testing::TestKernel> built,
                                   SmemHazards hazards,
                                   SmemAllocator allocator = SmemAllocator::Best,
                                   int64_t limit = DeviceLimits::sm90().max_shared_memory_per_block,
                                   int64_t min_alignment = 16) {
  LoweringContext ctx;
  ctx.fusion = built->fusion.get();
  ctx.options = planOptions(hazards, allocator, limit, min_alignment);
  ctx.kernel = std::move(built->kernel);
  FusionGuard guard(ctx.fusion);
  assignSharedAddresses(ctx);
  built->kernel = std::move(ctx.kernel);
  PlannedKernel result;
  result.handbuilt = std::move(built);
  result.kernel = &result.handbuilt->kernel;
  return result;
}

}  // namespace smelt::testing
