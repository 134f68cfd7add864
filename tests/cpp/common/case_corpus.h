// Every acceptance case of shared/cases/smem_cases.md (sections A-D) as a
// kernel to plan, under its table name: the case fusions (with the schedule
// variants the table lists: TIDx-bound reductions, promoteReuse) and the
// hand-built B3 and D1 kernels. The planning benchmark's table, the
// lower-bound check, and the simulator's correctness and mutation tests all
// run this one list.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/planned_kernel.h"

namespace smelt::cases {

struct CaseKernel {
  std::string name;
  // Builds the case fusion in the active Fusion, or is empty for ...
  std::function<void()> build_fusion;
  // ... a hand-built kernel.
  std::function<std::unique_ptr<kir_testing::TestKernel>()> build_kernel;

  testing::PlannedKernel plan(SmemHazards hazards,
                              SmemAllocator allocator = SmemAllocator::Best,
                              int64_t min_alignment = 16) const {
    const int64_t limit = DeviceLimits::sm90().max_shared_memory_per_block;
    return build_fusion
               ? testing::lowerWith(build_fusion, hazards, allocator, limit, min_alignment)
               : testing::planHandBuilt(build_kernel(), hazards, allocator, limit, min_alignment);
  }
};

const std::vector<CaseKernel>& caseKernels();

inline const char* hazardsName(SmemHazards hazards) {
  return hazards == SmemHazards::Precise ? "precise" : "conservative";
}

// Test parameters print as their case name.
inline void PrintTo(const CaseKernel& kernel, std::ostream* os) { *os << kernel.name; }

// The planning figures of one case in one hazard mode (bytes; -1 where a
// size is symbolic).
struct CasePlanFigures {
  int64_t tensor_bytes = 0;  // default planner, the tensors' buffers (nvFuser's figure)
  int64_t total_bytes = 0;   // the same with block-op workspaces
  int64_t lower_bound = 0;   // max over program points of live bytes (workspaces included)
  int64_t stack_bytes = 0;   // allocator=stack, hazards=conservative: nvFuser's plan
  int64_t no_reuse_bytes = 0;
  int inserted_barriers = 0;  // by the default planner's promoteReuse
  // There are planned buffers, and each one's size is a multiple of its alignment.
  bool sizes_aligned = false;
};
CasePlanFigures planFigures(const CaseKernel& kernel, SmemHazards hazards);

}  // namespace smelt::cases
