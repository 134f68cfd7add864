// Pass validate_schedule: rejects schedules the later passes cannot lower,
// with a smelt::Error naming the tensor and axis. After it:
//   * every compute position still maps onto the consumers' loops (a consumer
//     re-scheduled after computeAt is caught here);
//   * an axis sharing a consumer's loop is not bound to a different parallel
//     type than that loop;
//   * reductions are not bound to block indices (no grid reductions yet),
//     and combine serial steps with a block reduction only in registers;
//   * a scan's axis is a loop axis of its own (not split or merged), run
//     serially in order, with only single-index axes (thread- or block-bound,
//     or of extent 1) inside it: one register carries the running value;
//     or it is in block form (block_scan.h): [tiles, threads, items] split
//     from the scan axis, tiles and items serial, a whole number of warps on
//     TIDx (the block one-dimensional), constant items, the input a computed
//     Local tensor at the items axis;
//   * vectorized axes are innermost with constant extents;
//   * a tensor whose memory is private to a thread (Local) or to a block
//     (Shared), or that other blocks cannot wait for (Global), is read by
//     each consumer only where it was written: a loop axis of it bound to a
//     thread index (Local) or block index (any memory), outside its compute
//     position, maps to a consumer loop axis bound to the same index.
#include <algorithm>

#include "fusion/error.h"
#include "lower/block_scan.h"
#include "fusion/transform_replay.h"
#include "lower/passes.h"

namespace smelt {

namespace {

void checkComputePosition(const TensorView* tv) {
  int64_t max_pos = tv->maxInlinePosition();
  if (tv->computePosition() > max_pos) {
    // A conflicting parallel type is the usual reason; name it.
    const TensorView* consumer = tv->fusion()->consumersOf(tv).at(0);
    std::vector<int64_t> match = matchLoopAxes(tv, consumer);
    int64_t c_axis = match.empty() ? max_pos : match.back() + 1;
    ParallelType mine = tv->axis(max_pos)->parallelType();
    if (c_axis < consumer->nDims() && mine != ParallelType::Serial) {
      ParallelType theirs = consumer->axis(c_axis)->parallelType();
      SMELT_CHECK(mine == theirs, "inconsistent parallelization across compute-at: tensor ",
                  tv->name(), " axis ", max_pos, " (", tv->axis(max_pos)->toString(), ") is ",
                  mine, " but runs in the loop of ", consumer->name(), " axis ", c_axis,
                  ", which is ", theirs);
    }
  }
  SMELT_CHECK(tv->computePosition() <= max_pos, "tensor ", tv->name(), " is computed at position ",
              tv->computePosition(), " but only its first ", max_pos,
              " loop axes map onto its consumers' loops (was a consumer re-scheduled after "
              "computeAt/inlineAt?)");
}

// After every compute position is valid: the loops `tv` shares.
void checkSharedLoopBinding(const LoweringContext& ctx, const TensorView* tv) {
  for (int64_t k = 0; k < tv->computePosition(); ++k) {
    auto [owner, owner_axis] = ctx.loopOwner(tv, k);
    ParallelType mine = tv->axis(k)->parallelType();
    ParallelType shared = owner->axis(owner_axis)->parallelType();
    SMELT_CHECK(mine == ParallelType::Serial || mine == shared,
                "inconsistent parallelization across compute-at: tensor ", tv->name(), " axis ",
                k, " (", tv->axis(k)->toString(), ") is ", mine, " but runs in the loop of ",
                owner->name(), " axis ", owner_axis, ", which is ", shared);
  }
}

void checkReduction(const TensorView* tv) {
  bool across_threads = false, serial_reduction = false;
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    const IterDomain* id = tv->axis(k);
    across_threads |= id->isReduction() && isThreadDim(id->parallelType()) &&
                      id->loopExtent().constant() != 1;
    serial_reduction |= id->isReduction() && !isParallelDim(id->parallelType());
  }
  // The serial steps accumulate each thread's partial result in the tensor
  // itself before the block reduction combines them: in Shared or Global
  // memory every thread of the block would accumulate into the same elements.
  SMELT_CHECK(!(across_threads && serial_reduction) || tv->memoryType() == MemoryType::Local,
              "tensor ", tv->name(), " reduces both serially and across threads in ",
              tv->memoryType(), " memory, where the threads' partial results would overwrite "
              "each other; give the serial steps a register accumulator (cacheBefore())");
  // Iteration axes may run inside the serial reduction loops: the init and
  // the block reduction get a nest of their own (loop_nest).
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    const IterDomain* id = tv->axis(k);
    SMELT_CHECK(!id->isReduction() || !isBlockDim(id->parallelType()), "tensor ", tv->name(), " axis ", k,
                " (", id->toString(), ") is a reduction bound to ", id->parallelType(),
                "; reductions across blocks (grid reductions) are not supported");
  }
}

