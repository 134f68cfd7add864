#include "lower/alloc_reuse/access_footprint.h"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>

#include "fusion/error.h"
#include "fusion/index_code.h"
#include "fusion/symbols.h"

namespace smelt::alloc_reuse {

namespace {

constexpr int64_t kEnumerationBudget = int64_t{1} << 20;

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

// One access compiled for the enumeration: every (key, element) it touches,
// threads first, then each enclosing scope in order.
class AccessWalk {
 public:
  using Touch = std::function<void(const std::vector<int64_t>& key, int64_t element)>;

  AccessWalk(const Liveness& live, const std::array<int64_t, 3>& block, const BufferAccess& access,
             const std::vector<const kir::ForLoop*>& key_loops, bool by_thread)
      : block_(block), by_thread_(by_thread), compile_(code_, symbols_) {
    if (access.index == nullptr) return;
    // The loops and ifs around the access, outermost first.
    scopes_ = live.ancestors(access.stmt);
    for (const kir::Stmt* scope : scopes_) {
      if (auto* loop = dynamic_cast<const kir::ForLoop*>(scope)) {
        if (!loop->extent.isConstant()) return;
      }
    }
    // Symbols get slots; a slot is bound while the enumeration sits inside
    // the loop (or thread index) that defines it. An expression over a symbol
    // no loop binds (a symbolic size) makes the footprint unknown.
    for (int d = 0; d < 3; ++d) thread_slot_[d] = symbols_.slot(threadIdxSymbol(d));
    scope_slot_.assign(scopes_.size(), -1);
    scope_predicate_.resize(scopes_.size());
    for (size_t i = 0; i < scopes_.size(); ++i) {
      if (auto* ite = dynamic_cast<const kir::IfThenElse*>(scopes_[i])) {
        scope_predicate_[i] = compile_.predicate(ite->predicate);
      } else {
        scope_slot_[i] = symbols_.slot(static_cast<const kir::ForLoop*>(scopes_[i])->index);
      }
    }
    if (access.guard) guard_ = compile_.predicate(*access.guard);
    if (access.in_bounds) in_bounds_ = compile_.predicate(*access.in_bounds);
    index_ = compile_.expr(*access.index);
    for (const kir::ForLoop* loop : key_loops) key_slot_.push_back(symbols_.slot(loop->index));
    std::vector<bool> definable(symbols_.size(), false);
    for (int d = 0; d < 3; ++d) definable[thread_slot_[d]] = true;
    for (int slot : scope_slot_) {
      if (slot >= 0) definable[slot] = true;
    }
    for (int h = 0; h < code_.size(); ++h) {
      for (int slot : code_.slotsUsed(h)) {
        if (!definable[slot]) return;
      }
    }
    compiled_ = true;
  }

  // Calls `touch` for every leaf the access's guards let through; returns the
  // leaves reached (budget spent), or nullopt when unknown or over `budget`.
  std::optional<int64_t> run(int64_t budget, const Touch& touch) {
    if (!compiled_) return std::nullopt;
    // Without ifs around the access the leaves can be counted up front: an
    // access that would exhaust the budget is unknown without enumerating.
    if (auto leaves = leafCount(scopes_, scope_slot_, thread_slot_, block_.data());
        leaves && *leaves > budget) {
      return std::nullopt;
    }
    touch_ = &touch;
    budget_ = budget;
    leaves_ = 0;
    unknown_ = false;
    values_.assign(symbols_.size(), 0);
    bound_.assign(symbols_.size(), false);
    for (int d = 0; d < 3; ++d) bound_[thread_slot_[d]] = true;
    key_.assign(key_slot_.size() + (by_thread_ ? 3 : 0), 0);
    try {
      threads(0);
    } catch (const Error&) {  // an index divides by zero
      return std::nullopt;
    }
    if (unknown_) return std::nullopt;
    return leaves_;
  }

 private:
  void threads(int d) {
    if (d == 3) {
      visit(0);
      return;
    }
    for (int64_t t = 0; t < block_[d] && !unknown_; ++t) {
      values_[thread_slot_[d]] = t;
      threads(d + 1);
    }
  }

