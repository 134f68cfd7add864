#include "lower/alloc_reuse/apply_plan.h"

#include "fusion/error.h"

namespace smelt::alloc_reuse {

namespace {

// Finds the body holding `target` and its index there.
bool findInBody(kir::StmtList& body, const kir::Stmt* target, kir::StmtList*& holder,
                size_t& index) {
  for (size_t i = 0; i < body.size(); ++i) {
    kir::Stmt* s = body[i].get();
    if (s == target) {
      holder = &body;
      index = i;
      return true;
    }
    if (auto* loop = dynamic_cast<kir::ForLoop*>(s)) {
      if (findInBody(loop->body, target, holder, index)) return true;
    } else if (auto* ite = dynamic_cast<kir::IfThenElse*>(s)) {
      if (findInBody(ite->then_body, target, holder, index) ||
          findInBody(ite->else_body, target, holder, index)) {
        return true;
      }
    }
  }
  return false;
}

void insertBarrier(kir::Kernel& kernel, PlannedBarrier barrier) {
  kir::StmtList* body = nullptr;
  size_t index = 0;
  SMELT_INTERNAL_CHECK(findInBody(kernel.body, barrier.before, body, index),
                       "shared-memory plan: barrier anchor lost");
  body->insert(body->begin() + static_cast<std::ptrdiff_t>(index), std::move(barrier.sync));
}

kir::Buffer* mutableBuffer(kir::Kernel& kernel, const kir::Buffer* buffer) {
  for (auto& b : kernel.buffers) {
    if (b.get() == buffer) return b.get();
  }
  SMELT_INTERNAL_CHECK(false, "shared-memory plan: unknown buffer ", buffer->name);
  return nullptr;
}

}  // namespace

void applySharedMemoryPlan(kir::Kernel& kernel, std::vector<PlannedBarrier> barriers,
                           const AliasMap& aliases, const std::vector<const kir::Buffer*>& planned,
                           const std::vector<IntExpr>& addresses) {
  for (PlannedBarrier& barrier : barriers) insertBarrier(kernel, std::move(barrier));
  for (auto& b : kernel.buffers) {
    auto it = aliases.find(b.get());
    b->alias_of = it == aliases.end() ? nullptr : it->second;
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    mutableBuffer(kernel, planned[i])->address = addresses[i];
  }
  for (const auto& b : kernel.buffers) {
    if (b->memory != MemoryType::Shared) continue;
    if (b->alias_of != nullptr) {
      b->address = b->alias_of->address;
    } else if (!b->address) {
      b->address = IntExpr(0);  // never accessed: touches no byte
    }
  }
}

}  // namespace smelt::alloc_reuse
