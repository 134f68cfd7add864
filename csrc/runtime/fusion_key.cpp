#include "runtime/fusion_key.h"

#include <sstream>
#include <unordered_set>

namespace smelt {

namespace {

// A scalar with its dtype and, for constants, the exact value (Scalar's own
// text rounds to 9 digits).
void appendScalar(std::ostringstream& os, const Scalar* scalar) {
  os << "  " << scalar->toString() << ": " << scalar->dtype();
  if (scalar->isConstant()) os << " = " << std::hexfloat << scalar->value() << std::defaultfloat;
  os << "\n";
}

}  // namespace

std::string fusionCacheKey(const Fusion& fusion) {
  std::ostringstream os;
  os << fusion.toString() << "contiguity:";
  for (const Val* in : fusion.inputs()) {
    const TensorView* tv = in->asTensor();
    if (tv == nullptr) continue;
    os << " " << tv->name() << "[";
    for (bool contiguous : tv->contiguity()) os << (contiguous ? 'c' : 'n');
    os << "]";
  }
  os << "\nscalars:\n";
  std::unordered_set<const Val*> seen;
  auto visit = [&](const Val* v) {
    const auto* scalar = dynamic_cast<const Scalar*>(v);
    if (scalar != nullptr && seen.insert(scalar).second) appendScalar(os, scalar);
  };
  for (const Val* in : fusion.inputs()) visit(in);
  for (const Expr* expr : fusion.exprs()) {
    for (const Val* in : expr->inputs()) visit(in);
  }
  return os.str();
}

}  // namespace smelt
