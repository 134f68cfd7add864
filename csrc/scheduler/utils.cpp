#include "scheduler/utils.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "fusion/device_limits.h"
#include "fusion/error.h"

namespace smelt::scheduler_utils {

const TensorView* readAtOtherPositions(const Expr* expr) {
  const bool reads_elsewhere = expr->type() == ExprType::Pad || expr->type() == ExprType::IndexSelect;
  return reads_elsewhere ? expr->input(0)->asTensor() : nullptr;
}

std::vector<TensorView*> cacheableInputs(const Fusion& fusion) {
  std::vector<TensorView*> result;
  const auto partially_merged = partiallyMergedByReshapes(fusion);
  const std::vector<Expr*> exprs = fusion.exprs();
  for (Val* in : fusion.inputs()) {
    TensorView* tv = in->asTensor();
    if (tv == nullptr || tv->logicalNoReductions().empty()) continue;
    if (std::any_of(partially_merged.begin(), partially_merged.end(),
                    [&](const auto& entry) { return entry.first == tv; }) ||
        readThroughASplitAndBeside(fusion, exprs, tv)) {
      continue;
    }
    std::vector<TensorView*> consumers = fusion.consumersOf(tv);
    bool read_elsewhere = std::any_of(consumers.begin(), consumers.end(), [&](const TensorView* c) {
      return readAtOtherPositions(c->definition()) == tv;
    });
    if (!consumers.empty() && !read_elsewhere) result.push_back(tv);
  }
  return result;
}

TensorView* cacheOutput(TensorView* output) {
  Fusion* fusion = output->fusion();
  TensorView* cache = output->cacheBefore();
  for (Expr* expr : fusion->exprs()) {
    if (expr == output->definition()) continue;
    const auto& ins = expr->inputs();
    if (std::find(ins.begin(), ins.end(), output) != ins.end()) expr->replaceInput(output, cache);
  }
  return cache;
}

std::vector<TensorView*> cacheInputsAndOutputs(
    Fusion& fusion, const std::vector<int64_t>& vectorized_inputs,
    const std::vector<int64_t>& vectorized_outputs,
    const std::function<bool(const TensorView*)>& also_cache, const std::string& scheduler) {
  const std::vector<Val*> inputs = fusion.inputs();
  const std::vector<Val*> outputs = fusion.outputs();
  std::vector<TensorView*> cacheable = cacheableInputs(fusion);
  for (int64_t i : vectorized_inputs) {
    SMELT_CHECK(i >= 0 && i < static_cast<int64_t>(inputs.size()) &&
                    std::find(cacheable.begin(), cacheable.end(), inputs[i]) != cacheable.end(),
                scheduler, " scheduler: input ", i, " cannot be vectorized");
  }
  for (int64_t j : vectorized_outputs) {
    SMELT_CHECK(j >= 0 && j < static_cast<int64_t>(outputs.size()), scheduler,
                " scheduler: there is no output ", j, " to vectorize");
  }
  std::vector<TensorView*> vectorized;
  for (int64_t i = 0; i < static_cast<int64_t>(inputs.size()); ++i) {
    TensorView* in = inputs[i]->asTensor();
    if (std::find(cacheable.begin(), cacheable.end(), in) == cacheable.end()) continue;
    TensorView* cache = in->cacheAfter();
    bool vector = std::find(vectorized_inputs.begin(), vectorized_inputs.end(), i) !=
                  vectorized_inputs.end();
    if (vector) vectorized.push_back(cache);
  }
  for (int64_t j = 0; j < static_cast<int64_t>(outputs.size()); ++j) {
    TensorView* out = outputs[j]->asTensor();
    bool vector = std::find(vectorized_outputs.begin(), vectorized_outputs.end(), j) !=
                  vectorized_outputs.end();
    if (vector || !fusion.consumersOf(out).empty() || (also_cache && also_cache(out))) {
      cacheOutput(out);
    }
    if (vector) vectorized.push_back(out);
  }
  return vectorized;
}

void vectorizeInnermost(const std::vector<TensorView*>& tensors, int64_t width) {
  for (TensorView* tv : tensors) {
    // Propagation appends axes it cannot map (a broadcast the reference
    // lacks, or an extent-1 input axis a reshape left unmapped): they run once, so
    // the vector axis moves behind them.
    int64_t vector_axis = tv->nDims() - 1;
    while (vector_axis > 0 && !tv->axis(vector_axis)->isReduction() &&
           tv->axis(vector_axis)->loopExtent().constant() == 1) {
      --vector_axis;
    }
    if (vector_axis < tv->nDims() - 1) tv->reorder({{vector_axis, tv->nDims() - 1}});
    if (width > 1 && tv->axis(-1)->extent().constant() == width) {
      tv->axis(-1)->parallelize(ParallelType::Vectorize);
    }
  }
}

bool canVectorize(const TensorView* tv, const InputInfo* info, const DimensionMap& map,
                  const std::vector<int64_t>& dims, int64_t width, const RuntimeInfo& runtime) {
  // Up to 32 bytes: two 16-byte accesses (codegen/vectorize.h).
  const int64_t bytes = width * dataTypeSize(tv->dtype());
  if (bytes > 2 * kMaxAccessBytes) return false;
  std::vector<IterDomain*> logical = tv->logicalNoReductions();
  std::vector<int64_t> positions;
  int64_t extent = 1;
  for (int64_t d : dims) {
    if (map.role(tv, d) != DimensionMap::Role::Iteration) return false;
    IterDomain* id = map.axisOf(tv, d);
    positions.push_back(std::find(logical.begin(), logical.end(), id) - logical.begin());
    extent *= runtime.extent(id);
  }
  const int64_t rank = static_cast<int64_t>(logical.size());
  for (size_t k = 0; k < positions.size(); ++k) {
    if (positions[k] != rank - static_cast<int64_t>(positions.size()) + static_cast<int64_t>(k)) {
      return false;  // not the innermost dimensions, in order
    }
  }
  if (extent % width != 0) return false;
  if (info == nullptr) return true;
  if (info->alignment < std::min(bytes, kMaxAccessBytes)) return false;
  int64_t expected = 1;
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) {
    if (info->sizes[*it] != 1 && info->strides[*it] != expected) return false;
    expected *= info->sizes[*it];
  }
  for (int64_t q = 0; q < rank - static_cast<int64_t>(positions.size()); ++q) {
    if (info->sizes[q] != 1 && info->strides[q] % width != 0) return false;
  }
  return true;
}

