// What FusionExecutor::run checks of its inputs, derived once from the fusion
// definition so a run only compares numbers. Every failure is a smelt::Error
// naming the input by position and tensor name:
//   * the number of inputs; each tensor's dtype, rank and device (all tensor
//     inputs on one device); a scalar input as a 0-dim tensor;
//   * sizes: a constant extent must be met exactly; dimensions the fusion maps
//     onto each other (through its ops: an elementwise op's operands, a
//     reduction's input, ...) or that share one symbolic extent must have
//     equal sizes; a broadcast dimension has size 1 (or its expanded extent);
//     a size may be 0 (the executors then launch no kernel, see
//     aten_evaluator.h);
//   * strides: a dimension declared contiguous must have the stride that
//     contiguity implies (1 innermost, else the next dimension's stride times
//     its size; size-1 dimensions may have any stride; an empty tensor any);
//   * alignment (checkVectorAlignment, before a CUDA launch): a tensor the
//     kernel accesses with N-byte vectors needs an N-byte aligned data
//     pointer (the executor checks the rest of what vector accesses assume,
//     e.g. row strides, with the kernel's VectorConditions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "fusion/fusion.h"
#include "runtime/aten_dtype.h"

namespace smelt {

struct InputAxisSpec {
  std::optional<int64_t> extent;  // the size it must have, when fixed
  int64_t size_class = -1;        // axes of one class must have equal sizes
  bool broadcast = false;         // size 1, or `extent` when expanded
  bool contiguous = true;
};

struct InputSpec {
  std::string name;  // tensor name or scalar symbol
  bool is_tensor = false;
  DataType dtype = DataType::Float;
  std::vector<InputAxisSpec> axes;  // tensors only
};

// Per dimension of `t`: whether it has the stride contiguity implies (1
// innermost, else the stride times size of the nearest inner dimension of
// size > 1, as InputValidator reads it); size-1 dimensions count as
// contiguous. A fusion input declared so accepts `t`.
std::vector<bool> contiguityOf(const at::Tensor& t);

class InputValidator {
 public:
  InputValidator() = default;
  explicit InputValidator(const Fusion& fusion);

  const std::vector<InputSpec>& specs() const { return specs_; }
  std::string describe(size_t input) const;  // "input 1 (T1)"
  // Checks `inputs` (one per fusion input; scalars as 0-dim tensors) and
  // returns the device of the tensor inputs (nullopt when there are none).
  std::optional<c10::Device> validate(const std::vector<at::Tensor>& inputs) const;
  // Checks tensor input `input` for vector accesses of `vector_bytes` (0: none).
  void checkVectorAlignment(size_t input, const at::Tensor& t, int64_t vector_bytes) const;

 private:
  void checkSizes(size_t input, const at::Tensor& t, std::vector<int64_t>& class_sizes,
                  std::vector<std::pair<size_t, size_t>>& class_origins) const;
  void checkStrides(size_t input, const at::Tensor& t) const;

  std::vector<InputSpec> specs_;
  int64_t num_classes_ = 0;
};

// Appends what a launch's decisions read of one input apart from its
// address: a tensor's dtype, rank, sizes and strides, or a scalar's dtype and
// value (`scalar`: the input is a fusion scalar whose value may set extents).
// The keys of the executors' launch plans and of repeated cache runs.
void appendShapeKey(std::vector<int64_t>& key, const at::Tensor& t, bool scalar);

}  // namespace smelt
