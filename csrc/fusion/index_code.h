// IntExpr compiled for inner loops that evaluate the same expressions over
// and over (the simulator, the planner's access footprints). IntExpr::evaluate
// walks a tree of shared_ptr nodes and looks symbols up in a std::map; here
// each IntExpr is compiled once into postfix code over a flat array of symbol
// slots. Division, ceilDiv and modulo by zero throw smelt::Error.
//
// A kernel compiled with 32-bit index math (CodegenOptions::index_type) is
// simulated with requireInt32(): then every value an expression computes,
// intermediate results included, must fit in int32, or eval throws
// smelt::Error naming the expression (the generated code would overflow).
#pragma once

#include <cstdint>
#include <climits>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/int_expr.h"

namespace smelt {

// Symbol name -> slot in the per-thread value array.
class SymbolTable {
 public:
  int slot(const std::string& name);  // adds the symbol when absent
  int find(const std::string& name) const;  // -1 when absent
  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int slot) const { return names_[slot]; }

 private:
  std::unordered_map<std::string, int> slots_;
  std::vector<std::string> names_;
};

// All compiled expressions of one kernel, addressed by the handle add() returns.
class IndexCode {
 public:
  int add(const IntExpr& expr, SymbolTable& symbols);
  // Evaluates as the 32-bit variant of a kernel would (see above). Call
  // before add(): the expressions' text is kept for the error message.
  void requireInt32() { int32_only_ = true; }
  bool int32Only() const { return int32_only_; }
  int size() const { return static_cast<int>(headers_.size()); }
  // The slots the expression reads.
  std::vector<int> slotsUsed(int handle) const;
  int64_t eval(int handle, const int64_t* slots) const {
    const Header& h = headers_[handle];
    // Most indices are a constant or a bare loop index: skip the stack machine.
    const int64_t value = h.form == Form::Constant ? h.value
                          : h.form == Form::Symbol ? slots[h.value]
                                                   : run(h, slots);
    if (int32_only_ && !fitsInt32(value)) overflow(handle, value);
    return value;
  }

 private:
  enum class Form : uint8_t { Constant, Symbol, Code };
  enum class Op : uint8_t { Push, Add, Sub, Mul, Div, CeilDiv, Mod, Min, Max };
  // Where an instruction's (right) operand comes from.
  enum class Src : uint8_t { Stack, Const, Slot };
  struct Instr {
    Op op;
    Src src;
    int64_t arg;  // the constant or the slot
  };
  struct Header {
    Form form;
    int64_t value;  // Constant: the value; Symbol: the slot
    uint32_t begin, end;  // Code: instruction range
  };
  static constexpr int kMaxDepth = 64;

  static bool fitsInt32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }
  [[noreturn]] void overflow(int handle, int64_t value) const;
  void emit(const IntExpr& expr, SymbolTable& symbols, int depth);
  int64_t run(const Header& h, const int64_t* slots) const;

  std::vector<Header> headers_;
  std::vector<Instr> code_;
  bool int32_only_ = false;
  std::vector<std::string> text_;  // per handle, kept when int32_only_
};

}  // namespace smelt
