#include "scheduler/chunked_scan.h"

#include <limits>
#include <vector>

#include "fusion/device_limits.h"
#include "fusion/ops.h"
#include "scheduler/scan.h"
#include "scheduler/utils.h"

namespace smelt {

namespace {

using scheduler_utils::ceilDiv;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The scan's rows and extent when every extent is a constant and no other
// axis is a broadcast (a reshape would drop it); nullopt otherwise.
struct ScanShape {
  int64_t rows = 1;
  int64_t extent = 0;
};
std::optional<ScanShape> constantShape(const ScanOp* scan) {
  ScanShape shape;
  const std::vector<IterDomain*> axes = scan->output()->logicalDomain();
  for (size_t d = 0; d < axes.size(); ++d) {
    const std::optional<int64_t> extent = axes[d]->extent().constant();
    if (!extent || axes[d]->isBroadcast()) return std::nullopt;
    (static_cast<int64_t>(d) == scan->dim() ? shape.extent : shape.rows) = *extent;
  }
  return shape;
}

std::optional<ScanChunking> chunkingOf(const ScanOp* scan, const RuntimeInfo& runtime) {
  const std::optional<ScanShape> shape = constantShape(scan);
  if (!shape) return std::nullopt;
  return scanChunking(shape->rows, shape->extent, DeviceLimits::forArch(runtime.targetArch()).sm_count);
}

// The combine of two tensors element-wise, with the scan's semantics.
TensorView* combined(ScanCombine combine, TensorView* a, TensorView* b) {
  switch (combine) {
    case ScanCombine::Add: return add(a, b);
    case ScanCombine::Mul: return mul(a, b);
    case ScanCombine::Max: return maximum(a, b);
    case ScanCombine::Min: return minimum(a, b);
    case ScanCombine::LogAddExp: break;
  }
  // max + log1p(exp(-|a - b|)); where both are the same infinity, that
  // infinity (the difference would be NaN).
  TensorView* general = add(maximum(a, b), log1p(exp(neg(abs(sub(a, b))))));
  return where(logicalAnd(eq(a, b), eq(abs(a), kInf)), a, general);
}

// The combine over axis `axis` of `v`: a reduction (min as the max of the
// negated or complemented values; log-add-exp as max + log(sum(exp(v - max))),
// the max itself where it is infinite).
TensorView* totalOver(ScanCombine combine, TensorView* v, int64_t axis) {
  const bool floating = isFloatingType(v->dtype());
  switch (combine) {
    case ScanCombine::Add: return sum(v, {axis});
    case ScanCombine::Mul: return prod(v, {axis});
    case ScanCombine::Max: return max(v, {axis});
    case ScanCombine::Min: return floating ? neg(max(neg(v), {axis})) : bitwiseNot(max(bitwiseNot(v), {axis}));
    case ScanCombine::LogAddExp: break;
  }
  TensorView* m = max(v, {axis});
  std::vector<bool> new_axis(v->logicalNoReductions().size(), false);
  new_axis[axis] = true;
  TensorView* s = sum(exp(sub(v, broadcast(m, new_axis))), {axis});
  return where(eq(abs(m), kInf), m, add(m, log(s)));
}

// One scan rewritten as chunkLongScans describes.
void rewriteScan(Fusion& fusion, ScanOp* op, const ScanChunking& chunking) {
  FusionGuard guard(&fusion);
  TensorView* out = op->output();
  TensorView* in = op->in();
  const ScanCombine combine = op->combine();
  // Also the identity of the accumulator types below: where the scan's is
  // bool's (0 for max, 1 for min), the values are 0 and 1 in int32.
  const double identity = op->initValue();
  const int64_t d = op->dim();
  const int64_t rank = out->nDims();
  const DataType accumulator = in->dtype() == DataType::Bool ? DataType::Int32 : op->accumulatorType();
  const std::vector<IterDomain*> axes = out->logicalDomain();
  const int64_t extent = axes[d]->extent().constant().value();
  const int64_t padding = chunking.chunks * chunking.length - extent;
  std::vector<IntExpr> chunked_shape, row_shape;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t e = axes[k]->extent().constant().value();
    if (k == d) {
      chunked_shape.insert(chunked_shape.end(), {IntExpr(chunking.chunks), IntExpr(chunking.length)});
      row_shape.push_back(IntExpr(chunking.chunks * chunking.length));
    } else {
      chunked_shape.push_back(IntExpr(e));
      row_shape.push_back(IntExpr(e));
    }
  }
  auto widthsAt = [rank](int64_t axis, std::pair<int64_t, int64_t> width) {
    std::vector<std::pair<int64_t, int64_t>> widths(rank, {0, 0});
    widths[axis] = width;
    return widths;
  };
  // [.., C, L, ..] in the accumulator type: a chain of its own for each
  // reader, so that each reads the input through its own view.
  auto chunkedInput = [&]() {
    TensorView* x = in->dtype() == accumulator ? in : castOp(accumulator, in);
    if (padding > 0) x = padAxes(x, widthsAt(d, {0, padding}), identity);
    return reshape(x, chunked_shape);
  };
  TensorView* totals = totalOver(combine, chunkedInput(), d + 1);
  TensorView* shifted = padAxes(totals, widthsAt(d, {1, -1}), identity);
  TensorView* prefix = scan(shifted, d, combine);
  std::vector<bool> new_axis(rank + 1, false);
  new_axis[d + 1] = true;
  TensorView* result = combined(combine, broadcast(prefix, new_axis), scan(chunkedInput(), d + 1, combine));
  if (result->dtype() != out->dtype()) result = castOp(out->dtype(), result);
  result = reshape(result, row_shape);
  if (padding > 0) result = padAxes(result, widthsAt(d, {0, -padding}));
  fusion.removeExpr(op);
  fusion.newExpr<LoadStoreOp>(out, result);
}

}  // namespace

std::optional<ScanChunking> scanChunking(int64_t rows, int64_t extent, int64_t sm_count) {
  if (rows <= 0 || rows >= sm_count) return std::nullopt;
  const int64_t fewest = std::max(ceilDiv(sm_count, rows), ceilDiv(extent, kMaxScanChunk));
  if (extent < fewest * kBlockScanMinExtent) return std::nullopt;
  std::optional<int64_t> dividing;
  for (int64_t chunks = fewest; chunks <= 2 * fewest && extent / chunks >= kBlockScanMinExtent; ++chunks) {
    if (extent % chunks != 0) continue;
    if ((extent / chunks) % 4 == 0) return ScanChunking{chunks, extent / chunks};
    if (!dividing) dividing = chunks;
  }
  if (dividing) return ScanChunking{*dividing, extent / *dividing};
  // Padded: a length of whole vectors of 4.
  return ScanChunking{fewest, ceilDiv(ceilDiv(extent, fewest), 4) * 4};
}

std::unique_ptr<Fusion> chunkLongScans(const Fusion& fusion, const RuntimeInfo& runtime) {
  bool any = false;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->type() == ExprType::Scan) any = any || chunkingOf(static_cast<const ScanOp*>(expr), runtime);
  }
  if (!any) return nullptr;
  std::unique_ptr<Fusion> chunked = fusion.clone();
  for (Expr* expr : chunked->exprs()) {
    if (expr->type() != ExprType::Scan) continue;
    auto* op = static_cast<ScanOp*>(expr);
    if (std::optional<ScanChunking> chunking = chunkingOf(op, runtime)) rewriteScan(*chunked, op, *chunking);
  }
  return chunked;
}

}  // namespace smelt
