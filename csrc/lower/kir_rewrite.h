// Rewriting kernel IR in place: visiting the index expressions and element
// accesses a statement owns, substituting index symbols, deep copies of
// statement trees, and renaming serial loop indices. Used by passes that
// restructure loops after indexing (circular_buffer.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "lower/kir.h"

namespace smelt::kir {

using SymbolMap = std::map<std::string, IntExpr>;

// Calls f on every index expression `stmt` itself holds (access indices,
// predicate terms, operand bounds, a loop's extent), not on its body.
void forEachIndex(Stmt& stmt, const std::function<void(IntExpr&)>& f);

// Calls f(access, is_write) on every element access `stmt` itself holds.
void forEachAccess(Stmt& stmt, const std::function<void(Access&, bool is_write)>& f);

// Calls f on `root` and every statement under it, in program order.
void forEachInTree(Stmt& root, const std::function<void(Stmt&)>& f);

// Calls f on the guard of every statement in the tree that has one (the
// statements that compute: Compute, ReduceInit, ReduceStep, BlockReduce).
void forEachGuard(Stmt& root, const std::function<void(Predicate&)>& f);

// Applies `symbols` to every index in the tree rooted at `root`.
void substituteTree(Stmt& root, const SymbolMap& symbols);

// A deep copy: loops and ifs with copied bodies; buffers, iteration domains
// and fusion expressions are shared with the original.
std::unique_ptr<Stmt> cloneTree(const Stmt& root);

// Where `target` sits: the list holding it and its index there.
std::optional<std::pair<StmtList*, size_t>> locate(StmtList& body, const Stmt* target);

// Renames every serial (not thread/block-bound) loop index to "i0", "i1", ...
// in program order, as loop_nest names them, updating every use in scope.
// Sibling loops may share a name before (copies of one loop nest).
void renumberLoopIndices(StmtList& body);

}  // namespace smelt::kir
