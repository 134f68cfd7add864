#include "scheduler/heuristic.h"

#include "fusion/error.h"

namespace smelt {

std::string toString(SchedulerType type) {
  switch (type) {
    case SchedulerType::Pointwise: return "pointwise";
    case SchedulerType::Reduction: return "reduction";
    case SchedulerType::Persistent: return "persistent";
    case SchedulerType::Matmul: return "matmul";
    case SchedulerType::LibraryMatmul: return "library_matmul";
    case SchedulerType::Scatter: return "scatter";
    case SchedulerType::Scan: return "scan";
  }
  return "?";
}

void throwWrongParams(const HeuristicParams& params, SchedulerType expected) {
  throw Error(errorMessage("the ", toString(expected), " scheduler was given parameters of the ",
                           toString(params.type()), " scheduler: ", params.toString()));
}

}  // namespace smelt