  void visit(size_t depth) {
    if (unknown_) return;
    if (depth < scopes_.size()) {
      if (scope_slot_[depth] < 0) {
        if (holds(scope_predicate_[depth], code_, values_.data())) visit(depth + 1);
        return;
      }
      auto* loop = static_cast<const kir::ForLoop*>(scopes_[depth]);
      int64_t extent = *loop->extent.constant();
      const int slot = scope_slot_[depth];
      if (bound_[slot]) {  // a thread index: this thread runs it or not
        if (values_[slot] < extent) visit(depth + 1);
        return;
      }
      // Each block has its own shared memory: one block stands for all.
      if (isBlockDim(loop->parallel_type)) extent = 1;
      bound_[slot] = true;
      for (int64_t i = 0; i < extent && !unknown_; ++i) {
        values_[slot] = i;
        visit(depth + 1);
      }
      bound_[slot] = false;
      return;
    }
    if (++leaves_ > budget_) {
      unknown_ = true;
      return;
    }
    if (!holds(guard_, code_, values_.data()) || !holds(in_bounds_, code_, values_.data())) return;
    for (size_t k = 0; k < key_slot_.size(); ++k) {
      if (!bound_[key_slot_[k]]) {  // the access is outside a key loop
        unknown_ = true;
        return;
      }
      key_[k] = values_[key_slot_[k]];
    }
    if (by_thread_) {
      for (int d = 0; d < 3; ++d) key_[key_slot_.size() + d] = values_[thread_slot_[d]];
    }
    (*touch_)(key_, code_.eval(index_, values_.data()));
  }

  const std::array<int64_t, 3> block_;
  const bool by_thread_;
  IndexCode code_;
  SymbolTable symbols_;
  Compiler compile_;
  bool compiled_ = false;
  std::vector<const kir::Stmt*> scopes_;
  int thread_slot_[3] = {-1, -1, -1};
  std::vector<int> scope_slot_;
  std::vector<CompiledPredicate> scope_predicate_;
  CompiledPredicate guard_, in_bounds_;
  int index_ = -1;
  std::vector<int> key_slot_;
  // Enumeration state.
  const Touch* touch_ = nullptr;
  int64_t budget_ = 0;
  int64_t leaves_ = 0;
  bool unknown_ = false;
  std::vector<int64_t> values_;
  std::vector<bool> bound_;
  std::vector<int64_t> key_;
};

std::optional<std::array<int64_t, 3>> constantBlock(const kir::Kernel& kernel) {
  std::array<int64_t, 3> block{};
  for (int d = 0; d < 3; ++d) {
    auto extent = kernel.launch.block[d].constant();
    if (!extent) return std::nullopt;
    block[d] = *extent;
  }
  return block;
}

bool iterationBefore(const int64_t* a, const int64_t* b, size_t loops) {
  return std::lexicographical_compare(a, a + loops, b, b + loops);
}

// `t` with its elements sorted by index.
ElementTouches sortedByIndex(const ElementTouches& t) {
  std::vector<size_t> order(t.elements.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return t.elements[a].index < t.elements[b].index; });
  ElementTouches sorted;
  sorted.loops = t.loops;
  sorted.leaves = t.leaves;
  for (size_t i : order) {
    sorted.elements.push_back(t.elements[i]);
    const size_t at = i * t.loops;
    sorted.first_iteration.insert(sorted.first_iteration.end(), t.first_iteration.begin() + at,
                                  t.first_iteration.begin() + at + t.loops);
    sorted.last_iteration.insert(sorted.last_iteration.end(), t.last_iteration.begin() + at,
                                 t.last_iteration.begin() + at + t.loops);
  }
  return sorted;
}

// The touches of two sets of accesses together.
ElementTouches merged(const ElementTouches& a, const ElementTouches& b) {
  ElementTouches out;
  out.loops = a.loops;
  out.leaves = a.leaves + b.leaves;
  const size_t loops = a.loops;
  auto append = [&](const ElementTouches& t, size_t i) {
    out.elements.push_back(t.elements[i]);
    out.first_iteration.insert(out.first_iteration.end(), t.first_iteration.begin() + i * loops,
                               t.first_iteration.begin() + (i + 1) * loops);
    out.last_iteration.insert(out.last_iteration.end(), t.last_iteration.begin() + i * loops,
                              t.last_iteration.begin() + (i + 1) * loops);
  };
  size_t i = 0, j = 0;
  while (i < a.elements.size() || j < b.elements.size()) {
    if (j == b.elements.size() ||
        (i < a.elements.size() && a.elements[i].index < b.elements[j].index)) {
      append(a, i++);
    } else if (i == a.elements.size() || b.elements[j].index < a.elements[i].index) {
      append(b, j++);
    } else {  // both touch the element
      append(a, i);
      ElementTouches::Element& e = out.elements.back();
      e.several_threads = e.several_threads || b.elements[j].several_threads ||
                          e.thread != b.elements[j].thread;
      int64_t* first = out.first_iteration.data() + (out.elements.size() - 1) * loops;
      int64_t* last = out.last_iteration.data() + (out.elements.size() - 1) * loops;
      const int64_t* b_first = b.first_iteration.data() + j * loops;
      const int64_t* b_last = b.last_iteration.data() + j * loops;
      if (iterationBefore(b_first, first, loops)) std::copy(b_first, b_first + loops, first);
      if (iterationBefore(last, b_last, loops)) std::copy(b_last, b_last + loops, last);
      ++i;
      ++j;
    }
  }
  return out;
}

}  // namespace

