#include "lower/tensor_core_matmul.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "fusion/error.h"
#include "fusion/mma_fragment.h"
#include "fusion/ops.h"
#include "fusion/symbols.h"
#include "lower/passes.h"
#include "lower/transform_index.h"

namespace smelt {

namespace {

// x ^ y for 0 <= x, y < 8, in the operations IntExpr has (one term per bit).
IntExpr xor3(const IntExpr& x, const IntExpr& y) {
  IntExpr result = 0;
  for (int64_t bit : {1, 2, 4}) result = result + ((x / bit + y / bit) % 2) * bit;
  return result;
}

IntExpr sym(const std::string& name) { return IntExpr::symbol(name); }

kir::Operand accessOperand(const kir::Access& access) {
  kir::Operand op;
  op.access = access;
  return op;
}

// Which output coordinate a logical dimension of an epilogue tensor follows
// (Batch: the batch of a batched matmul, blockIdx.z).
enum class Coord { Batch, Row, Col, Zero };

class Builder {
 public:
  Builder(Fusion* fusion, const TensorCoreMatmulOperands& ops, const TensorCoreMatmulParams& p)
      : fusion_(fusion), ops_(ops), p_(p) {}

  kir::Kernel build() {
    checkOperands();
    collectEpilogue();
    makeBuffers();
    kir::StmtList& body = threadLoops();
    for (kir::Buffer* b : locals_) append(body, std::make_unique<kir::Allocate>(b));
    for (kir::Buffer* b : {a_smem_, b_smem_}) append(body, std::make_unique<kir::Allocate>(b));
    if (c_smem_ != nullptr) append(body, std::make_unique<kir::Allocate>(c_smem_));
    initAccumulators(body);
    mainLoop(body);
    if (p_.smem_epilogue) {
      smemEpilogue(body);
    } else {
      registerEpilogue(body);
    }
    return std::move(kernel_);
  }

 private:
  // ---- analysis ----
  void checkOperands() {
    SMELT_CHECK(ops_.a && ops_.b && ops_.sum && ops_.output,
                "tensor-core matmul: an operand tensor is null");
    const DataType t = ops_.a->dtype();
    SMELT_CHECK(t == DataType::Half || t == DataType::BFloat16,
                "tensor-core matmul: operand ", ops_.a->name(), " is ", t,
                "; mma.sync m16n8k16 takes Half or BFloat16");
    SMELT_CHECK(ops_.b->dtype() == t, "tensor-core matmul: operands ", ops_.a->name(), " (", t,
                ") and ", ops_.b->name(), " (", ops_.b->dtype(), ") differ in type");
    SMELT_CHECK(ops_.a->isFusionInput() && ops_.b->isFusionInput(),
                "tensor-core matmul: operands ", ops_.a->name(), " and ", ops_.b->name(),
                " must be fusion inputs (they are loaded with cp.async)");
    // A batched matmul ([B, M, K] x [B, K, N]) runs batch blockIdx.z; its
    // operands' logical dimensions shift by one.
    batch_ = ops_.a->logicalNoReductions().size() == 3 ? 1 : 0;
    m_ = ops_.a->logicalNoReductions().at(batch_)->extent();
    k_ = ops_.a->logicalNoReductions().at(batch_ + 1)->extent();
    n_ = ops_.b->logicalNoReductions().at(batch_ + 1)->extent();
    if (batch_ == 1) batches_ = ops_.a->logicalNoReductions().at(0)->extent();
  }

  // The fusion's ops other than the matmul (casts and broadcasts of the
  // operands, the product, the sum): the epilogue, with the coordinate each
  // tensor's dimensions follow, propagated back from the output [M, N].
  void collectEpilogue() {
    std::set<const Expr*> matmul_exprs{ops_.sum->definition()};
    std::vector<const Val*> work{ops_.sum->definition()->input(0)};
    while (!work.empty()) {
      const Val* v = work.back();
      work.pop_back();
      if (v == ops_.a || v == ops_.b || v->definition() == nullptr) continue;
      matmul_exprs.insert(v->definition());
      for (const Val* in : v->definition()->inputs()) work.push_back(in);
    }
    for (Expr* e : fusion_->exprs()) {
      if (!matmul_exprs.count(e)) epilogue_.push_back(e);
    }
    coords_[ops_.output] = outputCoords();
    for (auto it = epilogue_.rbegin(); it != epilogue_.rend(); ++it) {
      const Expr* e = *it;
      // An expand reads its input's element at the same coordinates (its
      // broadcast dimensions, plain broadcasts in the input, read index 0).
      SMELT_CHECK(e->type() == ExprType::Unary || e->type() == ExprType::Binary ||
                      e->type() == ExprType::Where || e->type() == ExprType::Broadcast ||
                      e->type() == ExprType::Set || e->type() == ExprType::Expand,
                  "tensor-core matmul: epilogue op ", e->toString(),
                  " is not pointwise (unary, binary, where, broadcast, expand or set)");
      auto out = coords_.find(e->output());
      SMELT_CHECK(out != coords_.end(), "tensor-core matmul: ", e->output()->name(),
                  " is not on the way to the output ", ops_.output->name());
      for (TensorView* in : e->tensorInputs()) {
        std::vector<Coord> c;
        const auto dims = in->logicalNoReductions();
        if (e->type() == ExprType::Broadcast) {
          const auto& is_new = static_cast<const BroadcastOp*>(e)->isNewAxis();
          for (size_t d = 0; d < is_new.size(); ++d) {
            if (!is_new[d]) c.push_back(out->second.at(d));
          }
        } else {
          c = out->second;
        }
        SMELT_CHECK(c.size() == dims.size(), "tensor-core matmul: ", in->name(), " has rank ",
                    dims.size(), " where the epilogue expects ", c.size());
        for (size_t d = 0; d < dims.size(); ++d) {
          if (dims[d]->isPlainBroadcast()) c[d] = Coord::Zero;
        }
        coords_[in] = c;
      }
    }
    SMELT_CHECK(coords_.count(ops_.sum) && coords_.at(ops_.sum) == outputCoords(),
                "tensor-core matmul: the output ", ops_.output->name(),
                " is not an element-wise function of the matmul result ", ops_.sum->name());
  }

