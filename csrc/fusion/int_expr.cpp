#include "fusion/int_expr.h"

#include <ostream>
#include <utility>

#include "fusion/error.h"

namespace smelt {

struct IntExpr::Node {
  Kind kind = Kind::Constant;
  int64_t value = 0;
  std::string name;
  std::shared_ptr<const Node> lhs;
  std::shared_ptr<const Node> rhs;
};

namespace {

int64_t floorDivNonNeg(int64_t a, int64_t b, const char* what) {
  SMELT_CHECK(b != 0, "IntExpr: ", what, " by zero");
  return a / b;
}

const char* opSymbol(IntExpr::Kind kind) {
  switch (kind) {
    case IntExpr::Kind::Add: return " + ";
    case IntExpr::Kind::Sub: return " - ";
    case IntExpr::Kind::Mul: return " * ";
    case IntExpr::Kind::Div: return " / ";
    case IntExpr::Kind::Mod: return " % ";
    default: return nullptr;
  }
}

}  // namespace

IntExpr::IntExpr() : IntExpr(int64_t{0}) {}

IntExpr::IntExpr(int64_t value) {
  auto node = std::make_shared<Node>();
  node->kind = Kind::Constant;
  node->value = value;
  node_ = std::move(node);
}

IntExpr::IntExpr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}

IntExpr IntExpr::symbol(const std::string& name) {
  SMELT_CHECK(!name.empty(), "IntExpr::symbol: empty symbol name");
  auto node = std::make_shared<Node>();
  node->kind = Kind::Symbol;
  node->name = name;
  return IntExpr(std::shared_ptr<const Node>(std::move(node)));
}

IntExpr::Kind IntExpr::kind() const { return node_->kind; }

std::optional<int64_t> IntExpr::constant() const {
  if (node_->kind == Kind::Constant) return node_->value;
  return std::nullopt;
}

const std::string& IntExpr::symbolName() const {
  SMELT_INTERNAL_CHECK(node_->kind == Kind::Symbol);
  return node_->name;
}

IntExpr IntExpr::lhs() const {
  SMELT_INTERNAL_CHECK(node_->lhs != nullptr);
  return IntExpr(node_->lhs);
}

IntExpr IntExpr::rhs() const {
  SMELT_INTERNAL_CHECK(node_->rhs != nullptr);
  return IntExpr(node_->rhs);
}

static int64_t applyConstant(IntExpr::Kind kind, int64_t a, int64_t b) {
  switch (kind) {
    case IntExpr::Kind::Add: return a + b;
    case IntExpr::Kind::Sub: return a - b;
    case IntExpr::Kind::Mul: return a * b;
    case IntExpr::Kind::Div: return floorDivNonNeg(a, b, "division");
    case IntExpr::Kind::CeilDiv:
      SMELT_CHECK(b != 0, "IntExpr: ceilDiv by zero");
      return (a + b - 1) / b;
    case IntExpr::Kind::Mod:
      SMELT_CHECK(b != 0, "IntExpr: modulo by zero");
      return a % b;
    case IntExpr::Kind::Min: return a < b ? a : b;
    case IntExpr::Kind::Max: return a > b ? a : b;
    default: SMELT_INTERNAL_CHECK(false, "not a binary kind");
  }
  return 0;
}

