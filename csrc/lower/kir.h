// Kernel IR (kir): the loop-level program lowering produces and every later
// stage consumes (shared-memory planning, CUDA generation, the CPU simulator).
//
// A Kernel is a tree of statements: ForLoop, IfThenElse, Allocate, compute
// statements (one per fusion expression instance: an element-wise assignment,
// a reduction step, a block reduction or broadcast), and BlockSync. Index
// arithmetic is IntExpr over symbols named as the generated CUDA names them:
//   loop indices        "i<n>"           (serial, unrolled and vectorized loops)
//   thread/block index  "threadIdx.x", "blockIdx.y", ...
//   tensor metadata     "T0.size[1]", "T0.stride[1]" (kernel parameters)
// so printing an index is emitting it, and the simulator evaluates it by binding
// those symbols.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/int_expr.h"
#include "fusion/ir.h"
#include "fusion/types.h"

namespace smelt::alloc_reuse {
struct SharedMemoryPlan;  // lower/alloc_reuse/kernel_plan.h
}  // namespace smelt::alloc_reuse

namespace smelt::kir {

// One allocated buffer: a Shared or Local intermediate, or a Global tensor
// (fusion inputs and outputs, whose storage the runtime passes in).
struct Buffer {
  const TensorView* tv = nullptr;
  // The CUDA variable's name: the tensor's name for Shared/Local buffers;
  // "T<number>" for Global ones (kernel parameters), matching the size symbols
  // "T<number>.size[d]" that makeContigTensor gives their extents.
  std::string name;
  MemoryType memory = MemoryType::Local;
  DataType dtype = DataType::Float;
  // Extents of the allocated axes, outermost first, and the element count.
  std::vector<IntExpr> shape;
  IntExpr elements = 1;
  // A Shared buffer laid out in rows of `row_elements` (of the row-major
  // shape), each followed by `row_padding` unused elements
  // (TensorView::padRows); 0: unpadded. `elements` counts the padding.
  int64_t row_elements = 0;
  int64_t row_padding = 0;
  int64_t alignment = 16;  // bytes; shared buffers only
  // Byte offset in the dynamic shared-memory array (planned by alloc_reuse).
  std::optional<IntExpr> address;
  // When set, this buffer is a second name for that buffer's bytes.
  const Buffer* alias_of = nullptr;
  IntExpr bytes() const { return elements * dataTypeSize(dtype); }
};

// A reference to one element: buffer[index] (index in elements).
struct Access {
  const Buffer* buffer = nullptr;
  IntExpr index;
};

// A conjunction of `lhs < rhs` bounds and `lhs == rhs` equalities.
struct Predicate {
  struct Term {
    enum class Kind { LessThan, Equal, GreaterEqual };
    IntExpr lhs;
    Kind kind = Kind::LessThan;
    IntExpr rhs;
    // The tensor axis whose logical extent this term keeps the index under
    // (`index < extent`, set by the predicates pass); nullptr for thread,
    // single-writer, overrun and loop-trip terms.
    const IterDomain* bounded_axis = nullptr;
  };
  std::vector<Term> terms;
  bool alwaysTrue() const { return terms.empty(); }
  std::string toString() const;
};

enum class StmtKind {
  ForLoop,
  IfThenElse,
  Allocate,
  Compute,        // out = f(inputs), element-wise (also set, cast, full)
  ReduceInit,     // out = init value
  ScanInit,       // a scan's running value = init value (its steps are Computes)
  BlockScan,      // a block's threads scan their partial results (synchronizes)
  ReduceStep,     // out = combine(out, in): one serial reduction step
  BlockReduce,    // out = reduction of in over the thread axes (synchronizes)
  BlockBroadcast, // out = value from the thread that holds it (synchronizes)
  BlockSync,      // __syncthreads()
  // Tensor-core statements (sm_80+), see the classes below.
  CpAsync,        // asynchronous global -> shared copy of 4/8/16 bytes
  CpAsyncCommit,  // closes the thread's group of issued copies
  CpAsyncWait,    // waits until at most N of the thread's groups are in flight
  LdMatrix,       // warp-collective 8x8 b16 matrix loads from shared memory
  Mma,            // warp-collective mma.sync m16n8k16, fp32 accumulation
  // Hopper statements (sm_90a), see the classes below.
  MbarrierInit,     // sets a shared mbarrier's expected arrival count
  MbarrierArrive,   // one arrival, optionally announcing transaction bytes
  MbarrierWait,     // blocks until the phase of a parity has completed
  TmaLoad,          // asynchronous 2-D box copy global -> shared, completing on an mbarrier
  FenceProxyAsync,  // this thread's generic shared writes before async-proxy accesses
  Wgmma,            // warpgroup-collective wgmma.mma_async m64nNk16, fp32 accumulation
  WgmmaFence,       // register writes before the next wgmma
  WgmmaCommit,      // closes the thread's group of issued wgmmas
  WgmmaWait,        // waits until at most N wgmma groups are in flight
};

class Stmt;
using StmtList = std::vector<std::unique_ptr<Stmt>>;

class Stmt {
 public:
  explicit Stmt(StmtKind kind) : kind_(kind) {}
  virtual ~Stmt() = default;
  StmtKind kind() const { return kind_; }
  // True for statements after which the whole block has synchronized.
  bool synchronizesBlock() const {
    return kind_ == StmtKind::BlockSync || kind_ == StmtKind::BlockReduce ||
           kind_ == StmtKind::BlockBroadcast || kind_ == StmtKind::BlockScan;
  }

