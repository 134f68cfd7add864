// Copies of fusion graphs. Fusion::clone copies everything (schedules
// included); copySubgraph copies some expressions into a fusion of their own
// (a segment). Copies keep tensor numbers and names, so the size symbols
// "T<n>.size[d]" of a copied tensor still name that tensor.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "fusion/fusion.h"
#include "fusion/ir.h"

namespace smelt {

// Original node -> its copy.
struct CloneMap {
  std::unordered_map<const Val*, Val*> vals;
  std::unordered_map<const IterDomain*, IterDomain*> ids;
  // The copy of `val`; throws when it was not copied.
  Val* operator()(const Val* val) const;
  TensorView* operator()(const TensorView* tv) const;
};

// Rewrites an extent or split factor while copying (e.g. substitutes the
// size symbols of tensors that are not in the copy).
using ExtentRewrite = std::function<IntExpr(const IntExpr&)>;

// A fusion computing `outputs` from `inputs` with `exprs` of `src` (which
// must be closed: every tensor an expression reads is one of `inputs` or
// computed by another of `exprs`). Inputs lose their definitions; inputs and
// outputs are Global. Schedules of the copied tensors are copied too.
std::unique_ptr<Fusion> copySubgraph(const Fusion& src, const std::vector<const Expr*>& exprs,
                                     const std::vector<const Val*>& inputs,
                                     const std::vector<const Val*>& outputs,
                                     CloneMap* map = nullptr,
                                     const ExtentRewrite& rewrite_extent = {});

}  // namespace smelt
