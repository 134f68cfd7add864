// The CUDA C++ expression of an element-wise op, given its operands' texts.
// Half/BFloat16 values are computed in float (type_text.h), so `ct`, the
// compute type, is never a 16-bit type; special functions call
// special_math.h's device versions, which the kernel's prelude holds.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "fusion/ir.h"

namespace smelt::codegen {

// Operand `index` of the op as a value of `type` (an op may read an operand
// in a type other than its compute type: signbit, a random op's seeds).
using OperandText = std::function<std::string(size_t index, DataType type)>;

std::string unaryText(const UnaryOp* op, DataType ct, const OperandText& operand);

// The type a binary op computes in: comparisons in their operands' promoted
// type, logical ops in bool, the rest in their result's type (`result_ct`).
DataType binaryComputeType(const BinaryOp* op, DataType result_ct);

std::string binaryText(const BinaryOp* op, DataType ct, const OperandText& operand);

}  // namespace smelt::codegen