  std::vector<Coord> outputCoords() const {
    if (batch_ == 1) return {Coord::Batch, Coord::Row, Coord::Col};
    return {Coord::Row, Coord::Col};
  }

  // ---- buffers ----
  kir::Buffer* newBuffer(const TensorView* tv, const std::string& name, MemoryType memory,
                         DataType dtype, std::vector<IntExpr> shape) {
    return kernel_.addBuffer(tv, name, memory, dtype, std::move(shape));
  }

  // A shared tile backed by a fusion tensor of its own, so the planner
  // plans it as a tensor (and promoteReuse applies).
  kir::Buffer* sharedTile(const std::string& name, DataType dtype, int64_t elements,
                          bool promote) {
    FusionGuard guard(fusion_);
    TensorView* tv = makeConcreteTensor({elements}, dtype);
    tv->setMemoryType(MemoryType::Shared)->setName(name);
    if (promote) tv->promoteReuse();
    kir::Buffer* b = newBuffer(tv, name, MemoryType::Shared, dtype, {elements});
    // The swizzle permutes 16-byte chunks within 128-byte lines of the tile.
    b->alignment = 128;
    return b;
  }

  void makeBuffers() {
    for (Val* v : fusion_->inputs()) {
      if (const TensorView* tv = v->asTensor()) {
        kernel_.inputs.push_back(global(tv));
      } else if (const auto* s = dynamic_cast<const Scalar*>(v); s && !s->isConstant()) {
        kernel_.scalar_inputs.push_back(s);
      }
    }
    kernel_.outputs.push_back(global(ops_.output));
    const DataType t = ops_.a->dtype();
    a_smem_ = sharedTile("A_s", t, p_.stages * p_.block_m * p_.block_k, p_.promote_reuse);
    b_smem_ = sharedTile("B_s", t, p_.stages * p_.block_n * p_.block_k, p_.promote_reuse);
    if (p_.smem_epilogue) {
      c_smem_ = sharedTile("C_s", DataType::Float, p_.block_m * p_.block_n, false);
    }
    m_tiles_ = p_.warp_m / mma::kM;
    n_tiles_ = p_.warp_n / mma::kN;
    a_frag_ = local("A_frag", t, m_tiles_ * mma::kAElementsPerLane);
    b_frag_ = local("B_frag", t, n_tiles_ * mma::kBElementsPerLane);
    acc_ = local("acc", DataType::Float, m_tiles_ * n_tiles_ * mma::kCElementsPerLane);
    for (const Expr* e : epilogue_) {
      if (e->output() != ops_.output) {
        temps_[e->output()] = local(e->output()->name(), e->output()->dtype(), 1);
      }
    }
    // Vectors along the output's rows: pairs in the register epilogue (a
    // thread's adjacent columns, with an even static N), 16 bytes of the
    // output from C_s.
    if (!p_.smem_epilogue) {
      vector_ = n_.constant() && *n_.constant() % 2 == 0 ? 2 : 0;
    } else {
      vector_ = sharedEpilogueVector(p_, n_.constant(), ops_.output->dtype());
    }
    if (vector_ > 0) {
      const std::string suffix = p_.smem_epilogue ? "_vec" : "_pair";
      out_pair_ = local("out" + suffix, ops_.output->dtype(), vector_);
      for (const auto& [tv, coords] : coords_) {
        if (tv->isFusionInput() && !coords.empty() && coords.back() == Coord::Col &&
            vector_ * dataTypeSize(tv->dtype()) <= 16) {
          in_pairs_[tv] = local(tv->name() + suffix, tv->dtype(), vector_);
        }
      }
    }
    kernel_.launch.grid[0] = ceilDiv(n_, p_.block_n);
    kernel_.launch.grid[1] = ceilDiv(m_, p_.block_m);
    kernel_.launch.grid[2] = batches_;
    kernel_.launch.block[0] = p_.threads();
  }