IntExpr IntExpr::binary(Kind kind, const IntExpr& a, const IntExpr& b) {
  auto ca = a.constant();
  auto cb = b.constant();
  if (ca && cb) return IntExpr(applyConstant(kind, *ca, *cb));
  // Identities that keep concrete-looking index math short.
  switch (kind) {
    case Kind::Add:
      if (ca == 0) return b;
      if (cb == 0) return a;
      // (x + c1) + c2 -> x + (c1 + c2): keeps padded extents short.
      if (cb && a.kind() == Kind::Add && a.rhs().isConstant()) {
        return a.lhs() + IntExpr(*a.rhs().constant() + *cb);
      }
      break;
    case Kind::Sub:
      if (cb == 0) return a;
      if (a.sameAs(b)) return IntExpr(0);
      break;
    case Kind::Mul:
      if (ca == 0 || cb == 0) return IntExpr(0);
      if (ca == 1) return b;
      if (cb == 1) return a;
      break;
    case Kind::Div:
      // (u * c + v) / c -> u + v / c (non-negative values).
      if (cb && a.kind() == Kind::Add && a.lhs().kind() == Kind::Mul &&
          a.lhs().rhs().constant() == cb) {
        return a.lhs().lhs() + a.rhs() / b;
      }
      [[fallthrough]];
    case Kind::CeilDiv:
      if (cb == 1) return a;
      if (ca == 0) return IntExpr(0);
      break;
    case Kind::Mod:
      if (cb == 1 || ca == 0) return IntExpr(0);
      // (u * k + v) % c -> v % c when c divides k (all values are non-negative).
      if (cb && a.kind() == Kind::Add && a.lhs().kind() == Kind::Mul) {
        auto k = a.lhs().rhs().constant();
        if (k && *k % *cb == 0) return a.rhs() % b;
      }
      break;
    case Kind::Min:
    case Kind::Max:
      if (a.sameAs(b)) return a;
      break;
    default: break;
  }
  auto node = std::make_shared<Node>();
  node->kind = kind;
  node->lhs = a.node_;
  node->rhs = b.node_;
  return IntExpr(std::shared_ptr<const Node>(std::move(node)));
}

int64_t IntExpr::evaluate(const std::map<std::string, int64_t>& bindings) const {
  switch (node_->kind) {
    case Kind::Constant: return node_->value;
    case Kind::Symbol: {
      auto it = bindings.find(node_->name);
      SMELT_CHECK(it != bindings.end(), "IntExpr: symbol '", node_->name,
                  "' has no value bound");
      return it->second;
    }
    default:
      return applyConstant(node_->kind, lhs().evaluate(bindings), rhs().evaluate(bindings));
  }
}

std::string IntExpr::toString() const {
  switch (node_->kind) {
    case Kind::Constant: return std::to_string(node_->value);
    case Kind::Symbol: return node_->name;
    case Kind::CeilDiv: return "ceilDiv(" + lhs().toString() + ", " + rhs().toString() + ")";
    case Kind::Min: return "min(" + lhs().toString() + ", " + rhs().toString() + ")";
    case Kind::Max: return "max(" + lhs().toString() + ", " + rhs().toString() + ")";
    default:
      return "(" + lhs().toString() + opSymbol(node_->kind) + rhs().toString() + ")";
  }
}

bool IntExpr::sameAs(const IntExpr& other) const {
  if (node_ == other.node_) return true;
  if (node_->kind != other.node_->kind) return false;
  switch (node_->kind) {
    case Kind::Constant: return node_->value == other.node_->value;
    case Kind::Symbol: return node_->name == other.node_->name;
    default: return lhs().sameAs(other.lhs()) && rhs().sameAs(other.rhs());
  }
}

IntExpr operator+(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Add, a, b); }
IntExpr operator-(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Sub, a, b); }
IntExpr operator*(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Mul, a, b); }
IntExpr operator/(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Div, a, b); }
IntExpr operator%(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Mod, a, b); }
IntExpr ceilDiv(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::CeilDiv, a, b); }
IntExpr min(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Min, a, b); }
IntExpr max(const IntExpr& a, const IntExpr& b) { return IntExpr::binary(IntExpr::Kind::Max, a, b); }

IntExpr alignUp(const IntExpr& value, int64_t alignment) {
  SMELT_CHECK(alignment > 0, "alignUp: alignment must be positive, got ", alignment);
  return ceilDiv(value, alignment) * alignment;
}

IntExpr substitute(const IntExpr& e, const std::map<std::string, IntExpr>& replacements) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return e;
    case IntExpr::Kind::Symbol: {
      auto it = replacements.find(e.symbolName());
      return it == replacements.end() ? e : it->second;
    }
    default: break;
  }
  return combine(e.kind(), substitute(e.lhs(), replacements), substitute(e.rhs(), replacements));
}

IntExpr combine(IntExpr::Kind kind, const IntExpr& a, const IntExpr& b) {
  switch (kind) {
    case IntExpr::Kind::Add: return a + b;
    case IntExpr::Kind::Sub: return a - b;
    case IntExpr::Kind::Mul: return a * b;
    case IntExpr::Kind::Div: return a / b;
    case IntExpr::Kind::CeilDiv: return ceilDiv(a, b);
    case IntExpr::Kind::Mod: return a % b;
    case IntExpr::Kind::Min: return min(a, b);
    case IntExpr::Kind::Max: return max(a, b);
    default: SMELT_INTERNAL_CHECK(false, "combine: ", static_cast<int>(kind), " is not a binary kind");
  }
  return a;
}

