// A kir::Kernel compiled into a flat instruction list for the simulator.
//
// Why flat: a thread must stop at a barrier and resume there after the other
// threads of its block have arrived. With loops turned into LoopBegin/LoopEnd
// jumps, a thread's whole resumable state is its program counter and its slot
// array (loop indices live in slots), so suspending is just returning.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/ir.h"
#include "fusion/types.h"
#include "lower/kir.h"
#include "fusion/index_code.h"

namespace smelt::sim {

enum class Op : uint8_t {
  LoopBegin,  // slot = 0, extent_slot = eval(extent); empty loop jumps to target
  LoopEnd,    // ++slot; loops back to target while slot < extent_slot
  Bind,       // slot = value of slot `extent_slot` (a loop bound to a thread/block index)
  If,         // falls through when pred holds, else jumps to target
  Jump,
  Compute,
  ReduceInit,  // also a scan's running value (kir::ScanInit)
  ReduceStep,
  Sync,
  BlockReduce,
  BlockBroadcast,
  // out = running, in = the items (Local), in2 = the carry, count = items,
  // extent2 = first item's position, extent = the scan extent (block_scan_sim.h)
  BlockScan,
  CpAsync,        // out = dst (Shared), in = src (Global), count = bytes
  CpAsyncCommit,
  CpAsyncWait,    // count = groups that may stay in flight
  LdMatrix,       // warp-collective; out = dst (Local), in = row address (Shared), count = matrices
  Mma,            // warp-collective; out = C, in = A, in2 = B
  // Hopper (async_proxy.h): out = the mbarrier unless said otherwise
  MbarrierInit,    // count = arrivals
  MbarrierArrive,  // count = transaction bytes (0: a plain arrive)
  MbarrierWait,    // extent = parity
  TmaLoad,         // out = dst, in = barrier, tensor_map, extent = row, extent2 = col
  FenceProxyAsync,
  Wgmma,           // warpgroup-collective; out = accumulators, in = A, in2 = B, count = n
  WgmmaFence,
  WgmmaCommit,
  WgmmaWait,       // count = groups that may stay in flight
  End,
};

// What a Compute/Reduce statement computes.
enum class Fn : uint8_t {
  Copy,  // set, cast, layout ops, pad, full: the value, rounded on store
  Neg, Exp, Tanh, Abs, Relu,
  Sqrt, Rsqrt, Log, Log2, Log1p, Exp2, Expm1, Sigmoid, Erf, Reciprocal, Sin, Cos,
  Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Log10, Erfc, Lgamma,
  Floor, Ceil, Round, Trunc, LogicalNot, Signbit, BitwiseNot,
  Add, Sub, Mul, Div, Maximum, Minimum,
  Pow, IntPow, Remainder, Fmod, Atan2, Hypot, Copysign, Nextafter,
  ShiftLeft, ShiftRight, Gcd, Lcm,  // integers  // IntPow: pow of integers (torch's rules for negative exponents)
  IntDiv,  // division of integers with an integer result: truncates toward zero
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr,
  BitwiseAnd, BitwiseOr, BitwiseXor,
  RandomUniform,  // operands: seed, counter (read as integers)
  // torch's special functions (smelt::special, the kernels' own code)
  SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_ENUM) SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_ENUM)
  Where,
  Iota,  // operands: index, start, step -> start + index * step
  // index_select: operand 1 (range-checked against Instr::extent) binds
  // Instr::slot, which operand 0's index reads; the value is operand 0
  Gather,
  Scatter,  // operands: index, src; combines into out (Instr::combine)
  Scan,     // operands: the element, the running value; out = running = combined (Instr::scan)
  Sum, Max, Prod,  // reductions
};

struct RtAccess {
  int32_t buffer = -1;  // into Program::buffers
  int32_t index = -1;   // IndexCode handle
};

struct RtTerm {
  int32_t lhs, rhs;  // IndexCode handles
  kir::Predicate::Term::Kind kind;
};

struct RtPredicate {  // a conjunction: Program::terms[begin, end)
  uint32_t begin = 0, end = 0;
};

struct RtOperand {
  RtAccess access;      // buffer < 0: the index value, else the constant
  int32_t index_value = -1;  // IndexCode handle of an index read as a value
  double constant = 0;  // constants and scalars (symbolic ones bound at compile time)
  RtPredicate in_bounds;
  double out_of_bounds_value = 0;
};

struct Instr {
  Op op = Op::End;
  Fn fn = Fn::Copy;
  int32_t position = -1;  // program position of the kir statement (see sim_report.h)
  int32_t slot = -1;
  int32_t extent_slot = -1;
  int32_t extent = -1;  // IndexCode handle
  int32_t target = -1;
  RtPredicate pred;
  RtPredicate write_pred;  // BlockReduce: which threads store the result
  RtAccess out;
  RtAccess in;  // BlockReduce / BlockBroadcast input
  RtAccess in2;  // Mma: the B fragment
  int32_t count = 0;  // CpAsync bytes, CpAsyncWait pending groups, LdMatrix matrices
  bool transpose = false;  // LdMatrix
  bool accumulate = true;  // Wgmma: D += A B (false: D = A B)
  int32_t extent2 = -1;    // TmaLoad: the column coordinate (IndexCode handle)
  int32_t tensor_map = -1;  // TmaLoad: into Program::tensor_maps
  uint32_t operand_begin = 0, operand_end = 0;  // Compute operands; ReduceStep: its `in`
  uint8_t thread_axes = 0;  // bit 0/1/2: TIDx/y/z
  int32_t workspace = -1;   // buffer id, -1 when the statement has none
  double init = 0;          // reduction init value
  // Scatter: how the value is combined, the dimension it writes along and
  // whether negative indices count from the end.
  ScatterCombine combine = ScatterCombine::Set;
  ScanCombine scan = ScanCombine::Add;
  int32_t scatter_dim = -1;
  bool wrap_negative = false;
};

struct RtBuffer {
  const kir::Buffer* kir = nullptr;
  std::string name;
  MemoryType memory = MemoryType::Local;
  DataType dtype = DataType::Float;
  int64_t elem_size = 4;
};

// Slots 0..11 hold the CUDA built-ins, in this order.
enum BuiltinSlot : int {
  kThreadIdx = 0,  // + 0/1/2 for x/y/z
  kBlockIdx = 3,
  kBlockDim = 6,
  kGridDim = 9,
  kNumBuiltins = 12,
};

struct RtTensorMap {
  int32_t tensor = -1;  // buffer id of the Global tensor
  int64_t box_rows = 0, box_cols = 0;
  bool swizzle128 = false;
  std::string name;
};

struct Program {
  SymbolTable symbols;
  IndexCode code;
  std::vector<Instr> instrs;
  std::vector<std::string> stmt_text;  // per instruction
  std::vector<RtTerm> terms;
  std::vector<RtOperand> operands;
  std::vector<RtBuffer> buffers;
  std::vector<RtTensorMap> tensor_maps;
  bool uses_hopper = false;  // any mbarrier, TMA or wgmma instruction
  std::unordered_map<const kir::Buffer*, int32_t> buffer_ids;
  std::vector<bool> runtime_slot;  // set by the program itself (loop indices, extents, built-ins)
};

// Symbolic scalars (operands and index symbols) take their values from `scalars`.
// With `index_type` Int32 the index code requires every value to fit in int32.
Program compileKernel(const kir::Kernel& kernel, const std::map<std::string, double>& scalars,
                      DataType index_type = DataType::Int);

}  // namespace smelt::sim
