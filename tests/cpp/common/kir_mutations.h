// Mutations of a planned kernel, the way a buggy lowering pass or plan would
// break it, for the mutation tests (the simulator and the plan verifier must
// notice each one):
// - RemoveBarrier: one BlockSync deleted (inserted by promoteReuse or an
//   existing RAW/WAR barrier);
// - ShiftAddress: one planned Shared buffer (with its aliases) moved to the
//   address of a live neighbour: a buffer whose own inner interval (first to
//   last access, an alias counted apart from its base) overlaps its own
//   across a statement boundary. Inner and open: a buffer that dies in the
//   very statement that first writes the other (a pad reading A[i] while
//   writing B[i], a copy chain), even when that statement sits in a loop, is
//   written in place element by element, so that move would change nothing;
// - DropPredicate: one statement predicate, IfThenElse condition or operand
//   bounds check (pad) made always true.
// Each mutation applies to the kernel in place and undoes itself; apply one
// at a time.
#pragma once

#include <functional>
#include <unordered_map>
#include <memory>
#include <string>
#include <vector>

#include "lower/alloc_reuse/kernel_plan.h"
#include "lower/alloc_reuse/liveness.h"
#include "lower/kir.h"

namespace smelt::testing {

struct KernelMutation {
  enum class Kind { RemoveBarrier, ShiftAddress, DropPredicate };
  Kind kind;
  std::string description;             // e.g. "remove BlockSync (RAW T1) at 4"
  const kir::Stmt* stmt = nullptr;     // the statement mutated (none for ShiftAddress)
  std::function<void()> apply;
  std::function<void()> undo;
};

namespace mutation_detail {

inline void addPredicate(std::vector<KernelMutation>& out, kir::Predicate& pred,
                         const kir::Stmt* stmt, const std::string& what, int64_t position) {
  if (pred.alwaysTrue()) return;
  auto saved = std::make_shared<kir::Predicate>(pred);
  out.push_back({KernelMutation::Kind::DropPredicate,
                 "drop " + what + " (" + pred.toString() + ") at " + std::to_string(position),
                 stmt, [&pred] { pred.terms.clear(); }, [&pred, saved] { pred = *saved; }});
}

inline void addOperands(std::vector<KernelMutation>& out, std::vector<kir::Operand>& operands,
                        const kir::Stmt* stmt, int64_t position) {
  for (kir::Operand& op : operands) {
    addPredicate(out, op.in_bounds, stmt, "bounds check of a read", position);
  }
}

inline void walk(std::vector<KernelMutation>& out, kir::StmtList& list,
                 const kir::ProgramPositions& positions) {
  for (size_t i = 0; i < list.size(); ++i) {
    kir::Stmt* s = list[i].get();
    const int64_t position = positions.start.at(s);
    if (auto* sync = dynamic_cast<kir::BlockSync*>(s)) {
      auto taken = std::make_shared<std::unique_ptr<kir::Stmt>>();
      auto* where = &list;
      out.push_back({KernelMutation::Kind::RemoveBarrier,
                     "remove BlockSync (" + sync->reason + ") at " + std::to_string(position), s,
                     [where, i, taken] {
                       *taken = std::move((*where)[i]);
                       where->erase(where->begin() + static_cast<std::ptrdiff_t>(i));
                     },
                     [where, i, taken] {
                       where->insert(where->begin() + static_cast<std::ptrdiff_t>(i),
                                     std::move(*taken));
                     }});
    } else if (auto* loop = dynamic_cast<kir::ForLoop*>(s)) {
      walk(out, loop->body, positions);
    } else if (auto* ite = dynamic_cast<kir::IfThenElse*>(s)) {
      addPredicate(out, ite->predicate, s, "if condition", position);
      walk(out, ite->then_body, positions);
      walk(out, ite->else_body, positions);
    } else if (auto* c = dynamic_cast<kir::Compute*>(s)) {
      addPredicate(out, c->predicate, s, "predicate", position);
      addOperands(out, c->operands, s, position);
    } else if (auto* init = dynamic_cast<kir::ReduceInit*>(s)) {
      addPredicate(out, init->predicate, s, "predicate", position);
    } else if (auto* step = dynamic_cast<kir::ReduceStep*>(s)) {
      addPredicate(out, step->predicate, s, "predicate", position);
      addPredicate(out, step->in.in_bounds, s, "bounds check of a read", position);
    } else if (auto* reduce = dynamic_cast<kir::BlockReduce*>(s)) {
      addPredicate(out, reduce->predicate, s, "predicate", position);
    }
  }
}

// Moves `buffer` and every alias of it to `address`.
inline void moveTo(kir::Kernel& kernel, const kir::Buffer* buffer, const IntExpr& address) {
  for (auto& b : kernel.buffers) {
    if (b.get() == buffer || b->alias_of == buffer) b->address = address;
  }
}


// Each buffer's own inner interval: an alias's accesses not folded into its
// base's (liveness.h does that for planning).
inline std::unordered_map<const kir::Buffer*, alloc_reuse::LiveInterval> ownIntervals(
    kir::Kernel& kernel) {
  std::vector<const kir::Buffer*> bases;
  for (auto& b : kernel.buffers) {
    bases.push_back(b->alias_of);
    b->alias_of = nullptr;
  }
  alloc_reuse::Liveness live = alloc_reuse::computeLiveness(kernel);
  for (size_t i = 0; i < bases.size(); ++i) kernel.buffers[i]->alias_of = bases[i];
  std::unordered_map<const kir::Buffer*, alloc_reuse::LiveInterval> result;
  for (const alloc_reuse::BufferLiveness& b : live.buffers) result[b.buffer] = b.inner;
  return result;
}

// True when some buffer of `x`'s group (x and its aliases) and some of `y`'s
// are live across one statement boundary (open intervals overlap).
inline bool liveNeighbours(
    const kir::Kernel& kernel, const kir::Buffer* x, const kir::Buffer* y,
    const std::unordered_map<const kir::Buffer*, alloc_reuse::LiveInterval>& own) {
  auto group = [&](const kir::Buffer* base) {
    std::vector<alloc_reuse::LiveInterval> intervals;
    for (const auto& b : kernel.buffers) {
      auto it = own.find(b.get());
      bool member = b.get() == base || b->alias_of == base;
      if (member && it != own.end() && it->second.valid()) intervals.push_back(it->second);
    }
    return intervals;
  };
  for (const alloc_reuse::LiveInterval& a : group(x)) {
    for (const alloc_reuse::LiveInterval& b : group(y)) {
      if (a.first < b.last && b.first < a.last) return true;
    }
  }
  return false;
}

}  // namespace mutation_detail

// Every mutation of `kernel` (planned: kernel.smem_plan is set), barriers and
// predicates in program order, then address shifts.
inline std::vector<KernelMutation> kernelMutations(kir::Kernel& kernel) {
  std::vector<KernelMutation> out;
  mutation_detail::walk(out, kernel.body, kir::numberPositions(kernel.body));
  const auto own = mutation_detail::ownIntervals(kernel);
  const std::vector<const kir::Buffer*>& planned = kernel.smem_plan->planned;
  for (const kir::Buffer* moved : planned) {
    for (const kir::Buffer* onto : planned) {
      if (moved == onto || !mutation_detail::liveNeighbours(kernel, moved, onto, own)) continue;
      if (moved->address->sameAs(*onto->address)) continue;  // already overlapping: no change
      const IntExpr original = *moved->address;
      out.push_back({KernelMutation::Kind::ShiftAddress,
                     "move " + moved->name + " onto live " + onto->name + " (address " +
                         onto->address->toString() + " instead of " + original.toString() + ")",
                     nullptr,
                     [&kernel, moved, onto] {
                       mutation_detail::moveTo(kernel, moved, *onto->address);
                     },
                     [&kernel, moved, original] {
                       mutation_detail::moveTo(kernel, moved, original);
                     }});
    }
  }
  return out;
}

}  // namespace smelt::testing
