#include "scheduler/normalization.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "fusion/error.h"
#include "fusion/transform_replay.h"
#include "scheduler/reduction_utils.h"

namespace smelt {

using namespace scheduler_utils;

namespace {

// Threads per block the heuristics aim for, and the most a block may have.
constexpr int64_t kRowThreads = 512;
constexpr int64_t kMaxBlockThreads = 1024;
// Persistent bytes one thread may keep in registers (all buffers together).
constexpr int64_t kRegisterBudgetBytes = 128;
// Persistent bytes a block may keep in shared memory (the rest of the 227 KiB
// is left for the block reductions' workspaces).
constexpr int64_t kSharedBudgetBytes = 192 * 1024;

std::string structuralReason(const Fusion& fusion, ReductionLayout* layout) {
  std::string reason = analyzeReductions(fusion, layout);
  if (!reason.empty()) return reason;
  if (!layout->broadcasts_back) {
    return "no reduced value is broadcast back (a plain reduction)";
  }
  if (layout->reduction_runs.size() != 1) {
    return "the reduced dimensions of " + layout->reference->name() +
           " do not merge into one (a broadcast splits them)";
  }
  return serialIterationReason(fusion, *layout);
}

// Tensors that iterate over every reduced dimension, feed a reduction and
// have another consumer as well: they are needed before and after a
// reduction, so a row of them stays on chip (before scheduling; cacheable
// inputs stand for their caches).
std::vector<const TensorView*> persistentCandidates(const Fusion& fusion,
                                                    const ReductionLayout& layout) {
  std::unordered_set<const TensorView*> feeds_reduction(layout.reductions.begin(),
                                                        layout.reductions.end());
  std::vector<Expr*> exprs = fusion.exprs();
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    if (!feeds_reduction.count((*it)->output())) continue;
    for (const TensorView* in : (*it)->tensorInputs()) feeds_reduction.insert(in);
  }
  std::vector<TensorView*> cacheable = cacheableInputs(fusion);
  std::vector<const TensorView*> result;
  for (const TensorView* tv : fusion.allTensors()) {
    bool cached = std::find(cacheable.begin(), cacheable.end(), tv) != cacheable.end();
    if (tv->isFusionInput() && !cached) continue;
    bool row = std::all_of(layout.reduced_dims.begin(), layout.reduced_dims.end(), [&](int64_t d) {
      return layout.map->role(tv, d) == DimensionMap::Role::Iteration;
    });
    // An output counts as one more reader (its store runs in a loop nest of its own).
    size_t readers = fusion.consumersOf(tv).size() + (tv->isFusionOutput() ? 1 : 0);
    if (row && feeds_reduction.count(tv) && readers >= 2) {
      result.push_back(tv);
    }
  }
  return result;
}

struct RowPlan {
  int64_t vector_width = 1;
  std::vector<int64_t> vectorized_inputs;
  std::vector<int64_t> vectorized_outputs;
  int64_t batch = 1;
  int64_t threads_x = 1;
  bool shared_memory = false;
  std::string reject;  // non-empty: the row does not fit
};

RowPlan planRow(const Fusion& fusion, const ReductionLayout& layout, const RuntimeInfo& runtime) {
  const DimensionMap& map = *layout.map;
  const std::vector<int64_t>& reduced = layout.reduced_dims;
  const int64_t n_red = std::max<int64_t>(extentOf(layout.reference, map, reduced, runtime), 1);
  RowPlan plan;
  if (layout.inner) {
    VectorChoice vector = chooseVectorWidth(fusion, map, reduced, runtime, /*with_outputs=*/true);
    plan.vector_width = vector.width;
    plan.vectorized_inputs = vector.inputs;
    plan.vectorized_outputs = vector.outputs;
  }
  int64_t buffer_bytes = 0;  // per row element, all persistent buffers
  for (const TensorView* tv : persistentCandidates(fusion, layout)) {
    buffer_bytes += dataTypeSize(tv->dtype());
  }
  const int64_t chunks = ceilDiv(n_red, plan.vector_width);
  plan.batch = ceilDiv(chunks, kRowThreads);
  plan.threads_x = ceilDiv(chunks, plan.batch);
  if (plan.batch * plan.vector_width * buffer_bytes <= kRegisterBudgetBytes) return plan;
  // Shared memory: the row of every buffer for one row per block. Decided on
  // the power-of-two bucket of the row length, so every size of one bucket
  // takes the same decision.
  plan.shared_memory = true;
  plan.batch = ceilDiv(chunks, kMaxBlockThreads);
  plan.threads_x = ceilDiv(chunks, plan.batch);
  const int64_t bytes = nextPowerOfTwo(n_red) * buffer_bytes;
  if (bytes > kSharedBudgetBytes) {
    plan.reject = "a row of " + std::to_string(n_red) + " elements needs " +
                  std::to_string(bytes) + " B of persistent buffers per block, over the " +
                  std::to_string(kSharedBudgetBytes) + " B budget";
  }
  return plan;
}

bool isBatchAxis(const IterDomain* id) {
  const IdTransform* t = id->definition();
  return t != nullptr && t->kind == IdTransform::Kind::Split && !t->inner_split &&
         t->outputs[0] == id;
}

}  // namespace

