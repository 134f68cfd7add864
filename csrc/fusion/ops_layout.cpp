// The layout ops: squeeze, unsqueeze, permute, transpose, reshape and
// flatten. A reshape is a view of its input's axes where the merges and
// splits allow one; the ops only build IR (ir.h describes each op).
#include <algorithm>
#include <optional>
#include <set>

#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/ops_axes.h"

namespace smelt {

using op_axes::elementwiseAxis;
using op_axes::viewExtent;

namespace {

int64_t normalizeDim(const char* op, const TensorView* tv, int64_t dim, int64_t rank) {
  int64_t n = dim < 0 ? dim + rank : dim;
  SMELT_CHECK(n >= 0 && n < rank, op, ": dimension ", dim, " is out of range for tensor ",
              tv->name(), " of rank ", rank);
  return n;
}

std::string shapeText(const std::vector<IntExpr>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + shape[i].toString();
  return text + "]";
}

TensorView* squeezeFlagged(TensorView* in, const std::vector<bool>& squeezed) {
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  std::vector<IterDomain*> out_axes;
  for (size_t d = 0; d < in_axes.size(); ++d) {
    if (!squeezed[d]) out_axes.push_back(elementwiseAxis(f, in_axes[d]));
  }
  TensorView* out = f->newTensor(in->dtype(), std::move(out_axes));
  f->newExpr<SqueezeOp>(out, in, squeezed);
  return out;
}

// Consecutive input axes (indices) and the consecutive output extents they
// become: the inputs are merged, then split into the outputs.
struct ViewGroup {
  std::vector<size_t> in;
  std::vector<IntExpr> out;
};

int64_t checkedProduct(int64_t a, int64_t b, const TensorView* tv) {
  int64_t p = 0;
  SMELT_CHECK(!__builtin_mul_overflow(a, b, &p), "reshape: tensor ", tv->name(),
              " has more elements than int64 can count");
  return p;
}

IntExpr productOf(const std::vector<IntExpr>& extents) {
  IntExpr p = 1;
  for (const IntExpr& e : extents) p = p * e;
  return p;
}

// An extent as a product: an integer coefficient times factors that are not
// products themselves (symbols, or sums and quotients taken whole), ordered
// by their text. Extents with equal monomials are equal for every binding of
// their symbols, so a reshape entry x.size(2) * x.size(3) (or the extent of
// another tensor) matches the extent a merge gave, in either order.
struct Monomial {
  int64_t coefficient = 1;
  std::vector<IntExpr> factors;
};

void collectFactors(const IntExpr& e, Monomial& m, const TensorView* tv) {
  if (e.kind() == IntExpr::Kind::Mul) {
    collectFactors(e.lhs(), m, tv);
    collectFactors(e.rhs(), m, tv);
  } else if (auto c = e.constant()) {
    m.coefficient = checkedProduct(m.coefficient, *c, tv);
  } else {
    m.factors.push_back(e);
  }
}

Monomial monomialOf(const IntExpr& e, const TensorView* tv) {
  Monomial m;
  collectFactors(e, m, tv);
  std::sort(m.factors.begin(), m.factors.end(),
            [](const IntExpr& a, const IntExpr& b) { return a.toString() < b.toString(); });
  return m;
}

// `a / b` when `b`'s monomial divides `a`'s (the quotient needs no check at
// run time), else nullopt.
std::optional<IntExpr> exactQuotient(const IntExpr& a, const IntExpr& b, const TensorView* tv) {
  const Monomial ma = monomialOf(a, tv);
  const Monomial mb = monomialOf(b, tv);
  if (mb.coefficient <= 0 || ma.coefficient % mb.coefficient != 0) return std::nullopt;
  std::vector<IntExpr> rest = ma.factors;
  for (const IntExpr& f : mb.factors) {
    auto it = std::find_if(rest.begin(), rest.end(), [&](const IntExpr& r) { return r.sameAs(f); });
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  return productOf(rest) * (ma.coefficient / mb.coefficient);
}

bool sameExtent(const IntExpr& a, const IntExpr& b, const TensorView* tv) {
  const std::optional<IntExpr> q = exactQuotient(a, b, tv);
  return q && q->constant() == 1;
}

// Peels groups off the front (or back) of in[in_lo, in_hi) and
// out[out_lo, out_hi): an extent equal on both sides passes through; runs of
// constants regroup while their products agree. Stops at the wildcard (-1,
// nullopt) and at symbolic extents it cannot match. Groups come out in the
// order peeled.
std::vector<ViewGroup> peelGroups(const std::vector<IntExpr>& in,
                                  const std::vector<std::optional<IntExpr>>& out, size_t& in_lo,
                                  size_t& in_hi, size_t& out_lo, size_t& out_hi, bool front,
                                  const TensorView* tv) {
  std::vector<ViewGroup> groups;
  while (in_lo < in_hi && out_lo < out_hi) {
    auto in_at = [&](size_t k) { return front ? in_lo + k : in_hi - 1 - k; };
    auto out_at = [&](size_t k) { return front ? out_lo + k : out_hi - 1 - k; };
    const std::optional<IntExpr>& first_out = out[out_at(0)];
    if (!first_out) break;
    ViewGroup g{{in_at(0)}, {*first_out}};
    if (!sameExtent(in[in_at(0)], *first_out, tv)) {
      if (!in[in_at(0)].isConstant() || !first_out->isConstant()) break;
      int64_t p_in = *in[in_at(0)].constant();
      int64_t p_out = *first_out->constant();
      bool matched = true;
      while (matched && p_in != p_out) {
        if (p_in < p_out) {
          matched = g.in.size() < in_hi - in_lo && in[in_at(g.in.size())].isConstant();
          if (!matched) break;
          p_in = checkedProduct(p_in, *in[in_at(g.in.size())].constant(), tv);
          g.in.push_back(in_at(g.in.size()));
        } else {
          matched = g.out.size() < out_hi - out_lo && out[out_at(g.out.size())] &&
                    out[out_at(g.out.size())]->isConstant();
          if (!matched) break;
          p_out = checkedProduct(p_out, *out[out_at(g.out.size())]->constant(), tv);
          g.out.push_back(*out[out_at(g.out.size())]);
        }
      }
      if (!matched) break;
    }
    if (!front) {
      std::reverse(g.in.begin(), g.in.end());
      std::reverse(g.out.begin(), g.out.end());
    }
    if (front) {
      in_lo += g.in.size();
      out_lo += g.out.size();
    } else {
      in_hi -= g.in.size();
      out_hi -= g.out.size();
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

// The view: out's root copies in's axes, its logical axes come from merging
// each group's inputs and splitting the result into the group's outputs.
TensorView* viewGroups(TensorView* in, const std::vector<ViewGroup>& groups) {
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> root;
  for (const IterDomain* id : in->logicalNoReductions()) {
    root.push_back(f->newIterDomain(viewExtent(id), IterType::Iteration));
  }
  std::vector<IterDomain*> logical;
  for (const ViewGroup& g : groups) {
    IterDomain* current = root[g.in[0]];
    if (g.in.size() == 1 && g.out.size() == 1 && sameExtent(current->extent(), g.out[0], in)) {
      logical.push_back(current);  // passes through: the same axis in root and logical
      continue;
    }
    for (size_t k = 1; k < g.in.size(); ++k) {
      IterDomain* next = root[g.in[k]];
      IterDomain* merged = f->newIterDomain(current->extent() * next->extent(), IterType::Iteration);
      f->newTransform({IdTransform::Kind::Merge, {current, next}, {merged}, IntExpr(), true});
      current = merged;
    }
    for (size_t k = 0; k + 1 < g.out.size(); ++k) {
      IntExpr factor = productOf({g.out.begin() + k + 1, g.out.end()});
      IterDomain* outer = f->newIterDomain(g.out[k], IterType::Iteration);
      IterDomain* inner = f->newIterDomain(factor, IterType::Iteration);
      f->newTransform({IdTransform::Kind::Split, {current}, {outer, inner}, factor, true});
      logical.push_back(outer);
      current = inner;
    }
    logical.push_back(current);
  }
  TensorView* out = f->newTensor(in->dtype(), std::move(logical));
  out->setRootDomain(std::move(root));
  f->newExpr<ReshapeOp>(out, in);
  return out;
}

}  // namespace

TensorView* permute(TensorView* in, const std::vector<int64_t>& dims) {
  SMELT_CHECK(in != nullptr, "permute: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  auto rank = static_cast<int64_t>(in_axes.size());
  SMELT_CHECK(static_cast<int64_t>(dims.size()) == rank, "permute: tensor ", in->name(),
              " has rank ", rank, " but ", dims.size(), " dimensions were given");
  std::vector<int64_t> normalized;
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    int64_t n = normalizeDim("permute", in, d, rank);
    SMELT_CHECK(!seen[n], "permute: dimension ", d, " of tensor ", in->name(), " is listed twice");
    seen[n] = true;
    normalized.push_back(n);
  }
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> out_axes;
  for (int64_t n : normalized) out_axes.push_back(elementwiseAxis(f, in_axes[n]));
  TensorView* out = f->newTensor(in->dtype(), std::move(out_axes));
  f->newExpr<PermuteOp>(out, in, std::move(normalized));
  return out;
}

TensorView* transpose(TensorView* in, int64_t dim0, int64_t dim1) {
  SMELT_CHECK(in != nullptr, "transpose: input is null");
  auto rank = static_cast<int64_t>(in->logicalNoReductions().size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::swap(dims[normalizeDim("transpose", in, dim0, rank)],
            dims[normalizeDim("transpose", in, dim1, rank)]);
  return permute(in, dims);
}

TensorView* squeeze(TensorView* in, const std::vector<int64_t>& dims) {
  SMELT_CHECK(in != nullptr, "squeeze: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  auto rank = static_cast<int64_t>(in_axes.size());
  std::vector<bool> squeezed(rank, false);
  for (int64_t d : dims) {
    int64_t n = normalizeDim("squeeze", in, d, rank);
    auto extent = viewExtent(in_axes[n]).constant();
    SMELT_CHECK(extent.has_value(), "squeeze: dimension ", d, " of tensor ", in->name(),
                " has symbolic extent ", in_axes[n]->loopExtent(),
                "; whether it is 1 is only known at run time");
    squeezed[n] = *extent == 1;
  }
  if (std::none_of(squeezed.begin(), squeezed.end(), [](bool s) { return s; })) return set(in);
  return squeezeFlagged(in, squeezed);
}

TensorView* unsqueeze(TensorView* in, int64_t dim) {
  SMELT_CHECK(in != nullptr, "unsqueeze: input is null");
  auto rank = static_cast<int64_t>(in->logicalNoReductions().size()) + 1;
  std::vector<bool> is_new(rank, false);
  is_new[normalizeDim("unsqueeze", in, dim, rank)] = true;
  return broadcast(in, is_new);
}

TensorView* reshape(TensorView* in, const std::vector<IntExpr>& shape) {
  SMELT_CHECK(in != nullptr, "reshape: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  std::vector<IntExpr> in_shape;
  for (const IterDomain* id : in_axes) in_shape.push_back(viewExtent(id));
  const std::string request = "reshape of tensor " + in->name() + " with shape " +
                              shapeText(in_shape) + " into " + shapeText(shape);
  std::vector<std::optional<IntExpr>> entries;  // nullopt: the -1 entry
  for (const IntExpr& e : shape) {
    auto c = e.constant();
    SMELT_CHECK(!c || *c > 0 || *c == -1, request, ": extent ", e, " must be positive or -1");
    SMELT_CHECK(!(c == -1 && std::count(entries.begin(), entries.end(), std::nullopt)),
                request, ": only one extent can be -1");
    entries.push_back(c == -1 ? std::nullopt : std::optional<IntExpr>(e));
  }
  // With constant extents the element counts must agree and -1 is known.
  bool all_constant = std::all_of(in_shape.begin(), in_shape.end(),
                                  [](const IntExpr& e) { return e.isConstant(); }) &&
                      std::all_of(entries.begin(), entries.end(), [](const auto& e) {
                        return !e || e->isConstant();
                      });
  if (all_constant) {
    int64_t numel = 1, known = 1;
    for (const IntExpr& e : in_shape) numel = checkedProduct(numel, *e.constant(), in);
    for (const auto& e : entries) known = e ? checkedProduct(known, *e->constant(), in) : known;
    bool has_wildcard = std::count(entries.begin(), entries.end(), std::nullopt) > 0;
    SMELT_CHECK(has_wildcard ? numel % known == 0 : numel == known, request, ": ", numel,
                " elements do not fit the new shape");
    for (auto& e : entries) e = e ? e : std::optional<IntExpr>(numel / known);
  }
  bool same_shape = entries.size() == in_shape.size();
  for (size_t d = 0; same_shape && d < entries.size(); ++d) {
    same_shape = entries[d] && sameExtent(entries[d].value(), in_shape[d], in);
  }
  if (same_shape) return set(in);
  // A reshape of a reshape regroups the first one's input directly (same
  // elements, same order): view(15).view(3, 5) of a [3, 5] tensor is no view
  // at all, and no loop has to re-merge what another split.
  if (in->definition() != nullptr && in->definition()->type() == ExprType::Reshape) {
    std::vector<IntExpr> resolved;
    for (const auto& e : entries) resolved.push_back(e.value_or(IntExpr(-1)));
    TensorView* source = static_cast<TensorView*>(in->definition()->inputs().at(0));
    try {
      return reshape(source, resolved);
    } catch (const Error& e) {
      throw Error(request + ", which regroups " + source->name() + " (the tensor " + in->name() +
                  " reshapes): " + e.what());
    }
  }
  // 1. Extent-1 input dimensions are squeezed.
  std::vector<bool> squeezed;
  for (const IntExpr& e : in_shape) squeezed.push_back(e.constant() == 1);
  TensorView* current = in;
  if (std::count(squeezed.begin(), squeezed.end(), true)) current = squeezeFlagged(in, squeezed);
  std::vector<IntExpr> from;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (!squeezed[d]) from.push_back(in_shape[d]);
  }
  // 2. The other dimensions regroup into the entries other than 1.
  std::vector<bool> is_new_axis;
  std::vector<std::optional<IntExpr>> to;
  for (const auto& e : entries) {
    is_new_axis.push_back(e && e->constant() == 1);
    if (!is_new_axis.back()) to.push_back(e);
  }
  size_t in_lo = 0, in_hi = from.size(), out_lo = 0, out_hi = to.size();
  std::vector<ViewGroup> groups = peelGroups(from, to, in_lo, in_hi, out_lo, out_hi, true, in);
  std::vector<ViewGroup> back = peelGroups(from, to, in_lo, in_hi, out_lo, out_hi, false, in);
  if (in_lo < in_hi || out_lo < out_hi) {
    // What remains merges into the remaining entries and splits into them
    // again, which needs no check at run time when their product is exactly
    // the merged extent (the -1 entry, if any, is the quotient).
    std::vector<IntExpr> rest(from.begin() + in_lo, from.begin() + in_hi);
    std::vector<std::optional<IntExpr>> wanted(to.begin() + out_lo, to.begin() + out_hi);
    std::vector<IntExpr> known;
    for (const auto& e : wanted) {
      if (e) known.push_back(*e);
    }
    std::optional<IntExpr> quotient;
    if (!rest.empty()) quotient = exactQuotient(productOf(rest), productOf(known), in);
    const bool has_wildcard = known.size() < wanted.size();
    const bool exact = !wanted.empty() && quotient && (has_wildcard || quotient->constant() == 1);
    SMELT_CHECK(exact || !(rest.size() == 1 && wanted.size() > 1), request,
                ": splitting dimension ", in_lo, " (symbolic extent ", rest.empty() ? IntExpr() : rest[0],
                ") into several would need a divisibility check at run time; reshape splits a "
                "symbolic dimension only into extents whose product it is");
    SMELT_CHECK(exact, request, ": dimensions of extents ", shapeText(rest),
                " cannot be matched with the requested extents; symbolic dimensions must pass "
                "through unchanged, merge into one entry or split into extents whose product "
                "they are");
    std::vector<IntExpr> outs;
    for (const auto& e : wanted) outs.push_back(e ? *e : *quotient);
    std::vector<size_t> in_indices;
    for (size_t k = in_lo; k < in_hi; ++k) in_indices.push_back(k);
    groups.push_back({in_indices, outs});
  }
  groups.insert(groups.end(), back.rbegin(), back.rend());
  bool passes_through = std::all_of(groups.begin(), groups.end(), [&](const ViewGroup& g) {
    return g.in.size() == 1 && g.out.size() == 1 && sameExtent(from[g.in[0]], g.out[0], in);
  });
  if (!passes_through) current = viewGroups(current, groups);
  // 3. Entries of extent 1 are new broadcast dimensions.
  if (std::count(is_new_axis.begin(), is_new_axis.end(), true)) {
    current = broadcast(current, is_new_axis);
  }
  return current == in ? set(in) : current;
}

TensorView* flatten(TensorView* in, int64_t start_dim, int64_t end_dim) {
  SMELT_CHECK(in != nullptr, "flatten: input is null");
  std::vector<IterDomain*> in_axes = in->logicalNoReductions();
  auto rank = static_cast<int64_t>(in_axes.size());
  if (rank == 0) return reshape(in, {1});
  int64_t start = normalizeDim("flatten", in, start_dim, rank);
  int64_t end = normalizeDim("flatten", in, end_dim, rank);
  SMELT_CHECK(start <= end, "flatten: start dimension ", start_dim, " of tensor ", in->name(),
              " comes after end dimension ", end_dim);
  std::vector<IntExpr> shape;
  IntExpr merged = 1;
  for (int64_t d = 0; d < rank; ++d) {
    IntExpr extent = viewExtent(in_axes[d]);
    if (d < start || d > end) {
      shape.push_back(extent);
      continue;
    }
    merged = merged * extent;
    if (d == end) shape.push_back(merged);
  }
  return reshape(in, shape);
}

}  // namespace smelt
