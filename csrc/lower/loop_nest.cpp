// Pass loop_nest: builds the loop nest and places one statement group per
// fusion expression. Guarantees:
//   * every loop axis of a computed tensor runs in exactly one ForLoop; axes
//     left of a tensor's compute position run in its consumers' loop (one
//     ForLoop object, see LoopOwners), so producers are computed inside their
//     consumers' loops;
//   * a loop is trivial when it is bound to a block/thread index, vectorized,
//     or runs once;
//   * a reduction becomes: init before its outermost serial reduction loop, a
//     step in the innermost loop, and (when reduction axes are bound to thread
//     indices) a block reduction after the serial reduction loops. Iteration
//     axes inside the serial reduction loops (a register tile accumulated
//     over K, a vector of columns) give the init and the block reduction each
//     a nest of copies of their loops;
//   * a scan becomes: the init of its running value just outside the loop of
//     its scan axis, and a step (a Compute that combines and stores) in the
//     innermost loop; in block form (block_scan.h) the init goes before the
//     tile loop and a BlockScan between the input's and the output's item
//     loops;
//   * within every body, statements and loops are ordered so each value is
//     written before it is read (a stable topological order of the children).
#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include "fusion/error.h"
#include "fusion/symbols.h"
#include "fusion/transform_replay.h"
#include "lower/block_scan.h"
#include "lower/passes.h"

namespace smelt {

namespace {

// Values a statement (or a subtree) writes and reads, for ordering siblings.
struct Deps {
  std::set<std::string> defines;
  std::set<std::string> uses;
};

class LoopNestBuilder {
 public:
  explicit LoopNestBuilder(LoweringContext& ctx) : ctx_(ctx) {}

  void build() {
    for (Expr* expr : ctx_.fusion->exprs()) place(expr);
    orderBody(ctx_.kernel.body);
    // Name loop variables in program order, so the IR reads top to bottom.
    int64_t next = 0;
    kir::forEachStmt(ctx_.kernel.body, [&](kir::Stmt* s, int) {
      auto* loop = dynamic_cast<kir::ForLoop*>(s);
      if (loop != nullptr && !isParallelDim(loop->parallel_type)) {
        loop->index = "i" + std::to_string(next++);
      }
    });
  }

 private:
  kir::StmtList& bodyOf(kir::ForLoop* loop) { return loop ? loop->body : ctx_.kernel.body; }

  // The loop of (owner, axis), created inside its parent loop when first needed.
  kir::ForLoop* loopFor(const TensorView* tv, int64_t axis) {
    auto key = ctx_.loopOwner(tv, axis);
    auto it = ctx_.loops.find(key);
    if (it != ctx_.loops.end()) return it->second;
    auto [owner, owner_axis] = key;
    kir::ForLoop* parent = owner_axis == 0 ? nullptr : loopFor(owner, owner_axis - 1);
    std::unique_ptr<kir::ForLoop> loop = newLoop(owner->axis(owner_axis));
    kir::ForLoop* raw = loop.get();
    bodyOf(parent).push_back(std::move(loop));
    ctx_.loops[key] = raw;
    return raw;
  }

  static std::unique_ptr<kir::ForLoop> newLoop(const IterDomain* id) {
    auto loop = std::make_unique<kir::ForLoop>();
    loop->iter_domain = id;
    loop->parallel_type = id->parallelType();
    loop->extent = id->isPlainBroadcast() ? IntExpr(1) : id->loopExtent();
    loop->index = parallelIndexSymbol(loop->parallel_type);  // serial loops are named in build()
    loop->trivial = isParallelDim(loop->parallel_type) ||
                    loop->parallel_type == ParallelType::Vectorize ||
                    loop->extent.constant() == 1;
    return loop;
  }

  // Whether code outside the loop of `id` can use its index: a thread or
  // block index, or the constant 0 of a loop that runs once. A vectorized
  // loop is trivial too but its index exists only inside it.
  static bool indexDefinedOutside(const IterDomain* id) {
    const std::unique_ptr<kir::ForLoop> loop = newLoop(id);
    return isParallelDim(loop->parallel_type) || loop->extent.constant() == 1;
  }