std::optional<Footprint> footprint(const Liveness& live, const kir::Kernel& kernel,
                                   const std::vector<BufferAccess>& accesses,
                                   const std::vector<const kir::ForLoop*>& key_loops,
                                   bool by_thread) {
  std::optional<std::array<int64_t, 3>> block = constantBlock(kernel);
  if (!block) return std::nullopt;
  Footprint result;
  int64_t budget = kEnumerationBudget;
  const AccessWalk::Touch touch = [&](const std::vector<int64_t>& key, int64_t element) {
    result[key].insert(element);
  };
  for (const BufferAccess& access : accesses) {
    std::optional<int64_t> spent =
        AccessWalk(live, *block, access, key_loops, by_thread).run(budget, touch);
    if (!spent) return std::nullopt;
    budget -= *spent;
  }
  return result;
}

const std::optional<ElementTouches>& FootprintAnalysis::ofAccess(
    const BufferAccess& access, const std::vector<const kir::ForLoop*>& key_loops,
    bool by_thread) {
  Key key{access.stmt, access.index, access.guard, access.in_bounds, key_loops, by_thread};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::optional<ElementTouches>& cached = cache_[key];
  std::optional<std::array<int64_t, 3>> block = constantBlock(kernel_);
  if (!block) return cached;
  const size_t loops = key_loops.size();
  ElementTouches t;
  t.loops = loops;
  std::unordered_map<int64_t, size_t> position;  // element index -> t.elements
  const AccessWalk::Touch touch = [&](const std::vector<int64_t>& key_values, int64_t element) {
    const int64_t* iteration = key_values.data();
    std::array<int64_t, 3> thread{};
    if (by_thread) std::copy(iteration + loops, iteration + loops + 3, thread.begin());
    auto [it, added] = position.try_emplace(element, t.elements.size());
    if (added) {
      t.elements.push_back({element, thread, false});
      t.first_iteration.insert(t.first_iteration.end(), iteration, iteration + loops);
      t.last_iteration.insert(t.last_iteration.end(), iteration, iteration + loops);
      return;
    }
    ElementTouches::Element& e = t.elements[it->second];
    e.several_threads = e.several_threads || e.thread != thread;
    int64_t* first = t.first_iteration.data() + it->second * loops;
    int64_t* last = t.last_iteration.data() + it->second * loops;
    if (iterationBefore(iteration, first, loops)) std::copy(iteration, iteration + loops, first);
    if (iterationBefore(last, iteration, loops)) std::copy(iteration, iteration + loops, last);
  };
  std::optional<int64_t> spent =
      AccessWalk(live_, *block, access, key_loops, by_thread).run(kEnumerationBudget, touch);
  if (!spent) return cached;
  t.leaves = *spent;
  cached = sortedByIndex(t);
  return cached;
}

std::optional<ElementTouches> FootprintAnalysis::touches(
    const std::vector<BufferAccess>& accesses, const std::vector<const kir::ForLoop*>& key_loops,
    bool by_thread) {
  if (!constantBlock(kernel_)) return std::nullopt;
  ElementTouches all;
  all.loops = key_loops.size();
  // One budget for the whole list, as footprint() spends it.
  for (const BufferAccess& access : accesses) {
    const std::optional<ElementTouches>& one = ofAccess(access, key_loops, by_thread);
    if (!one || all.leaves + one->leaves > kEnumerationBudget) return std::nullopt;
    all = merged(all, *one);
  }
  return all;
}

}  // namespace smelt::alloc_reuse
