// scatter(): builds a ScatterOp after torch's shape rules (ir.h describes
// the semantics).
#include <limits>
#include <optional>

#include "fusion/error.h"
#include "fusion/fusion.h"
#include "fusion/ops.h"

namespace smelt {

namespace {

// Whether extent `a` may exceed `b`: only constants are compared here; the
// runtime checks symbolic ones (runtime/executor.cpp, scatter outputs).
bool exceeds(const IntExpr& a, const IntExpr& b) {
  const std::optional<int64_t> x = a.constant(), y = b.constant();
  return x && y && *x > *y;
}

// src cropped to the index's extents (torch reads src only there) and cast
// to self's dtype; a scalar is converted when it is stored.
Val* sourceFor(const std::string& op, Val* src, const std::vector<IterDomain*>& index_axes,
               DataType dtype) {
  TensorView* tv = src->asTensor();
  if (tv == nullptr) return src;
  const std::vector<IterDomain*> src_axes = tv->logicalNoReductions();
  SMELT_CHECK(src_axes.size() == index_axes.size(), op, ": src ", tv->name(), " has rank ",
              src_axes.size(), " but the index has rank ", index_axes.size());
  std::vector<int64_t> starts(src_axes.size(), 0), stops;
  bool crop = false;
  for (size_t d = 0; d < src_axes.size(); ++d) {
    const IntExpr s = src_axes[d]->loopExtent(), i = index_axes[d]->loopExtent();
    SMELT_CHECK(!exceeds(i, s), op, ": dimension ", d, " of the index has extent ", i,
                " but dimension ", d, " of src ", tv->name(), " has extent ", s,
                "; the index may not be larger than src");
    // Symbolic extents are mapped, so equal when the fusion runs.
    const bool smaller = exceeds(s, i);
    crop = crop || smaller;
    stops.push_back(smaller ? *i.constant() : std::numeric_limits<int64_t>::max());
  }
  if (crop) tv = slice(tv, starts, stops);
  return tv->dtype() == dtype ? tv : castOp(dtype, tv);
}

}  // namespace

TensorView* scatter(TensorView* self, int64_t dim, TensorView* index, Val* src,
                    ScatterCombine combine, bool wrap_negative) {
  const std::string op = ScatterOp::nameOf(combine);
  SMELT_CHECK(self != nullptr && index != nullptr && src != nullptr, op, ": an input is null");
  SMELT_CHECK(isIntegralType(index->dtype()) && index->dtype() != DataType::Bool, op, ": index ",
              index->name(), " has dtype ", index->dtype(), "; indices are integers");
  const std::vector<IterDomain*> self_axes = self->logicalNoReductions();
  const std::vector<IterDomain*> index_axes = index->logicalNoReductions();
  const int64_t rank = static_cast<int64_t>(self_axes.size());
  SMELT_CHECK(rank > 0, op, ": ", self->name(), " has rank 0; scatter needs a dimension");
  const int64_t d = dim < 0 ? dim + rank : dim;
  SMELT_CHECK(d >= 0 && d < rank, op, ": dimension ", dim, " is out of range for ", self->name(),
              " of rank ", rank);
  SMELT_CHECK(static_cast<int64_t>(index_axes.size()) == rank, op, ": index ", index->name(),
              " has rank ", index_axes.size(), " but ", self->name(), " has rank ", rank);
  for (int64_t k = 0; k < rank; ++k) {
    const IntExpr s = self_axes[k]->loopExtent(), i = index_axes[k]->loopExtent();
    SMELT_CHECK(k == d || !exceeds(i, s), op, ": dimension ", k, " of index ", index->name(),
                " has extent ", i, " but dimension ", k, " of ", self->name(), " has extent ", s,
                "; the index may not be larger outside dimension ", d);
  }
  Val* source = sourceFor(op, src, index_axes, self->dtype());
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> logical, iteration;
  for (const IterDomain* id : self_axes) logical.push_back(f->newIterDomain(id->loopExtent(), IterType::Iteration));
  for (const IterDomain* id : index_axes) iteration.push_back(f->newIterDomain(id->loopExtent(), IterType::Iteration));
  TensorView* out = f->newTensor(self->dtype(), std::move(logical));
  out->setIterationDomain(std::move(iteration));
  f->newExpr<ScatterOp>(out, self, index, source, d, combine, wrap_negative);
  return out;
}

}  // namespace smelt
