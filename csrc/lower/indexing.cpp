// Pass indexing: fills in every element access. Guarantees:
//   * an output element is addressed from the indices of the loops its
//     statement runs in: a Global tensor through its logical indices and the
//     "T<n>.stride[d]" parameters, a Shared/Local buffer row-major over its
//     allocated loop axes (a padded Shared buffer skipping the padding after
//     each row);
//   * an input element is addressed at the consumer's logical indices mapped
//     through the op (broadcast, expanded and squeezed axes read index 0;
//     a permute's axes map to their new positions; a reshape's input axes to
//     the output's root axes, whose indices come back through the view's
//     merges and splits), then through the producer's own splits and merges
//     to its allocation;
//   * a read of a padded axis carries the in-bounds predicate and pad value
//     (a cropped one needs none);
//   * an iota's value gets its output index as the first operand;
//   * an index_select's table is read along its selected dimension at
//     kir::kGatheredIndexSymbol, the value of its index operand;
//   * a scatter's output is written at its iteration indices, its dimension
//     `dim` at kir::kGatheredIndexSymbol (the statement loads the index
//     first); its operands are the index and src (self is copied into the
//     output before the kernel);
//   * a scan step's operands are its input element and its running value;
//   * a block scan reads its input's register array from element 0, its
//     first item at (tile * threads + threadIdx.x) * items of the scan axis.
#include <optional>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "lower/allocation.h"
#include "lower/block_scan.h"
#include "lower/passes.h"
#include "lower/transform_index.h"

namespace smelt {

namespace {

IntExpr rowMajor(const std::vector<IntExpr>& shape, const std::vector<IntExpr>& indices) {
  IntExpr index = 0;
  for (size_t i = 0; i < shape.size(); ++i) index = index * shape[i] + indices[i];
  return index;
}

IntExpr globalIndex(const TensorView* tv, const IndexMap& logical) {
  IntExpr index = 0;
  std::vector<IterDomain*> dims = tv->logicalNoReductions();
  for (size_t d = 0; d < dims.size(); ++d) {
    auto it = logical.find(dims[d]);
    if (dims[d]->isBroadcast() || it == logical.end()) continue;
    index = index + it->second * globalStride(tv, static_cast<int64_t>(d));
  }
  return index;
}

IntExpr allocationIndex(const LoweringContext& ctx, const TensorView* tv,
                        const std::vector<IntExpr>& loop_indices) {
  const kir::Buffer* buffer = ctx.bufferOf(tv);
  std::vector<IntExpr> indices;
  for (int64_t axis : allocatedAxes(ctx, tv)) indices.push_back(loop_indices[axis]);
  const IntExpr element = rowMajor(buffer->shape, indices);
  if (buffer->row_padding == 0) return element;
  // Padded rows (TensorView::padRows): skip the padding of the rows before.
  return element + element / buffer->row_elements * buffer->row_padding;
}

class Indexer {
 public:
  // `stmt`: the statement whose loops to use (a reduction init has its own).
  Indexer(const LoweringContext& ctx, const TensorView* out, const kir::Stmt* stmt = nullptr)
      : ctx_(ctx), out_(out) {
    for (int64_t k = 0; k < out->nDims(); ++k) {
      loop_indices_.push_back(ctx.loopIndex(out, k, stmt));
      // Each loop index lies in [0, extent) where the statement runs: serial
      // loops by their bounds, thread/block indices by the launch or by the
      // predicate that guards a loop narrower than the launch.
      const kir::ForLoop* loop = ctx.loopOf(out, k, stmt);
      if (loop_indices_.back().kind() == IntExpr::Kind::Symbol) bounds_[loop->index] = loop->extent;
    }
    logical_ = logicalIndices(out, loop_indices_);
  }

  kir::Access output() const {
    kir::Access access{ctx_.bufferOf(out_), 0};
    access.index = simplify(out_->memoryType() == MemoryType::Global
                                ? globalIndex(out_, scatterTarget().value_or(logical_))
                                : allocationIndex(ctx_, out_, loop_indices_),
                            bounds_);
    return access;
  }

  // A scatter writes at its iteration indices, dimension `dim` at the loaded
  // index; nullopt for any other output.
  std::optional<IndexMap> scatterTarget() const {
    const auto* scatter = dynamic_cast<const ScatterOp*>(out_->definition());
    if (scatter == nullptr) return std::nullopt;
    SMELT_CHECK(out_->memoryType() == MemoryType::Global, "scatter output ", out_->name(),
                " must stay in global memory (its writes land at loaded indices)");
    IndexMap target;
    const auto& logical = out_->logicalDomain();
    for (size_t d = 0; d < logical.size(); ++d) {
      target[logical[d]] = static_cast<int64_t>(d) == scatter->dim()
                               ? IntExpr::symbol(kir::kGatheredIndexSymbol)
                               : logical_.at(out_->loopRoot()[d]);
    }
    return target;
  }

  // The output element's row-major position over its logical dimensions, as
  // a value (an iota's index).
  kir::Operand linearIndexOperand() const {
    IntExpr position(0);
    for (const IterDomain* id : out_->logicalNoReductions()) {
      position = position * id->loopExtent() + logical_.at(id);
    }
    kir::Operand op;
    op.index = simplify(position, bounds_);
    return op;
  }

