#include "codegen/vectorize.h"

#include <algorithm>
#include <set>
#include <string>

#include "fusion/error.h"
#include "fusion/symbols.h"

namespace smelt {

VectorCondition VectorCondition::equal(std::string tensor, IntExpr value, IntExpr equals) {
  VectorCondition c;
  c.tensor = std::move(tensor);
  c.value = std::move(value);
  c.equals = std::move(equals);
  return c;
}

VectorCondition VectorCondition::multiple(std::string tensor, IntExpr value, int64_t of) {
  VectorCondition c;
  c.tensor = std::move(tensor);
  c.value = std::move(value);
  c.multiple_of = of;
  return c;
}

std::string VectorCondition::toString() const {
  if (multiple_of > 0) return value.toString() + " % " + std::to_string(multiple_of) + " == 0";
  return value.toString() + " == " + equals.toString();
}

std::optional<std::string> VectorCondition::violation(const std::map<std::string, int64_t>& bindings) const {
  const int64_t v = value.evaluate(bindings);
  if (multiple_of > 0) {
    if (v % multiple_of == 0) return std::nullopt;
    return errorMessage(value, " is ", v, ", not a multiple of ", multiple_of);
  }
  const int64_t e = equals.evaluate(bindings);
  if (v == e) return std::nullopt;
  return errorMessage(value, " is ", v, " but ", equals, " is ", e);
}

bool VectorCondition::operator==(const VectorCondition& other) const {
  return tensor == other.tensor && multiple_of == other.multiple_of && value.sameAs(other.value) &&
         equals.sameAs(other.equals);
}

namespace {

using K = IntExpr::Kind;

bool mentions(const IntExpr& e, const std::string& symbol) {
  switch (e.kind()) {
    case K::Constant: return false;
    case K::Symbol: return e.symbolName() == symbol;
    default: return mentions(e.lhs(), symbol) || mentions(e.rhs(), symbol);
  }
}

IntExpr rebuild(K kind, const IntExpr& a, const IntExpr& b) {
  switch (kind) {
    case K::Add: return a + b;
    case K::Sub: return a - b;
    case K::Mul: return a * b;
    case K::Div: return a / b;
    case K::Mod: return a % b;
    case K::CeilDiv: return ceilDiv(a, b);
    case K::Min: return min(a, b);
    case K::Max: return max(a, b);
    default: break;
  }
  SMELT_INTERNAL_CHECK(false, "not a binary IntExpr kind");
}

// `e` with `symbol` replaced by `value`.
IntExpr withValue(const IntExpr& e, const std::string& symbol, int64_t value) {
  if (e.kind() == K::Constant) return e;
  if (e.kind() == K::Symbol) return e.symbolName() == symbol ? IntExpr(value) : e;
  return rebuild(e.kind(), withValue(e.lhs(), symbol, value), withValue(e.rhs(), symbol, value));
}

// True when `e` cannot decrease as `symbol` grows.
bool nonDecreasing(const IntExpr& e, const std::string& symbol) {
  if (!mentions(e, symbol)) return true;
  switch (e.kind()) {
    case K::Symbol: return true;
    case K::Add:
    case K::Min:
    case K::Max: return nonDecreasing(e.lhs(), symbol) && nonDecreasing(e.rhs(), symbol);
    case K::Sub:
    case K::Div:
    case K::CeilDiv: return nonDecreasing(e.lhs(), symbol) && !mentions(e.rhs(), symbol);
    case K::Mul: {
      auto scaled = [&](const IntExpr& x, const IntExpr& factor) {
        return nonDecreasing(x, symbol) && !mentions(factor, symbol) && nonNegative(factor);
      };
      return scaled(e.lhs(), e.rhs()) || scaled(e.rhs(), e.lhs());
    }
    default: return false;
  }
}

// True when `e` is a multiple of `v` for every value of its symbols, given
// that the symbols in `candidates` are; those relied on go to `used`.
bool provenMultiple(const IntExpr& e, int64_t v, const std::set<std::string>& candidates,
                    std::set<std::string>& used) {
  switch (e.kind()) {
    case K::Constant: return *e.constant() % v == 0;
    case K::Symbol:
      if (!candidates.count(e.symbolName())) return false;
      used.insert(e.symbolName());
      return true;
    case K::Add:
    case K::Sub:
      return provenMultiple(e.lhs(), v, candidates, used) && provenMultiple(e.rhs(), v, candidates, used);
    case K::Mul: {
      // Prefer a factor proven without assumptions.
      std::set<std::string> none;
      for (const IntExpr& factor : {e.lhs(), e.rhs()}) {
        if (provenMultiple(factor, v, {}, none)) return true;
      }
      for (const IntExpr& factor : {e.lhs(), e.rhs()}) {
        std::set<std::string> relied;
        if (provenMultiple(factor, v, candidates, relied)) {
          used.insert(relied.begin(), relied.end());
          return true;
        }
      }
      return false;
    }
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
      std::set<std::string> none;
      if (!k || *k < 0 || *k * (extent - 1) >= *c || !provenMultiple(l->rest, *c, {}, none)) {
        return std::nullopt;
      }
      if (e.kind() == K::Div) return Linear{0, l->rest / e.rhs()};
      return Linear{l->coefficient, 0};
    }
    default: return std::nullopt;  // the index inside a ceilDiv, min or max
  }
}

// Per dimension of a Global buffer: declared contiguous (empty when unknown).
std::vector<bool> contiguousDims(const kir::Buffer& buffer) {
  std::vector<bool> flags;
  if (buffer.tv == nullptr) return flags;
  const auto& logical = buffer.tv->logicalDomain();
  const auto& contiguity = buffer.tv->contiguity();
  for (size_t d = 0; d < logical.size() && d < contiguity.size(); ++d) {
    if (!logical[d]->isReduction()) flags.push_back(contiguity[d]);
  }
  if (flags.size() != buffer.shape.size()) flags.clear();
  return flags;
}

// The two factors of a product, in both orders; a non-product is itself times 1.
std::vector<std::pair<IntExpr, IntExpr>> factorings(const IntExpr& e) {
  if (e.kind() == K::Mul) return {{e.lhs(), e.rhs()}, {e.rhs(), e.lhs()}};
  return {{e, IntExpr(1)}};
}

// Rewrites an element index with identities that hold at every launch (see
// vectorize.h), recording those about the Global buffer's arguments.
class IndexNormalizer {
 public:
  IndexNormalizer(const kir::Buffer& buffer, std::vector<VectorCondition>& conditions)
      : buffer_(buffer), contiguous_(contiguousDims(buffer)), conditions_(conditions) {}

