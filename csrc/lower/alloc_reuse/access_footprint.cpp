#include "lower/alloc_reuse/access_footprint.h"

#include <algorithm>
#include <functional>
#include <string>

#include "fusion/error.h"
#include "fusion/index_code.h"

namespace smelt::alloc_reuse {

namespace {

constexpr int64_t kEnumerationBudget = int64_t{1} << 20;
const char* const kThreadSymbols[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};

// One access compiled for the enumeration: its predicates and index as
// IndexCode over the symbol slots of the loops around it.
struct CompiledPredicate {
  struct Term {
    int lhs, rhs;
    kir::Predicate::Term::Kind kind;
  };
  std::vector<Term> terms;
};

class Compiler {
 public:
  Compiler(IndexCode& code, SymbolTable& symbols) : code_(code), symbols_(symbols) {}
  int expr(const IntExpr& e) { return code_.add(e, symbols_); }
  CompiledPredicate predicate(const kir::Predicate& p) {
    CompiledPredicate c;
    for (const kir::Predicate::Term& t : p.terms) c.terms.push_back({expr(t.lhs), expr(t.rhs), t.kind});
    return c;
  }

 private:
  IndexCode& code_;
  SymbolTable& symbols_;
};

bool holds(const CompiledPredicate& p, const IndexCode& code, const int64_t* values) {
  for (const CompiledPredicate::Term& t : p.terms) {
    int64_t lhs = code.eval(t.lhs, values);
    int64_t rhs = code.eval(t.rhs, values);
    bool ok = t.kind == kir::Predicate::Term::Kind::LessThan ? lhs < rhs
              : t.kind == kir::Predicate::Term::Kind::Equal  ? lhs == rhs
                                                              : lhs >= rhs;
    if (!ok) return false;
  }
  return true;
}

// How many times the enumeration below reaches the access: threads that run
// every thread-bound loop around it, times the trip counts of the other
// loops (one block stands for all). nullopt when an if encloses the access
// or a loop rebinds an enclosing loop's index (the count is not a product).
std::optional<int64_t> leafCount(const std::vector<const kir::Stmt*>& scopes,
                                 const std::vector<int>& scope_slot, const int thread_slot[3],
                                 const int64_t block[3]) {
  int64_t threads[3] = {block[0], block[1], block[2]};
  std::vector<int> seen;
  int64_t count = 1;
  for (size_t i = 0; i < scopes.size(); ++i) {
    if (scope_slot[i] < 0) return std::nullopt;
    const int64_t extent = *static_cast<const kir::ForLoop*>(scopes[i])->extent.constant();
    const int* thread = std::find(thread_slot, thread_slot + 3, scope_slot[i]);
    if (thread != thread_slot + 3) {
      int64_t& n = threads[thread - thread_slot];
      n = std::min(n, extent);
      continue;
    }
    if (std::find(seen.begin(), seen.end(), scope_slot[i]) != seen.end()) return std::nullopt;
    seen.push_back(scope_slot[i]);
    if (isBlockDim(static_cast<const kir::ForLoop*>(scopes[i])->parallel_type)) continue;
    count = std::min(count * std::max<int64_t>(extent, 0), kEnumerationBudget + 1);
  }
  for (int64_t n : threads) count = std::min(count * std::max<int64_t>(n, 0), kEnumerationBudget + 1);
  return count;
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
    // Symbols get slots; a slot is bound while the enumeration sits inside
    // the loop (or thread index) that defines it. An expression over a symbol
    // no loop binds (a symbolic size) makes the footprint unknown.
    IndexCode code;
    SymbolTable symbols;
    Compiler compile(code, symbols);
    int thread_slot[3];
    for (int d = 0; d < 3; ++d) thread_slot[d] = symbols.slot(kThreadSymbols[d]);
    std::vector<int> scope_slot(scopes.size(), -1);
    std::vector<CompiledPredicate> scope_predicate(scopes.size());
    for (size_t i = 0; i < scopes.size(); ++i) {
      if (auto* ite = dynamic_cast<const kir::IfThenElse*>(scopes[i])) {
        scope_predicate[i] = compile.predicate(ite->predicate);
      } else {
        scope_slot[i] = symbols.slot(static_cast<const kir::ForLoop*>(scopes[i])->index);
      }
    }
    const CompiledPredicate guard = access.guard ? compile.predicate(*access.guard) : CompiledPredicate{};
    const CompiledPredicate in_bounds =
        access.in_bounds ? compile.predicate(*access.in_bounds) : CompiledPredicate{};
    const int index = compile.expr(*access.index);
    std::vector<int> key_slot;
    for (const kir::ForLoop* loop : key_loops) key_slot.push_back(symbols.slot(loop->index));
    std::vector<bool> definable(symbols.size(), false);
    for (int d = 0; d < 3; ++d) definable[thread_slot[d]] = true;
    for (int slot : scope_slot) {
      if (slot >= 0) definable[slot] = true;
    }
    for (int h = 0; h < code.size(); ++h) {
      for (int slot : code.slotsUsed(h)) {
        if (!definable[slot]) return std::nullopt;
      }
    }
    // Without ifs around the access the leaves can be counted up front: an
    // access that would exhaust the budget is unknown without enumerating.
    if (auto leaves = leafCount(scopes, scope_slot, thread_slot, block); leaves && *leaves > budget) {
      return std::nullopt;
    }
    std::vector<int64_t> values(symbols.size(), 0);
    std::vector<bool> bound(symbols.size(), false);
    for (int d = 0; d < 3; ++d) bound[thread_slot[d]] = true;
    std::vector<int64_t> key(key_slot.size() + (by_thread ? 3 : 0));
    bool unknown = false;
    // Enumerates threads first, then each enclosing scope in order.
    std::function<void(size_t)> visit = [&](size_t depth) {
      if (unknown) return;
      if (depth < scopes.size()) {
        if (scope_slot[depth] < 0) {
          if (holds(scope_predicate[depth], code, values.data())) visit(depth + 1);
          return;
        }
        auto* loop = static_cast<const kir::ForLoop*>(scopes[depth]);
        int64_t extent = *loop->extent.constant();
        const int slot = scope_slot[depth];
        if (bound[slot]) {  // a thread index: this thread runs it or not
          if (values[slot] < extent) visit(depth + 1);
          return;
        }
        // Each block has its own shared memory: one block stands for all.
        if (isBlockDim(loop->parallel_type)) extent = 1;
        bound[slot] = true;
        for (int64_t i = 0; i < extent && !unknown; ++i) {
          values[slot] = i;
          visit(depth + 1);
        }
        bound[slot] = false;
        return;
      }
      if (--budget < 0) {
        unknown = true;
        return;
      }
      if (!holds(guard, code, values.data()) || !holds(in_bounds, code, values.data())) return;
      for (size_t k = 0; k < key_slot.size(); ++k) {
        if (!bound[key_slot[k]]) {  // the access is outside a key loop
          unknown = true;
          return;
        }
        key[k] = values[key_slot[k]];
      }
      if (by_thread) {
        for (int d = 0; d < 3; ++d) key[key_slot.size() + d] = values[thread_slot[d]];
      }
      result[key].insert(code.eval(index, values.data()));
    };
    std::function<void(int)> threads = [&](int d) {
      if (d == 3) {
        visit(0);
        return;
      }
      for (int64_t t = 0; t < block[d] && !unknown; ++t) {
        values[thread_slot[d]] = t;
        threads(d + 1);
      }
    };
    try {
      threads(0);
    } catch (const Error&) {  // an index divides by zero
      return std::nullopt;
    }
    if (unknown) return std::nullopt;
  }
  return result;
}

}  // namespace smelt::alloc_reuse