// The block form (block_scan.h): serial tile and item loops around a whole
// number of warps on TIDx, the input in registers, one array per tile.
void checkBlockScan(const LoweringContext& ctx, const ScanOp* scan, const BlockScanAxes& axes) {
  const TensorView* out = scan->output();
  const std::string what = "block scan " + out->name() + ": ";
  for (const int64_t axis : {axes.tiles, axes.items}) {
    const auto [owner, owner_axis] = ctx.loopOwner(out, axis);
    const ParallelType pt = owner->axis(owner_axis)->parallelType();
    SMELT_CHECK(pt == ParallelType::Serial, what, "loop axis ", axis, " runs in the loop of ", owner->name(),
                " axis ", owner_axis, ", which is ", pt, "; tiles and items must run serially, in order");
  }
  const std::optional<int64_t> threads = out->axis(axes.threads)->loopExtent().constant();
  SMELT_CHECK(threads && *threads % 32 == 0, what, "its TIDx axis (", out->axis(axes.threads)->toString(),
              ") must be a constant whole number of warps");
  SMELT_CHECK(out->axis(axes.items)->loopExtent().constant().has_value(), what, "its items axis (",
              out->axis(axes.items)->toString(), ") must have a constant extent");
  for (int64_t k = 0; k < out->nDims(); ++k) {
    const ParallelType pt = out->axis(k)->parallelType();
    SMELT_CHECK(pt != ParallelType::TIDy && pt != ParallelType::TIDz, what, "axis ", k, " is bound to ", pt,
                "; a block scan's block is one-dimensional");
  }
  const TensorView* in = scan->input(0)->asTensor();
  SMELT_CHECK(in->memoryType() == MemoryType::Local && in->definition() != nullptr &&
                  in->computePosition() == axes.items,
              what, "its input ", in->name(), " must be a computed Local tensor at compute position ", axes.items,
              " (one register array of items per thread), not ", in->memoryType(), " at ", in->computePosition());
}

void checkScan(const LoweringContext& ctx, const ScanOp* scan) {
  if (const std::optional<BlockScanAxes> axes = blockScanAxes(scan)) return checkBlockScan(ctx, scan, *axes);
  const TensorView* out = scan->output();
  const int64_t axis = scan->loopAxis();
  SMELT_CHECK(axis >= 0, "scan ", out->name(), ": its scan axis (dimension ", scan->dim(),
              ") was split or merged; the running value needs the whole axis in one loop");
  const auto [owner, owner_axis] = ctx.loopOwner(out, axis);
  const ParallelType pt = owner->axis(owner_axis)->parallelType();
  SMELT_CHECK(!isParallelDim(pt) && pt != ParallelType::Vectorize, "scan ", out->name(),
              ": its scan axis ", axis, " runs in the loop of ", owner->name(), " axis ", owner_axis,
              ", which is ", pt, "; the scan axis must run serially, in order");
  for (int64_t k = axis + 1; k < out->nDims(); ++k) {
    const IterDomain* id = out->axis(k);
    SMELT_CHECK(isParallelDim(id->parallelType()) || id->isPlainBroadcast() || id->loopExtent().constant() == 1,
                "scan ", out->name(), ": loop axis ", k, " (", id->toString(), ") iterates inside the scan axis ",
                axis, "; one running value per thread needs the scan axis innermost among serial loops");
  }
}