  kir::Buffer* global(const TensorView* tv) {
    if (auto it = globals_.find(tv); it != globals_.end()) return it->second;
    std::vector<IntExpr> shape;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      shape.push_back(id->isPlainBroadcast() ? IntExpr(1) : id->loopExtent());
    }
    kir::Buffer* b = newBuffer(tv, "T" + std::to_string(tv->number()), MemoryType::Global,
                               tv->dtype(), std::move(shape));
    globals_[tv] = b;
    return b;
  }

  kir::Buffer* local(const std::string& name, DataType dtype, int64_t elements) {
    kir::Buffer* b = newBuffer(nullptr, name, MemoryType::Local, dtype, {elements});
    locals_.push_back(b);
    return b;
  }

  // ---- statements ----
  template <typename T>
  static T* append(kir::StmtList& list, std::unique_ptr<T> stmt) {
    T* raw = stmt.get();
    list.push_back(std::move(stmt));
    return raw;
  }

  static kir::ForLoop* loop(kir::StmtList& list, const std::string& index, IntExpr extent,
                            ParallelType pt = ParallelType::Serial) {
    auto l = std::make_unique<kir::ForLoop>();
    l->index = index;
    l->trivial = isParallelDim(pt) || extent.constant() == std::optional<int64_t>(1);
    l->extent = std::move(extent);
    l->parallel_type = pt;
    return append(list, std::move(l));
  }
  // A loop bound to a thread or block index runs over that builtin.
  static kir::ForLoop* parallelLoop(kir::StmtList& list, ParallelType pt, IntExpr extent) {
    return loop(list, parallelIndexSymbol(pt), std::move(extent), pt);
  }

  kir::StmtList& threadLoops() {
    kir::StmtList* outer = &kernel_.body;
    if (batch_ == 1) {
      outer = &parallelLoop(kernel_.body, ParallelType::BIDz, kernel_.launch.grid[2])->body;
    }
    kir::ForLoop* by = parallelLoop(*outer, ParallelType::BIDy, kernel_.launch.grid[1]);
    kir::ForLoop* bx = parallelLoop(by->body, ParallelType::BIDx, kernel_.launch.grid[0]);
    return parallelLoop(bx->body, ParallelType::TIDx, p_.threads())->body;
  }

  static IntExpr lane() { return sym(threadIdxSymbol(0)) % mma::kWarpSize; }
  IntExpr warpRow() const { return sym(threadIdxSymbol(0)) / mma::kWarpSize / (p_.block_n / p_.warp_n); }
  IntExpr warpCol() const { return sym(threadIdxSymbol(0)) / mma::kWarpSize % (p_.block_n / p_.warp_n); }

  // acc = 0, as a fill (the sum may be an MmaOp's, which has no ReductionOp
  // to take the init value from).
  void initAccumulators(kir::StmtList& body) {
    kir::ForLoop* l = loop(body, "i_init", acc_->elements, ParallelType::Unroll);
    auto init = std::make_unique<kir::Compute>();
    {
      FusionGuard guard(fusion_);
      init->expr = full({1}, 0.0, DataType::Float)->definition();
    }
    init->out = {acc_, sym("i_init")};
    append(l->body, std::move(init));
  }

  // One operand tile: `rows` x `cols` elements, cols contiguous in both
  // global and shared memory. The tile's (row, col) is global element
  // (row_base + row) of the strided dim and (col_base + col) of the
  // contiguous one.
  struct TileSpec {
    kir::Buffer* smem;
    const kir::Buffer* gmem;
    int64_t rows;
    int64_t cols;
    IntExpr row_base;    // in the global dimension the rows follow
    IntExpr row_extent;  // that dimension's extent
    int row_dim;         // logical dimension of the global tensor the rows follow
    IntExpr col_base;
    IntExpr col_extent;
    int col_dim;
  };

  TileSpec aTile(const IntExpr& k0) const {
    const IntExpr m0 = sym(blockIdxSymbol(1)) * p_.block_m;
    const int m = batch_, k = batch_ + 1;
    if (p_.a_k_contiguous) {
      return {a_smem_, globals_.at(ops_.a), p_.block_m, p_.block_k, m0, m_, m, k0, k_, k};
    }
    return {a_smem_, globals_.at(ops_.a), p_.block_k, p_.block_m, k0, k_, k, m0, m_, m};
  }

  TileSpec bTile(const IntExpr& k0) const {
    const IntExpr n0 = sym(blockIdxSymbol(0)) * p_.block_n;
    const int k = batch_, n = batch_ + 1;
    if (p_.b_k_contiguous) {
      return {b_smem_, globals_.at(ops_.b), p_.block_n, p_.block_k, n0, n_, n, k0, k_, k};
    }
    return {b_smem_, globals_.at(ops_.b), p_.block_k, p_.block_n, k0, k_, k, n0, n_, n};
  }

