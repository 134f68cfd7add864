// Small enums shared by every stage: element types, memory spaces, parallel
// types and iteration types, with their printable names.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace smelt {

enum class DataType { Float, Double, Half, BFloat16, Int, Int32, Bool, Int16, Int8, UInt8 };
enum class MemoryType { Global, Shared, Local };
enum class ParallelType { Serial, BIDx, BIDy, BIDz, TIDx, TIDy, TIDz, Vectorize, Unroll };
enum class IterType { Iteration, Reduction, Broadcast };

int64_t dataTypeSize(DataType dtype);
bool isFloatingType(DataType dtype);
bool isIntegralType(DataType dtype);
// Half and BFloat16: stored in 16 bits, computed and accumulated in float.
bool isReducedPrecision(DataType dtype);
// The type of a binary op's result (float beats int beats bool; the wider wins;
// half with bfloat16 gives float), following PyTorch's promotion of tensors.
DataType promoteTypes(DataType a, DataType b);
// The type values of `dtype` are computed in: half and bfloat16 in float
// (as nvFuser does), every other type in itself.
DataType computeType(DataType dtype);
// The type a block reduction combines in (its shuffles and shared-memory
// workspace): floats in their compute type, integers and bool in at least 32
// bits (a float would round integer sums past 2^24).
DataType blockReduceType(DataType dtype);

bool isBlockDim(ParallelType pt);   // BIDx/y/z
bool isThreadDim(ParallelType pt);  // TIDx/y/z
bool isParallelDim(ParallelType pt);  // bound to a grid or block index

std::string toString(DataType dtype);
std::string toString(MemoryType mtype);
std::string toString(ParallelType ptype);
std::string toString(IterType itype);
std::ostream& operator<<(std::ostream& os, DataType dtype);
std::ostream& operator<<(std::ostream& os, MemoryType mtype);
std::ostream& operator<<(std::ostream& os, ParallelType ptype);
std::ostream& operator<<(std::ostream& os, IterType itype);

}  // namespace smelt
