// Pass circular_buffer: multi-stage circular buffering (software pipelining)
// of the Shared tensors marked with TensorView::circularBuffer(S). A tensor's
// *main loop* is the innermost serial loop it shares with its consumer (a
// GEMM's K-tile loop); its *load* is the loop nest (or statement) computing
// it, inside the main loop or inside thread-bound loops nested in it. Guarantees, for each main loop M with trip count T:
//   * each buffered tensor's allocation holds S tiles ([S, tile...]) and is
//     allocated before the prologue, outside M;
//   * a prologue loop just before M loads tiles 0 .. S-2 into slots 0 .. S-2
//     (each guarded by tile < T unless T is a constant >= S - 1);
//   * iteration k of M loads tile k + S - 1 into slot (k + S - 1) % S,
//     guarded by k + S - 1 < T, and every read of the tensor in M uses slot
//     k % S;
//   * one BlockSync at the top of M's body orders both hazards of the tiles:
//     RAW (tile k was loaded in the prologue or in iteration k - S + 1, both
//     before this barrier) and WAR (slot (k + S - 1) % S was last read in
//     iteration k - 1); when M sits in a loop that iterates, one after M
//     orders M's last reads before the next prologue's writes. The syncs
//     pass adds none for buffered tensors; there are none when every tile
//     element is read by the thread that loads it;
//   * loads are synchronous: after M's last iteration no load is in flight,
//     the tiles' last accesses are M's reads, so liveness keeps their bytes
//     live to M's end and a reuse of them needs a barrier after M (the
//     planner's promoteReuse barrier).
// A main loop of one trip is left as it is (the syncs pass then orders the
// tile as any other). Serial loop indices are renumbered in program order
// afterwards; LoweringContext::circular_buffered lists the pipelined tensors.
// Errors (smelt::Error naming the tensor): no serial loop left of the compute
// position, different stage counts in one main loop, a load that computes
// another tensor, reads a value computed in the main loop, or sits in a
// serial loop nested in the main loop.
#include <algorithm>
#include <set>

#include "fusion/error.h"
#include "lower/kir_rewrite.h"
#include "lower/passes.h"
#include "lower/sync_analysis.h"