  // Where batch blockIdx.z of a batched operand starts (0 unbatched).
  IntExpr batchOffset(const kir::Buffer* gmem) const {
    return batch_ == 1 ? sym(blockIdxSymbol(2)) * stride(gmem, 0) : IntExpr(0);
  }

  static IntExpr stride(const kir::Buffer* b, int d) {
    return b->tv != nullptr ? globalStride(b->tv, d) : sym(strideSymbol(b->name, d));
  }

  // Every thread copies chunks tid, tid + threads, ... of the tile.
  void loadTile(kir::StmtList& body, const TileSpec& t, const IntExpr& stage,
                const std::string& tag) {
    const int64_t chunks_per_row = t.cols / 8;
    const int64_t chunks = t.rows * chunks_per_row;
    const std::string index = "i_ld" + tag + std::to_string(load_loops_++);
    kir::ForLoop* l = loop(body, index, chunks / p_.threads(), ParallelType::Unroll);
    const IntExpr chunk = sym(index) * p_.threads() + sym(threadIdxSymbol(0));
    const IntExpr row = chunk / chunks_per_row;
    const IntExpr col = chunk % chunks_per_row * 8;
    auto copy = std::make_unique<kir::CpAsync>();
    copy->bytes = 16;
    copy->dst = {t.smem, stage * (t.rows * t.cols) + operandTileIndex(row, col, t.cols, p_.swizzle)};
    copy->src = {t.gmem, batchOffset(t.gmem) + (t.row_base + row) * stride(t.gmem, t.row_dim) +
                             (t.col_base + col) * stride(t.gmem, t.col_dim)};
    copy->predicate.terms = {{t.row_base + row, kir::Predicate::Term::Kind::LessThan, t.row_extent},
                             {t.col_base + col, kir::Predicate::Term::Kind::LessThan, t.col_extent}};
    // Whole chunks: a row's last chunk ends at its end, and every row (of
    // every batch) starts 16-byte aligned.
    copy->src_multiples = {t.col_extent, stride(t.gmem, t.row_dim)};
    if (batch_ == 1) copy->src_multiples.push_back(stride(t.gmem, 0));
    copy->src_unit_stride = stride(t.gmem, t.col_dim);
    append(l->body, std::move(copy));
  }

  void loadStage(kir::StmtList& body, const IntExpr& k_tile, const std::string& tag) {
    const IntExpr stage = k_tile % p_.stages;
    loadTile(body, aTile(k_tile * p_.block_k), stage, tag);
    loadTile(body, bTile(k_tile * p_.block_k), stage, tag);
    append(body, std::make_unique<kir::CpAsyncCommit>());
  }

  void mainLoop(kir::StmtList& body) {
    // Prologue: tiles 0 .. stages - 2.
    kir::ForLoop* pro = loop(body, "i_pro", p_.stages - 1, ParallelType::Unroll);
    loadStage(pro->body, sym("i_pro"), "p");
    kir::ForLoop* kt = loop(body, "i_kt", ceilDiv(k_, p_.block_k));
    const IntExpr k_tile = sym("i_kt");
    auto wait = std::make_unique<kir::CpAsyncWait>();
    wait->pending = p_.stages - 2;
    append(kt->body, std::move(wait));
    auto sync = std::make_unique<kir::BlockSync>();
    sync->reason = "RAW A_s, B_s (tile i_kt landed); WAR of the stage refilled next";
    append(kt->body, std::move(sync));
    loadStage(kt->body, k_tile + (p_.stages - 1), "m");
    kir::ForLoop* ks = loop(kt->body, "i_ks", p_.block_k / mma::kK, ParallelType::Unroll);
    const IntExpr stage = k_tile % p_.stages;
    const IntExpr k16 = sym("i_ks") * mma::kK;
    loadAFragments(ks->body, stage, k16);
    loadBFragments(ks->body, stage, k16);
    kir::ForLoop* mt = loop(ks->body, "i_mt", m_tiles_, ParallelType::Unroll);
    kir::ForLoop* nt = loop(mt->body, "i_nt", n_tiles_, ParallelType::Unroll);
    auto mma_stmt = std::make_unique<kir::Mma>();
    mma_stmt->a = {a_frag_, sym("i_mt") * mma::kAElementsPerLane};
    mma_stmt->b = {b_frag_, sym("i_nt") * mma::kBElementsPerLane};
    mma_stmt->c = {acc_, (sym("i_mt") * n_tiles_ + sym("i_nt")) * mma::kCElementsPerLane};
    append(nt->body, std::move(mma_stmt));
    // Drain the prefetches of tiles past K (zero fills) so no copy is in
    // flight when the operand bytes are reused or the kernel ends.
    append(body, std::make_unique<kir::CpAsyncWait>());
  }

