// Pass allocation: one kir::Buffer per tensor, the launch dimensions, and an
// Allocate statement for every Shared and Local intermediate. Guarantees:
//   * a fusion input/output is a Global buffer named "T<number>" over its
//     logical shape (the runtime passes its storage and strides);
//   * an intermediate allocates only the loop axes right of its compute
//     position that hold distinct values: not reduction or broadcast axes,
//     not block-bound axes (each block holds its own slice — seed 004), and
//     for Local buffers not thread-bound axes either (each thread holds its
//     own). A Shared buffer also keeps its axes left of the compute position
//     whose loops are thread-bound (the loop's binding, which may be the
//     consumer's: a serial axis can run in a TIDx loop): those loops run
//     concurrently, not one after another;
//   * its Allocate sits in the loop where its own loops begin, just before its
//     first write;
//   * every block reduction gets its shuffle form where the constant block
//     shape allows (groups of consecutive threads, or of one x lane's threads
//     x-extent apart), a loop of independent strided ones is marked to run in
//     one round, and each that leaves a warp gets a Shared workspace of one
//     element per thread (no Allocate: scratch is placed after the planned
//     tensors);
//   * every scan gets a one-element register of its accumulator type for its
//     running value, allocated just before its ScanInit; a block scan also
//     a register for the running value within a tile and a Shared buffer of
//     one accumulator per warp (with an Allocate: planned like a tensor);
//   * the launch takes, per parallel type, the largest extent bound to it.
// Errors: a Local buffer of symbolic size; a Shared buffer larger than the
// per-block limit.
#include <algorithm>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "lower/allocation.h"
#include "lower/block_scan.h"
#include "lower/passes.h"

namespace smelt {

namespace {

int parallelSlot(ParallelType pt) {
  switch (pt) {
    case ParallelType::BIDx: case ParallelType::TIDx: return 0;
    case ParallelType::BIDy: case ParallelType::TIDy: return 1;
    default: return 2;
  }
}

void computeLaunch(LoweringContext& ctx) {
  bool set_grid[3] = {false, false, false};
  bool set_block[3] = {false, false, false};
  for (const auto& [key, loop] : ctx.loops) {
    ParallelType pt = loop->parallel_type;
    if (!isParallelDim(pt)) continue;
    int slot = parallelSlot(pt);
    IntExpr* dim = isBlockDim(pt) ? &ctx.kernel.launch.grid[slot] : &ctx.kernel.launch.block[slot];
    bool* seen = isBlockDim(pt) ? &set_grid[slot] : &set_block[slot];
    *dim = *seen ? max(*dim, loop->extent) : loop->extent;
    *seen = true;
  }
}

// Inserts `alloc` into `body` before the first child whose subtree computes tv.
// TensorView::padRows: rows of the allocation followed by unused elements.
// Padding only moves elements between banks, so an allocation that is not
// whole rows (a matmul tile of a broadcast operand: one element) stays as it is.
void padRows(kir::Buffer& buffer, const TensorView& tv) {
  const int64_t row = tv.paddedRowElements();
  const auto elements = buffer.elements.constant();
  if (!elements || *elements % row != 0) return;
  buffer.row_elements = row;
  buffer.row_padding = tv.rowPadding();
  buffer.elements = *elements / row * (row + tv.rowPadding());
}

kir::BlockScan* blockScanOf(const kir::StmtList& body, const ScanOp* scan) {
  kir::BlockScan* found = nullptr;
  kir::forEachStmt(body, [&](kir::Stmt* s, int) {
    auto* b = dynamic_cast<kir::BlockScan*>(s);
    if (b != nullptr && b->expr == scan) found = b;
  });
  return found;
}

// Registers (and, in block form, the warp totals' workspace) of each scan,
// allocated just before its ScanInit. In block form the ScanInit's register
// is the running value across tiles and the steps read a second one, which
// the BlockScan sets per tile.
void addScanCarries(LoweringContext& ctx, kir::StmtList& body) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (auto* loop = dynamic_cast<kir::ForLoop*>(body[i].get())) {
      addScanCarries(ctx, loop->body);
      continue;
    }
    auto* init = dynamic_cast<kir::ScanInit*>(body[i].get());
    if (init == nullptr) continue;
    const TensorView* out = init->expr->output();
    const DataType type = init->expr->accumulatorType();
    std::vector<kir::Buffer*> buffers;
    // No tensor of the fusion holds them (tv stays null).
    kir::Buffer* carry = ctx.kernel.addBuffer(nullptr, out->name() + "_carry", MemoryType::Local, type, {});
    buffers.push_back(carry);
    init->carry = {carry, 0};
    ctx.scan_carries[init->expr] = carry;
    if (kir::BlockScan* scan = blockScanOf(ctx.kernel.body, init->expr)) {
      const BlockScanAxes axes = *blockScanAxes(init->expr);
      scan->warps = *out->axis(axes.threads)->loopExtent().constant() / 32;
      scan->items = *out->axis(axes.items)->loopExtent().constant();
      kir::Buffer* running = ctx.kernel.addBuffer(nullptr, out->name() + "_running", MemoryType::Local, type, {});
      kir::Buffer* totals =
          ctx.kernel.addBuffer(nullptr, out->name() + "_warp_totals", MemoryType::Shared, type, {scan->warps});
      scan->carry = {carry, 0};
      scan->running = {running, 0};
      scan->workspace = totals;
      ctx.scan_carries[init->expr] = running;
      buffers.push_back(running);
      buffers.push_back(totals);
    }
    for (kir::Buffer* buffer : buffers) {
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(i), std::make_unique<kir::Allocate>(buffer));
      ++i;
    }
  }
}

