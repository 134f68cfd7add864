#include "codegen/vectorize.h"

#include <algorithm>
#include <set>
#include <string>

namespace smelt {

namespace {

bool mentions(const IntExpr& e, const std::string& symbol) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return false;
    case IntExpr::Kind::Symbol: return e.symbolName() == symbol;
    default: return mentions(e.lhs(), symbol) || mentions(e.rhs(), symbol);
  }
}

bool mentions(const kir::Predicate& predicate, const std::string& symbol) {
  return std::any_of(predicate.terms.begin(), predicate.terms.end(), [&](const auto& term) {
    return mentions(term.lhs, symbol) || mentions(term.rhs, symbol);
  });
}

// True when `e` is a multiple of `v` whatever the values of its symbols,
// given that the symbols in `multiples` are multiples of `v`.
bool provenMultiple(const IntExpr& e, int64_t v, const std::set<std::string>& multiples = {}) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return *e.constant() % v == 0;
    case IntExpr::Kind::Symbol: return multiples.count(e.symbolName()) > 0;
    case IntExpr::Kind::Add:
    case IntExpr::Kind::Sub:
      return provenMultiple(e.lhs(), v, multiples) && provenMultiple(e.rhs(), v, multiples);
    case IntExpr::Kind::Mul:
      return provenMultiple(e.lhs(), v, multiples) || provenMultiple(e.rhs(), v, multiples);
    default: return false;
  }
}

// e == coefficient * symbol + rest, neither part mentioning the symbol.
struct Linear {
  IntExpr coefficient;
  IntExpr rest;
};

// `e` as a linear function of `symbol`, which takes the values [0, extent);
// nullopt when it is not one.
std::optional<Linear> linearIn(const IntExpr& e, const std::string& symbol, int64_t extent) {
  using K = IntExpr::Kind;
  if (!mentions(e, symbol)) return Linear{0, e};
  switch (e.kind()) {
    case K::Symbol: return Linear{1, 0};
    case K::Add:
    case K::Sub: {
      auto l = linearIn(e.lhs(), symbol, extent);
      auto r = linearIn(e.rhs(), symbol, extent);
      if (!l || !r) return std::nullopt;
      if (e.kind() == K::Add) return Linear{l->coefficient + r->coefficient, l->rest + r->rest};
      return Linear{l->coefficient - r->coefficient, l->rest - r->rest};
    }
    case K::Mul: {
      const bool in_lhs = mentions(e.lhs(), symbol);
      if (in_lhs && mentions(e.rhs(), symbol)) return std::nullopt;
      const IntExpr& factor = in_lhs ? e.rhs() : e.lhs();
      auto l = linearIn(in_lhs ? e.lhs() : e.rhs(), symbol, extent);
      if (!l) return std::nullopt;
      return Linear{l->coefficient * factor, l->rest * factor};
    }
    case K::Div:
    case K::Mod: {
      // (rest + k*i) / c == rest / c and (rest + k*i) % c == k*i when c
      // divides rest and k*i < c for every i (index math the splits leave,
      // e.g. "i % 4" over a loop of 4).
      const auto c = e.rhs().constant();
      auto l = linearIn(e.lhs(), symbol, extent);
      if (!c || *c <= 0 || !l) return std::nullopt;
      const auto k = l->coefficient.constant();
      if (!k || *k < 0 || *k * (extent - 1) >= *c || !provenMultiple(l->rest, *c)) return std::nullopt;
      if (e.kind() == K::Div) return Linear{0, l->rest / e.rhs()};
      return Linear{l->coefficient, 0};
    }
    default: return std::nullopt;  // the index inside a ceilDiv, min or max
  }
}

std::string strideSymbol(const kir::Buffer& buffer, size_t dim) {
  return buffer.name + ".stride[" + std::to_string(dim) + "]";
}

const kir::Buffer* aliasTarget(const kir::Buffer* buffer) {
  while (buffer->alias_of != nullptr) buffer = buffer->alias_of;
  return buffer;
}

