// Cases B3 and D1 of smem_cases.md as hand-built kernel IR (their pipelined
// loops and phase structure are beyond what the case builders schedule),
// planned by the same pass GpuLower runs (assignSharedAddresses), plus a loop
// back-edge hazard that only kernel IR inside a serial loop can show.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fusion/ops.h"
#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/passes.h"

namespace smelt::alloc_reuse {
namespace {

IntExpr sym(const std::string& name) { return IntExpr::symbol(name); }

// A kernel under construction: statements are appended to the innermost
// open scope. Shared buffers are backed by fusion tensors so promoteReuse
// flags can be set on them.
class KernelBuilder {
 public:
  KernelBuilder() : guard_(fusion_.get()) {}

  kir::Buffer* shared(const std::string& name, DataType dtype, int64_t elements,
                      bool promote = false) {
    TensorView* tv = makeConcreteTensor({elements}, dtype);
    tv->setMemoryType(MemoryType::Shared);
    if (promote) tv->promoteReuse();
    return buffer(tv, name, MemoryType::Shared, dtype, elements);
  }
  kir::Buffer* local(const std::string& name, int64_t elements) {
    return buffer(makeConcreteTensor({elements}), name, MemoryType::Local, DataType::Float,
                  elements);
  }
  void allocate(kir::Buffer* b) { add(std::make_unique<kir::Allocate>(b)); }
  // out[out_index] = f(in[in_index]...)
  void compute(kir::Buffer* out, IntExpr out_index,
               std::vector<std::pair<kir::Buffer*, IntExpr>> ins) {
    auto c = std::make_unique<kir::Compute>();
    c->out = {out, std::move(out_index)};
    for (auto& [b, index] : ins) {
      kir::Operand op;
      op.access = kir::Access{b, std::move(index)};
      c->operands.push_back(std::move(op));
    }
    add(std::move(c));
  }
  void sync(const std::string& reason) {
    auto s = std::make_unique<kir::BlockSync>();
    s->reason = reason;
    add(std::move(s));
  }
  void beginLoop(const std::string& index, int64_t extent, ParallelType pt = ParallelType::Serial) {
    auto loop = std::make_unique<kir::ForLoop>();
    loop->index = index;
    loop->extent = extent;
    loop->parallel_type = pt;
    loop->trivial = pt != ParallelType::Serial || extent == 1;
    kir::ForLoop* raw = loop.get();
    add(std::move(loop));
    open_.push_back(raw);
  }
  void endLoop() { open_.pop_back(); }

  // Runs the plan_shared_memory pass on the kernel.
  const kir::Kernel& plan(SmemHazards hazards, SmemAllocator allocator, int64_t threads) {
    ctx_.kernel.launch.block[0] = threads;
    ctx_.options.smem_hazards = hazards;
    ctx_.options.smem_allocator = allocator;
    ctx_.fusion = fusion_.get();
    assignSharedAddresses(ctx_);
    return ctx_.kernel;
  }

  int insertedBarriers() const {
    int n = 0;
    kir::forEachStmt(ctx_.kernel.body, [&](const kir::Stmt* s, int) {
      auto* sync = dynamic_cast<const kir::BlockSync*>(s);
      if (sync != nullptr && sync->inserted_for_reuse) ++n;
    });
    return n;
  }

 private:
  kir::Buffer* buffer(TensorView* tv, const std::string& name, MemoryType memory, DataType dtype,
                      int64_t elements) {
    auto b = std::make_unique<kir::Buffer>();
    b->tv = tv;
    b->name = name;
    b->memory = memory;
    b->dtype = dtype;
    b->shape = {elements};
    b->elements = elements;
    ctx_.kernel.buffers.push_back(std::move(b));
    return ctx_.kernel.buffers.back().get();
  }
  void add(std::unique_ptr<kir::Stmt> stmt) {
    (open_.empty() ? ctx_.kernel.body : open_.back()->body).push_back(std::move(stmt));
  }

