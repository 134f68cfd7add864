// A fact about a kernel's arguments that its vector accesses rely on, in terms
// of the parameters' symbols ("T0.size[1]", "T0.stride[0]"). Code generation
// records each one it assumes (vectorize.h); the runtime evaluates them with
// the arguments of every launch and refuses a launch that breaks one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "fusion/int_expr.h"

namespace smelt {

struct VectorCondition {
  std::string tensor;   // the kernel parameter it concerns ("T1")
  IntExpr value;
  IntExpr equals;           // value == equals, when multiple_of is 0
  int64_t multiple_of = 0;  // value % multiple_of == 0, when positive

  static VectorCondition equal(std::string tensor, IntExpr value, IntExpr equals);
  static VectorCondition multiple(std::string tensor, IntExpr value, int64_t of);
  // "T1.stride[0] == (T0.size[1] * T1.stride[1])", "T0.stride[0] % 4 == 0".
  std::string toString() const;
  // nullopt when it holds for `bindings`; otherwise what the values are
  // ("T0.stride[0] is 10"). Throws when a symbol is unbound.
  std::optional<std::string> violation(const std::map<std::string, int64_t>& bindings) const;
  bool operator==(const VectorCondition& other) const;
};

}  // namespace smelt