  kir::Operand operand(const Val* val) const {
    kir::Operand op;
    const TensorView* in = val->asTensor();
    if (in == nullptr) {
      op.scalar = val;
      return op;
    }
    IdMap to_out = pairwiseLogicalMap(in, out_);
    std::vector<IterDomain*> in_dims = in->logicalNoReductions();
    const auto* pad = dynamic_cast<const PadOp*>(out_->definition());
    const auto* select = dynamic_cast<const IndexSelectOp*>(out_->definition());
    IndexMap in_logical;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      const IterDomain* id = in_dims[d];
      if (select != nullptr && in == select->table() && static_cast<int64_t>(d) == select->dim()) {
        // Read at the value the statement loads from the index first.
        in_logical[id] = id->isBroadcast() ? IntExpr(0) : IntExpr::symbol(kir::kGatheredIndexSymbol);
        continue;
      }
      if (pad != nullptr && pad->widths()[d] != std::pair<int64_t, int64_t>{0, 0}) {
        // A padded or cropped axis: the consumer's index, shifted by the
        // leading width; bounds only where the output reaches past the input.
        const auto [before, after] = pad->widths()[d];
        IntExpr c = logical_.at(out_->logicalDomain()[d]);
        in_logical[id] = id->isBroadcast() ? IntExpr(0) : c - before;
        if (before > 0) op.in_bounds.terms.push_back({c, kir::Predicate::Term::Kind::GreaterEqual, before});
        if (after > 0) {
          op.in_bounds.terms.push_back(
              {c, kir::Predicate::Term::Kind::LessThan, id->loopExtent() + before});
        }
        if (before > 0 || after > 0) op.out_of_bounds_value = pad->padValue();
        continue;
      }
      if (id->isBroadcast()) {
        in_logical[id] = 0;
        continue;
      }
      auto mapped = to_out.find(id);
      if (mapped != to_out.end()) {
        in_logical[id] = logical_.at(mapped->second);
        continue;
      }
      SMELT_INTERNAL_CHECK(out_->definition()->type() == ExprType::Squeeze, "unmapped axis of ",
                           in->name(), " read by ", out_->name());
      in_logical[id] = 0;  // a squeezed extent-1 axis
    }
    kir::Access access{ctx_.bufferOf(in), 0};
    access.index = simplify(in->memoryType() == MemoryType::Global
                                ? globalIndex(in, in_logical)
                                : allocationIndex(ctx_, in, loopIndicesFromLogical(in, in_logical)),
                            bounds_);
    op.access = access;
    return op;
  }

 private:
  const LoweringContext& ctx_;
  const TensorView* out_;
  std::vector<IntExpr> loop_indices_;
  IntBounds bounds_;  // loop index symbol -> extent
  IndexMap logical_;
};

// A block scan's items are its input's register array (allocated over the
// items axis alone); item 0 of thread t in tile j lies at (j * threads + t) *
// items along the scan axis.
void indexBlockScan(const LoweringContext& ctx, kir::BlockScan& scan) {
  const TensorView* out = scan.expr->output();
  const BlockScanAxes axes = *blockScanAxes(scan.expr);
  scan.items_in = {ctx.bufferOf(scan.expr->input(0)->asTensor()), 0};
  scan.first_item = (ctx.loopIndex(out, axes.tiles, &scan) * out->axis(axes.threads)->loopExtent() +
                     ctx.loopIndex(out, axes.threads, &scan)) *
                    IntExpr(scan.items);
  scan.extent = out->logicalDomain().at(scan.expr->dim())->extent();
}

void indexBody(const LoweringContext& ctx, kir::StmtList& body) {
  for (auto& stmt : body) {
    if (auto* loop = dynamic_cast<kir::ForLoop*>(stmt.get())) {
      indexBody(ctx, loop->body);
    } else if (auto* c = dynamic_cast<kir::Compute*>(stmt.get())) {
      Indexer indexer(ctx, c->expr->output());
      c->out = indexer.output();
      if (c->expr->type() == ExprType::Iota) c->operands.push_back(indexer.linearIndexOperand());
      for (const Val* in : c->expr->inputs()) {
        // A pad's value is an attribute, not an operand of the copy; a
        // scatter's self is copied into its output before the kernel.
        if (c->expr->type() == ExprType::Pad && in->asTensor() == nullptr) continue;
        if (c->expr->type() == ExprType::Scatter && in == c->expr->input(0)) continue;
        c->operands.push_back(indexer.operand(in));
      }
      // A scan step also reads (and writes) its running value.
      if (const auto* scan = dynamic_cast<const ScanOp*>(c->expr)) {
        kir::Operand carry;
        carry.access = kir::Access{ctx.scan_carries.at(scan), 0};
        c->operands.push_back(carry);
      }
    } else if (auto* scan = dynamic_cast<kir::BlockScan*>(stmt.get())) {
      indexBlockScan(ctx, *scan);
    } else if (auto* init = dynamic_cast<kir::ReduceInit*>(stmt.get())) {
      init->out = Indexer(ctx, init->expr->output(), init).output();
    } else if (auto* step = dynamic_cast<kir::ReduceStep*>(stmt.get())) {
      Indexer indexer(ctx, step->expr->output());
      step->out = indexer.output();
      step->in = indexer.operand(step->expr->input(0));
    } else if (auto* reduce = dynamic_cast<kir::BlockReduce*>(stmt.get())) {
      Indexer indexer(ctx, reduce->expr->output(), reduce);
      reduce->out = indexer.output();
      bool has_serial_part = false;
      for (int64_t k = 0; k < reduce->expr->output()->nDims(); ++k) {
        const IterDomain* id = reduce->expr->output()->axis(k);
        if (id->isReduction() && !isThreadDim(id->parallelType())) has_serial_part = true;
      }
      // After serial steps the partial result is in the output buffer;
      // otherwise the block reduces the input elements directly.
      reduce->in = has_serial_part ? reduce->out : *indexer.operand(reduce->expr->input(0)).access;
    }
  }
}

}  // namespace

void computeIndices(LoweringContext& ctx) { indexBody(ctx, ctx.kernel.body); }

}  // namespace smelt