std::string PersistentParams::toString() const {
  std::ostringstream os;
  os << "PersistentParams{vector_width=" << vector_width
     << ", persistent_batch=" << persistent_batch << ", block_y=" << block_y
     << ", buffers=" << (shared_memory ? "shared" : "registers")
     << ", vectorized_inputs=" << scheduler_utils::toString(vectorized_inputs)
     << ", vectorized_outputs=" << scheduler_utils::toString(vectorized_outputs) << "}";
  return os.str();
}

std::unique_ptr<HeuristicParams> PersistentParams::clone() const {
  return std::make_unique<PersistentParams>(*this);
}

std::string persistentRejectReason(const Fusion& fusion, const RuntimeInfo* runtime) {
  ReductionLayout layout;
  std::string reason = structuralReason(fusion, &layout);
  if (!reason.empty() || runtime == nullptr) return reason;
  return planRow(fusion, layout, *runtime).reject;
}

PersistentParams persistentHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  ReductionLayout layout;
  std::string reason = structuralReason(fusion, &layout);
  SMELT_CHECK(reason.empty(), "persistent scheduler cannot take this fusion: ", reason);
  RowPlan plan = planRow(fusion, layout, runtime);
  SMELT_CHECK(plan.reject.empty(), "persistent scheduler cannot take this fusion: ", plan.reject);
  PersistentParams params;
  params.vector_width = plan.vector_width;
  params.persistent_batch = plan.batch;
  params.shared_memory = plan.shared_memory;
  params.vectorized_inputs = plan.vectorized_inputs;
  params.vectorized_outputs = plan.vectorized_outputs;
  if (!plan.shared_memory && !layout.iteration_runs.empty()) {
    const int64_t n_iter = extentOf(layout.reference, *layout.map, layout.iteration_runs.back(),
                                    runtime);
    params.block_y = std::max<int64_t>(
        1, std::min(nextPowerOfTwo(n_iter), (kRowThreads / 2) / nextPowerOfTwo(plan.threads_x)));
  }
  return params;
}

void schedulePersistent(Fusion& fusion, const PersistentParams& params) {
  FusionGuard guard(&fusion);
  ReductionLayout layout;
  std::string reason = structuralReason(fusion, &layout);
  SMELT_CHECK(reason.empty(), "persistent scheduler cannot take this fusion: ", reason);
  SMELT_CHECK(params.vector_width >= 1 && params.persistent_batch >= 1 && params.block_y >= 1,
              "persistent scheduler: widths, batch and block sizes must be positive in ",
              params.toString());
  std::vector<TensorView*> vectorized = cacheForReductions(
      fusion, params.vectorized_inputs, params.vectorized_outputs, "persistent", &layout);
  TensorView* ref = layout.reference;

  std::vector<std::vector<int64_t>> groups = layout.iteration_runs;
  groups.push_back(layout.reduced_dims);
  std::vector<int64_t> positions = mergeGroups(ref, *layout.map, groups);
  std::vector<int64_t> iteration_positions(positions.begin(), positions.end() - 1);
  const int64_t row = positions.back();
  if (params.vector_width > 1) ref->split(row, params.vector_width);
  ref->split(row, params.persistent_batch, /*inner_split=*/false);
  ref->axis(row + 1)->parallelize(ParallelType::TIDx);
  bindIterationRuns(ref, iteration_positions, params.block_y, ParallelType::TIDy);
  propagateSchedule(ref);
  vectorizeInnermost(vectorized, params.vector_width);
  inlineMost(&fusion);
  if (params.shared_memory) {
    for (TensorView* tv : persistentBuffers(fusion)) tv->setMemoryType(MemoryType::Shared);
  }
}

std::vector<TensorView*> persistentBuffers(const Fusion& fusion) {
  std::vector<TensorView*> result;
  for (TensorView* tv : fusion.allTensors()) {
    if (tv->memoryType() == MemoryType::Global) continue;
    for (int64_t k = tv->computePosition(); k < tv->nDims(); ++k) {
      const IterDomain* id = tv->axis(k);
      if (isBatchAxis(id) && !isParallelDim(id->parallelType()) && !id->isReduction() &&
          !id->isBroadcast()) {
        result.push_back(tv);
        break;
      }
    }
  }
  return result;
}

}  // namespace smelt
