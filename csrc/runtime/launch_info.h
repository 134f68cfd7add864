// What launching a compiled kernel needs besides its cubin, in terms of the
// kernel's parameters only: no pointer into a Fusion or its kernel IR, so a
// cached kernel can be launched for any fusion that has the same cache key
// (and outlive the fusion it was compiled from).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/vector_condition.h"
#include "fusion/int_expr.h"
#include "fusion/types.h"

namespace smelt {

// A smelt::Tensor<T, N> parameter. Its index symbols are "<name>.size[d]"
// and "<name>.stride[d]" (see cuda_codegen.h).
struct TensorParam {
  std::string name;  // "T3"
  DataType dtype = DataType::Float;
  // Extents over the parameter's dimensions; for outputs, the shape the
  // runtime allocates (symbolic in the inputs' sizes).
  std::vector<IntExpr> shape;
  // The widest vectorized access to this tensor, in bytes (0: none): its
  // data pointer must be aligned to it (checked before each launch).
  int64_t vector_bytes = 0;
  // Per dimension: an expanded broadcast. The kernel indexes it as stride 0,
  // so an output holds one slice that the runtime expands to the full shape
  // as a stride-0 view (as torch.expand returns).
  std::vector<bool> expanded;
};

// A scalar parameter, passed by value as its CUDA type.
struct ScalarParam {
  std::string symbol;  // "s0"
  DataType dtype = DataType::Float;
};

// A TMA tensor map parameter (a CUtensorMap, after the scalars): the runtime
// encodes it at each launch for the tensor parameter `tensor` (an index into
// inputs, then outputs), a 2-D row-major tensor read in boxes.
struct TensorMapParam {
  int64_t tensor = 0;
  int64_t box_rows = 0;
  int64_t box_cols = 0;
  bool swizzle128 = false;
};

struct KernelLaunchInfo {
  std::string cuda_source;
  // Kernel parameters in order: inputs, outputs, scalars, then tensor maps.
  std::vector<TensorParam> inputs;
  std::vector<TensorParam> outputs;
  std::vector<ScalarParam> scalars;
  std::vector<TensorMapParam> tensor_maps;
  // Compiled for the architecture-specific target (sm_90a: wgmma).
  bool arch_specific = false;
  IntExpr grid[3] = {1, 1, 1};
  IntExpr block[3] = {1, 1, 1};
  // The planned shared memory per block (block-reduction workspaces included).
  IntExpr shared_memory_bytes = 0;
  // True when the source declares the shared array statically (a constant
  // plan of at most 48 KiB): the launch then passes no dynamic shared memory,
  // and ptxas's report is the planned total.
  bool static_shared_memory = false;
  // What the vector accesses assume of the tensors' sizes and strides
  // (checked before each launch, with the strides the kernel is given).
  std::vector<VectorCondition> vector_conditions;
  // The shared-memory planner's text report.
  std::string smem_report;
};

// The launch description as bytes (byte_record.h) and back, for the disk
// cache: a compiled kernel's launch needs no lowering in a later process.
// parseLaunchInfo throws smelt::Error on bytes it did not write.
std::string serializeLaunchInfo(const KernelLaunchInfo& info);
KernelLaunchInfo parseLaunchInfo(const std::string& bytes);

}  // namespace smelt
