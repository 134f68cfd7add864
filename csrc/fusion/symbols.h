// The names of the symbols that extents, strides and indices use, from the
// fusion down to the runtime. Kernel IR and CUDA spell them alike (int_expr.h:
// printing an index is emitting it), and the runtime binds them by name, so
// this header is the only place that builds or reads them:
//   "<tensor>.size[d]", "<tensor>.stride[d]"  a tensor argument's size and
//       stride in elements (the smelt::Tensor<T, N> fields in the prelude);
//       a fusion tensor's symbols use "T<number>", whatever setName gave it;
//   "threadIdx.x", "blockIdx.y", "blockDim.z", "gridDim.x"  the CUDA builtins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fusion/types.h"

namespace smelt {

class TensorView;

std::string sizeSymbol(const std::string& tensor, int64_t dim);
std::string strideSymbol(const std::string& tensor, int64_t dim);
// "T<number>.size[d]": the names a fusion tensor's symbolic extents carry.
std::string sizeSymbol(const TensorView* tv, int64_t dim);
std::string strideSymbol(const TensorView* tv, int64_t dim);

struct SizeSymbol {
  int64_t tensor_number;
  int64_t dim;
};
// The fusion tensor and dimension of a "T<number>.size[d]", nullopt for any
// other symbol (a stride, a builtin, a scalar, a renamed buffer's size).
std::optional<SizeSymbol> parseSizeSymbol(const std::string& symbol);

// axis: 0, 1, 2 for x, y, z.
std::string threadIdxSymbol(int axis);
std::string blockIdxSymbol(int axis);
std::string blockDimSymbol(int axis);
std::string gridDimSymbol(int axis);
bool isBuiltinSymbol(const std::string& symbol);

// The builtin a thread or block parallel type binds a loop to ("blockIdx.y"),
// empty for one that binds none.
std::string parallelIndexSymbol(ParallelType pt);

}  // namespace smelt
