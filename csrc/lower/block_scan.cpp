#include "lower/block_scan.h"

namespace smelt {

namespace {

// The split whose outputs are exactly (outer, inner), or nullptr.
const IdTransform* splitInto(const IterDomain* outer, const IterDomain* inner) {
  const IdTransform* t = inner->definition();
  if (t == nullptr || t->kind != IdTransform::Kind::Split || outer->definition() != t) return nullptr;
  return t->outputs.at(0) == outer && t->outputs.at(1) == inner ? t : nullptr;
}

}  // namespace

std::optional<BlockScanAxes> blockScanAxes(const ScanOp* scan) {
  const TensorView* out = scan->output();
  const int64_t n = out->nDims();
  if (n < 3) return std::nullopt;
  const IterDomain* tiles = out->axis(n - 3);
  const IterDomain* threads = out->axis(n - 2);
  const IterDomain* items = out->axis(n - 1);
  // scan axis -> [outer, items], outer -> [tiles, threads]
  const IdTransform* inner_split = items->definition();
  if (inner_split == nullptr || inner_split->kind != IdTransform::Kind::Split ||
      inner_split->inputs.at(0) != out->logicalDomain().at(scan->dim()) ||
      inner_split->outputs.at(1) != items) {
    return std::nullopt;
  }
  const IdTransform* outer_split = splitInto(tiles, threads);
  if (outer_split == nullptr || outer_split->inputs.at(0) != inner_split->outputs.at(0)) return std::nullopt;
  if (threads->parallelType() != ParallelType::TIDx) return std::nullopt;
  return BlockScanAxes{n - 3, n - 2, n - 1};
}

}  // namespace smelt