 private:
  StmtKind kind_;
};

class ForLoop : public Stmt {
 public:
  ForLoop() : Stmt(StmtKind::ForLoop) {}
  std::string index;  // symbol of the loop variable ("i3", "threadIdx.x")
  IntExpr extent;
  ParallelType parallel_type = ParallelType::Serial;
  const IterDomain* iter_domain = nullptr;
  // Not emitted as a `for` in CUDA: bound to a block/thread index, vectorized,
  // or of trip count 1. Liveness ignores trivial loops.
  bool trivial = false;
  StmtList body;
};

class IfThenElse : public Stmt {
 public:
  IfThenElse() : Stmt(StmtKind::IfThenElse) {}
  Predicate predicate;
  StmtList then_body;
  StmtList else_body;
};

class Allocate : public Stmt {
 public:
  explicit Allocate(Buffer* buffer) : Stmt(StmtKind::Allocate), buffer(buffer) {}
  Buffer* buffer;
};

// The symbol an index_select's table access uses for the index value its
// statement loads first (codegen and the simulator bind it per statement).
inline constexpr const char* kGatheredIndexSymbol = "gathered_index";

// out = op(operands). Operands are accesses, scalar constants/symbols or
// index values.
struct Operand {
  std::optional<Access> access;    // a tensor element
  const Val* scalar = nullptr;     // a fusion scalar (constant or symbolic)
  std::optional<IntExpr> index;    // an index as a value (an iota's position)
  // A read outside [0, extent) of a padded axis yields the pad value instead.
  Predicate in_bounds;
  const Val* out_of_bounds_value = nullptr;
};

class Compute : public Stmt {
 public:
  Compute() : Stmt(StmtKind::Compute) {}
  const Expr* expr = nullptr;  // the fusion expression this instance computes
  Access out;
  std::vector<Operand> operands;
  // Guard on the whole statement (bounds of non-divisible splits, and for
  // shared tensors written by one thread of several, the thread index == 0).
  Predicate predicate;
};

class ReduceInit : public Stmt {
 public:
  ReduceInit() : Stmt(StmtKind::ReduceInit) {}
  const ReductionOp* expr = nullptr;
  Access out;
  Predicate predicate;
};

class ReduceStep : public Stmt {
 public:
  ReduceStep() : Stmt(StmtKind::ReduceStep) {}
  const ReductionOp* expr = nullptr;
  Access out;
  Operand in;
  Predicate predicate;
};

// Sets the running value of a scan (a Local register, `carry`) to the
// combine's identity, just outside the scan axis loop. Each step inside that
// loop is a Compute of the ScanOp whose operands are the input element and
// the carry: carry = combine(carry, in); out = carry. Unpredicated: the
// register is the thread's own.
class ScanInit : public Stmt {
 public:
  ScanInit() : Stmt(StmtKind::ScanInit) {}
  const ScanOp* expr = nullptr;
  Access carry;
};

// One tile of a block-level scan (lower/block_scan.h): the threads of the
// block (TIDx only, a whole number of warps) each hold `items` consecutive
// elements of the row in `items_in` (a Local array, elements 0..items-1;
// item k lies at position first_item + k of the scan axis, counted only when
// that is below `extent`). Each thread combines its items into a partial
// result; the block scans the partials (warp shuffles, then one value per
// warp through `workspace`, a Shared buffer of one accumulator per warp with
// its own Allocate, so the planner places it); then every thread sets
// `running` (a Local register) to the combine of `carry` with the partials
// of the threads before it, ready for its serial steps over its items (the
// scan's Computes, which read `running`), and `carry` (a Local register,
// equal on every thread) takes the block's total for the next tile. Two
// barriers are part of the statement: after the warp totals are stored, and
// after they are read (so the next tile may store again).
class BlockScan : public Stmt {
 public:
  BlockScan() : Stmt(StmtKind::BlockScan) {}
  const ScanOp* expr = nullptr;
  Access items_in;
  int64_t items = 1;
  IntExpr first_item = 0;
  IntExpr extent = 0;
  Access carry;
  Access running;
  const Buffer* workspace = nullptr;
  int64_t warps = 1;
};

// Reduces `in` over the threads bound to `thread_axes` (TIDx/y/z) into `out`
// on every participating thread, through a shared-memory workspace.
class BlockReduce : public Stmt {
 public:
  BlockReduce() : Stmt(StmtKind::BlockReduce) {}
  const ReductionOp* expr = nullptr;
  Access out;
  Access in;
  std::vector<ParallelType> thread_axes;
  // Threads failing it contribute the init value; every thread still takes
  // part in the (synchronizing) reduction.
  Predicate predicate;
  // Which threads write the result to `out` (independently of `predicate`:
  // a thread that contributed nothing, e.g. past the extent of a size-1
  // reduced axis bound to a wider thread dimension, still holds the result):
  // those within the output's extents and, when `out` is Shared or Global,
  // one per element (index 0 along the reduced thread axes and along launch
  // dimensions the output does not bind), so no element is written out of
  // bounds or twice.
  Predicate write_predicate;
  // Shared scratch of one element per thread of the block. Scratch buffers
  // have no Allocate statement: they are not planned with the tensors but
  // placed after them (as nvFuser does), so tensor plans match nvFuser's.
  // None when the reduction stays within warps (shuffle_group *
  // shuffle_stride <= 32).
  const Buffer* workspace = nullptr;
  // Set with the workspace: when the block's shape is constant and each
  // group of reduced threads is this many threads `shuffle_stride` apart
  // (1: an aligned run of consecutive threads; more: the block's x extent,
  // not reduced, under reduced y and z), spanning a power of two up to 32
  // threads or whole warps, the codegen reduces with warp shuffles; 0 means
  // the shared-memory tree.
  int64_t shuffle_group = 0;
  int64_t shuffle_stride = 1;
  // When > 1, this statement is the whole body of a loop of this constant
  // trip count (a thread's vector of columns): the loop's reductions are
  // independent and the codegen does them in one round of the strided
  // shuffle form (one pair of barriers instead of one per element).
  int64_t grouped = 1;
};

// Every thread reads `in` as held by the thread whose index is 0 along each
// of `thread_axes` (a broadcast of a value across threads).
class BlockBroadcast : public Stmt {
 public:
  BlockBroadcast() : Stmt(StmtKind::BlockBroadcast) {}
  const Expr* expr = nullptr;
  Access out;
  Access in;
  std::vector<ParallelType> thread_axes;
  const Buffer* workspace = nullptr;  // shared scratch, as for BlockReduce
};

class BlockSync : public Stmt {
 public:
  BlockSync() : Stmt(StmtKind::BlockSync) {}
  // Why the barrier exists: "RAW T2", "WAR T2", "promoteReuse T0 -> T5".
  std::string reason;
  bool inserted_for_reuse = false;
};

// cp.async.cg/ca.shared.global: copies `bytes` (4, 8 or 16) starting at
// `src` (a Global element) to `dst` (a Shared element), both aligned to
// `bytes`. The copy lands at the CpAsyncWait that retires its group; until
// then the destination bytes must be neither read nor written. Where
// `predicate` fails nothing is read and the destination is zero-filled
// (src-size 0), which is how tiles past the tensor's edge stay harmless.
class CpAsync : public Stmt {
 public:
  CpAsync() : Stmt(StmtKind::CpAsync) {}
  Access dst;
  Access src;
  int64_t bytes = 16;
  Predicate predicate;
  // What every copy assumes of `src`'s argument, checked before each CUDA
  // launch (codegen/vectorize.h; the simulator reports a misaligned or
  // out-of-bounds copy itself): these values (its contiguous
  // extent, its other strides) are multiples of elements(), and
  // `src_unit_stride` is 1. The data pointer must be aligned to `bytes`.
  std::vector<IntExpr> src_multiples;
  IntExpr src_unit_stride = 1;
  int64_t elements() const { return bytes / dataTypeSize(dst.buffer->dtype); }
};

// cp.async.commit_group: the copies this thread issued since its last commit
// form one group.
class CpAsyncCommit : public Stmt {
 public:
  CpAsyncCommit() : Stmt(StmtKind::CpAsyncCommit) {}
};

// cp.async.wait_group `pending`: blocks this thread until at most `pending`
// of its committed groups are still in flight (the oldest retire first).
// Only the issuing thread's view is ordered: other threads see the bytes
// after a barrier that follows this wait.
class CpAsyncWait : public Stmt {
 public:
  CpAsyncWait() : Stmt(StmtKind::CpAsyncWait) {}
  int64_t pending = 0;
};

// ldmatrix.sync.aligned.m8n8.x{matrices}[.trans].shared.b16 (warp-collective:
// all 32 lanes of the warp execute it together, unpredicated). Lane 8j + r
// gives, through `src` (a Shared element), the address of row r of matrix j:
// 8 consecutive 16-bit elements, 16-byte aligned. Each lane receives 2
// elements per matrix into `dst` (a Local buffer, elements dst.index + 2j and
// + 2j + 1): row lane/4, columns 2 (lane%4) and + 1 of matrix j, or with
// `transpose` row 2 (lane%4) (+1), column lane/4. See fusion/mma_fragment.h.
class LdMatrix : public Stmt {
 public:
  LdMatrix() : Stmt(StmtKind::LdMatrix) {}
  Access dst;
  Access src;
  int64_t matrices = 4;  // 1, 2 or 4
  bool transpose = false;
};

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: D = A B + C with D = C
// (warp-collective). Each lane holds, from the access index on, 8 elements of
// A (16 x 16), 4 of B (16 x 8) and 4 fp32 of C (16 x 8) in the fragment
// layouts of fusion/mma_fragment.h. A and B are Local Half or BFloat16
// buffers of one type; C is a Local Float buffer.
class Mma : public Stmt {
 public:
  Mma() : Stmt(StmtKind::Mma) {}
  Access c;
  Access a;
  Access b;
};

// An mbarrier is one element of a Shared buffer of Int (8-byte) elements,
// 8-byte aligned. Its state: the arrivals expected per phase, the arrivals
// and transaction bytes still pending in the current phase, and the phase
// number (0 after init). A phase completes when no arrival and no
// transaction byte is pending; the next phase then expects the same count.

// mbarrier.init.shared::cta.b64: phase 0 expecting `arrivals` arrivals. A
// generic-proxy write: before an async-proxy operation (a TMA copy
// completing on it) the initializing thread needs a FenceProxyAsync and the
// block a barrier.
class MbarrierInit : public Stmt {
 public:
  MbarrierInit() : Stmt(StmtKind::MbarrierInit) {}
  Access barrier;
  int64_t arrivals = 1;
};

// mbarrier.arrive[.expect_tx].shared::cta.b64: one arrival on the current
// phase; with `transaction_bytes` > 0 it first adds that many bytes the phase
// must also see completed (by TmaLoad) before it completes.
class MbarrierArrive : public Stmt {
 public:
  MbarrierArrive() : Stmt(StmtKind::MbarrierArrive) {}
  Access barrier;
  int64_t transaction_bytes = 0;
};

// A loop on mbarrier.try_wait.parity.shared::cta.b64: returns once the
// phase of parity `parity` (0 or 1) has completed, i.e. while the current
// phase's parity differs from it. The data of the TMA copies that completed
// that phase are visible to the waiting thread afterwards.
class MbarrierWait : public Stmt {
 public:
  MbarrierWait() : Stmt(StmtKind::MbarrierWait) {}
  Access barrier;
  IntExpr parity = 0;
};

// How a TMA box lands in shared memory. Bytes128: the box's rows must be 128
// bytes; 16-byte chunk c of row r is stored at chunk c ^ (r % 8) (the
// pattern repeats every 1024 bytes, so the destination is 1024-byte aligned).
enum class TmaSwizzle { None, Bytes128 };

// A tensor map (CUtensorMap, a kernel parameter the runtime encodes at
// launch): boxes of box_rows x box_cols elements of a 2-D row-major Global
// tensor (its innermost stride 1).
struct TensorMap {
  const Buffer* tensor = nullptr;
  int64_t box_rows = 0;
  int64_t box_cols = 0;
  TmaSwizzle swizzle = TmaSwizzle::None;
  std::string name;  // the kernel parameter's name
  int64_t boxBytes() const { return box_rows * box_cols * dataTypeSize(tensor->dtype); }
};

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// (issued by one thread): copies the box of `map` whose first element is
// (row, col) of the tensor to `dst` (a Shared element, 128-byte aligned),
// row-major and swizzled as the map says; elements outside the tensor are
// zero-filled. It completes the box's bytes on `barrier`'s current phase, and
// its data land when that phase completes: no thread may touch `dst` before
// then, and a thread reads it only after waiting for that phase.
class TmaLoad : public Stmt {
 public:
  TmaLoad() : Stmt(StmtKind::TmaLoad) {}
  Access dst;
  const TensorMap* map = nullptr;
  IntExpr row = 0;
  IntExpr col = 0;
  Access barrier;
};

// fence.proxy.async.shared::cta: the thread's earlier generic-proxy writes
// to shared memory (stores, mbarrier.init) become visible to later
// async-proxy operations (TMA, wgmma operand reads).
class FenceProxyAsync : public Stmt {
 public:
  FenceProxyAsync() : Stmt(StmtKind::FenceProxyAsync) {}
};

// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}: D = A B^T (+ D when
// `accumulate`), executed by a warpgroup (4 warps, 128 threads, aligned)
// together. A (64 x 16) and B (n x 16) are read from shared memory through
// 64-bit matrix descriptors: `a` and `b` are their (row 0, k 0) elements in
// tiles of rows of 64 16-bit elements (128 bytes), 128-byte swizzled as a
// TmaSwizzle::Bytes128 load leaves them, 8-row groups 1024 bytes apart; the
// tile is 1024-byte aligned and `a`/`b` lie 0, 32, 64 or 96 bytes into it
// (the k16 step). Each thread holds n / 2 fp32 accumulators from `acc` on
// (a Local Float buffer), in the layout of lower/hopper_layout.h. The
// result is written asynchronously: the accumulators may be touched only
// after a WgmmaWait retires the wgmma's group, and registers written by
// other instructions need a WgmmaFence before the wgmma reads them.
class Wgmma : public Stmt {
 public:
  Wgmma() : Stmt(StmtKind::Wgmma) {}
  Access acc;
  Access a;
  Access b;
  int64_t n = 64;
  bool accumulate = true;
};

// wgmma.fence.sync.aligned. `accumulators` (Local Float buffers) are the
// registers later wgmmas use: codegen pins them so the compiler finishes
// their writes before the fence.
class WgmmaFence : public Stmt {
 public:
  WgmmaFence() : Stmt(StmtKind::WgmmaFence) {}
  std::vector<const Buffer*> accumulators;
};

// wgmma.commit_group.sync.aligned: this thread's wgmmas since its last
// commit form one group.
class WgmmaCommit : public Stmt {
 public:
  WgmmaCommit() : Stmt(StmtKind::WgmmaCommit) {}
};

// wgmma.wait_group.sync.aligned `pending`: at most `pending` of the thread's
// committed groups stay in flight (the oldest retire first). Codegen pins
// `accumulators` after it, so no use of them moves before the wait.
class WgmmaWait : public Stmt {
 public:
  WgmmaWait() : Stmt(StmtKind::WgmmaWait) {}
  int64_t pending = 0;
  std::vector<const Buffer*> accumulators;
};


// The launch configuration: one extent per bound parallel type (1 if unused).
struct LaunchDims {
  IntExpr grid[3] = {1, 1, 1};   // BIDx, BIDy, BIDz
  IntExpr block[3] = {1, 1, 1};  // TIDx, TIDy, TIDz
};

struct Kernel {
  std::vector<std::unique_ptr<Buffer>> buffers;  // every allocation
  std::vector<const Buffer*> inputs;             // Global, in fusion input order
  std::vector<const Buffer*> outputs;            // Global, in fusion output order
  std::vector<const Scalar*> scalar_inputs;
  // Tensor maps of TmaLoad statements: kernel parameters after the scalars.
  std::vector<std::unique_ptr<TensorMap>> tensor_maps;
  StmtList body;
  LaunchDims launch;
  // The shared-memory plan (buffers, conflicts, addresses, inserted barriers,
  // report), set by the plan_shared_memory pass (smem_addresses.cpp).
  std::shared_ptr<const alloc_reuse::SharedMemoryPlan> smem_plan;

