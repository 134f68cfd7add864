// scan(): builds a ScanOp (ir.h describes the semantics).
#include "fusion/error.h"
#include "fusion/fusion.h"
#include "fusion/ops.h"

namespace smelt {

TensorView* scan(TensorView* in, int64_t dim, ScanCombine combine) {
  const std::string op = ScanOp::nameOf(combine);
  SMELT_CHECK(in != nullptr, op, ": the input is null");
  const std::vector<IterDomain*> axes = in->logicalNoReductions();
  const int64_t rank = static_cast<int64_t>(axes.size());
  SMELT_CHECK(rank > 0, op, ": ", in->name(), " has rank 0; a scan needs a dimension");
  const int64_t d = dim < 0 ? dim + rank : dim;
  SMELT_CHECK(d >= 0 && d < rank, op, ": dimension ", dim, " is out of range for ", in->name(),
              " of rank ", rank);
  SMELT_CHECK(combine != ScanCombine::LogAddExp || isFloatingType(in->dtype()), op, ": ",
              in->name(), " has dtype ", in->dtype(), "; logcumsumexp needs a floating dtype");
  SMELT_CHECK(in->dtype() != DataType::Bool || combine == ScanCombine::Max || combine == ScanCombine::Min,
              op, ": ", in->name(), " has dtype bool; cast it to an integer type first (torch sums "
              "and multiplies bool in int64)");
  Fusion* f = Fusion::current();
  std::vector<IterDomain*> logical;
  // As an element-wise op's: an expanded axis becomes a real one (its
  // elements differ once scanned), a plain broadcast stays one.
  for (const IterDomain* id : axes) {
    const bool broadcast = id->isPlainBroadcast();
    logical.push_back(f->newIterDomain(id->hasExpandedExtent() ? id->expandedExtent() : id->extent(),
                                       broadcast ? IterType::Broadcast : IterType::Iteration));
  }
  TensorView* out = f->newTensor(in->dtype(), std::move(logical));
  f->newExpr<ScanOp>(out, in, d, combine);
  return out;
}

}  // namespace smelt
