// IntExpr: an immutable symbolic integer expression (extents, index math,
// allocation sizes, addresses). Constants fold on construction, so a fully
// concrete schedule never carries symbols. Symbols are named the way the
// generated CUDA spells them (e.g. "T0.size[1]"), so printing is emission.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace smelt {

class IntExpr {
 public:
  enum class Kind { Constant, Symbol, Add, Sub, Mul, Div, CeilDiv, Mod, Min, Max };

  IntExpr();  // the constant 0
  IntExpr(int64_t value);  // NOLINT: implicit, so `extent * 4` reads naturally
  static IntExpr symbol(const std::string& name);

  Kind kind() const;
  bool isConstant() const { return kind() == Kind::Constant; }
  // The value when constant; nullopt when it depends on a symbol.
  std::optional<int64_t> constant() const;
  const std::string& symbolName() const;  // only for Kind::Symbol
  IntExpr lhs() const;  // only for binary kinds
  IntExpr rhs() const;

  // Evaluates with every symbol bound; throws smelt::Error naming an unbound one.
  int64_t evaluate(const std::map<std::string, int64_t>& bindings) const;
  // C-like text: "((T0.size[0] + 3) / 4)"; ceilDiv and min/max print as calls.
  std::string toString() const;

  bool sameAs(const IntExpr& other) const;  // structural equality

 private:
  struct Node;
  explicit IntExpr(std::shared_ptr<const Node> node);
  static IntExpr binary(Kind kind, const IntExpr& a, const IntExpr& b);
  std::shared_ptr<const Node> node_;

  friend IntExpr operator+(const IntExpr&, const IntExpr&);
  friend IntExpr operator-(const IntExpr&, const IntExpr&);
  friend IntExpr operator*(const IntExpr&, const IntExpr&);
  friend IntExpr operator/(const IntExpr&, const IntExpr&);
  friend IntExpr operator%(const IntExpr&, const IntExpr&);
  friend IntExpr ceilDiv(const IntExpr&, const IntExpr&);
  friend IntExpr min(const IntExpr&, const IntExpr&);
  friend IntExpr max(const IntExpr&, const IntExpr&);
};

IntExpr operator+(const IntExpr& a, const IntExpr& b);
IntExpr operator-(const IntExpr& a, const IntExpr& b);
IntExpr operator*(const IntExpr& a, const IntExpr& b);
IntExpr operator/(const IntExpr& a, const IntExpr& b);  // floor division of non-negatives
IntExpr operator%(const IntExpr& a, const IntExpr& b);
IntExpr ceilDiv(const IntExpr& a, const IntExpr& b);
IntExpr min(const IntExpr& a, const IntExpr& b);
IntExpr max(const IntExpr& a, const IntExpr& b);
// Rounds `value` up to a multiple of `alignment` (a positive constant).
IntExpr alignUp(const IntExpr& value, int64_t alignment);
// The binary expression of `kind` (Add .. Max) of `a` and `b`, built with the
// operators above (constants fold).
IntExpr combine(IntExpr::Kind kind, const IntExpr& a, const IntExpr& b);
// `e` with each symbol named in `replacements` replaced by its expression
// (constants fold again); other symbols stay.
IntExpr substitute(const IntExpr& e, const std::map<std::string, IntExpr>& replacements);

// Exclusive upper bounds of symbols known to be non-negative (loop indices:
// symbol -> extent). Symbols absent from the map are non-negative
// (sizes, strides) but unbounded.
using IntBounds = std::map<std::string, IntExpr>;

// Index math is over non-negative values (indices, sizes, strides): `e` is
// provably non-negative unless a subtraction or a negative constant is in it.
bool nonNegative(const IntExpr& e);

// `e` simplified with what `bounds` knows, for values of every symbol within
// [0, bound): `x / d -> 0` and `x % d -> x` when 0 <= x < d is provable,
// `(u * d + v) / d -> u + v / d` and `(u * d + v) % d -> v % d` (d constant
// or symbolic, v >= 0), `(x % m) % d -> x % d` (constants, d divides m),
// `(u * c + v) / d -> u / (d / c)` and `(u * c + v) % d -> (u % (d / c)) *
// c + v` (constants, c divides d, 0 <= v < c: a vector's lanes),
// `(x / d) * (d * c) + (x % d) * c -> x * c` (constants), applied
// bottom-up. (x / m) / d stays: codegen's vectorizer recognizes a
// contiguous row-major index by its chain of quotients and remainders. The result equals `e` wherever the
// symbols lie in their bounds.
IntExpr simplify(const IntExpr& e, const IntBounds& bounds);

// An exclusive upper bound of `e` (0 <= e < bound) from `bounds`, or nullopt
// when `e` may be negative or is unbounded.
std::optional<IntExpr> upperBound(const IntExpr& e, const IntBounds& bounds);

// Whether e < limit for every value of the symbols within `bounds`
// (upperBound(e) provably at most limit: constants, or the same expression).
bool provablyBelow(const IntExpr& e, const IntExpr& limit, const IntBounds& bounds);

std::ostream& operator<<(std::ostream& os, const IntExpr& e);

}  // namespace smelt
