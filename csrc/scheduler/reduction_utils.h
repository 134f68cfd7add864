// What the reduction and persistent schedulers share: the analysis of a
// fusion around its reductions, and the binding of iteration dimensions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/utils.h"

namespace smelt::scheduler_utils {

// A fusion seen from its first reduction's output (the reference).
struct ReductionLayout {
  TensorView* reference = nullptr;
  std::vector<TensorView*> reductions;  // every reduction output, in order
  std::shared_ptr<DimensionMap> map;
  std::vector<int64_t> reduced_dims;    // the reference's reduced dimensions
  // Mergeable runs of the reference's iterating dimensions, outermost first.
  std::vector<std::vector<int64_t>> iteration_runs;
  std::vector<std::vector<int64_t>> reduction_runs;
  // The innermost dimension of the reference that is not a broadcast is
  // reduced (a row reduction); otherwise the reduction is across rows.
  bool inner = true;
  // A tensor computed from a reduction still has a reduced dimension (the
  // reduced value is broadcast back: a normalization).
  bool broadcasts_back = false;
  // A fusion output that keeps a reduced dimension as an iteration axis.
  const TensorView* full_output = nullptr;
};

// Why `fusion` is not a fusion of reductions over the same dimensions (no
// reduction, reductions over different dimensions, an inconsistent dimension
// map, an input read through a reshape); empty when it is, and then `layout`
// is filled in.
std::string analyzeReductions(const Fusion& fusion, ReductionLayout* layout);

// cacheInputsAndOutputs for the schedulers of reductions: reductions compute
// into registers and a reduced output is a copy of them. Then analyzes the
// cached fusion into `layout` (its reference is now the register tensor).
// Returns the tensors to vectorize.
std::vector<TensorView*> cacheForReductions(Fusion& fusion,
                                            const std::vector<int64_t>& vectorized_inputs,
                                            const std::vector<int64_t>& vectorized_outputs,
                                            const std::string& scheduler, ReductionLayout* layout);

// Binds the reference's iteration runs, which start at loop `positions`
// (innermost last, every position left of any split made later): the
// innermost run to BIDx, split first by `threads` bound to `thread_type` when
// threads > 1; the run before it to BIDy, the one before that to BIDz;
// earlier runs stay serial loops.
void bindIterationRuns(TensorView* reference, const std::vector<int64_t>& positions,
                       int64_t threads, ParallelType thread_type);

// Why binding `layout`'s iteration runs would leave a buffer across a serial
// loop (serialLoopBufferReason), or empty.
std::string serialIterationReason(const Fusion& fusion, const ReductionLayout& layout);

}  // namespace smelt::scheduler_utils