  // The init (and the block reduction) of a reduction whose iteration axes
  // iterate inside its first serial reduction loop (a register tile
  // accumulated over K) cannot sit in those loops: each gets its own nest of
  // copies of them, just outside the reduction loops. Returns nullptr when
  // every such axis runs once or is bound to a thread or block.
  std::unique_ptr<kir::ForLoop> iterationNest(const TensorView* out, int64_t first_serial,
                                              const kir::Stmt* stmt) {
    bool iterates = false;
    for (int64_t k = first_serial + 1; k < out->nDims(); ++k) {
      const IterDomain* id = out->axis(k);
      iterates |= !id->isReduction() && !indexDefinedOutside(id);
    }
    if (!iterates) return nullptr;
    std::unique_ptr<kir::ForLoop> root;
    kir::ForLoop* innermost = nullptr;
    for (int64_t k = first_serial + 1; k < out->nDims(); ++k) {
      if (out->axis(k)->isReduction()) continue;
      std::unique_ptr<kir::ForLoop> loop = newLoop(out->axis(k));
      kir::ForLoop* raw = loop.get();
      ctx_.statement_loops[stmt][k] = raw;
      if (innermost == nullptr) {
        root = std::move(loop);
      } else {
        innermost->body.push_back(std::move(loop));
      }
      innermost = raw;
    }
    return root;
  }

  kir::ForLoop* innermostLoop(const TensorView* tv) {
    return tv->nDims() == 0 ? nullptr : loopFor(tv, tv->nDims() - 1);
  }

  void add(kir::ForLoop* loop, std::unique_ptr<kir::Stmt> stmt, Deps deps) {
    deps_[stmt.get()] = std::move(deps);
    bodyOf(loop).push_back(std::move(stmt));
  }

  // Tensors are told apart by number (names are user-settable).
  static std::string key(const TensorView* tv) { return "T" + std::to_string(tv->number()); }

  std::set<std::string> inputNames(const Expr* expr) {
    std::set<std::string> names;
    for (const TensorView* in : expr->tensorInputs()) names.insert(key(in));
    return names;
  }

  void place(Expr* expr) {
    TensorView* out = expr->output();
    if (expr->type() == ExprType::Scan) return placeScan(static_cast<ScanOp*>(expr));
    if (expr->type() != ExprType::Reduction) {
      auto stmt = std::make_unique<kir::Compute>();
      stmt->expr = expr;
      add(innermostLoop(out), std::move(stmt), {{key(out)}, inputNames(expr)});
      return;
    }
    placeReduction(static_cast<ReductionOp*>(expr));
  }

  // validate_schedule checked that the scan axis is a serial loop axis of
  // its own with only thread-private single indices inside it, so one
  // register per thread carries the running value along it.
  void placeScan(ScanOp* expr) {
    if (const std::optional<BlockScanAxes> axes = blockScanAxes(expr)) return placeBlockScan(expr, *axes);
    TensorView* out = expr->output();
    const int64_t axis = expr->loopAxis();
    SMELT_INTERNAL_CHECK(axis >= 0, "scan axis of ", out->name(), " is not a loop axis");
    const std::string name = key(out);
    auto init = std::make_unique<kir::ScanInit>();
    init->expr = expr;
    add(axis == 0 ? nullptr : loopFor(out, axis - 1), std::move(init), {{name + ":init"}, {}});
    std::set<std::string> step_uses = inputNames(expr);
    step_uses.insert(name + ":init");
    auto step = std::make_unique<kir::Compute>();
    step->expr = expr;
    add(innermostLoop(out), std::move(step), {{name}, step_uses});
  }

  // The block form (block_scan.h): the running value across tiles starts
  // before the tile loop; in the threads loop, the BlockScan follows the
  // input's item loop (it reads the items) and precedes the output's (whose
  // steps read the running value it sets).
  void placeBlockScan(ScanOp* expr, const BlockScanAxes& axes) {
    TensorView* out = expr->output();
    const std::string name = key(out);
    auto init = std::make_unique<kir::ScanInit>();
    init->expr = expr;
    add(axes.tiles == 0 ? nullptr : loopFor(out, axes.tiles - 1), std::move(init), {{name + ":init"}, {}});
    auto scan = std::make_unique<kir::BlockScan>();
    scan->expr = expr;
    std::set<std::string> scan_uses = inputNames(expr);
    scan_uses.insert(name + ":init");
    add(loopFor(out, axes.threads), std::move(scan), {{name + ":running"}, scan_uses});
    std::set<std::string> step_uses = inputNames(expr);
    step_uses.insert(name + ":running");
    auto step = std::make_unique<kir::Compute>();
    step->expr = expr;
    add(innermostLoop(out), std::move(step), {{name}, step_uses});
  }

