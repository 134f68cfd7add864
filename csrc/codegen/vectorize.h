// Which vectorized loops become vector loads and stores: an analysis of the
// kernel IR, shared by code generation (what to emit) and the runtime (which
// alignment to check before a launch).
//
// A loop parallelized Vectorize, of constant extent V, is emitted as one
// V-element access per side of each statement of its body when every
// statement is a copy (set) between two buffers of one dtype such that:
//   * its predicate does not involve the loop index (it holds for the whole
//     vector or for none of it), and its operand reads no padded region;
//   * on both sides the element index advances by exactly one element per
//     iteration: the loop index's coefficient is 1, or the stride of the
//     innermost dimension of a Global tensor declared contiguous there (the
//     runtime's input validation makes it 1);
//   * on both sides the first element's index (loop index 0) is a multiple of
//     V, counting the strides of a Global tensor's outer dimensions as
//     multiples of V (the runtime checks them, with the data pointer, against
//     the access size: TensorParam::vector_bytes);
//   * V times the element size is 2, 4, 8 or 16 bytes.
// Other vectorized loops stay unrolled scalar loops.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "fusion/int_expr.h"
#include "lower/kir.h"

namespace smelt {

struct VectorCopy {
  const kir::Compute* stmt = nullptr;
  IntExpr out_first;  // element index of the first element written
  IntExpr in_first;   // element index of the first element read
};

struct VectorizedLoop {
  int64_t width = 0;  // elements per access (the loop's extent)
  int64_t bytes = 0;  // width times the element size
  std::vector<VectorCopy> copies;  // one per statement, in order
};

// The vector form of `loop`; nullopt when it is not a Vectorize loop or one
// of the conditions above fails.
std::optional<VectorizedLoop> vectorizeLoop(const kir::ForLoop& loop);

// The widest vector access (bytes) of every buffer accessed by a vectorized
// loop of `kernel` (Local arrays need that alignment, Global tensors a
// runtime check). Buffers without vector accesses are absent.
std::unordered_map<const kir::Buffer*, int64_t> vectorAccessBytes(const kir::Kernel& kernel);

}  // namespace smelt
