#include "scheduler/segment_extents.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "fusion/error.h"
#include "fusion/symbols.h"
#include "scheduler/segmenter.h"

namespace smelt {

namespace {

// The fusion tensor whose size a symbol names ("T<n>.size[d]"), or -1.
int64_t tensorOfSymbol(const std::string& symbol) {
  const std::optional<SizeSymbol> size = parseSizeSymbol(symbol);
  return size ? size->tensor_number : -1;
}

void collectSymbols(const IntExpr& e, std::set<std::string>& out) {
  if (e.kind() == IntExpr::Kind::Symbol) {
    out.insert(e.symbolName());
  } else if (e.kind() != IntExpr::Kind::Constant) {
    collectSymbols(e.lhs(), out);
    collectSymbols(e.rhs(), out);
  }
}

}  // namespace

ExtentRewrite segmentExtentRewrite(const std::vector<const Val*>& inputs) {
  std::set<int64_t> available;
  for (const Val* in : inputs) {
    if (const TensorView* tv = in->asTensor()) available.insert(tv->number());
  }
  auto outside = [&](const IntExpr& extent) {
    std::set<std::string> symbols;
    collectSymbols(extent, symbols);
    return std::any_of(symbols.begin(), symbols.end(), [&](const std::string& symbol) {
      int64_t owner = tensorOfSymbol(symbol);
      return owner >= 0 && !available.count(owner);
    });
  };
  std::map<std::string, IntExpr> replacements;
  std::vector<std::pair<IntExpr, IntExpr>> whole_extents;
  for (const Val* in : inputs) {
    const TensorView* tv = in->asTensor();
    if (tv == nullptr) continue;
    std::vector<IterDomain*> dims = tv->logicalNoReductions();
    for (size_t d = 0; d < dims.size(); ++d) {
      const IntExpr& extent = dims[d]->loopExtent();
      if (extent.isConstant() || !outside(extent)) continue;
      IntExpr own = IntExpr::symbol(sizeSymbol(tv, static_cast<int64_t>(d)));
      if (extent.kind() == IntExpr::Kind::Symbol) {
        replacements.emplace(extent.symbolName(), own);
      } else {
        whole_extents.emplace_back(extent, own);
      }
    }
  }
  return [replacements, whole_extents](const IntExpr& e) {
    for (const auto& [extent, own] : whole_extents) {
      if (e.sameAs(extent)) return own;
    }
    return substitute(e, replacements);
  };
}

std::vector<const Val*> sizeOnlyInputs(const Fusion& fusion, const std::vector<const Expr*>& exprs,
                                       const std::vector<const Val*>& inputs) {
  const ExtentRewrite rewrite = segmentExtentRewrite(inputs);
  std::set<int64_t> available;
  for (const Val* in : inputs) {
    if (const TensorView* tv = in->asTensor()) available.insert(tv->number());
  }
  std::set<int64_t> needed;
  std::set<std::string> named;
  auto note = [&](const IterDomain* id) {
    std::set<std::string> symbols;
    collectSymbols(rewrite(id->loopExtent()), symbols);
    for (const std::string& s : symbols) {
      int64_t owner = tensorOfSymbol(s);
      if (owner >= 0 && !available.count(owner)) needed.insert(owner);
      named.insert(s);
    }
  };
  for (const Expr* expr : exprs) {
    const TensorView* out = expr->output();
    for (const IterDomain* id : out->logicalDomain()) note(id);
    for (const IterDomain* id : out->rootDomain()) note(id);
  }
  std::vector<const Val*> result;
  for (const Val* in : fusion.inputs()) {
    const TensorView* tv = in->asTensor();
    if (tv != nullptr && needed.count(tv->number())) result.push_back(in);
    const auto* scalar = tv == nullptr ? static_cast<const Scalar*>(in) : nullptr;
    if (scalar != nullptr && named.count(scalar->symbol()) &&
        std::find(inputs.begin(), inputs.end(), in) == inputs.end()) {
      result.push_back(in);
    }
  }
  return result;
}

void checkSegmentSymbols(const Fusion& segment) {
  std::set<int64_t> inputs;
  for (const Val* in : segment.inputs()) {
    if (const TensorView* tv = in->asTensor()) inputs.insert(tv->number());
  }
  for (const TensorView* tv : segment.allTensors()) {
    for (const IterDomain* id : tv->logicalDomain()) {
      std::set<std::string> symbols;
      collectSymbols(id->loopExtent(), symbols);
      for (const std::string& s : symbols) {
        int64_t owner = tensorOfSymbol(s);
        SMELT_CHECK(owner < 0 || inputs.count(owner), "cannot segment the fusion: extent ",
                    id->loopExtent(), " of ", tv->name(),
                    " refers to a tensor that is not an input of its segment");
      }
    }
  }
}

std::vector<InputInfo> segmentInputInfos(const Segment& segment, const RuntimeInfo& whole) {
  std::vector<InputInfo> infos;
  const auto& whole_inputs = segment.inputs;
  for (const Val* in : whole_inputs) {
    const TensorView* tv = in->asTensor();
    if (tv == nullptr || tv->isFusionInput()) {
      const auto& originals = in->fusion()->inputs();
      auto pos = std::find(originals.begin(), originals.end(), in) - originals.begin();
      infos.push_back(whole.inputs().at(pos));
      continue;
    }
    // As the executor allocates outputs: an expanded dimension is stored once
    // (stride 0), the others contiguous.
    const std::vector<IterDomain*> dims = tv->logicalNoReductions();
    std::vector<int64_t> sizes(dims.size()), strides(dims.size());
    int64_t stride = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      const IterDomain* id = dims[d];
      sizes[d] = id->isPlainBroadcast() ? 1 : whole.extent(id);
      strides[d] = id->hasExpandedExtent() ? 0 : stride;
      if (!id->hasExpandedExtent()) stride *= std::max<int64_t>(sizes[d], 1);
    }
    infos.push_back(InputInfo::tensor(tv->dtype(), std::move(sizes), std::move(strides)));
  }
  return infos;
}

}  // namespace smelt