void insertBeforeFirstWrite(kir::StmtList& body, std::unique_ptr<kir::Allocate> alloc,
                            const TensorView* tv) {
  auto writes = [&](const kir::Stmt* root) {
    bool found = false;
    kir::StmtList single;
    auto visit = [&](const kir::Stmt* s, int) {
      const Expr* e = nullptr;
      if (auto* c = dynamic_cast<const kir::Compute*>(s)) e = c->expr;
      if (auto* r = dynamic_cast<const kir::ReduceInit*>(s)) e = r->expr;
      if (auto* r = dynamic_cast<const kir::BlockReduce*>(s)) e = r->expr;
      if (e != nullptr && e->output() == tv) found = true;
    };
    visit(root, 0);
    if (auto* loop = dynamic_cast<const kir::ForLoop*>(root)) kir::forEachStmt(loop->body, visit);
    return found;
  };
  auto pos = std::find_if(body.begin(), body.end(),
                          [&](const std::unique_ptr<kir::Stmt>& s) { return writes(s.get()); });
  body.insert(pos, std::move(alloc));
}

struct ShuffleGroups {
  int64_t size = 0;  // threads per group; 0: no shuffle form
  int64_t stride = 1;
};

// The groups of threads a block reduction over `axes` combines, when warp
// shuffles can reduce them: the block's shape is constant and either
// - each group is an aligned run of consecutive threads: every thread axis
//   inside a reduced one is reduced too or has extent 1; or
// - each group is the threads of one x index (x not reduced, its extent a
//   power of two from 2 to 16, every other axis reduced or of extent 1), so
//   its members lie x-extent apart: an outer reduction whose block puts a few
//   vector lanes along x and the reduced rows along y;
// and the threads the groups span are a power of two up to a warp or a whole
// number of warps. {0, 1} otherwise.
ShuffleGroups shuffleGroups(const IntExpr (&block)[3], const std::vector<ParallelType>& axes) {
  int64_t extent[3];
  for (int k = 0; k < 3; ++k) {
    if (!block[k].isConstant()) return {};
    extent[k] = *block[k].constant();
  }
  bool reduced[3] = {false, false, false};
  for (ParallelType pt : axes) reduced[static_cast<int>(pt) - static_cast<int>(ParallelType::TIDx)] = true;
  auto warpShaped = [](int64_t threads) {
    return (threads <= 32 && (threads & (threads - 1)) == 0) || threads % 32 == 0;
  };
  const int64_t stride = extent[0];
  if (!reduced[0] && stride >= 2 && stride <= 16 && (stride & (stride - 1)) == 0 &&
      (reduced[1] || extent[1] == 1) && (reduced[2] || extent[2] == 1) && (reduced[1] || reduced[2])) {
    const int64_t size = extent[1] * extent[2];
    return warpShaped(stride * size) ? ShuffleGroups{size, stride} : ShuffleGroups{};
  }
  int64_t group = 1;
  for (int k = 0; k < 3; ++k) {
    if (reduced[k]) {
      group *= extent[k];
      continue;
    }
    for (int outer = k + 1; outer < 3; ++outer) {
      if (reduced[outer] && extent[k] != 1) return {};
    }
  }
  return warpShaped(group) ? ShuffleGroups{group, 1} : ShuffleGroups{};
}

// A loop whose whole body is one strided-shuffle block reduction (the
// iteration nest of a thread's vector of columns, constant trip count N)
// does its N independent reductions in one round: the workspace (one element
// per thread) holds N partials per warp and x lane when N * stride <= 32.
void groupBlockReductions(kir::ForLoop& loop) {
  if (loop.body.size() != 1 || isParallelDim(loop.parallel_type) || !loop.extent.isConstant()) return;
  auto* reduce = dynamic_cast<kir::BlockReduce*>(loop.body.front().get());
  const int64_t n = *loop.extent.constant();
  if (reduce == nullptr || reduce->shuffle_group == 0 || reduce->shuffle_stride < 2 || n < 2 ||
      n * reduce->shuffle_stride > 32) {
    return;
  }
  reduce->grouped = n;
}