  std::unique_ptr<Fusion> fusion_ = std::make_unique<Fusion>();
  FusionGuard guard_;
  LoweringContext ctx_;
  std::vector<kir::ForLoop*> open_;
};

const IntExpr kTid = sym("threadIdx.x");

// D1: a 3-stage pipelined main loop over fp16 operand tiles A_s [3, 128, 32]
// and B_s [3, 32, 128] (the WAR barrier at the top of each iteration, as
// multi-stage pipelines place it), then an fp32 epilogue tile C_s [128, 128].
struct MatmulEpilogue {
  KernelBuilder k;
  kir::Buffer* a_s;
  kir::Buffer* b_s;
  kir::Buffer* c_s;
};

std::unique_ptr<MatmulEpilogue> buildMatmulEpilogue(bool promote) {
  auto m = std::make_unique<MatmulEpilogue>();
  KernelBuilder& k = m->k;
  const int64_t threads = 256;
  m->a_s = k.shared("A_s", DataType::Half, 3 * 128 * 32, promote);
  m->b_s = k.shared("B_s", DataType::Half, 3 * 32 * 128, promote);
  m->c_s = k.shared("C_s", DataType::Float, 128 * 128);
  kir::Buffer* acc = k.local("acc", 64);
  k.allocate(m->a_s);
  k.allocate(m->b_s);
  k.allocate(acc);
  k.beginLoop("threadIdx.x", threads, ParallelType::TIDx);
  k.beginLoop("i0", 8);  // K / BK
  k.sync("WAR A_s, B_s");
  k.beginLoop("i1", 48);  // each thread stages 48 elements of each tile
  IntExpr stage = (sym("i0") % 3) * 4096 + sym("i1") * threads + kTid;
  k.compute(m->a_s, stage, {});
  k.compute(m->b_s, stage, {});
  k.endLoop();
  k.sync("RAW A_s, B_s");
  k.beginLoop("i2", 64);
  IntExpr read = (sym("i0") % 3) * 4096 + sym("i2") * 64 + (kTid % 64);
  k.compute(acc, sym("i2"), {{acc, sym("i2")}, {m->a_s, read}, {m->b_s, read}});
  k.endLoop();
  k.endLoop();
  k.allocate(m->c_s);
  k.beginLoop("i3", 64);
  k.compute(m->c_s, sym("i3") * threads + kTid, {{acc, sym("i3")}});
  k.endLoop();
  k.sync("RAW C_s");
  k.beginLoop("i4", 64);
  k.compute(acc, sym("i4"), {{m->c_s, sym("i4") * threads + (threads - 1 - kTid)}});
  k.endLoop();
  k.endLoop();
  return m;
}

TEST(KernelPlanHandBuilt, D1WithoutPromotionStacksAllThree) {
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    auto m = buildMatmulEpilogue(false);
    const kir::Kernel& kernel = m->k.plan(SmemHazards::Conservative, allocator, 256);
    EXPECT_EQ(kernel.smem_plan->plan.total_bytes.constant(), 114688);
    EXPECT_EQ(m->k.insertedBarriers(), 0);
  }
}

TEST(KernelPlanHandBuilt, D1PromotedOperandsLeaveEpilogueAtZero) {
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    for (SmemHazards hazards : {SmemHazards::Conservative, SmemHazards::Precise}) {
      auto m = buildMatmulEpilogue(true);
      const kir::Kernel& kernel = m->k.plan(hazards, allocator, 256);
      EXPECT_EQ(kernel.smem_plan->plan.total_bytes.constant(), 65536);
      EXPECT_EQ(m->c_s->address->constant(), 0);
      // One barrier serves both operand tiles.
      EXPECT_EQ(m->k.insertedBarriers(), 1);
    }
  }
}

