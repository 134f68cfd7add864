// How the generated CUDA C++ spells a data type, a conversion between two
// types and a constant. Half and BFloat16 are storage types: values convert
// to float to be computed on (a literal is never of a 16-bit type).
#pragma once

#include <string>

#include "fusion/types.h"

namespace smelt::codegen {

std::string cudaType(DataType dtype);

// `text` (a value of type `from`) as a value of type `to`.
std::string convert(const std::string& text, DataType from, DataType to);

// A constant as a literal of `dtype` (a compute type: never Half/BFloat16).
// Infinities of integer types are the type's limits (a max's or min's init).
std::string literal(double value, DataType dtype);

}  // namespace smelt::codegen