VectorChoice chooseVectorWidth(const Fusion& fusion, const DimensionMap& map,
                               const std::vector<int64_t>& dims, const RuntimeInfo& runtime,
                               bool with_outputs) {
  std::vector<TensorView*> cached = cacheableInputs(fusion);
  std::vector<TensorView*> candidates = cached;
  if (with_outputs) {
    for (Val* out : fusion.outputs()) candidates.push_back(out->asTensor());
  }
  int64_t widest = 1;
  int64_t narrowest = 16;
  for (TensorView* tv : candidates) {
    bool iterates = std::all_of(dims.begin(), dims.end(), [&](int64_t d) {
      return map.role(tv, d) == DimensionMap::Role::Iteration;
    });
    if (!iterates) continue;
    widest = std::max(widest, dataTypeSize(tv->dtype()));
    narrowest = std::min(narrowest, dataTypeSize(tv->dtype()));
  }
  const auto& inputs = fusion.inputs();
  for (int64_t width = std::min(16 / narrowest, 32 / widest); width >= 2; width /= 2) {
    VectorChoice choice;
    choice.width = width;
    for (TensorView* tv : cached) {
      if (canVectorize(tv, runtime.inputInfo(tv), map, dims, width, runtime)) {
        choice.inputs.push_back(std::find(inputs.begin(), inputs.end(), tv) - inputs.begin());
      }
    }
    for (size_t j = 0; with_outputs && j < fusion.outputs().size(); ++j) {
      if (canVectorize(fusion.outputs()[j]->asTensor(), nullptr, map, dims, width, runtime)) {
        choice.outputs.push_back(static_cast<int64_t>(j));
      }
    }
    if (!choice.inputs.empty() || !choice.outputs.empty()) return choice;
  }
  return {};
}

