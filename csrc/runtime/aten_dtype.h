// DataType <-> at::ScalarType, for the parts of the runtime that use ATen
// (the simulator's entry point, the executor) and their tests.
#pragma once

#include <c10/core/ScalarType.h>

#include "fusion/error.h"
#include "fusion/types.h"

namespace smelt {

inline at::ScalarType toAtenType(DataType dtype) {
  switch (dtype) {
    case DataType::Float: return at::kFloat;
    case DataType::Double: return at::kDouble;
    case DataType::Half: return at::kHalf;
    case DataType::BFloat16: return at::kBFloat16;
    case DataType::Int: return at::kLong;
    case DataType::Int32: return at::kInt;
    case DataType::Bool: return at::kBool;
    case DataType::Int16: return at::kShort;
    case DataType::Int8: return at::kChar;
    case DataType::UInt8: return at::kByte;
  }
  SMELT_INTERNAL_CHECK(false, "unknown DataType");
}

// The DataType of a torch dtype; smelt::Error for dtypes smelt lacks.
inline DataType fromAtenType(at::ScalarType type) {
  for (DataType d : {DataType::Float, DataType::Double, DataType::Half, DataType::BFloat16,
                     DataType::Int, DataType::Int32, DataType::Bool, DataType::Int16,
                     DataType::Int8, DataType::UInt8}) {
    if (toAtenType(d) == type) return d;
  }
  throw Error(errorMessage("torch dtype ", c10::toString(type), " has no smelt DataType"));
}

}  // namespace smelt
