// Analyses and steps shared by the schedulers: how every tensor sees the
// reference tensor's dimensions, caching of inputs and outputs, merging of
// dimension groups and the vectorization checks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fusion/fusion.h"
#include "scheduler/runtime_info.h"

namespace smelt::scheduler_utils {

// The input `expr` reads at other positions than the element it computes:
// a window's (shifted) and an index_select's table (at loaded indices); null
// for any other expression. Such an input is read from memory, never cached
// in registers nor computed in the expression's loops.
const TensorView* readAtOtherPositions(const Expr* expr);

// (Implemented in dimension_map.cpp.)
// Labels each logical axis of every tensor with the reference logical axis
// (dimension) it corresponds to, following the producer-consumer axis maps of
// every op (broadcast axes take the label of the axis they are combined with).
class DimensionMap {
 public:
  // How a tensor sees one reference dimension.
  enum class Role { Absent, Broadcast, Expanded, Iteration, Reduction };

  // How the map treats the reshapes of the fusion.
  //  - Refused: an axis a reshape regroups breaks the map.
  //  - Upstream (the pointwise scheduler, whose reference is an output): the
  //    axes of a tensor that feeds a reshape (a permute before a flatten)
  //    that the reshape regroups stay unlabeled: a schedule propagated from
  //    the reference reaches them by replaying the reshape's merges and
  //    splits (propagateSchedule), which is a problem for a computed tensor
  //    that iterates only part of a merge (partiallyMergedByReshapes).
  //  - MergedDownstream (the reduction schedulers, whose reference is a
  //    reduction): a reshape computed from the reference's dimensions that
  //    only merges them (layer_norm(x).view(B * T, C)) gives axes standing
  //    for several dimensions (mergedDims); the schedule reaches them when
  //    the reference merges the same dimensions first, in the same order
  //    (mergedGroupsFitRuns).
  enum class Reshapes { Refused, Upstream, MergedDownstream };
  DimensionMap(const Fusion& fusion, const TensorView* reference,
               Reshapes reshapes = Reshapes::Refused);

  // Empty when the map is complete and consistent: no axis carries two labels
  // and every non-broadcast axis of a computed tensor carries one. Otherwise
  // says which tensor and axis break it.
  const std::string& problem() const { return problem_; }
  int64_t ndims() const { return ndims_; }
  std::optional<int64_t> dimOf(const IterDomain* id) const;
  // The logical axis of `tv` labelled `dim`, nullptr if none.
  IterDomain* axisOf(const TensorView* tv, int64_t dim) const;
  Role role(const TensorView* tv, int64_t dim) const;
  // The reference dimensions (ascending) a merged axis downstream of a
  // reshape stands for (MergedDownstream maps), empty for any other axis.
  std::vector<int64_t> mergedDims(const IterDomain* id) const;
  // "" when every merge of reference dimensions downstream of a reshape is
  // the start of one of `runs` (so merging each run left to right makes the
  // reshape's merges first), else why not.
  std::string mergedGroupsFitRuns(const std::vector<std::vector<int64_t>>& runs) const;
  // Splits `dims` (in order) into runs of consecutive dimensions that every
  // computed or cached tensor (inputs read directly are indexed from their
  // consumers) sees with the same role, so merging a run is the same loop on
  // each of them. Expanded dimensions stay alone.
  // A tensor computed before a reshape that splits or merges its axes has no
  // axis for the results; it sees a piece as the axis it came from and a
  // merge as the axes merged (broadcast, expanded or iterating), so a run
  // never merges a piece it broadcasts with one it iterates.
  std::vector<std::vector<int64_t>> mergeableRuns(const std::vector<int64_t>& dims) const;

 private:
  static Role roleOf(const IterDomain* id);
  // role(), or for a tensor computed before a reshape, the role of the axes
  // the reshape splits or merges into dimension `dim` (through_reshapes maps
  // only; an expanded axis merged with others makes the merge Expanded).
  Role runRole(const TensorView* tv, int64_t dim) const;
  void labelThroughReshapes(const Fusion& fusion, const std::vector<Expr*>& exprs);
  // The constructor's checks; each sets problem_ unless it is set already.
  void checkAxesCovered(const std::vector<Expr*>& exprs, const TensorView* reference,
                        const std::unordered_set<const TensorView*>& feeds_reshape);
  void checkRegroupingReshapes(const Fusion& fusion, const std::vector<Expr*>& exprs,
                               const TensorView* reference);
  void checkDroppedDimensions(const std::vector<Expr*>& exprs, const TensorView* reference);
  void labelMergedDownstream(const Fusion& fusion, const std::vector<Expr*>& exprs);
  // Whether `tv` has an axis for `dim`, labelled or merged.
  bool covers(const TensorView* tv, int64_t dim) const;
  static Role mergedRole(const std::vector<Role>& roles);

