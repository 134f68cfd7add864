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

// Who computes a matmul (scheduler/matmul/matmul_choice.h): the rules
// backed by measurements (Auto), or always a library (cuBLAS through ATen),
// or always smelt's generated kernel.
enum class MatmulPolicy { Auto, Library, Generated };
std::string toString(MatmulPolicy policy);

// Where the kernels of a launch run: the compute capability they are
// compiled for, and whether a GPU runs them (false: the CPU simulator). The
// choice of a matmul's implementation depends on both.
struct ExecutionTarget {
  int arch = 90;
  bool gpu = false;
  MatmulPolicy matmul = MatmulPolicy::Auto;
  // A simulated target of `arch` (what tests and compiling without a GPU see).
  ExecutionTarget(int arch = 90) : arch(arch) {}  // NOLINT: an arch alone is a target
  ExecutionTarget(int arch, bool gpu, MatmulPolicy matmul) : arch(arch), gpu(gpu), matmul(matmul) {}
};

// The inputs of one launch bound to a fusion: extents evaluate to numbers.
class RuntimeInfo {
 public:
  // Checks that `inputs` match the fusion's inputs (kinds, dtypes, ranks and
  // constant extents); throws smelt::Error naming the input otherwise.
  // `target`: where the kernels run; its arch is the compute capability they
  // are compiled for (the executor's; sm_90 where there is no GPU).
  RuntimeInfo(const Fusion& fusion, std::vector<InputInfo> inputs, ExecutionTarget target = {});

  const std::vector<InputInfo>& inputs() const { return inputs_; }
  const ExecutionTarget& target() const { return target_; }
  int targetArch() const { return target_.arch; }
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
  ExecutionTarget target_;
  std::map<std::string, int64_t> bindings_;
};

}  // namespace smelt