  IntExpr normalize(const IntExpr& e) {
    if (e.kind() == K::Constant || e.kind() == K::Symbol) return e;
    const IntExpr a = normalize(e.lhs());
    const IntExpr b = normalize(e.rhs());
    if (e.kind() != K::Add) return rebuild(e.kind(), a, b);
    std::vector<IntExpr> terms;
    flatten(a, terms);
    flatten(b, terms);
    while (combineAnyPair(terms)) {
    }
    IntExpr sum = 0;
    for (const IntExpr& t : terms) sum = sum + t;
    return sum;
  }

 private:
  static void flatten(const IntExpr& e, std::vector<IntExpr>& terms) {
    if (e.kind() != K::Add) return terms.push_back(e);
    flatten(e.lhs(), terms);
    flatten(e.rhs(), terms);
  }

  bool combineAnyPair(std::vector<IntExpr>& terms) {
    for (size_t i = 0; i < terms.size(); ++i) {
      for (size_t j = 0; j < terms.size(); ++j) {
        if (i == j) continue;
        if (auto combined = combine(terms[i], terms[j])) {
          terms[i] = *combined;
          terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(j));
          return true;
        }
      }
    }
    return false;
  }

  // (x / e) * f + (x % e) * g == x * g when f is e and g is 1 (row-major
  // over a split axis), or when f and g are the strides of dimensions d and
  // d + 1 of this Global buffer, declared contiguous in d (f == e * g).
  std::optional<IntExpr> combine(const IntExpr& p, const IntExpr& q) {
    for (const auto& [quotient, f] : factorings(p)) {
      if (quotient.kind() != K::Div) continue;
      const IntExpr x = quotient.lhs();
      const IntExpr e = quotient.rhs();
      for (const auto& [remainder, g] : factorings(q)) {
        if (remainder.kind() != K::Mod || !remainder.lhs().sameAs(x) || !remainder.rhs().sameAs(e)) continue;
        if (f.sameAs(e) && g.constant() == std::optional<int64_t>(1)) return x;
        if (isContiguousStridePair(f, g)) {
          conditions_.push_back(VectorCondition::equal(buffer_.name, f, e * g));
          return x * g;
        }
      }
    }
    return std::nullopt;
  }

