#include "fusion/index_code.h"

#include "fusion/error.h"

namespace smelt {

int SymbolTable::slot(const std::string& name) {
  auto it = slots_.find(name);
  if (it != slots_.end()) return it->second;
  int s = size();
  slots_.emplace(name, s);
  names_.push_back(name);
  return s;
}

int SymbolTable::find(const std::string& name) const {
  auto it = slots_.find(name);
  return it == slots_.end() ? -1 : it->second;
}

int IndexCode::add(const IntExpr& expr, SymbolTable& symbols) {
  Header h{};
  if (auto c = expr.constant()) {
    h.form = Form::Constant;
    h.value = *c;
  } else if (expr.kind() == IntExpr::Kind::Symbol) {
    h.form = Form::Symbol;
    h.value = symbols.slot(expr.symbolName());
  } else {
    h.form = Form::Code;
    h.begin = static_cast<uint32_t>(code_.size());
    emit(expr, symbols, 1);
    h.end = static_cast<uint32_t>(code_.size());
  }
  headers_.push_back(h);
  if (int32_only_) text_.push_back(expr.toString());
  return static_cast<int>(headers_.size()) - 1;
}

void IndexCode::emit(const IntExpr& expr, SymbolTable& symbols, int depth) {
  SMELT_CHECK(depth < kMaxDepth, "IntExpr: index expression nests deeper than ", kMaxDepth,
              ": ", expr);
  if (auto c = expr.constant()) {
    code_.push_back({Op::Push, Src::Const, *c});
    return;
  }
  if (expr.kind() == IntExpr::Kind::Symbol) {
    code_.push_back({Op::Push, Src::Slot, symbols.slot(expr.symbolName())});
    return;
  }
  Op op = Op::Push;
  switch (expr.kind()) {
    case IntExpr::Kind::Add: op = Op::Add; break;
    case IntExpr::Kind::Sub: op = Op::Sub; break;
    case IntExpr::Kind::Mul: op = Op::Mul; break;
    case IntExpr::Kind::Div: op = Op::Div; break;
    case IntExpr::Kind::CeilDiv: op = Op::CeilDiv; break;
    case IntExpr::Kind::Mod: op = Op::Mod; break;
    case IntExpr::Kind::Min: op = Op::Min; break;
    case IntExpr::Kind::Max: op = Op::Max; break;
    default: SMELT_INTERNAL_CHECK(false, "unexpected IntExpr kind");
  }
  emit(expr.lhs(), symbols, depth);
  // A constant or symbol right operand folds into the instruction, which
  // halves the dispatches for the common `i * 4 + threadIdx.x` shapes.
  IntExpr rhs = expr.rhs();
  if (auto c = rhs.constant()) {
    code_.push_back({op, Src::Const, *c});
  } else if (rhs.kind() == IntExpr::Kind::Symbol) {
    code_.push_back({op, Src::Slot, symbols.slot(rhs.symbolName())});
  } else {
    emit(rhs, symbols, depth + 1);
    code_.push_back({op, Src::Stack, 0});
  }
}

std::vector<int> IndexCode::slotsUsed(int handle) const {
  const Header& h = headers_[handle];
  if (h.form == Form::Constant) return {};
  if (h.form == Form::Symbol) return {static_cast<int>(h.value)};
  std::vector<int> slots;
  for (uint32_t pc = h.begin; pc < h.end; ++pc) {
    if (code_[pc].src == Src::Slot) slots.push_back(static_cast<int>(code_[pc].arg));
  }
  return slots;
}

int64_t IndexCode::run(const Header& h, const int64_t* slots) const {
  int64_t stack[kMaxDepth];
  int sp = -1;
  for (uint32_t pc = h.begin; pc < h.end; ++pc) {
    const Instr& in = code_[pc];
    int64_t b = in.src == Src::Const ? in.arg
                : in.src == Src::Slot ? slots[in.arg]
                                      : 0;
    if (in.op == Op::Push) {
      stack[++sp] = b;
      continue;
    }
    if (in.src == Src::Stack) b = stack[sp--];
    int64_t& a = stack[sp];
    switch (in.op) {
      case Op::Add: a += b; break;
      case Op::Sub: a -= b; break;
      case Op::Mul: a *= b; break;
      case Op::Div:
        SMELT_CHECK(b != 0, "IntExpr: index division by zero");
        a /= b;
        break;
      case Op::CeilDiv:
        SMELT_CHECK(b != 0, "IntExpr: index ceilDiv by zero");
        a = (a + b - 1) / b;
        break;
      case Op::Mod:
        SMELT_CHECK(b != 0, "IntExpr: index modulo by zero");
        a %= b;
        break;
      case Op::Min: a = a < b ? a : b; break;
      case Op::Max: a = a > b ? a : b; break;
      case Op::Push: break;
    }
    if (int32_only_ && !fitsInt32(a)) overflow(static_cast<int>(&h - headers_.data()), a);
  }
  return stack[0];
}

void IndexCode::overflow(int handle, int64_t value) const {
  throw Error(errorMessage("index arithmetic overflows the 32-bit index type: ", text_.at(handle),
                           " reaches ", value, " (a launch whose sizes or offsets exceed int32 "
                           "needs the 64-bit variant)"));
}

}  // namespace smelt