  // A 16 x 16 block per m16 tile with one ldmatrix.x4: lane l addresses row
  // l % 16, column half l / 16 (K contiguous), or with .trans, matrix j = l / 8
  // (m half j % 2, k half j / 2) at k row l % 8 (M contiguous).
  void loadAFragments(kir::StmtList& body, const IntExpr& stage, const IntExpr& k16) {
    kir::LdMatrix* ld =
        ldmatrixPerTile(body, "i_amt", m_tiles_, 4, a_frag_, mma::kAElementsPerLane);
    const IntExpr m = warpRow() * p_.warp_m + sym("i_amt") * mma::kM;
    const IntExpr l = lane();
    const int64_t tile = p_.block_m * p_.block_k;
    if (p_.a_k_contiguous) {
      ld->src = {a_smem_, stage * tile + operandTileIndex(m + l % 16, k16 + l / 16 * 8, p_.block_k,
                                                          p_.swizzle)};
    } else {
      ld->transpose = true;
      const IntExpr j = l / 8;
      ld->src = {a_smem_, stage * tile + operandTileIndex(k16 + j / 2 * 8 + l % 8, m + j % 2 * 8,
                                                          p_.block_m, p_.swizzle)};
    }
  }

  // A 16 x 8 block per n8 tile with one ldmatrix.x2: matrix j = k half j;
  // lane 8 j + r addresses n row r (K contiguous) or, with .trans, k row
  // 8 j + r (N contiguous). Lanes 16..31 repeat lanes 0..15's addresses.
  void loadBFragments(kir::StmtList& body, const IntExpr& stage, const IntExpr& k16) {
    kir::LdMatrix* ld =
        ldmatrixPerTile(body, "i_bnt", n_tiles_, 2, b_frag_, mma::kBElementsPerLane);
    const IntExpr n = warpCol() * p_.warp_n + sym("i_bnt") * mma::kN;
    const IntExpr l = lane() % 16;
    const int64_t tile = p_.block_n * p_.block_k;
    if (p_.b_k_contiguous) {
      ld->src = {b_smem_, stage * tile + operandTileIndex(n + l % 8, k16 + l / 8 * 8, p_.block_k,
                                                          p_.swizzle)};
    } else {
      ld->transpose = true;
      ld->src = {b_smem_, stage * tile + operandTileIndex(k16 + l, n, p_.block_n, p_.swizzle)};
    }
  }

  // An unrolled loop `index` over `tiles` fragment tiles, each an ldmatrix of
  // `matrices` 8x8 matrices into `frag` at tile * `per_lane`; the caller sets
  // the source address (and .trans).
  kir::LdMatrix* ldmatrixPerTile(kir::StmtList& body, const std::string& index, int64_t tiles,
                                 int64_t matrices, kir::Buffer* frag, int64_t per_lane) {
    kir::ForLoop* tile_loop = loop(body, index, tiles, ParallelType::Unroll);
    auto ld = std::make_unique<kir::LdMatrix>();
    ld->matrices = matrices;
    ld->dst = {frag, sym(index) * per_lane};
    return append(tile_loop->body, std::move(ld));
  }

  // ---- epilogue ----
  // Loops over the thread's accumulator elements; `at` gets the fragment
  // element (its acc index) and its row and column in the block tile.
  struct FragmentElement {
    IntExpr acc_index;
    IntExpr row;  // in the block tile
    IntExpr col;
  };
  kir::StmtList& fragmentLoops(kir::StmtList& body, FragmentElement& at, const std::string& tag) {
    kir::ForLoop* mt = loop(body, "i_emt" + tag, m_tiles_, ParallelType::Unroll);
    kir::ForLoop* nt = loop(mt->body, "i_ent" + tag, n_tiles_, ParallelType::Unroll);
    kir::ForLoop* e = loop(nt->body, "i_e" + tag, mma::kCElementsPerLane, ParallelType::Unroll);
    const IntExpr i = sym("i_e" + tag);
    at = fragmentElement(sym("i_emt" + tag), sym("i_ent" + tag), i / 2, i % 2);
    return e->body;
  }

  // Accumulator element 2 half + column of m tile mt and n tile nt of the
  // thread: cElement(lane, i) of fusion/mma_fragment.h, symbolically. The
  // two columns of a half are adjacent in one row.
  FragmentElement fragmentElement(const IntExpr& mt, const IntExpr& nt, const IntExpr& half,
                                  const IntExpr& column) const {
    FragmentElement at;
    at.acc_index = (mt * n_tiles_ + nt) * mma::kCElementsPerLane + half * 2 + column;
    at.row = warpRow() * p_.warp_m + mt * mma::kM + lane() / 4 + half * 8;
    at.col = warpCol() * p_.warp_n + nt * mma::kN + lane() % 4 * 2 + column;
    return at;
  }

  kir::Predicate columnInBounds(const IntExpr& col) const {
    kir::Predicate p;
    p.terms = {{col, kir::Predicate::Term::Kind::LessThan, n_}};
    return p;
  }

  kir::Predicate inBounds(const IntExpr& row, const IntExpr& col) const {
    kir::Predicate p;
    p.terms = {{row, kir::Predicate::Term::Kind::LessThan, m_},
               {col, kir::Predicate::Term::Kind::LessThan, n_}};
    return p;
  }