namespace smelt {

namespace {

struct Pipeline {
  kir::ForLoop* loop = nullptr;
  int64_t stages = 1;
  std::vector<const TensorView*> tensors;
};

// The main loop: the innermost non-trivial loop left of the compute position
// (thread-bound loops shared with the consumer may sit inside it); nullptr
// when that serial loop runs once (nothing to pipeline).
kir::ForLoop* mainLoopOf(const LoweringContext& ctx, const TensorView* tv) {
  bool runs_once = false;
  for (int64_t k = tv->computePosition() - 1; k >= 0; --k) {
    kir::ForLoop* loop = ctx.loopOf(tv, k);
    if (!loop->trivial) return loop;
    runs_once |= !isParallelDim(loop->parallel_type);
  }
  SMELT_CHECK(runs_once, "circularBuffer: tensor ", tv->name(), " is computed at position ",
              tv->computePosition(), ", inside no serial loop of its consumer; compute it inside "
              "the loop to pipeline (computeAt/inlineAt)");
  return nullptr;
}

// The loops from just inside `outer` down to `inner` (inclusive), outermost
// first; empty when inner == outer.
bool loopPath(kir::ForLoop* outer, kir::ForLoop* inner, std::vector<kir::ForLoop*>& path) {
  if (outer == inner) return true;
  for (auto& child : outer->body) {
    auto* loop = dynamic_cast<kir::ForLoop*>(child.get());
    if (loop == nullptr) continue;
    path.push_back(loop);
    if (loopPath(loop, inner, path)) return true;
    path.pop_back();
  }
  return false;
}

// Where a tensor's load sits: the body holding it (the loop of the tensor's
// last shared axis, or the main loop) and the trivial loops from the main
// loop down to that body.
struct LoadSite {
  kir::ForLoop* scope = nullptr;
  std::vector<kir::ForLoop*> path;  // main loop (exclusive) .. scope (inclusive)
  size_t index = 0;                 // of the load in scope->body
};

bool writesTensor(kir::Stmt& root, const TensorView* tv) {
  bool found = false;
  kir::forEachInTree(root, [&](kir::Stmt& s) { found |= writtenTensor(&s) == tv; });
  return found;
}

LoadSite loadSite(const LoweringContext& ctx, kir::ForLoop* main_loop, const TensorView* tv) {
  LoadSite site;
  site.scope = ctx.loopOf(tv, tv->computePosition() - 1);
  SMELT_INTERNAL_CHECK(loopPath(main_loop, site.scope, site.path), "no loop path to ", tv->name());
  std::optional<size_t> index;
  for (size_t i = 0; i < site.scope->body.size(); ++i) {
    if (!writesTensor(*site.scope->body[i], tv)) continue;
    SMELT_CHECK(!index, "circularBuffer: tensor ", tv->name(),
                " is computed by two loop nests in its main loop; it must have one load");
    index = i;
  }
  SMELT_INTERNAL_CHECK(index.has_value(), "no load of ", tv->name(), " in its main loop");
  site.index = *index;
  kir::forEachInTree(*site.scope->body[site.index], [&](kir::Stmt& s) {
    if (s.kind() == kir::StmtKind::ForLoop || s.kind() == kir::StmtKind::IfThenElse) return;
    const TensorView* written = writtenTensor(&s);
    SMELT_CHECK(s.kind() == kir::StmtKind::Compute && written == tv, "circularBuffer: the loop nest "
                "loading tensor ", tv->name(), " also computes ",
                written ? written->name() : std::string("other statements"),
                "; inline it into the load or compute it outside the main loop");
  });
  return site;
}

// The load must only read values that exist before the main loop starts:
// the prologue runs it ahead of time.
void checkLoadInputs(kir::ForLoop* main_loop, kir::Stmt* load, const TensorView* tv) {
  std::set<const kir::Buffer*> reads;
  kir::forEachInTree(*load, [&](kir::Stmt& s) {
    kir::forEachAccess(s, [&](kir::Access& a, bool is_write) {
      if (!is_write) reads.insert(a.buffer);
    });
  });
  std::set<const kir::Stmt*> in_load;
  kir::forEachInTree(*load, [&](kir::Stmt& s) { in_load.insert(&s); });
  kir::forEachInTree(*main_loop, [&](kir::Stmt& s) {
    if (in_load.count(&s)) return;
    kir::forEachAccess(s, [&](kir::Access& a, bool is_write) {
      SMELT_CHECK(!is_write || !reads.count(a.buffer), "circularBuffer: tensor ", tv->name(),
                  " is loaded from ", a.buffer->name,
                  ", which its main loop computes; a pipelined load can only read values "
                  "computed before the loop");
    });
  });
}

// Points a copy of the load at tile `tile_index` in slot `slot`.
void retarget(kir::Stmt& load, const kir::Buffer* buffer, const std::string& main_index,
              const IntExpr& tile_index, const IntExpr& slot, const IntExpr& tile_elements,
              const std::optional<kir::Predicate::Term>& guard) {
  kir::substituteTree(load, {{main_index, tile_index}});
  if (guard) kir::forEachGuard(load, [&](kir::Predicate& p) { p.terms.push_back(*guard); });
  kir::forEachInTree(load, [&](kir::Stmt& s) {
    kir::forEachAccess(s, [&](kir::Access& a, bool is_write) {
      if (is_write && a.buffer == buffer) a.index = slot * tile_elements + a.index;
    });
  });
}

std::unique_ptr<kir::Stmt> takeAllocate(kir::StmtList& body, const kir::Buffer* buffer) {
  const kir::Stmt* found = nullptr;
  kir::forEachStmt(body, [&](const kir::Stmt* s, int) {
    auto* alloc = dynamic_cast<const kir::Allocate*>(s);
    if (alloc != nullptr && alloc->buffer == buffer) found = s;
  });
  SMELT_INTERNAL_CHECK(found != nullptr, "no Allocate for ", buffer->name);
  auto [list, index] = *kir::locate(body, found);
  std::unique_ptr<kir::Stmt> alloc = std::move((*list)[index]);
  list->erase(list->begin() + static_cast<std::ptrdiff_t>(index));
  return alloc;
}

// Whether `target` sits in a loop of `body` that iterates (so the prologue
// before it runs again after the main loop's last reads).
bool insideAnIteratingLoop(kir::StmtList& body, kir::ForLoop* target) {
  for (auto& child : body) {
    auto* loop = dynamic_cast<kir::ForLoop*>(child.get());
    if (loop == nullptr || loop == target) continue;
    std::vector<kir::ForLoop*> path;
    if (loopPath(loop, target, path)) {
      if (!loop->trivial) return true;
      path.pop_back();  // the target itself
      return std::any_of(path.begin(), path.end(), [](const kir::ForLoop* l) { return !l->trivial; });
    }
  }
  return false;
}

void pipeline(LoweringContext& ctx, const Pipeline& p, bool needs_barrier) {
  kir::ForLoop* loop = p.loop;
  const int64_t stages = p.stages;
  const IntExpr k = IntExpr::symbol(loop->index);
  using Term = kir::Predicate::Term;

  auto prologue = std::make_unique<kir::ForLoop>();
  prologue->index = loop->index + "_prologue";  // renumbered with the others
  prologue->extent = stages - 1;
  prologue->iter_domain = loop->iter_domain;
  prologue->trivial = stages - 1 == 1;
  const IntExpr stage = prologue->trivial ? IntExpr(0) : IntExpr::symbol(prologue->index);
  std::optional<Term> prologue_guard;
  if (!loop->extent.isConstant() || *loop->extent.constant() < stages - 1) {
    prologue_guard = Term{stage, Term::Kind::LessThan, loop->extent};
  }

  std::vector<std::unique_ptr<kir::Stmt>> allocates;
  std::string names;
  for (const TensorView* tv : p.tensors) {
    kir::Buffer* buffer = ctx.bufferOf(tv);
    allocates.push_back(takeAllocate(ctx.kernel.body, buffer));
    const LoadSite site = loadSite(ctx, loop, tv);
    kir::Stmt* load = site.scope->body[site.index].get();
    checkLoadInputs(loop, load, tv);
    const IntExpr tile = buffer->elements;

    // The prologue's copy, inside copies of the trivial loops that bind the
    // thread indices it uses.
    std::unique_ptr<kir::Stmt> copy = kir::cloneTree(*load);
    retarget(*copy, buffer, loop->index, stage, stage, tile, prologue_guard);
    for (auto it = site.path.rbegin(); it != site.path.rend(); ++it) {
      SMELT_CHECK((*it)->trivial, "circularBuffer: tensor ", tv->name(), " is loaded inside loop ",
                  (*it)->index, ", which iterates inside its main loop ", loop->index,
                  "; compute it directly in the main loop");
      auto shell = std::make_unique<kir::ForLoop>();
      shell->index = (*it)->index;
      shell->extent = (*it)->extent;
      shell->parallel_type = (*it)->parallel_type;
      shell->iter_domain = (*it)->iter_domain;
      shell->trivial = true;
      shell->body.push_back(std::move(copy));
      copy = std::move(shell);
    }
    prologue->body.push_back(std::move(copy));

    std::set<const kir::Stmt*> in_load;
    kir::forEachInTree(*load, [&](kir::Stmt& s) { in_load.insert(&s); });
    const IntExpr ahead = k + (stages - 1);
    retarget(*load, buffer, loop->index, ahead, ahead % stages, tile,
             Term{ahead, Term::Kind::LessThan, loop->extent});
    kir::forEachInTree(*loop, [&](kir::Stmt& s) {
      if (in_load.count(&s)) return;
      kir::forEachAccess(s, [&](kir::Access& a, bool is_write) {
        if (!is_write && a.buffer == buffer) a.index = (k % stages) * tile + a.index;
      });
    });
    buffer->shape.insert(buffer->shape.begin(), IntExpr(stages));
    buffer->elements = tile * stages;
    names += (names.empty() ? "" : ", ") + tv->name();
  }

  if (needs_barrier) {
    auto sync = std::make_unique<kir::BlockSync>();
    sync->reason = "RAW/WAR " + names + " (circular buffer, " + std::to_string(stages) + " stages)";
    loop->body.insert(loop->body.begin(), std::move(sync));
  }
  auto [parent, at] = *kir::locate(ctx.kernel.body, loop);
  if (needs_barrier && insideAnIteratingLoop(ctx.kernel.body, loop)) {
    auto sync = std::make_unique<kir::BlockSync>();
    sync->reason = "WAR " + names + " (circular buffer: the next prologue overwrites the last tiles)";
    parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(at) + 1, std::move(sync));
  }
  parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(at), std::move(prologue));
  for (auto it = allocates.rbegin(); it != allocates.rend(); ++it) {
    parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(at), std::move(*it));
  }
}

}  // namespace