// B3: a Stream-K shaped kernel. A_tiles (16,640 fp16) and B_tiles (32,768 B;
// int8 in the case, a 1-byte-per-element stand-in is not needed: only bytes
// matter, so 16,384 fp16) live across a K loop; red_buf (65,536 fp16) across
// a cross-warp reduction loop; C_tile (1,024 fp16) in the epilogue; block
// barriers separate the phases.
// The K loop closes with its WAR barrier, after the tiles' last reads: every
// thread passes it in the final iteration, so the tiles' bytes are free for
// red_buf. The stack allocator only sees the tiles live to the loop's end and
// stacks all four (197,120 B).
TEST(KernelPlanHandBuilt, B3StreamKFitsInTheReductionBuffer) {
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    KernelBuilder k;
    kir::Buffer* a = k.shared("A_tiles", DataType::Half, 16640);
    kir::Buffer* b = k.shared("B_tiles", DataType::Half, 16384);
    kir::Buffer* red = k.shared("red_buf", DataType::Half, 65536);
    kir::Buffer* c = k.shared("C_tile", DataType::Half, 1024);
    kir::Buffer* acc = k.local("acc", 4);
    for (kir::Buffer* buf : {a, b, red, c, acc}) k.allocate(buf);
    k.beginLoop("threadIdx.x", 128, ParallelType::TIDx);
    k.beginLoop("i0", 4);
    k.compute(a, sym("i0") * 128 + kTid, {});
    k.compute(b, sym("i0") * 128 + kTid, {});
    k.sync("RAW");
    k.compute(acc, 0, {{a, 127 - kTid}, {b, 127 - kTid}});
    k.sync("WAR");
    k.endLoop();
    k.beginLoop("i1", 8);
    k.compute(red, sym("i1") * 128 + kTid, {{acc, 0}});
    k.sync("RAW red_buf");
    k.compute(acc, 1, {{red, sym("i1") * 128 + (127 - kTid)}});
    k.endLoop();
    k.sync("phase");
    k.compute(c, kTid, {{acc, 1}});
    k.sync("RAW C_tile");
    k.compute(acc, 2, {{c, 127 - kTid}});
    k.endLoop();
    const kir::Kernel& kernel = k.plan(SmemHazards::Conservative, allocator, 128);
    EXPECT_EQ(kernel.smem_plan->plan.no_reuse_bytes.constant(), 199168);
    EXPECT_EQ(kernel.smem_plan->plan.total_bytes.constant(),
              allocator == SmemAllocator::Best ? 131072 : 197120);
  }
}

// Two buffers allocated inside a serial loop live again in its next
// iteration: a barrier between them in program order is not enough, the back
// edge needs one too.
TEST(KernelPlanHandBuilt, LoopBackEdgeNeedsItsOwnBarrier) {
  for (bool back_edge_barrier : {false, true}) {
    KernelBuilder k;
    kir::Buffer* x = k.shared("X", DataType::Float, 128);
    kir::Buffer* y = k.shared("Y", DataType::Float, 128);
    kir::Buffer* acc = k.local("acc", 1);
    k.allocate(acc);
    k.beginLoop("threadIdx.x", 128, ParallelType::TIDx);
    k.beginLoop("i0", 4);
    k.allocate(x);
    k.compute(x, kTid, {});
    k.sync("RAW X");
    k.compute(acc, 0, {{x, 127 - kTid}});
    k.sync("between X and Y");
    k.allocate(y);
    k.compute(y, kTid, {{acc, 0}});
    k.sync("RAW Y");
    k.compute(acc, 0, {{y, 127 - kTid}});
    if (back_edge_barrier) k.sync("back edge");
    k.endLoop();
    k.endLoop();
    const kir::Kernel& kernel = k.plan(SmemHazards::Conservative, SmemAllocator::Best, 128);
    bool shared_bytes = x->address->constant() == y->address->constant();
    EXPECT_EQ(shared_bytes, back_edge_barrier);
    EXPECT_EQ(kernel.smem_plan->plan.total_bytes.constant(), back_edge_barrier ? 512 : 1024);
  }
}

}  // namespace
}  // namespace smelt::alloc_reuse