  // Element (row, col) of an epilogue tensor in global memory, by the
  // coordinates its dimensions follow.
  kir::Access globalAccess(const TensorView* tv, const IntExpr& row, const IntExpr& col) {
    const kir::Buffer* g = global(tv);
    IntExpr index = 0;
    const std::vector<Coord>& c = coords_.at(tv);
    for (size_t d = 0; d < c.size(); ++d) {
      if (c[d] == Coord::Zero) continue;
      const IntExpr coord = c[d] == Coord::Batch ? sym(blockIdxSymbol(2)) : c[d] == Coord::Row ? row : col;
      index = index + coord * stride(g, static_cast<int>(d));
    }
    return {g, index};
  }

  // The epilogue ops for output element (row, col), reading the matmul
  // result through `result`; the output's value goes to `result_to` when
  // given instead of the output tensor.
  void epilogueOps(kir::StmtList& body, const kir::Access& result, const IntExpr& row,
                   const IntExpr& col, const std::optional<kir::Access>& result_to = std::nullopt) {
    const kir::Predicate guard = inBounds(row, col);
    auto accessOf = [&](const TensorView* tv) -> kir::Access {
      if (tv == ops_.sum) return result;
      if (auto it = temps_.find(tv); it != temps_.end()) return {it->second, 0};
      if (auto it = staged_.find(tv); it != staged_.end()) return it->second;
      return globalAccess(tv, row, col);
    };
    const auto output = [&] { return result_to ? *result_to : accessOf(ops_.output); };
    if (epilogue_.empty()) {
      // The output is the sum itself: a plain store.
      auto c = std::make_unique<kir::Compute>();
      c->expr = copyExprOf(ops_.sum);
      c->out = output();
      c->operands.push_back(accessOperand(result));
      c->predicate = guard;
      append(body, std::move(c));
      return;
    }
    for (const Expr* e : epilogue_) {
      auto c = std::make_unique<kir::Compute>();
      c->expr = e;
      c->out = e->output() == ops_.output ? output() : kir::Access{temps_.at(e->output()), 0};
      for (const Val* in : e->inputs()) {
        if (const TensorView* tv = in->asTensor()) {
          c->operands.push_back(accessOperand(accessOf(tv)));
        } else {
          kir::Operand op;
          op.scalar = in;
          c->operands.push_back(op);
        }
      }
      c->predicate = guard;
      append(body, std::move(c));
    }
  }

  // Each thread's accumulators, through the epilogue, to the output. A
  // thread holds pairs of adjacent columns (elements 2 h and 2 h + 1): with
  // an even N, each pair is computed into out_pair and stored by a
  // Vectorize loop of two (one 2-element access where codegen's vector
  // analysis proves it, vectorize.h; the runtime checks what it assumes).
  void registerEpilogue(kir::StmtList& body) {
    const IntExpr block_row = sym(blockIdxSymbol(1)) * p_.block_m;
    const IntExpr block_col = sym(blockIdxSymbol(0)) * p_.block_n;
    if (out_pair_ == nullptr) {
      FragmentElement at;
      kir::StmtList& inner = fragmentLoops(body, at, "");
      epilogueOps(inner, {acc_, at.acc_index}, block_row + at.row, block_col + at.col);
      return;
    }
    // The pair's elements (row, col) of a pair loop `index`.
    const auto element = [&](const std::string& index) {
      const FragmentElement at = fragmentElement(sym("i_emt"), sym("i_ent"), sym("i_eh"), sym(index));
      return std::make_pair(block_row + at.row, block_col + at.col);
    };
    // Global inputs along the output's columns are loaded a pair at a time
    // too; N tiles outermost, so one that varies along the columns alone (a
    // bias) is loaded once per n tile rather than once per row.
    const auto loadPairs = [&](kir::StmtList& list, bool by_row) {
      for (const auto& [tv, pair_buffer] : in_pairs_) {
        const std::vector<Coord>& coords = coords_.at(tv);
        if ((std::find(coords.begin(), coords.end(), Coord::Row) != coords.end()) != by_row) continue;
        kir::ForLoop* load = loop(list, "i_lv", 2, ParallelType::Vectorize);
        const auto [row, col] = element("i_lv");
        append(load->body, pairCopy(copyExprOf(tv), {pair_buffer, sym("i_lv")}, globalAccess(tv, row, col),
                                    by_row ? inBounds(row, col) : columnInBounds(col)));
        staged_[tv] = {pair_buffer, sym("i_ep")};
      }
    };
    kir::ForLoop* nt = loop(body, "i_ent", n_tiles_, ParallelType::Unroll);
    loadPairs(nt->body, /*by_row=*/false);
    kir::ForLoop* mt = loop(nt->body, "i_emt", m_tiles_, ParallelType::Unroll);
    kir::ForLoop* half = loop(mt->body, "i_eh", mma::kCElementsPerLane / 2, ParallelType::Unroll);
    loadPairs(half->body, /*by_row=*/true);
    kir::ForLoop* pair = loop(half->body, "i_ep", 2, ParallelType::Unroll);
    const FragmentElement at = fragmentElement(sym("i_emt"), sym("i_ent"), sym("i_eh"), sym("i_ep"));
    epilogueOps(pair->body, {acc_, at.acc_index}, block_row + at.row, block_col + at.col,
                kir::Access{out_pair_, sym("i_ep")});
    staged_.clear();
    kir::ForLoop* store = loop(half->body, "i_ev", 2, ParallelType::Vectorize);
    const auto [row, col] = element("i_ev");
    append(store->body, pairCopy(copyExprOf(ops_.output), globalAccess(ops_.output, row, col),
                                 {out_pair_, sym("i_ev")}, inBounds(row, col)));
  }