  // True when f is stride[d] and g stride[d + 1] of this Global buffer,
  // declared contiguous in d.
  // g may be the literal 1 of an innermost dimension whose unit stride
  // indexing knew (lower/indexing.cpp).
  bool isContiguousStridePair(const IntExpr& f, const IntExpr& g) const {
    if (buffer_.memory != MemoryType::Global || f.kind() != K::Symbol) return false;
    const bool unit = g.constant() == std::optional<int64_t>(1);
    if (g.kind() != K::Symbol && !unit) return false;
    for (size_t d = 0; d + 1 < contiguous_.size(); ++d) {
      if (!contiguous_[d] || f.symbolName() != strideSymbol(buffer_.name, d)) continue;
      if (unit ? d + 2 == contiguous_.size() : g.symbolName() == strideSymbol(buffer_.name, d + 1)) return true;
    }
    return false;
  }

  const kir::Buffer& buffer_;
  const std::vector<bool> contiguous_;
  std::vector<VectorCondition>& conditions_;
};

const kir::Buffer* aliasTarget(const kir::Buffer* buffer) {
  while (buffer->alias_of != nullptr) buffer = buffer->alias_of;
  return buffer;
}

// The index of the access's first element when it covers `width` adjacent,
// vector-aligned elements as `loop_index` runs over [0, width); what that
// assumes of a Global buffer's arguments goes to `conditions`.
std::optional<IntExpr> vectorFirst(const kir::Access& access, const std::string& loop_index, int64_t width,
                                   int64_t bytes, std::vector<VectorCondition>& conditions) {
  const kir::Buffer& buffer = *access.buffer;
  std::vector<VectorCondition> assumed;
  auto linear = linearIn(IndexNormalizer(buffer, assumed).normalize(access.index), loop_index, width);
  if (!linear) return std::nullopt;
  bool unit_step = linear->coefficient.constant() == std::optional<int64_t>(1);
  std::set<std::string> candidates;
  if (buffer.memory == MemoryType::Global) {
    const std::vector<bool> contiguous = contiguousDims(buffer);
    if (contiguous.empty()) return std::nullopt;
    const IntExpr innermost_stride = IntExpr::symbol(strideSymbol(buffer.name, contiguous.size() - 1));
    if (contiguous.back() && linear->coefficient.sameAs(innermost_stride)) {
      unit_step = true;
      assumed.push_back(VectorCondition::equal(buffer.name, innermost_stride, 1));
    }
    for (size_t d = 0; d + 1 < contiguous.size(); ++d) candidates.insert(strideSymbol(buffer.name, d));
  } else if (buffer.memory == MemoryType::Shared) {
    const kir::Buffer* target = aliasTarget(&buffer);
    const auto address = target->address ? target->address->constant() : std::nullopt;
    if (target->alignment % bytes != 0 || !address || *address % bytes != 0) return std::nullopt;
  }
  std::set<std::string> used;
  if (!unit_step || !provenMultiple(linear->rest, width, candidates, used)) return std::nullopt;
  for (const std::string& stride : used) {
    assumed.push_back(VectorCondition::multiple(buffer.name, IntExpr::symbol(stride), width));
  }
  conditions.insert(conditions.end(), assumed.begin(), assumed.end());
  return linear->rest;
}

