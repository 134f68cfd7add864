// Lowers a fusion built by a callback and exposes its shared-memory plan
// (kir::Kernel::smem_plan) to the kernel-level planning tests.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "fusion/error.h"
#include "fusion/fusion.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/lower.h"

namespace smelt::alloc_reuse::testing {

struct LoweredKernel {
  std::unique_ptr<Fusion> fusion;
  std::unique_ptr<GpuLower> lower;
  const kir::Kernel* kernel = nullptr;

  const SharedMemoryPlan& plan() const { return *kernel->smem_plan; }
  // max(address + bytes) over the tensors' Shared buffers (nvFuser's figure).
  int64_t tensorBytes() const { return plan().tensor_bytes.constant().value_or(-1); }
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
  int64_t address(const TensorView* tv) const {
    return buffer(tv)->address.value_or(IntExpr(-1)).constant().value_or(-1);
  }
  const kir::Buffer* aliasOf(const TensorView* tv) const { return buffer(tv)->alias_of; }
};

// `build` runs inside the new fusion (a FusionGuard is active); it may keep
// pointers to the tensors it makes for the caller's checks.
inline LoweredKernel lowerWith(const std::function<void()>& build, SmemHazards hazards,
                               SmemAllocator allocator = SmemAllocator::Best,
                               int64_t limit = 232448) {
  LoweredKernel result;
  result.fusion = std::make_unique<Fusion>();
  FusionGuard guard(result.fusion.get());
  build();
  LowerOptions options;
  options.smem_hazards = hazards;
  options.smem_allocator = allocator;
  options.max_shared_memory_bytes = limit;
  result.lower = std::make_unique<GpuLower>(result.fusion.get(), options);
  result.kernel = &result.lower->run();
  return result;
}

}  // namespace smelt::alloc_reuse::testing
