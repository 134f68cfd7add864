// GpuLower: a scheduled Fusion to a kernel IR (kir::Kernel) by running the
// passes listed in passes.cpp.
#pragma once

#include <memory>

#include "fusion/fusion.h"
#include "lower/kir.h"
#include "lower/lower_context.h"

namespace smelt {

class GpuLower {
 public:
  explicit GpuLower(Fusion* fusion, LowerOptions options = {});
  // Runs every pass; throws smelt::Error naming the tensor when the schedule
  // cannot be lowered. The kernel stays owned by this object.
  const kir::Kernel& run();
  const kir::Kernel& kernel() const { return ctx_.kernel; }

 private:
  LoweringContext ctx_;
  bool ran_ = false;
};

}  // namespace smelt