void checkVectorize(const TensorView* tv) {
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    if (tv->axis(k)->parallelType() != ParallelType::Vectorize) continue;
    SMELT_CHECK(k == tv->nDims() - 1, "tensor ", tv->name(), " axis ", k,
                " is vectorized but is not the innermost loop axis");
    SMELT_CHECK(tv->memoryType() != MemoryType::Global || tv->axis(k)->extent().isConstant(),
                "tensor ", tv->name(), " axis ", k, " is vectorized with a symbolic extent");
  }
}

// Memory a parallel type's index separates: threads of a block do not see
// each other's registers; blocks do not see each other's shared memory, nor
// each other's global writes in time (a kernel has no grid-wide barrier).
bool privateAcross(MemoryType memory, ParallelType pt) {
  if (memory == MemoryType::Local) return isThreadDim(pt) || isBlockDim(pt);
  return isBlockDim(pt);
}

void checkReadsStayPrivate(const TensorView* producer) {
  for (const TensorView* consumer : producer->fusion()->consumersOf(producer)) {
    const IdMap logical_map = pairwiseLogicalMap(producer, consumer);
    // Axes left of the compute position share the consumer's loop (and so
    // its index) — checkComputePosition covers them.
    for (int64_t k = producer->computePosition(); k < producer->nDims(); ++k) {
      const IterDomain* id = producer->axis(k);
      const ParallelType pt = id->parallelType();
      // A block reduction leaves its result in every thread of the group; a
      // broadcast axis holds one value for all.
      if (id->isReduction() || id->isBroadcast() || !privateAcross(producer->memoryType(), pt)) continue;
      bool same_index = false;
      for (int64_t j = 0; j < consumer->nDims() && !same_index; ++j) {
        same_index = consumer->axis(j)->parallelType() == pt &&
                     loopAxesMapped(id, consumer->axis(j), logical_map);
      }
      SMELT_CHECK(same_index, "tensor ", producer->name(), " is in ", producer->memoryType(),
                  " memory and its axis ", k, " (", id->toString(), ") is bound to ", pt, ", but ",
                  consumer->name(), " does not read it along an axis bound to ", pt,
                  ", so it would read values another ", isThreadDim(pt) ? "thread" : "block",
                  " wrote; ",
                  isThreadDim(pt) ? "put " + producer->name() + " in Shared memory or parallelize "
                                  : "blocks cannot synchronize within a kernel: parallelize ",
                  consumer->name(), " the same way");
    }
  }
}

}  // namespace

void validateSchedule(LoweringContext& ctx) {
  SMELT_CHECK(!ctx.fusion->outputs().empty(), "cannot lower a fusion without outputs");
  // Consumers first: a producer's checks follow its consumers' compute
  // positions, which are then known to be valid.
  const std::vector<TensorView*> tensors = ctx.fusion->allTensors();
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    if (!(*it)->isFusionInput()) checkComputePosition(*it);
  }
  ctx.loop_owners.emplace(*ctx.fusion);
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    TensorView* tv = *it;
    if (tv->isFusionInput()) continue;
    checkSharedLoopBinding(ctx, tv);
    if (tv->hasReduction()) checkReduction(tv);
    if (const auto* scan = dynamic_cast<const ScanOp*>(tv->definition())) checkScan(ctx, scan);
    checkVectorize(tv);
    checkReadsStayPrivate(tv);
    SMELT_CHECK(!tv->shouldPromoteReuse() || tv->memoryType() == MemoryType::Shared,
                "promoteReuse: tensor ", tv->name(), " is not in Shared memory");
  }
}

}  // namespace smelt
