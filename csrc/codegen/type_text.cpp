#include "codegen/type_text.h"

#include <cmath>
#include <sstream>

#include "fusion/error.h"

namespace smelt::codegen {

std::string cudaType(DataType dtype) {
  switch (dtype) {
    case DataType::Float: return "float";
    case DataType::Double: return "double";
    case DataType::Half: return "__half";
    case DataType::BFloat16: return "__nv_bfloat16";
    case DataType::Int: return "int64_t";
    case DataType::Int32: return "int";
    case DataType::Bool: return "bool";
    case DataType::Int16: return "short";
    case DataType::Int8: return "signed char";
    case DataType::UInt8: return "unsigned char";
  }
  SMELT_INTERNAL_CHECK(false, "unknown DataType");
}

// `text` (a value of type `from`) as a value of type `to`.
std::string convert(const std::string& text, DataType from, DataType to) {
  if (from == to) return text;
  std::string value = text;
  if (from == DataType::Half) {
    value = "__half2float(" + value + ")";
    from = DataType::Float;
  } else if (from == DataType::BFloat16) {
    value = "__bfloat162float(" + value + ")";
    from = DataType::Float;
  }
  if (from == to) return value;
  if (to == DataType::Half || to == DataType::BFloat16) {
    if (from != DataType::Float) value = "static_cast<float>(" + value + ")";
    return (to == DataType::Half ? "__float2half(" : "__float2bfloat16(") + value + ")";
  }
  return "static_cast<" + cudaType(to) + ">(" + value + ")";
}

// A constant as a literal of `dtype` (a compute type: never Half/BFloat16).
std::string literal(double value, DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return value != 0 ? "true" : "false";
    case DataType::Int:
    case DataType::Int32:
    case DataType::Int16:
    case DataType::Int8:
    case DataType::UInt8: {
      if (std::isinf(value)) {
        // A max's init (-inf) is the type's minimum, a min's (+inf) its maximum.
        if (value > 0) {
          switch (dtype) {
            case DataType::Int: return "9223372036854775807LL";
            case DataType::Int32: return "2147483647";
            case DataType::Int16: return "32767";
            case DataType::Int8: return "127";
            default: return "255";
          }
        }
        switch (dtype) {
          case DataType::Int: return "(-9223372036854775807LL - 1)";
          case DataType::Int32: return "(-2147483647 - 1)";
          case DataType::Int16: return "(-32767 - 1)";
          case DataType::Int8: return "(-127 - 1)";
          default: return "0";
        }
      }
      std::string text = std::to_string(static_cast<int64_t>(value));
      return dtype == DataType::Int && (value > 2147483647.0 || value < -2147483648.0)
                 ? text + "LL"
                 : text;
    }
    case DataType::Float:
    case DataType::Double: {
      const std::string type = cudaType(dtype);
      if (std::isnan(value)) return "smelt::quietNaN<" + type + ">()";
      if (std::isinf(value)) return std::string(value < 0 ? "-" : "") + "smelt::infinity<" + type + ">()";
      std::ostringstream os;
      os.precision(dtype == DataType::Float ? 9 : 17);
      os << value;
      std::string text = os.str();
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return dtype == DataType::Float ? text + "f" : text;
    }
    case DataType::Half:
    case DataType::BFloat16: break;
  }
  SMELT_INTERNAL_CHECK(false, "literal of ", dtype, ": half types are computed in float");
}

}  // namespace smelt::codegen
