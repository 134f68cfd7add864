// Which vectorized loops become vector loads and stores: an analysis of the
// kernel IR, shared by code generation (what to emit) and the runtime (what
// to check of the arguments before a launch).
//
// A loop parallelized Vectorize, of constant extent V, is emitted as one
// V-element access per side of each statement of its body when every
// statement is a copy (set) between two buffers of one dtype such that:
//   * on both sides the element index advances by exactly one element per
//     iteration, and the first element's index (loop index 0) is a multiple
//     of V. Indices are first normalized with identities that hold for every
//     launch: (x / e) * e + x % e == x (a row-major index over a split or
//     merged axis), and for a Global tensor declared contiguous in dimension
//     d, stride[d] == e * stride[d + 1] when its index pairs x / e with
//     x % e (dimensions merged by the schedule), and stride[last] == 1;
//     strides of its outer dimensions may be assumed multiples of V. Each
//     assumption about a Global tensor is recorded as a VectorCondition that
//     the runtime checks (and the data pointer's alignment to V elements);
//     Shared buffers need a planned address aligned to the vector, Local
//     arrays are declared with that alignment;
//   * its operand reads no padded region, and each term of its predicate
//     either does not involve the loop index or is `lhs < rhs` with lhs
//     non-decreasing in it (a bound of a split that may overrun). Then the
//     vector runs where the term holds for the last lane, and a scalar loop
//     with the per-lane predicate covers the vectors that straddle the bound
//     (only for a loop of one statement);
//   * V times the element size is 2, 4, 8, 16 or 32 bytes. 32 bytes (fp32
//     data in a loop whose fp16 data moves 16 bytes) are two 16-byte
//     accesses: the widest a thread can make, and what alignment needs.
// Other vectorized loops stay unrolled scalar loops.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "codegen/vector_condition.h"
#include "fusion/device_limits.h"
#include "fusion/int_expr.h"
#include "lower/kir.h"

namespace smelt {

struct VectorCopy {
  const kir::Compute* stmt = nullptr;
  IntExpr out_first;  // element index of the first element written
  IntExpr in_first;   // element index of the first element read
  // The statement's predicate for the whole vector: terms on the loop index
  // taken at its last value.
  kir::Predicate predicate;
};

struct VectorizedLoop {
  int64_t width = 0;  // elements per access (the loop's extent)
  int64_t bytes = 0;  // width times the element size
  // Accesses per side of each copy: bytes / kMaxAccessBytes, at least 1.
  int64_t pieces() const { return bytes > kMaxAccessBytes ? bytes / kMaxAccessBytes : 1; }
  std::vector<VectorCopy> copies;  // one per statement, in order
  // True when a predicate involves the loop index: where the vector's
  // predicate fails, the scalar loop runs lane by lane.
  bool scalar_tail = false;
  // What the vector accesses assume of the Global tensors' arguments.
  std::vector<VectorCondition> conditions;
};

// The vector form of `loop`; nullopt when it is not a Vectorize loop or one
// of the conditions above fails.
std::optional<VectorizedLoop> vectorizeLoop(const kir::ForLoop& loop);

// What a kernel's vector accesses (vectorized loops and cp.async copies)
// need: the widest access (bytes) of every buffer they touch (Local arrays
// need that alignment, Global tensors an aligned data pointer), and every
// VectorCondition (a CpAsync's are the ones it states), once.
struct VectorRequirements {
  std::unordered_map<const kir::Buffer*, int64_t> bytes;
  std::vector<VectorCondition> conditions;
};
VectorRequirements vectorRequirements(const kir::Kernel& kernel);

}  // namespace smelt