  static std::unique_ptr<kir::Compute> pairCopy(const Expr* copy, const kir::Access& out,
                                                const kir::Access& in, const kir::Predicate& guard) {
    auto c = std::make_unique<kir::Compute>();
    c->expr = copy;
    c->out = out;
    c->operands.push_back(accessOperand(in));
    c->predicate = guard;
    return c;
  }

  // set(tv): the expression of copies that are not fusion ops, of tv's
  // elements between buffers of its dtype (of the sum: the store when the
  // output is the sum, the staging into C_s; pairs of the output and inputs).
  const Expr* copyExprOf(const TensorView* tv) {
    const Expr*& copy = copy_exprs_[tv];
    if (copy == nullptr) {
      FusionGuard guard(fusion_);
      copy = set(const_cast<TensorView*>(tv))->definition();
    }
    return copy;
  }

  // Fragments -> C_s (the planner inserts the barrier that lets C_s take
  // the operand tiles' bytes when they promote reuse), a barrier, then each
  // thread runs the epilogue on consecutive columns of C_s.
  void smemEpilogue(kir::StmtList& body) {
    FragmentElement at;
    kir::StmtList& inner = fragmentLoops(body, at, "s");
    auto stage = std::make_unique<kir::Compute>();
    stage->expr = copyExprOf(ops_.sum);
    stage->out = {c_smem_, at.row * p_.block_n + at.col};
    stage->operands.push_back(accessOperand({acc_, at.acc_index}));
    append(inner, std::move(stage));
    auto sync = std::make_unique<kir::BlockSync>();
    sync->reason = "RAW C_s";
    append(body, std::move(sync));
    if (out_pair_ != nullptr) {
      smemVectorEpilogue(body);
      return;
    }
    const int64_t per_thread = p_.block_m * p_.block_n / p_.threads();
    kir::ForLoop* l = loop(body, "i_out", per_thread, ParallelType::Unroll);
    const IntExpr flat = sym("i_out") * p_.threads() + sym(threadIdxSymbol(0));
    const IntExpr tile_row = flat / p_.block_n;
    const IntExpr tile_col = flat % p_.block_n;
    epilogueOps(l->body, {c_smem_, flat}, sym(blockIdxSymbol(1)) * p_.block_m + tile_row,
                sym(blockIdxSymbol(0)) * p_.block_n + tile_col);
  }

  // Each thread takes `vector_` consecutive columns of C_s at a time: the
  // epilogue inputs along the columns loaded, and the output stored, by
  // Vectorize loops (16-byte accesses where codegen/vectorize.h proves
  // them).
  void smemVectorEpilogue(kir::StmtList& body) {
    const int64_t vectors_per_row = p_.block_n / vector_;
    const int64_t per_thread = p_.block_m * vectors_per_row / p_.threads();
    kir::ForLoop* l = loop(body, "i_out", per_thread, ParallelType::Unroll);
    const IntExpr flat = sym("i_out") * p_.threads() + sym(threadIdxSymbol(0));
    const IntExpr tile_row = flat / vectors_per_row;
    const IntExpr tile_col = flat % vectors_per_row * vector_;
    const IntExpr row = sym(blockIdxSymbol(1)) * p_.block_m + tile_row;
    const auto column = [&](const std::string& index) {
      return sym(blockIdxSymbol(0)) * p_.block_n + tile_col + sym(index);
    };
    for (const auto& [tv, vector_buffer] : in_pairs_) {
      kir::ForLoop* load = loop(l->body, "i_lv", vector_, ParallelType::Vectorize);
      append(load->body, pairCopy(copyExprOf(tv), {vector_buffer, sym("i_lv")},
                                  globalAccess(tv, row, column("i_lv")), inBounds(row, column("i_lv"))));
      staged_[tv] = {vector_buffer, sym("i_ep")};
    }
    kir::ForLoop* element = loop(l->body, "i_ep", vector_, ParallelType::Unroll);
    epilogueOps(element->body, {c_smem_, tile_row * p_.block_n + tile_col + sym("i_ep")}, row, column("i_ep"),
                kir::Access{out_pair_, sym("i_ep")});
    staged_.clear();
    kir::ForLoop* store = loop(l->body, "i_ev", vector_, ParallelType::Vectorize);
    append(store->body, pairCopy(copyExprOf(ops_.output), globalAccess(ops_.output, row, column("i_ev")),
                                 {out_pair_, sym("i_ev")}, inBounds(row, column("i_ev"))));
  }