void insertCircularBuffers(LoweringContext& ctx) {
  std::vector<Pipeline> pipelines;
  for (const TensorView* tv : ctx.fusion->allTensors()) {
    if (tv->circularBufferStages() <= 1) continue;
    kir::ForLoop* loop = mainLoopOf(ctx, tv);
    if (loop == nullptr) continue;
    auto it = std::find_if(pipelines.begin(), pipelines.end(),
                           [&](const Pipeline& p) { return p.loop == loop; });
    if (it == pipelines.end()) {
      pipelines.push_back({loop, tv->circularBufferStages(), {tv}});
      continue;
    }
    SMELT_CHECK(it->stages == tv->circularBufferStages(), "circularBuffer: tensors ",
                it->tensors[0]->name(), " (", it->stages, " stages) and ", tv->name(), " (",
                tv->circularBufferStages(), " stages) share a main loop; give them one stage count");
    it->tensors.push_back(tv);
  }
  if (pipelines.empty()) return;
  const std::vector<CrossThreadAccess> cross = crossThreadAccesses(ctx);
  for (const Pipeline& p : pipelines) {
    bool needs_barrier = std::any_of(cross.begin(), cross.end(), [&](const CrossThreadAccess& a) {
      return std::find(p.tensors.begin(), p.tensors.end(), a.tv) != p.tensors.end();
    });
    pipeline(ctx, p, needs_barrier);
    ctx.circular_buffered.insert(p.tensors.begin(), p.tensors.end());
  }
  kir::renumberLoopIndices(ctx.kernel.body);
}

}  // namespace smelt
