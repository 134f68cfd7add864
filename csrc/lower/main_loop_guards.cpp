#include "lower/main_loop_guards.h"

#include <algorithm>
#include <functional>

namespace smelt {

namespace {

// The output buffer and guard of a statement that computes, or nothing.
struct Guarded {
  const kir::Access* out = nullptr;
  const kir::Predicate* guard = nullptr;
};

Guarded guardedOf(const kir::Stmt& stmt) {
  switch (stmt.kind()) {
    case kir::StmtKind::Compute: {
      const auto& c = static_cast<const kir::Compute&>(stmt);
      return {&c.out, &c.predicate};
    }
    case kir::StmtKind::ReduceInit: {
      const auto& c = static_cast<const kir::ReduceInit&>(stmt);
      return {&c.out, &c.predicate};
    }
    case kir::StmtKind::ReduceStep: {
      const auto& c = static_cast<const kir::ReduceStep&>(stmt);
      return {&c.out, &c.predicate};
    }
    default: return {};
  }
}

bool isMainLoop(const kir::ForLoop& loop) {
  if (loop.trivial || isParallelDim(loop.parallel_type)) return false;
  bool steps = false, loads_tiles = false, reads_tiles = false;
  kir::forEachStmt(loop.body, [&](const kir::Stmt* s, int) {
    steps |= s->kind() == kir::StmtKind::ReduceStep;
    if (const auto* c = dynamic_cast<const kir::Compute*>(s)) {
      loads_tiles |= c->out.buffer->memory == MemoryType::Shared;
      reads_tiles |= std::any_of(c->operands.begin(), c->operands.end(), [](const kir::Operand& op) {
        return op.access && op.access->buffer->memory == MemoryType::Shared;
      });
    }
  });
  return steps && loads_tiles && reads_tiles;
}

bool costsEveryTile(const Guarded& g) {
  const auto& terms = g.guard->terms;
  const bool bounds_axis = std::any_of(terms.begin(), terms.end(), [](const kir::Predicate::Term& t) {
    return t.bounded_axis != nullptr;
  });
  return bounds_axis || (!terms.empty() && g.out->buffer->memory == MemoryType::Local);
}

}  // namespace

std::vector<MainLoopGuard> findMainLoopGuards(const kir::Kernel& kernel) {
  const kir::ProgramPositions positions = kir::numberPositions(kernel.body);
  std::vector<MainLoopGuard> result;
  // The outermost main loop of a nest: an inner one's statements are its too.
  auto report = [&](const kir::ForLoop& loop) {
    kir::forEachStmt(loop.body, [&](const kir::Stmt* s, int) {
      const Guarded g = guardedOf(*s);
      if (g.guard == nullptr || !costsEveryTile(g)) return;
      result.push_back({positions.start.at(s), g.out->buffer->name, g.guard->toString()});
    });
  };
  std::function<void(const kir::StmtList&)> walk = [&](const kir::StmtList& list) {
    for (const auto& stmt : list) {
      if (const auto* loop = dynamic_cast<const kir::ForLoop*>(stmt.get())) {
        if (isMainLoop(*loop)) {
          report(*loop);
        } else {
          walk(loop->body);
        }
      } else if (const auto* ite = dynamic_cast<const kir::IfThenElse*>(stmt.get())) {
        walk(ite->then_body);
        walk(ite->else_body);
      }
    }
  };
  walk(kernel.body);
  return result;
}

}  // namespace smelt