  // A new buffer of `shape` (elements = its product), owned by the kernel.
  // Inline: codegen and runtime use kir without linking the lowering library.
  Buffer* addBuffer(const TensorView* tv, std::string name, MemoryType memory, DataType dtype,
                    std::vector<IntExpr> shape) {
    auto b = std::make_unique<Buffer>();
    b->tv = tv;
    b->name = std::move(name);
    b->memory = memory;
    b->dtype = dtype;
    b->elements = 1;
    for (const IntExpr& e : shape) b->elements = b->elements * e;
    b->shape = std::move(shape);
    buffers.push_back(std::move(b));
    return buffers.back().get();
  }
  std::vector<const Buffer*> sharedBuffers() const;
  std::vector<const Buffer*> localBuffers() const;
  // The loop nest with a position number on each statement.
  std::string toString() const;
  // Launch dimensions and every allocation (name, memory, dtype, shape,
  // bytes, address and alias for shared ones).
  std::string summary() const;
};

// Program positions (docs/planning.md §1): every statement gets the next number in
// program order (loops and ifs too); after a non-trivial loop's body one more
// number marks the loop's end. Liveness, the planners and the printer share it.
struct ProgramPositions {
  std::unordered_map<const Stmt*, int64_t> start;
  std::unordered_map<const ForLoop*, int64_t> loop_end;
  int64_t count = 0;
};
ProgramPositions numberPositions(const StmtList& body);

// The statements with their positions, one per line, indented by nesting.
std::string toString(const StmtList& body);

// Calls f(stmt, depth) on every statement in program order.
template <typename F>
void forEachStmt(const StmtList& list, F&& f, int depth = 0) {
  for (const auto& stmt : list) {
    f(stmt.get(), depth);
    if (auto* loop = dynamic_cast<const ForLoop*>(stmt.get())) {
      forEachStmt(loop->body, f, depth + 1);
    } else if (auto* ite = dynamic_cast<const IfThenElse*>(stmt.get())) {
      forEachStmt(ite->then_body, f, depth + 1);
      forEachStmt(ite->else_body, f, depth + 1);
    }
  }
}

}  // namespace smelt::kir