// The predicate for all `width` lanes at once: terms on the loop index taken
// at its last value, when they are bounds it can only approach.
std::optional<kir::Predicate> wholeVectorPredicate(const kir::Predicate& predicate, const std::string& loop_index,
                                                   int64_t width, bool& involves_index) {
  kir::Predicate whole;
  for (const auto& term : predicate.terms) {
    if (!mentions(term.lhs, loop_index) && !mentions(term.rhs, loop_index)) {
      whole.terms.push_back(term);
      continue;
    }
    if (term.kind != kir::Predicate::Term::Kind::LessThan || mentions(term.rhs, loop_index) ||
        !nonDecreasing(term.lhs, loop_index)) {
      return std::nullopt;
    }
    involves_index = true;
    whole.terms.push_back({withValue(term.lhs, loop_index, width - 1), term.kind, term.rhs});
  }
  return whole;
}

std::optional<VectorCopy> vectorCopy(const kir::Stmt& stmt, const std::string& loop_index, int64_t width,
                                     int64_t bytes, VectorizedLoop& loop) {
  if (stmt.kind() != kir::StmtKind::Compute) return std::nullopt;
  const auto& c = static_cast<const kir::Compute&>(stmt);
  if (c.expr == nullptr || c.expr->type() != ExprType::Set || c.operands.size() != 1) return std::nullopt;
  const kir::Operand& in = c.operands[0];
  if (!in.access || !in.in_bounds.alwaysTrue()) return std::nullopt;
  if (in.access->buffer->dtype != c.out.buffer->dtype) return std::nullopt;
  auto predicate = wholeVectorPredicate(c.predicate, loop_index, width, loop.scalar_tail);
  if (!predicate) return std::nullopt;
  auto out_first = vectorFirst(c.out, loop_index, width, bytes, loop.conditions);
  auto in_first = vectorFirst(*in.access, loop_index, width, bytes, loop.conditions);
  if (!out_first || !in_first) return std::nullopt;
  return VectorCopy{&c, *out_first, *in_first, *predicate};
}

void addOnce(std::vector<VectorCondition>& list, const VectorCondition& condition) {
  if (std::find(list.begin(), list.end(), condition) == list.end()) list.push_back(condition);
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
    if (bytes != 2 && bytes != 4 && bytes != 8 && bytes != 16 && bytes != 32) return std::nullopt;
    if (result.bytes != 0 && result.bytes != bytes) return std::nullopt;
    result.bytes = bytes;
    auto copy = vectorCopy(*stmt, loop.index, *width, bytes, result);
    if (!copy) return std::nullopt;
    result.copies.push_back(*copy);
  }
  // The scalar fallback of a straddling vector runs the whole body lane by
  // lane; with one statement that is exactly that statement's loop.
  if (result.scalar_tail && result.copies.size() != 1) return std::nullopt;
  std::vector<VectorCondition> unique;
  for (const VectorCondition& c : result.conditions) addOnce(unique, c);
  result.conditions = std::move(unique);
  return result;
}

VectorRequirements vectorRequirements(const kir::Kernel& kernel) {
  VectorRequirements requirements;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
    if (const auto* copy = dynamic_cast<const kir::CpAsync*>(stmt)) {
      const kir::Buffer* src = copy->src.buffer;
      requirements.bytes[src] = std::max(requirements.bytes[src], copy->bytes);
      for (const IntExpr& v : copy->src_multiples) {
        addOnce(requirements.conditions, VectorCondition::multiple(src->name, v, copy->elements()));
      }
      addOnce(requirements.conditions, VectorCondition::equal(src->name, copy->src_unit_stride, 1));
      return;
    }
    const auto* loop = dynamic_cast<const kir::ForLoop*>(stmt);
    if (loop == nullptr) return;
    auto vectorized = vectorizeLoop(*loop);
    if (!vectorized) return;
    for (const VectorCopy& copy : vectorized->copies) {
      for (const kir::Buffer* b : {copy.stmt->out.buffer, copy.stmt->operands[0].access->buffer}) {
        requirements.bytes[b] = std::max(requirements.bytes[b], vectorized->bytes / vectorized->pieces());
      }
    }
    for (const VectorCondition& c : vectorized->conditions) addOnce(requirements.conditions, c);
  });
  return requirements;
}

}  // namespace smelt