std::string serialLoopBufferReason(const Fusion& fusion, const DimensionMap& map,
                                   const std::vector<int64_t>& serial_dims, const std::string& why) {
  if (serial_dims.empty()) return "";
  // The outputs (by position) each tensor's values reach, consumers first.
  std::unordered_map<const TensorView*, std::set<size_t>> reach;
  for (size_t o = 0; o < fusion.outputs().size(); ++o) reach[fusion.outputs()[o]->asTensor()].insert(o);
  const std::vector<Expr*> exprs = fusion.exprs();
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    for (const Val* out : (*it)->outputs()) {
      const TensorView* produced = out->asTensor();
      if (produced == nullptr) continue;
      for (const TensorView* in : (*it)->tensorInputs()) {
        const std::set<size_t>& from = reach[produced];
        reach[in].insert(from.begin(), from.end());
      }
    }
  }
  const std::vector<TensorView*> cacheable = cacheableInputs(fusion);
  for (const TensorView* tv : fusion.allTensors()) {
    // Inputs read in place have no buffer; a cacheable one is read through one.
    const bool cached = std::find(cacheable.begin(), cacheable.end(), tv) != cacheable.end();
    const std::set<size_t>& outputs = reach[tv];
    if ((tv->isFusionInput() && !cached) || outputs.size() < 2) continue;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      if (id->isPlainBroadcast()) continue;
      // An axis no dimension labels (one a reshape regroups) may be any of them.
      const std::optional<int64_t> dim = map.dimOf(id);
      if (dim && std::find(serial_dims.begin(), serial_dims.end(), *dim) == serial_dims.end()) {
        continue;
      }
      return errorMessage(tv->name(), " feeds outputs ",
                          fusion.outputs()[*outputs.begin()]->asTensor()->name(), " and ",
                          fusion.outputs()[*std::next(outputs.begin())]->asTensor()->name(),
                          ", so it cannot be inlined into either, and its axis ",
                          id->toString(), " would run in a serial loop (", why,
                          "): its buffer would span that loop");
    }
  }
  return "";
}

std::vector<int64_t> serialRunDims(const std::vector<std::vector<int64_t>>& runs) {
  std::vector<int64_t> dims;
  for (size_t r = 0; r + 3 < runs.size(); ++r) dims.insert(dims.end(), runs[r].begin(), runs[r].end());
  return dims;
}

int64_t extentOf(const TensorView* reference, const DimensionMap& map,
                 const std::vector<int64_t>& dims, const RuntimeInfo& runtime) {
  int64_t extent = 1;
  for (int64_t d : dims) {
    const IterDomain* id = map.axisOf(reference, d);
    if (id != nullptr && !id->isPlainBroadcast()) {
      extent *= runtime.extent(id);
    }
  }
  return extent;
}

const Expr* onlyExprOf(const Fusion& fusion, ExprType type) {
  const Expr* found = nullptr;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->type() != type) continue;
    if (found != nullptr) return nullptr;
    found = expr;
  }
  return found;
}

void parallelizeRows(TensorView* out, int64_t inner, int64_t block_x, bool split_grid_y) {
  out->split(inner, block_x);
  out->axis(inner)->parallelize(ParallelType::BIDx);
  out->axis(inner + 1)->parallelize(ParallelType::TIDx);
  if (inner >= 1) {
    if (split_grid_y) out->split(inner - 1, kMaxGridY, /*inner_split=*/false);
    out->axis(inner - 1)->parallelize(ParallelType::BIDy);
  }
}

bool isElementwise(const Expr* expr) {
  switch (expr->type()) {
    case ExprType::Full: case ExprType::Iota: case ExprType::Unary: case ExprType::Binary:
    case ExprType::Where: case ExprType::Set: case ExprType::Broadcast: case ExprType::Expand:
      return true;
    default:
      return false;
  }
}

int64_t nextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string toString(const std::vector<int64_t>& values) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << "}";
  return os.str();
}

}  // namespace smelt::scheduler_utils
