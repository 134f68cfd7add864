#include "fusion/types.h"

#include "fusion/error.h"

namespace smelt {

int64_t dataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::Float: return 4;
    case DataType::Double: return 8;
    case DataType::Half: return 2;
    case DataType::BFloat16: return 2;
    case DataType::Int: return 8;
    case DataType::Int32: return 4;
    case DataType::Bool: return 1;
    case DataType::Int16: return 2;
    case DataType::Int8: return 1;
    case DataType::UInt8: return 1;
  }
  SMELT_INTERNAL_CHECK(false, "unknown DataType");
  return 0;
}

bool isFloatingType(DataType dtype) {
  return dtype == DataType::Float || dtype == DataType::Double || dtype == DataType::Half ||
         dtype == DataType::BFloat16;
}

bool isReducedPrecision(DataType dtype) {
  return dtype == DataType::Half || dtype == DataType::BFloat16;
}

bool isIntegralType(DataType dtype) {
  return dtype == DataType::Int || dtype == DataType::Int32 || dtype == DataType::Int16 ||
         dtype == DataType::Int8 || dtype == DataType::UInt8;
}

namespace {
// Rank within a category for promotion: bool < integers < floating.
int category(DataType t) { return t == DataType::Bool ? 0 : (isIntegralType(t) ? 1 : 2); }
}  // namespace

DataType promoteTypes(DataType a, DataType b) {
  if (a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  if ((a == DataType::Half && b == DataType::BFloat16) ||
      (a == DataType::BFloat16 && b == DataType::Half)) {
    return DataType::Float;
  }
  // Neither holds the other's values: the next signed width (torch's rule).
  if ((a == DataType::UInt8 && b == DataType::Int8) || (a == DataType::Int8 && b == DataType::UInt8)) {
    return DataType::Int16;
  }
  return dataTypeSize(a) >= dataTypeSize(b) ? a : b;
}

DataType computeType(DataType dtype) {
  return dtype == DataType::Half || dtype == DataType::BFloat16 ? DataType::Float : dtype;
}

DataType blockReduceType(DataType dtype) {
  if (isFloatingType(dtype)) return computeType(dtype);
  return dtype == DataType::Int ? DataType::Int : DataType::Int32;
}

bool isBlockDim(ParallelType pt) {
  return pt == ParallelType::BIDx || pt == ParallelType::BIDy || pt == ParallelType::BIDz;
}
bool isThreadDim(ParallelType pt) {
  return pt == ParallelType::TIDx || pt == ParallelType::TIDy || pt == ParallelType::TIDz;
}
bool isParallelDim(ParallelType pt) { return isBlockDim(pt) || isThreadDim(pt); }

std::string toString(DataType dtype) {
  switch (dtype) {
    case DataType::Float: return "float";
    case DataType::Double: return "double";
    case DataType::Half: return "half";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Int: return "int64";
    case DataType::Int32: return "int32";
    case DataType::Bool: return "bool";
    case DataType::Int16: return "int16";
    case DataType::Int8: return "int8";
    case DataType::UInt8: return "uint8";
  }
  return "?";
}

std::string toString(MemoryType mtype) {
  switch (mtype) {
    case MemoryType::Global: return "Global";
    case MemoryType::Shared: return "Shared";
    case MemoryType::Local: return "Local";
  }
  return "?";
}

std::string toString(ParallelType ptype) {
  switch (ptype) {
    case ParallelType::Serial: return "Serial";
    case ParallelType::BIDx: return "BIDx";
    case ParallelType::BIDy: return "BIDy";
    case ParallelType::BIDz: return "BIDz";
    case ParallelType::TIDx: return "TIDx";
    case ParallelType::TIDy: return "TIDy";
    case ParallelType::TIDz: return "TIDz";
    case ParallelType::Vectorize: return "V";
    case ParallelType::Unroll: return "UR";
  }
  return "?";
}

std::string toString(IterType itype) {
  switch (itype) {
    case IterType::Iteration: return "i";
    case IterType::Reduction: return "r";
    case IterType::Broadcast: return "b";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, DataType v) { return os << toString(v); }
std::ostream& operator<<(std::ostream& os, MemoryType v) { return os << toString(v); }
std::ostream& operator<<(std::ostream& os, ParallelType v) { return os << toString(v); }
std::ostream& operator<<(std::ostream& os, IterType v) { return os << toString(v); }

}  // namespace smelt