  void placeReduction(ReductionOp* expr) {
    TensorView* out = expr->output();
    int64_t first_serial = -1;
    std::vector<ParallelType> thread_axes;
    for (int64_t k = 0; k < out->nDims(); ++k) {
      const IterDomain* id = out->axis(k);
      if (!id->isReduction()) continue;
      if (isThreadDim(id->parallelType())) {
        thread_axes.push_back(id->parallelType());
      } else if (first_serial < 0) {
        first_serial = k;
      }
    }
    const std::string name = key(out);
    if (first_serial < 0) {  // every reduction axis is bound to threads
      auto reduce = std::make_unique<kir::BlockReduce>();
      reduce->expr = expr;
      reduce->thread_axes = thread_axes;
      add(innermostLoop(out), std::move(reduce), {{name}, inputNames(expr)});
      return;
    }
    kir::ForLoop* outside = first_serial == 0 ? nullptr : loopFor(out, first_serial - 1);
    // `stmt` just outside the serial reduction loops, in its own nest of the
    // iteration axes inside them when there are such.
    auto addOutside = [&](std::unique_ptr<kir::Stmt> stmt, Deps deps) {
      std::unique_ptr<kir::ForLoop> nest = iterationNest(out, first_serial, stmt.get());
      if (nest == nullptr) return add(outside, std::move(stmt), std::move(deps));
      kir::ForLoop* innermost = nest.get();
      while (!innermost->body.empty()) {
        innermost = static_cast<kir::ForLoop*>(innermost->body.back().get());
      }
      innermost->body.push_back(std::move(stmt));
      add(outside, std::move(nest), std::move(deps));
    };
    auto init = std::make_unique<kir::ReduceInit>();
    init->expr = expr;
    addOutside(std::move(init), {{name + ":init"}, {}});
    std::set<std::string> step_uses = inputNames(expr);
    step_uses.insert(name + ":init");
    auto step = std::make_unique<kir::ReduceStep>();
    step->expr = expr;
    bool block_reduce = !thread_axes.empty();
    std::string step_defines = block_reduce ? name + ":partial" : name;
    add(innermostLoop(out), std::move(step), {{step_defines}, step_uses});
    if (block_reduce) {
      auto reduce = std::make_unique<kir::BlockReduce>();
      reduce->expr = expr;
      reduce->thread_axes = thread_axes;
      addOutside(std::move(reduce), {{name}, {name + ":partial"}});
    }
  }

  // Deps of a subtree: what it defines, and what it uses from outside itself.
  Deps subtreeDeps(const kir::Stmt* stmt) {
    auto it = deps_.find(stmt);
    if (it != deps_.end()) return it->second;
    Deps result;
    if (auto* loop = dynamic_cast<const kir::ForLoop*>(stmt)) {
      for (const auto& child : loop->body) {
        Deps d = subtreeDeps(child.get());
        result.defines.insert(d.defines.begin(), d.defines.end());
        result.uses.insert(d.uses.begin(), d.uses.end());
      }
      for (const std::string& name : result.defines) result.uses.erase(name);
    }
    return result;
  }

  void orderBody(kir::StmtList& body) {
    for (auto& stmt : body) {
      if (auto* loop = dynamic_cast<kir::ForLoop*>(stmt.get())) orderBody(loop->body);
    }
    size_t n = body.size();
    std::vector<Deps> deps;
    for (auto& stmt : body) deps.push_back(subtreeDeps(stmt.get()));
    std::vector<std::vector<size_t>> must_follow(n);  // must_follow[b]: the a's before b
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (a == b) continue;
        for (const std::string& name : deps[a].defines) {
          if (deps[b].uses.count(name)) {
            must_follow[b].push_back(a);
            break;
          }
        }
      }
    }
    std::vector<bool> placed(n, false);
    kir::StmtList ordered;
    for (size_t round = 0; round < n; ++round) {
      size_t pick = n;
      for (size_t b = 0; b < n && pick == n; ++b) {
        if (placed[b]) continue;
        bool ready = std::all_of(must_follow[b].begin(), must_follow[b].end(),
                                 [&](size_t a) { return placed[a]; });
        if (ready) pick = b;
      }
      if (pick == n) {
        std::string names;
        for (size_t b = 0; b < n; ++b) {
          if (!placed[b]) {
            for (const std::string& d : deps[b].defines) names += " " + d;
          }
        }
        throw Error(errorMessage("cannot order the loop nests computing", names,
                                 ": their compute-at positions make them depend on each "
                                 "other; lower the compute position of one of them"));
      }
      placed[pick] = true;
      ordered.push_back(std::move(body[pick]));
    }
    body = std::move(ordered);
  }

  LoweringContext& ctx_;
  std::unordered_map<const kir::Stmt*, Deps> deps_;
};

}  // namespace

void buildLoopNest(LoweringContext& ctx) { LoopNestBuilder(ctx).build(); }

}  // namespace smelt
