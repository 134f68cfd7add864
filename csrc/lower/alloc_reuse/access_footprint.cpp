#include "lower/alloc_reuse/access_footprint.h"

#include <functional>
#include <string>

#include "fusion/error.h"

namespace smelt::alloc_reuse {

namespace {

constexpr int64_t kEnumerationBudget = int64_t{1} << 20;
const char* const kThreadSymbols[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};

bool holds(const kir::Predicate& p, const std::map<std::string, int64_t>& bindings) {
  for (const kir::Predicate::Term& t : p.terms) {
    int64_t lhs = t.lhs.evaluate(bindings);
    int64_t rhs = t.rhs.evaluate(bindings);
    bool ok = t.kind == kir::Predicate::Term::Kind::LessThan ? lhs < rhs
              : t.kind == kir::Predicate::Term::Kind::Equal  ? lhs == rhs
                                                              : lhs >= rhs;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<Footprint> footprint(const Liveness& live, const kir::Kernel& kernel,
                                   const std::vector<BufferAccess>& accesses,
                                   const std::vector<const kir::ForLoop*>& key_loops,
                                   bool by_thread) {
  int64_t block[3];
  for (int d = 0; d < 3; ++d) {
    auto extent = kernel.launch.block[d].constant();
    if (!extent) return std::nullopt;
    block[d] = *extent;
  }
  Footprint result;
  int64_t budget = kEnumerationBudget;
  for (const BufferAccess& access : accesses) {
    if (access.index == nullptr) return std::nullopt;
    // The loops and ifs around the access, outermost first.
    std::vector<const kir::Stmt*> scopes = live.ancestors(access.stmt);
    for (const kir::Stmt* scope : scopes) {
      if (auto* loop = dynamic_cast<const kir::ForLoop*>(scope)) {
        if (!loop->extent.isConstant()) return std::nullopt;
      }
    }
    std::map<std::string, int64_t> bindings;
    bool unknown = false;
    // Enumerates threads first, then each enclosing scope in order.
    std::function<void(size_t)> visit = [&](size_t depth) {
      if (unknown) return;
      if (depth < scopes.size()) {
        const kir::Stmt* scope = scopes[depth];
        if (auto* ite = dynamic_cast<const kir::IfThenElse*>(scope)) {
          if (holds(ite->predicate, bindings)) visit(depth + 1);
          return;
        }
        auto* loop = static_cast<const kir::ForLoop*>(scope);
        int64_t extent = *loop->extent.constant();
        auto bound = bindings.find(loop->index);
        if (bound != bindings.end()) {  // a thread index: this thread runs it or not
          if (bound->second < extent) visit(depth + 1);
          return;
        }
        // Each block has its own shared memory: one block stands for all.
        if (isBlockDim(loop->parallel_type)) extent = 1;
        for (int64_t i = 0; i < extent && !unknown; ++i) {
          bindings[loop->index] = i;
          visit(depth + 1);
        }
        bindings.erase(loop->index);
        return;
      }
      if (--budget < 0) {
        unknown = true;
        return;
      }
      if (access.guard != nullptr && !holds(*access.guard, bindings)) return;
      if (access.in_bounds != nullptr && !holds(*access.in_bounds, bindings)) return;
      std::vector<int64_t> key;
      for (const kir::ForLoop* loop : key_loops) {
        auto value = bindings.find(loop->index);
        if (value == bindings.end()) {  // the access is outside a key loop
          unknown = true;
          return;
        }
        key.push_back(value->second);
      }
      if (by_thread) {
        for (const char* symbol : kThreadSymbols) key.push_back(bindings.at(symbol));
      }
      result[key].insert(access.index->evaluate(bindings));
    };
    std::function<void(int)> threads = [&](int d) {
      if (d == 3) {
        visit(0);
        return;
      }
      for (int64_t t = 0; t < block[d] && !unknown; ++t) {
        bindings[kThreadSymbols[d]] = t;
        threads(d + 1);
      }
    };
    try {
      threads(0);
    } catch (const Error&) {  // an index or bound over a symbol we do not enumerate
      return std::nullopt;
    }
    if (unknown) return std::nullopt;
  }
  return result;
}

}  // namespace smelt::alloc_reuse