// A Shared workspace of one element per thread for each block reduction that
// needs one (not those reduced within warps). It has no Allocate statement:
// like nvFuser, smelt does not plan scratch space together with the tensors
// but places it after them (smem_addresses).
void addBlockReduceWorkspaces(LoweringContext& ctx, kir::StmtList& body) {
  for (size_t i = 0; i < body.size(); ++i) {
    kir::Stmt* stmt = body[i].get();
    if (auto* loop = dynamic_cast<kir::ForLoop*>(stmt)) {
      addBlockReduceWorkspaces(ctx, loop->body);
      groupBlockReductions(*loop);
      continue;
    }
    auto* reduce = dynamic_cast<kir::BlockReduce*>(stmt);
    if (reduce == nullptr) continue;
    const ShuffleGroups groups = shuffleGroups(ctx.kernel.launch.block, reduce->thread_axes);
    reduce->shuffle_group = groups.size;
    reduce->shuffle_stride = groups.stride;
    // Groups within one warp need no shared memory.
    if (groups.size > 0 && groups.size * groups.stride <= 32) continue;
    auto buffer = std::make_unique<kir::Buffer>();
    buffer->name = reduce->expr->output()->name() + "_workspace";
    buffer->memory = MemoryType::Shared;
    buffer->dtype = blockReduceType(reduce->expr->output()->dtype());
    const auto& block = ctx.kernel.launch.block;
    buffer->shape = {block[0] * block[1] * block[2]};
    buffer->elements = buffer->shape[0];
    reduce->workspace = buffer.get();
    ctx.kernel.buffers.push_back(std::move(buffer));
  }
}

}  // namespace

std::vector<int64_t> allocatedAxes(const LoweringContext& ctx, const TensorView* tv) {
  std::vector<int64_t> axes;
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    const IterDomain* id = tv->axis(k);
    // Left of the compute position the axis runs in its consumer's loop,
    // whose binding counts (a serial axis may run in a TIDx loop).
    ParallelType pt = id->parallelType();
    if (k < tv->computePosition()) {
      auto [owner, owner_axis] = ctx.loopOwner(tv, k);
      pt = owner->axis(owner_axis)->parallelType();
    }
    if (id->isReduction() || id->isBroadcast() || isBlockDim(pt)) continue;
    if (tv->memoryType() == MemoryType::Local && isThreadDim(pt)) continue;
    // Left of the compute position a loop is shared with the consumer: a
    // serial one separates the values in time (one slot suffices), a
    // thread-bound one does not (all threads hold their values at once).
    if (k < tv->computePosition() && !isThreadDim(pt)) continue;
    axes.push_back(k);
  }
  return axes;
}

void insertAllocations(LoweringContext& ctx) {
  computeLaunch(ctx);
  kir::Kernel& kernel = ctx.kernel;
  for (TensorView* tv : ctx.fusion->allTensors()) {
    auto buffer = std::make_unique<kir::Buffer>();
    buffer->tv = tv;
    buffer->memory = tv->memoryType();
    buffer->dtype = tv->dtype();
    if (tv->memoryType() == MemoryType::Global) {
      buffer->name = "T" + std::to_string(tv->number());
      for (const IterDomain* id : tv->logicalNoReductions()) {
        buffer->shape.push_back(id->isPlainBroadcast() ? IntExpr(1)
                                                                               : id->loopExtent());
      }
    } else {
      buffer->name = tv->name();
      for (int64_t k : allocatedAxes(ctx, tv)) buffer->shape.push_back(tv->axis(k)->loopExtent());
    }
    for (const IntExpr& extent : buffer->shape) buffer->elements = buffer->elements * extent;
    if (tv->memoryType() == MemoryType::Shared && tv->rowPadding() > 0) padRows(*buffer, *tv);
    kir::Buffer* raw = buffer.get();
    kernel.buffers.push_back(std::move(buffer));
    ctx.buffers[tv] = raw;
    if (tv->isFusionInput()) continue;
    if (tv->memoryType() == MemoryType::Global) continue;
    SMELT_CHECK(tv->memoryType() != MemoryType::Local || raw->elements.isConstant(),
                "Local tensor ", tv->name(), " needs ", raw->elements,
                " registers; a register buffer needs a constant size (split its symbolic axes "
                "by a constant, bind them to threads, or compute it at a deeper position)");
    if (auto bytes = raw->bytes().constant(); bytes && tv->memoryType() == MemoryType::Shared) {
      SMELT_CHECK(*bytes <= ctx.options.max_shared_memory_bytes, "Shared tensor ", tv->name(),
                  " needs ", *bytes, " B of shared memory per block, over the limit of ",
                  ctx.options.max_shared_memory_bytes, " B");
    }
    int64_t pos = tv->computePosition();
    kir::ForLoop* scope = pos == 0 ? nullptr : ctx.loopOf(tv, pos - 1);
    insertBeforeFirstWrite(scope ? scope->body : kernel.body,
                           std::make_unique<kir::Allocate>(raw), tv);
  }
  for (Val* in : ctx.fusion->inputs()) {
    if (TensorView* tv = in->asTensor()) {
      kernel.inputs.push_back(ctx.bufferOf(tv));
    } else {
      kernel.scalar_inputs.push_back(static_cast<const Scalar*>(in));
    }
  }
  for (Val* out : ctx.fusion->outputs()) kernel.outputs.push_back(ctx.bufferOf(out->asTensor()));
  addBlockReduceWorkspaces(ctx, kernel.body);
  addScanCarries(ctx, kernel.body);
}

}  // namespace smelt