// The index of the access's first element when it covers `width` adjacent,
// vector-aligned elements as `loop_index` runs over [0, width).
std::optional<IntExpr> vectorFirst(const kir::Access& access, const std::string& loop_index,
                                   int64_t width, int64_t bytes) {
  const kir::Buffer& buffer = *access.buffer;
  auto linear = linearIn(access.index, loop_index, width);
  if (!linear) return std::nullopt;
  std::set<std::string> multiples;
  bool unit_step = linear->coefficient.constant() == std::optional<int64_t>(1);
  if (buffer.memory == MemoryType::Global) {
    if (buffer.shape.empty() || buffer.tv == nullptr || buffer.tv->contiguity().empty()) return std::nullopt;
    const size_t last = buffer.shape.size() - 1;
    const bool innermost_contiguous = buffer.tv->contiguity().back();
    unit_step = unit_step || (innermost_contiguous && linear->coefficient.kind() == IntExpr::Kind::Symbol &&
                              linear->coefficient.symbolName() == strideSymbol(buffer, last));
    for (size_t d = 0; d < last; ++d) multiples.insert(strideSymbol(buffer, d));
  } else if (buffer.memory == MemoryType::Shared) {
    const kir::Buffer* target = aliasTarget(&buffer);
    const auto address = target->address ? target->address->constant() : std::nullopt;
    if (target->alignment % bytes != 0 || !address || *address % bytes != 0) return std::nullopt;
  }
  if (!unit_step || !provenMultiple(linear->rest, width, multiples)) return std::nullopt;
  return linear->rest;
}

std::optional<VectorCopy> vectorCopy(const kir::Stmt& stmt, const std::string& loop_index,
                                     int64_t width, int64_t bytes) {
  if (stmt.kind() != kir::StmtKind::Compute) return std::nullopt;
  const auto& c = static_cast<const kir::Compute&>(stmt);
  if (c.expr == nullptr || c.expr->type() != ExprType::Set || c.operands.size() != 1) return std::nullopt;
  const kir::Operand& in = c.operands[0];
  if (!in.access || !in.in_bounds.alwaysTrue() || mentions(c.predicate, loop_index)) return std::nullopt;
  if (in.access->buffer->dtype != c.out.buffer->dtype) return std::nullopt;
  auto out_first = vectorFirst(c.out, loop_index, width, bytes);
  auto in_first = vectorFirst(*in.access, loop_index, width, bytes);
  if (!out_first || !in_first) return std::nullopt;
  return VectorCopy{&c, *out_first, *in_first};
}

}  // namespace

std::optional<VectorizedLoop> vectorizeLoop(const kir::ForLoop& loop) {
  if (loop.parallel_type != ParallelType::Vectorize || loop.body.empty()) return std::nullopt;
  auto width = loop.extent.constant();
  if (!width || *width < 2) return std::nullopt;
  VectorizedLoop result;
  result.width = *width;
  for (const auto& stmt : loop.body) {
    if (stmt->kind() != kir::StmtKind::Compute) return std::nullopt;
    const int64_t bytes = *width * dataTypeSize(static_cast<const kir::Compute&>(*stmt).out.buffer->dtype);
    if (bytes != 2 && bytes != 4 && bytes != 8 && bytes != 16) return std::nullopt;
    if (result.bytes != 0 && result.bytes != bytes) return std::nullopt;
    result.bytes = bytes;
    auto copy = vectorCopy(*stmt, loop.index, *width, bytes);
    if (!copy) return std::nullopt;
    result.copies.push_back(*copy);
  }
  return result;
}

std::unordered_map<const kir::Buffer*, int64_t> vectorAccessBytes(const kir::Kernel& kernel) {
  std::unordered_map<const kir::Buffer*, int64_t> widest;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
    const auto* loop = dynamic_cast<const kir::ForLoop*>(stmt);
    if (loop == nullptr) return;
    auto vectorized = vectorizeLoop(*loop);
    if (!vectorized) return;
    for (const VectorCopy& copy : vectorized->copies) {
      for (const kir::Buffer* b : {copy.stmt->out.buffer, copy.stmt->operands[0].access->buffer}) {
        widest[b] = std::max(widest[b], vectorized->bytes);
      }
    }
  });
  return widest;
}

}  // namespace smelt