  Fusion* fusion_;
  TensorCoreMatmulOperands ops_;
  TensorCoreMatmulParams p_;
  kir::Kernel kernel_;
  IntExpr m_, n_, k_;
  int batch_ = 0;        // 1: a batched matmul, the batch in blockIdx.z
  IntExpr batches_ = 1;  // the batch extent
  int64_t m_tiles_ = 0, n_tiles_ = 0;
  std::vector<const Expr*> epilogue_;
  std::map<const TensorView*, std::vector<Coord>> coords_;
  std::map<const TensorView*, kir::Buffer*> globals_;
  std::map<const TensorView*, kir::Buffer*> temps_;
  std::vector<kir::Buffer*> locals_;
  kir::Buffer* a_smem_ = nullptr;
  kir::Buffer* b_smem_ = nullptr;
  kir::Buffer* c_smem_ = nullptr;
  kir::Buffer* a_frag_ = nullptr;
  kir::Buffer* b_frag_ = nullptr;
  kir::Buffer* acc_ = nullptr;
  std::map<const TensorView*, const Expr*> copy_exprs_;
  // The epilogue by vectors of `vector_` columns (N a multiple of it): the
  // output's vector, and each global input read along the output's columns
  // and its vector.
  int64_t vector_ = 0;
  kir::Buffer* out_pair_ = nullptr;
  std::map<const TensorView*, kir::Buffer*> in_pairs_;
  std::map<const TensorView*, kir::Access> staged_;  // inputs read from their pair
  int load_loops_ = 0;
};

}  // namespace

IntExpr operandTileIndex(const IntExpr& row, const IntExpr& col, int64_t cols, bool swizzle) {
  if (!swizzle) return row * cols + col;
  const int64_t chunks_per_row = cols / 8;
  const IntExpr chunk = row * chunks_per_row + col / 8;
  const IntExpr line = chunk / 8;
  return (line * 8 + xor3(chunk % 8, line % 8)) * 8 + col % 8;
}

const MmaOp* findMmaOp(const Fusion& fusion) {
  const MmaOp* found = nullptr;
  for (const Expr* e : fusion.exprs()) {
    if (e->type() != ExprType::Mma) continue;
    SMELT_CHECK(found == nullptr, "tensor-core matmul: the fusion has two MmaOps (",
                found->output()->name(), " and ", e->output()->name(),
                "); a tensor-core kernel computes one matmul");
    found = static_cast<const MmaOp*>(e);
  }
  return found;
}

void buildTensorCoreMatmul(LoweringContext& ctx) {
  const MmaOp* mma_op = findMmaOp(*ctx.fusion);
  SMELT_INTERNAL_CHECK(mma_op != nullptr, "buildTensorCoreMatmul: the fusion has no MmaOp");
  const auto& outputs = ctx.fusion->outputs();
  SMELT_CHECK(outputs.size() == 1 && outputs[0]->asTensor() != nullptr, "tensor-core matmul: ",
              mma_op->toString(), " is in a fusion with ", outputs.size(),
              " outputs; the kernel writes exactly one tensor");
  checkTensorCoreParams(mma_op->params());
  // The kernel follows the MmaOp's tiles only: a loop-domain schedule would
  // be silently ignored.
  for (const TensorView* tv : ctx.fusion->allTensors()) {
    SMELT_CHECK(tv->loopDomain() == tv->logicalDomain() && tv->computePosition() == 0 &&
                    tv->memoryType() != MemoryType::Shared,
                "tensor-core matmul: ", tv->name(), " is scheduled (", tv->toString(),
                "), but the kernel of ", mma_op->output()->name(),
                " = mma_m16n8k16(...) follows its tiles only; change the MmaOp's params instead");
  }
  TensorCoreMatmulOperands operands{mma_op->a(), mma_op->b(), mma_op->output(),
                                    outputs[0]->asTensor()};
  ctx.kernel = Builder(ctx.fusion, operands, mma_op->params()).build();
}

kir::Kernel lowerTensorCoreMatmul(Fusion* fusion, const TensorCoreMatmulOperands& operands,
                                  const TensorCoreMatmulParams& params,
                                  const LowerOptions& options) {
  SMELT_CHECK(fusion != nullptr, "tensor-core matmul: fusion is null");
  checkTensorCoreParams(params);
  LoweringContext ctx;
  ctx.fusion = fusion;
  ctx.options = options;
  ctx.kernel = Builder(fusion, operands, params).build();
  FusionGuard guard(fusion);
  // The passes that refine what tensor_core_matmul built, as GpuLower runs them.
  const std::vector<LoweringPass>& passes = tensorCorePasses();
  for (auto pass = std::next(passes.begin()); pass != passes.end(); ++pass) pass->run(ctx);
  return std::move(ctx.kernel);
}

}  // namespace smelt
