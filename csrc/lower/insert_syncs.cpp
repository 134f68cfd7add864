// Pass syncs: inserts the block barriers that cross-thread accesses of Shared
// tensors need (see sync_analysis.h). Guarantees:
//   * RAW: between a write and a cross-thread read there is a barrier (an
//     existing BlockSync or block reduction counts), placed after the
//     subtree that writes, as late as trivial loops allow but never inside a
//     non-trivial loop the write is not in (so it runs once per write, and
//     one barrier serves tiles staged one after another);
//   * WAR: when a serial loop holds both, the next iteration's write cannot
//     overtake the previous iteration's reads: a barrier after the reads (at
//     the end of the loop body) unless one already lies after the reads or
//     before the write;
//   * barriers only go into loop bodies, never under a predicate, so every
//     thread reaches them;
//   * circular-buffered tensors get none here: the circular_buffer pass has
//     placed theirs;
//   * a block scan's warp totals get none here either: the BlockScan
//     statement holds its own two barriers (lower/block_scan.h), touches its
//     workspace alone, and counts as a barrier for the tensors around it.
#include <algorithm>

#include "fusion/error.h"
#include "lower/passes.h"
#include "lower/sync_analysis.h"

namespace smelt {

namespace {

// Where a statement sits: each level's body and the index of the child on the
// path, outermost first.
struct PathStep {
  kir::StmtList* body;
  size_t index;
  kir::ForLoop* owner;  // the loop whose body this is (nullptr for the kernel)
};

bool findPath(kir::StmtList& body, kir::ForLoop* owner, const kir::Stmt* target,
              std::vector<PathStep>& path) {
  for (size_t i = 0; i < body.size(); ++i) {
    path.push_back({&body, i, owner});
    if (body[i].get() == target) return true;
    if (auto* loop = dynamic_cast<kir::ForLoop*>(body[i].get())) {
      if (findPath(loop->body, loop, target, path)) return true;
    }
    path.pop_back();
  }
  return false;
}

bool hasSync(const kir::StmtList& body, size_t begin, size_t end) {
  for (size_t i = begin; i < end && i < body.size(); ++i) {
    if (body[i]->synchronizesBlock()) return true;
  }
  return false;
}

std::unique_ptr<kir::BlockSync> makeSync(const std::string& reason) {
  auto sync = std::make_unique<kir::BlockSync>();
  sync->reason = reason;
  return sync;
}

// The deepest level both paths share.
size_t commonDepth(const std::vector<PathStep>& a, const std::vector<PathStep>& b) {
  size_t depth = 0;
  while (depth + 1 < a.size() && depth + 1 < b.size() && a[depth].index == b[depth].index &&
         a[depth].body == b[depth].body) {
    ++depth;
  }
  return depth;
}

void insertRaw(kir::Kernel& kernel, const CrossThreadAccess& access) {
  std::vector<PathStep> w, r;
  SMELT_INTERNAL_CHECK(findPath(kernel.body, nullptr, access.write, w));
  SMELT_INTERNAL_CHECK(findPath(kernel.body, nullptr, access.read, r));
  size_t d = commonDepth(w, r);
  size_t cw = w[d].index;
  size_t cr = r[d].index;
  if (cw >= cr) return;  // read before write in this body: not a RAW pair here
  if (hasSync(*r[d].body, cw + 1, cr)) return;
  // Go as late as trivial loops allow (they are not loops in CUDA), so one
  // barrier can serve several tiles staged one after another.
  while (d + 1 < r.size() && r[d + 1].index > 0) {
    auto* loop = dynamic_cast<kir::ForLoop*>((*r[d].body)[r[d].index].get());
    if (loop == nullptr || !loop->trivial) break;
    ++d;
    if (hasSync(*r[d].body, 0, r[d].index)) return;
  }
  r[d].body->insert(r[d].body->begin() + r[d].index, makeSync("RAW " + access.tv->name()));
}

void insertWar(kir::Kernel& kernel, const CrossThreadAccess& access) {
  std::vector<PathStep> w, r;
  SMELT_INTERNAL_CHECK(findPath(kernel.body, nullptr, access.write, w));
  SMELT_INTERNAL_CHECK(findPath(kernel.body, nullptr, access.read, r));
  // The innermost non-trivial loop holding both.
  size_t d = commonDepth(w, r);
  while (true) {
    kir::ForLoop* loop = w[d].owner;
    if (loop == nullptr) return;  // no loop repeats the write
    if (!loop->trivial) break;
    if (d == 0) return;
    --d;
  }
  kir::StmtList& body = *w[d].body;
  size_t cw = w[d].index;
  size_t cr = r[d].index;
  if (hasSync(body, std::max(cw, cr) + 1, body.size()) || hasSync(body, 0, std::min(cw, cr))) {
    return;
  }
  body.push_back(makeSync("WAR " + access.tv->name()));
}

}  // namespace

void insertSyncs(LoweringContext& ctx) {
  std::vector<CrossThreadAccess> accesses = crossThreadAccesses(ctx);
  // Circular-buffered tiles have their barrier from the circular_buffer pass.
  accesses.erase(std::remove_if(accesses.begin(), accesses.end(),
                                [&](const CrossThreadAccess& a) {
                                  return ctx.circular_buffered.count(a.tv) > 0;
                                }),
                 accesses.end());
  for (const CrossThreadAccess& access : accesses) insertRaw(ctx.kernel, access);
  for (const CrossThreadAccess& access : accesses) insertWar(ctx.kernel, access);
}

}  // namespace smelt