namespace {

// a <= b provably (constants, or the same expression).
bool provablyLe(const IntExpr& a, const IntExpr& b) {
  if (a.sameAs(b)) return true;
  auto ca = a.constant();
  auto cb = b.constant();
  if (ca && cb) return *ca <= *cb;
  // a constant <= 1 against an extent that is at least 1 (ceilDiv of a
  // positive size, a symbol bound as an extent) is not assumed: sizes may be 0.
  return false;
}

// (u * d + v) with u * d's multiplier the same as d: returns v, and u in `u_out`.
std::optional<IntExpr> splitMultiple(const IntExpr& a, const IntExpr& d, IntExpr* u_out) {
  if (a.kind() != IntExpr::Kind::Add) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    IntExpr m = side == 0 ? a.lhs() : a.rhs();
    IntExpr v = side == 0 ? a.rhs() : a.lhs();
    if (m.kind() != IntExpr::Kind::Mul) continue;
    if (m.rhs().sameAs(d)) {
      *u_out = m.lhs();
      return v;
    }
    if (m.lhs().sameAs(d)) {
      *u_out = m.rhs();
      return v;
    }
    // u * k with k a constant multiple of the constant d.
    auto k = m.rhs().constant();
    auto c = d.constant();
    if (k && c && *c > 0 && *k % *c == 0) {
      *u_out = m.lhs() * IntExpr(*k / *c);
      return v;
    }
  }
  return std::nullopt;
}

// For `a` = u * c + v (either order) with constants c > 0 and d, c dividing
// d: u, with v. A vector's elements (thread * 4 + i) divided by a row of
// 16: (thread * 4 + i) / 16 is thread / 4 when 0 <= i < 4.
std::optional<IntExpr> splitFactorOf(const IntExpr& a, const IntExpr& d, IntExpr* u_out,
                                     int64_t* c_out) {
  if (a.kind() != IntExpr::Kind::Add || !d.constant() || *d.constant() <= 0) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const IntExpr& m = side == 0 ? a.lhs() : a.rhs();
    const IntExpr& v = side == 0 ? a.rhs() : a.lhs();
    if (m.kind() != IntExpr::Kind::Mul) continue;
    for (int factor_side = 0; factor_side < 2; ++factor_side) {
      auto c = (factor_side == 0 ? m.rhs() : m.lhs()).constant();
      if (!c || *c <= 0 || *d.constant() % *c != 0) continue;
      *u_out = factor_side == 0 ? m.lhs() : m.rhs();
      *c_out = *c;
      return v;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<IntExpr> upperBound(const IntExpr& e, const IntBounds& bounds) {
  using K = IntExpr::Kind;
  switch (e.kind()) {
    case K::Constant:
      if (*e.constant() < 0) return std::nullopt;
      return IntExpr(*e.constant() + 1);
    case K::Symbol: {
      auto it = bounds.find(e.symbolName());
      if (it == bounds.end()) return std::nullopt;
      return it->second;
    }
    case K::Add: {
      auto a = upperBound(e.lhs(), bounds);
      auto b = upperBound(e.rhs(), bounds);
      if (!a || !b) return std::nullopt;
      return *a + *b - 1;
    }
    case K::Mul: {
      auto a = upperBound(e.lhs(), bounds);
      auto b = upperBound(e.rhs(), bounds);
      if (!a || !b) return std::nullopt;
      return (*a - 1) * (*b - 1) + 1;
    }
    case K::Div: {
      auto a = upperBound(e.lhs(), bounds);
      auto d = e.rhs().constant();
      if (!a || !d || *d <= 0) return std::nullopt;
      return (*a - 1) / *d + 1;
    }
    case K::Mod:
      // 0 <= a % d < d for a >= 0 (a remaining modulo is one whose
      // dividend's bound is not below d).
      if (!nonNegative(e.lhs()) || !nonNegative(e.rhs())) return std::nullopt;
      return e.rhs();
    default: return std::nullopt;
  }
}

bool provablyBelow(const IntExpr& e, const IntExpr& limit, const IntBounds& bounds) {
  const std::optional<IntExpr> bound = upperBound(e, bounds);
  return bound.has_value() && provablyLe(*bound, limit);
}

bool nonNegative(const IntExpr& e) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return *e.constant() >= 0;
    case IntExpr::Kind::Symbol: return true;  // indices, sizes, strides
    case IntExpr::Kind::Sub: return false;
    default: return nonNegative(e.lhs()) && nonNegative(e.rhs());
  }
}

