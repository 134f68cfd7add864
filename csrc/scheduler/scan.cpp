#include "scheduler/scan.h"

#include <algorithm>
#include <sstream>

#include "fusion/device_limits.h"
#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "scheduler/utils.h"

namespace smelt {

namespace {

using scheduler_utils::kMaxGridY;

const ScanOp* theScan(const Fusion& fusion) {
  return static_cast<const ScanOp*>(scheduler_utils::onlyExprOf(fusion, ExprType::Scan));
}

// The output's logical axes other than the scan axis, outermost first.
std::vector<IterDomain*> otherAxes(const ScanOp* scan) {
  std::vector<IterDomain*> axes = scan->output()->logicalDomain();
  axes.erase(axes.begin() + scan->dim());
  return axes;
}

// Whether the scan reads a fusion input whose scan dimension is innermost
// and contiguous, with the extent and every other stride multiples of
// `items` and the data aligned to `items` elements: then each thread's items
// of a tile are one aligned vector.
bool itemsVectorize(const ScanOp* scan, const RuntimeInfo& runtime, int64_t items) {
  const TensorView* in = scan->input(0)->asTensor();
  const InputInfo* info = runtime.inputInfo(in);
  const int64_t rank = static_cast<int64_t>(in->logicalDomain().size());
  if (info == nullptr || items < 2 || scan->dim() != rank - 1 || info->strides.back() != 1 ||
      info->sizes.back() % items != 0 || info->alignment < items * dataTypeSize(in->dtype())) {
    return false;
  }
  for (int64_t d = 0; d + 1 < rank; ++d) {
    if (info->sizes[d] != 1 && info->strides[d] % items != 0) return false;
  }
  return true;
}

}  // namespace

std::string ScanParams::toString() const {
  std::ostringstream os;
  os << "ScanParams{";
  if (block_scan) {
    os << "block_scan, block_threads=" << block_threads << ", items_per_thread=" << items_per_thread
       << (vectorize_items ? ", vectorize_items" : "");
  } else {
    os << "block_x=" << block_x;
  }
  os << (split_grid_y ? ", split_grid_y" : "") << "}";
  return os.str();
}

std::unique_ptr<HeuristicParams> ScanParams::clone() const {
  return std::make_unique<ScanParams>(*this);
}

std::string scanRejectReason(const Fusion& fusion) {
  int64_t scans = 0;
  for (const Expr* expr : fusion.exprs()) scans += expr->type() == ExprType::Scan;
  if (scans != 1) return "it has " + std::to_string(scans) + " scans, not one";
  const ScanOp* scan = theScan(fusion);
  for (const Expr* expr : fusion.exprs()) {
    // A pad of an input reads it through a bounds predicate in the scan's
    // loops (the chunked scan's exclusive prefix: its totals shifted by one).
    const bool padded_input = expr->type() == ExprType::Pad && expr->input(0)->isFusionInput();
    if (expr != scan && !scheduler_utils::isElementwise(expr) && !padded_input) {
      return "the expression " + expr->toString() + " around the scan is neither element-wise nor a pad of an input";
    }
  }
  return "";
}

ScanParams scanHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  const std::string reason = scanRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "scan scheduler cannot take this fusion: ", reason);
  ScanParams params;
  const std::vector<IterDomain*> others = otherAxes(theScan(fusion));
  const size_t n = others.size();
  // A block no wider than the innermost other extent (rounded up to a power
  // of two, at least a warp): threads past it would only be predicated off.
  if (n >= 1) {
    const int64_t rows = runtime.extent(others[n - 1]);
    params.block_x = std::clamp<int64_t>(scheduler_utils::nextPowerOfTwo(rows), 32, params.block_x);
  }
  params.split_grid_y = n >= 2 && runtime.extent(others[n - 2]) > kMaxGridY;
  const ScanOp* scan = theScan(fusion);
  int64_t rows = 1;
  for (const IterDomain* id : others) rows *= runtime.extent(id);
  const int64_t extent = runtime.extent(scan->output()->logicalDomain().at(scan->dim()));
  const int64_t sm_count = DeviceLimits::forArch(runtime.targetArch()).sm_count;
  if (extent >= kBlockScanMinExtent && rows < blockScanMaxRows(sm_count)) {
    params.block_scan = true;
    params.split_grid_y = false;  // fewer rows than gridDim.y's limit
    params.items_per_thread = std::max<int64_t>(1, 16 / dataTypeSize(scan->input(0)->dtype()));
    const int64_t widest = rows < sm_count ? 1024 : 256;
    const int64_t needed = scheduler_utils::ceilDiv(extent, params.items_per_thread);
    params.block_threads = std::clamp<int64_t>(scheduler_utils::nextPowerOfTwo(needed), 32, widest);
    params.vectorize_items = itemsVectorize(scan, runtime, params.items_per_thread);
  }
  return params;
}

namespace {

// The block form (lower/block_scan.h) of `scan`, its scan axis already
// innermost: [rows..., tiles, threads, items], the input a register array
// computed at the items axis.
void scheduleBlockScan(Fusion& fusion, const ScanOp* scan, const ScanParams& params) {
  TensorView* out = scan->output();
  const int64_t rank = out->nDims();
  TensorView* items = scan->input(0)->asTensor();
  if (items->isFusionInput() || items->isFusionOutput()) items = items->cacheAfter();
  items->setMemoryType(MemoryType::Local);
  out->split(rank - 1, params.items_per_thread);
  out->split(rank - 1, params.block_threads);
  out->axis(rank)->parallelize(ParallelType::TIDx);
  if (rank >= 2) out->axis(rank - 2)->parallelize(ParallelType::BIDx);
  if (rank >= 3) out->axis(rank - 3)->parallelize(ParallelType::BIDy);
  propagateSchedule(out);
  inlineMost(&fusion);
  items->inlineAt(rank + 1);
  if (params.vectorize_items) items->axis(rank + 1)->parallelize(ParallelType::Vectorize);
}

}  // namespace

void scheduleScan(Fusion& fusion, const ScanParams& params) {
  FusionGuard guard(&fusion);
  const std::string reason = scanRejectReason(fusion);
  SMELT_CHECK(reason.empty(), "scan scheduler cannot take this fusion: ", reason);
  SMELT_CHECK(params.block_x >= 1, "scan scheduler: block_x must be positive in ", params.toString());
  const ScanOp* scan = theScan(fusion);
  TensorView* out = scan->output();
  const int64_t rank = out->nDims();
  // The scan axis innermost, whole and serial: the other axes' loops around it.
  if (scan->dim() != rank - 1) out->reorder({{scan->dim(), rank - 1}});
  if (params.block_scan) return scheduleBlockScan(fusion, scan, params);
  if (rank >= 2) {
    scheduler_utils::parallelizeRows(out, rank - 2, params.block_x, params.split_grid_y);
  }
  propagateSchedule(out);
  inlineMost(&fusion);
}

}  // namespace smelt
