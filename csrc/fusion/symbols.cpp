#include "fusion/symbols.h"

#include <cctype>

#include "fusion/error.h"
#include "fusion/ir.h"

namespace smelt {

namespace {

constexpr const char* kSize = ".size[";
constexpr const char* kStride = ".stride[";

std::string dimSymbol(const std::string& tensor, const char* field, int64_t dim) {
  return tensor + field + std::to_string(dim) + "]";
}

std::string fusionTensorName(const TensorView* tv) { return "T" + std::to_string(tv->number()); }

bool allDigits(const std::string& text, size_t begin, size_t end) {
  if (begin >= end) return false;
  for (size_t i = begin; i < end; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

std::string builtinSymbol(const char* builtin, int axis) {
  SMELT_INTERNAL_CHECK(axis >= 0 && axis < 3, "no CUDA builtin axis ", axis);
  return std::string(builtin) + "." + "xyz"[axis];
}

}  // namespace

std::string sizeSymbol(const std::string& tensor, int64_t dim) { return dimSymbol(tensor, kSize, dim); }
std::string strideSymbol(const std::string& tensor, int64_t dim) { return dimSymbol(tensor, kStride, dim); }
std::string sizeSymbol(const TensorView* tv, int64_t dim) { return sizeSymbol(fusionTensorName(tv), dim); }
std::string strideSymbol(const TensorView* tv, int64_t dim) {
  return strideSymbol(fusionTensorName(tv), dim);
}

std::optional<SizeSymbol> parseSizeSymbol(const std::string& symbol) {
  const size_t field = symbol.find(kSize);
  if (field == std::string::npos || symbol.empty() || symbol[0] != 'T' || symbol.back() != ']') {
    return std::nullopt;
  }
  const size_t dim_begin = field + std::char_traits<char>::length(kSize);
  const size_t dim_end = symbol.size() - 1;
  if (!allDigits(symbol, 1, field) || !allDigits(symbol, dim_begin, dim_end)) return std::nullopt;
  return SizeSymbol{std::stoll(symbol.substr(1, field - 1)),
                    std::stoll(symbol.substr(dim_begin, dim_end - dim_begin))};
}

std::string threadIdxSymbol(int axis) { return builtinSymbol("threadIdx", axis); }
std::string blockIdxSymbol(int axis) { return builtinSymbol("blockIdx", axis); }
std::string blockDimSymbol(int axis) { return builtinSymbol("blockDim", axis); }
std::string gridDimSymbol(int axis) { return builtinSymbol("gridDim", axis); }

bool isBuiltinSymbol(const std::string& symbol) {
  for (const char* prefix : {"threadIdx.", "blockIdx.", "blockDim.", "gridDim."}) {
    if (symbol.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string parallelIndexSymbol(ParallelType pt) {
  switch (pt) {
    case ParallelType::BIDx: return blockIdxSymbol(0);
    case ParallelType::BIDy: return blockIdxSymbol(1);
    case ParallelType::BIDz: return blockIdxSymbol(2);
    case ParallelType::TIDx: return threadIdxSymbol(0);
    case ParallelType::TIDy: return threadIdxSymbol(1);
    case ParallelType::TIDz: return threadIdxSymbol(2);
    default: return "";
  }
}

}  // namespace smelt
