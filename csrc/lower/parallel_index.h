// The kernel IR's symbol for the index a thread or block parallel type binds
// a loop to (kir.h: "threadIdx.x", "blockIdx.y"), the CUDA builtin codegen
// emits for it.
#pragma once

#include <string>

#include "fusion/types.h"

namespace smelt {

// Empty for a parallel type that binds no thread or block index.
inline std::string parallelIndexSymbol(ParallelType pt) {
  switch (pt) {
    case ParallelType::BIDx: return "blockIdx.x";
    case ParallelType::BIDy: return "blockIdx.y";
    case ParallelType::BIDz: return "blockIdx.z";
    case ParallelType::TIDx: return "threadIdx.x";
    case ParallelType::TIDy: return "threadIdx.y";
    case ParallelType::TIDz: return "threadIdx.z";
    default: return "";
  }
}

}  // namespace smelt