  int64_t ndims_ = 0;
  std::vector<TensorView*> tensors_;
  std::unordered_map<const IterDomain*, int64_t> labels_;
  std::map<std::pair<const TensorView*, int64_t>, Role> upstream_roles_;
  std::unordered_map<const IterDomain*, std::vector<int64_t>> merged_dims_;
  std::string problem_;
};

// Puts the reference's axes of each group next to each other, in group order
// (axes of no group first), and merges each group into one loop axis. The
// reference must be unscheduled. Returns the loop position of each group.
std::vector<int64_t> mergeGroups(TensorView* reference, const DimensionMap& map,
                                 const std::vector<std::vector<int64_t>>& groups);

// Tensors computed before a reshape (its input and what that is computed
// from) that iterate some, not all, of the input dimensions one of its merges
// combines: they broadcast or lack the others. Replaying the merge onto such
// a tensor drops those dimensions, so its merged loop is shorter than the
// reshape's and splits its index differently; it cannot be computed inside
// the reshape's loops, only read from memory, indexed from its consumer.
// Each comes with a message naming the reshape and the dimensions.
std::vector<std::pair<const TensorView*, std::string>> partiallyMergedByReshapes(
    const Fusion& fusion);

// Whether `tv` is read through a reshape that splits an axis and also beside
// it (by another op, or as a fusion output): a register copy inlined in the
// reference's loops holds the element one path reads, not the other's
// (maximum(x.view(2, 6).t(), x), x [6, 2]).
bool readThroughASplitAndBeside(const Fusion& fusion, const std::vector<Expr*>& exprs,
                                const TensorView* tv);

// Inputs worth a register cache: tensors of rank > 0 with uses, none of them a
// pad (a pad reads its input with a bounds check of its own) or an
// index_select reading it as its table (at loaded positions), nor partially
// merged by a reshape (partiallyMergedByReshapes: read directly instead).
std::vector<TensorView*> cacheableInputs(const Fusion& fusion);

// cacheBefore on a fusion output, and every other reader of the output reads
// the cache instead (no reading back from global memory). Returns the cache.
TensorView* cacheOutput(TensorView* output);

// The caching step of every scheduler: cacheAfter on each cacheable input;
// cacheOutput on each output that other tensors read, that is listed in
// `vectorized_outputs`, or for which `also_cache` holds. Returns the tensors
// to vectorize: the caches of the inputs at `vectorized_inputs` and the
// outputs at `vectorized_outputs` (positions in the fusion's inputs and
// outputs). Throws smelt::Error naming `scheduler` for a position that is out
// of range or an input that is not cacheable.
std::vector<TensorView*> cacheInputsAndOutputs(
    Fusion& fusion, const std::vector<int64_t>& vectorized_inputs,
    const std::vector<int64_t>& vectorized_outputs,
    const std::function<bool(const TensorView*)>& also_cache, const std::string& scheduler);

// Vectorizes the innermost loop axis of each tensor where it is the vector
// axis of `width`. A tensor whose loops propagation laid out otherwise (a
// window of the reference computed in its loops, a cat's input offset along
// the row) keeps scalar accesses: its kernel is right, where refusing the
// schedule cost a kernel.
void vectorizeInnermost(const std::vector<TensorView*>& tensors, int64_t width);

// True when `tv` (an input with `info`, or an output when info is null: the
// runtime allocates outputs contiguous and 16-byte aligned) can be accessed
// `width` elements at a time along the merged `dims`: they are its innermost
// dimensions, contiguous, of a total extent divisible by `width`, every other
// stride is a multiple of `width` and the data is aligned to the vector.
bool canVectorize(const TensorView* tv, const InputInfo* info, const DimensionMap& map,
                  const std::vector<int64_t>& dims, int64_t width, const RuntimeInfo& runtime);

// The widest vector along the merged `dims` (16 bytes of the narrowest tensor
// iterating over all of them, so that fp16 data next to fp32 data still moves
// in 16-byte accesses, at most 32 bytes, two 16-byte accesses, of the widest;
// halved until some tensor can use it), and the positions of the cacheable
// inputs and (when `with_outputs`) the outputs that can. Width 1 and no
// tensors when none can.
struct VectorChoice {
  int64_t width = 1;
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
};
VectorChoice chooseVectorWidth(const Fusion& fusion, const DimensionMap& map,
                               const std::vector<int64_t>& dims, const RuntimeInfo& runtime,
                               bool with_outputs);

// Why a schedule that leaves the reference's dimensions `serial_dims` to
// serial loops around every loop nest (`why` says why they stay serial)
// would not lower to a good kernel, or empty. A tensor the kernel computes
// whose values reach two or more outputs (itself included) runs in neither
// output's loops, so it cannot be inlined: its buffer spans the loops of
// every dimension it iterates. Across serial loops that is a register array
// of the loops' extents (of a symbolic size, which lowering refuses).
std::string serialLoopBufferReason(const Fusion& fusion, const DimensionMap& map,
                                   const std::vector<int64_t>& serial_dims, const std::string& why);

// The iteration runs (outermost first) a schedule binds to grid dimensions:
// the innermost to BIDx, the next to BIDy, the third to BIDz. Runs before
// those stay serial loops; returns their dimensions.
std::vector<int64_t> serialRunDims(const std::vector<std::vector<int64_t>>& runs);

// Product of the reference's extents over `dims` (broadcasts count 1).
int64_t extentOf(const TensorView* reference, const DimensionMap& map,
                 const std::vector<int64_t>& dims, const RuntimeInfo& runtime);

// Expressions whose element [p] reads only element [p] of their inputs (or
// broadcasts of them): they can run inside a scatter's or a scan's loops.
bool isElementwise(const Expr* expr);

// The fusion's one expression of `type`; nullptr when it has none or several.
const Expr* onlyExprOf(const Fusion& fusion, ExprType type);

// gridDim.y's limit (a grid axis past it is split over grid z).
constexpr int64_t kMaxGridY = 65535;

// The rows of a scatter's or a scan's loops: `out`'s axis `inner` over
// blocks of `block_x` threads (BIDx, TIDx) and axis `inner - 1`, if any,
// over grid y (split over grid z past kMaxGridY when `split_grid_y`).
void parallelizeRows(TensorView* out, int64_t inner, int64_t block_x, bool split_grid_y);

int64_t nextPowerOfTwo(int64_t n);
int64_t ceilDiv(int64_t a, int64_t b);

// "{1, 3}"
std::string toString(const std::vector<int64_t>& values);

}  // namespace smelt::scheduler_utils