IntExpr simplify(const IntExpr& e, const IntBounds& bounds) {
  using K = IntExpr::Kind;
  if (e.kind() == K::Constant || e.kind() == K::Symbol) return e;
  IntExpr a = simplify(e.lhs(), bounds);
  IntExpr b = simplify(e.rhs(), bounds);
  switch (e.kind()) {
    case K::Add: {
      // (x / d) * d + x % d -> x
      if (a.kind() == K::Mul && a.lhs().kind() == K::Div && b.kind() == K::Mod &&
          a.lhs().rhs().sameAs(a.rhs()) && b.rhs().sameAs(a.rhs()) && a.lhs().lhs().sameAs(b.lhs())) {
        return b.lhs();
      }
      // (x / d) * (d * c) + (x % d) * c -> x * c (constants d, c): a row-major
      // index over constant strides, a dimension split back into two.
      if (a.kind() == K::Mul && a.lhs().kind() == K::Div && b.kind() == K::Mul &&
          b.lhs().kind() == K::Mod && a.lhs().lhs().sameAs(b.lhs().lhs()) &&
          a.lhs().rhs().sameAs(b.lhs().rhs())) {
        const auto d = a.lhs().rhs().constant();
        const auto dc = a.rhs().constant();
        const auto c = b.rhs().constant();
        if (d && dc && c && *d * *c == *dc) return b.lhs().lhs() * *c;
      }
      return a + b;
    }
    case K::Sub: return a - b;
    case K::Mul: return a * b;
    case K::CeilDiv: return ceilDiv(a, b);
    case K::Min: return min(a, b);
    case K::Max: return max(a, b);
    case K::Div: {
      if (nonNegative(a)) {
        if (auto ub = upperBound(a, bounds); ub && provablyLe(*ub, b)) return 0;
        IntExpr u;
        if (auto v = splitMultiple(a, b, &u); v && nonNegative(*v)) {
          return simplify(u + *v / b, bounds);
        }
        // (u * c + v) / d -> u / (d / c) when c divides d and 0 <= v < c.
        int64_t c = 0;
        if (auto v = splitFactorOf(a, b, &u, &c); v && nonNegative(u) && nonNegative(*v)) {
          if (auto ub = upperBound(*v, bounds); ub && provablyLe(*ub, IntExpr(c))) {
            return simplify(u / IntExpr(*b.constant() / c), bounds);
          }
        }
      }
      return a / b;
    }
    case K::Mod: {
      if (nonNegative(a)) {
        if (auto ub = upperBound(a, bounds); ub && provablyLe(*ub, b)) return a;
        // (x % m) % d -> x % d when the constant d divides the constant m.
        if (a.kind() == K::Mod && a.rhs().isConstant() && b.isConstant() && *b.constant() > 0 &&
            *a.rhs().constant() % *b.constant() == 0) {
          return simplify(a.lhs() % b, bounds);
        }
        IntExpr u;
        if (auto v = splitMultiple(a, b, &u); v && nonNegative(*v)) {
          return simplify(*v % b, bounds);
        }
        // (u * c + v) % d -> (u % (d / c)) * c + v when c divides d and 0 <= v < c.
        int64_t c = 0;
        if (auto v = splitFactorOf(a, b, &u, &c); v && nonNegative(u) && nonNegative(*v)) {
          if (auto ub = upperBound(*v, bounds); ub && provablyLe(*ub, IntExpr(c))) {
            return simplify(u % IntExpr(*b.constant() / c), bounds) * IntExpr(c) + *v;
          }
        }
      }
      return a % b;
    }
    default: break;
  }
  return e;
}

std::ostream& operator<<(std::ostream& os, const IntExpr& e) { return os << e.toString(); }

}  // namespace smelt
