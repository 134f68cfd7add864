// What a scheduler's heuristics know about one launch: sizes, strides,
// dtypes and data alignment of the fusion inputs, as small value types (no
// torch; the runtime fills them in from its tensors).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fusion/fusion.h"

namespace smelt {

struct InputInfo {
  bool is_tensor = true;
  DataType dtype = DataType::Float;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
  // The largest power of two, at most 16, that divides the data address in bytes.
  int64_t alignment = 16;
  double scalar_value = 0;  // scalar inputs only

  static InputInfo tensor(DataType dtype, std::vector<int64_t> sizes,
                          std::vector<int64_t> strides, int64_t alignment = 16);
  static InputInfo contiguous(DataType dtype, std::vector<int64_t> sizes, int64_t alignment = 16);
  static InputInfo scalar(DataType dtype, double value);
};

// The power of two, at most 16, that divides `address` (16 for address 0).
int64_t alignmentOf(uint64_t address);

// The inputs of one launch bound to a fusion: extents evaluate to numbers.
class RuntimeInfo {
 public:
  // Checks that `inputs` match the fusion's inputs (kinds, dtypes, ranks and
  // constant extents); throws smelt::Error naming the input otherwise.
  // `target_arch`: the compute capability the kernels are compiled for (the
  // executor's; sm_90 where there is no GPU).
  RuntimeInfo(const Fusion& fusion, std::vector<InputInfo> inputs, int target_arch = 90);

  const std::vector<InputInfo>& inputs() const { return inputs_; }
  int targetArch() const { return target_arch_; }
  // The info of a fusion input tensor, nullptr for other tensors.
  const InputInfo* inputInfo(const TensorView* tv) const;
  int64_t evaluate(const IntExpr& e) const { return e.evaluate(bindings_); }
  // An axis' trip count (its expanded extent for expanded broadcasts).
  int64_t extent(const IterDomain* id) const { return evaluate(id->loopExtent()); }
  // "T0.size[1]" -> 7, and integer scalar inputs by symbol.
  const std::map<std::string, int64_t>& bindings() const { return bindings_; }

 private:
  const Fusion* fusion_;
  std::vector<InputInfo> inputs_;
  int target_arch_;
  std::map<std::string, int64_t> bindings_;
};

}  // namespace smelt
