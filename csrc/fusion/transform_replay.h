// How the loop axes of a producer and a consumer correspond, and replaying
// one tensor's schedule onto another. These are the facts that computeAt,
// inlining and schedule propagation rest on:
//   * pairwiseLogicalMap: which logical axis of a producer becomes which
//     logical axis of its consumer through the consumer's defining op;
//   * loopAxesMapped: two loop axes are the same loop when they derive from
//     mapped logical axes through identical splits and merges (an exact
//     split merged back counting as none);
//   * replayLike: rebuild a tensor's loop domain from its logical domain by
//     repeating another tensor's splits and merges on the mapped axes.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "fusion/ir.h"

namespace smelt {

using IdMap = std::unordered_map<const IterDomain*, IterDomain*>;

// producer logical axis -> consumer logical axis, through consumer's definition.
// Axes that do not correspond (reduction axes of the producer, axes a pad
// resizes, axes a broadcast creates) are absent.
IdMap pairwiseLogicalMap(const TensorView* producer, const TensorView* consumer);
IdMap invert(const IdMap& map);

// True when `a` (of one tensor) and `b` (of another) denote the same loop,
// given a map between their logical axes (a-side -> b-side). A broadcast
// axis runs in any loop (its index is 0), but a merge that drops a broadcast
// input is not the loop of a merge that iterates the mapped input. A merge
// of the two pieces of a split that divides is the split axis' loop.
bool loopAxesMapped(const IterDomain* a, const IterDomain* b, const IdMap& logical_map);

// Which consumer loop each leading producer loop axis can run in: entry i is
// the consumer loop axis of producer axis i. Consumer axes may be skipped only
// when they are broadcasts the producer lacks (the producer is simply computed
// inside those loops, e.g. a matmul operand inside the other operand's tile
// loop). The match stops at the first producer axis with no counterpart and
// before vectorized axes, which are never shared.
std::vector<int64_t> matchLoopAxes(const TensorView* producer, const TensorView* consumer);

// Replaces target's loop domain by a replay of source's splits and merges
// (source logical -> target logical given by `source_to_target`; a reshape
// output's view transforms are replayed too when its root axes are mapped,
// and a source transform that repeats a view transform of the target maps
// onto that transform's outputs). Mapped axes
// come first in source's loop order, then target's unmapped axes. Parallel
// types (except Vectorize) are copied. Returns how many leading loop axes of
// source found a counterpart in target.
int64_t replayLike(TensorView* target, const TensorView* source, const IdMap& source_to_target);

// The splits and merges between a tensor's logical and loop domains, in an
// order where each transform comes after the ones producing its inputs.
std::vector<const IdTransform*> transformHistory(const TensorView* tv);
// The merges and splits from a reshape output's root domain to its logical
// domain (none for other tensors), in the same order.
std::vector<const IdTransform*> viewTransforms(const TensorView* tv);

// Replays `reference`'s schedule onto every tensor connected to it (producers
// and consumers, transitively), copying parallel types. Each tensor is reached
// along the path that keeps the most mapped axes (a maximum spanning tree;
// a broadcast axis mapped onto an iterating one does not count), so a
// reduction's input is scheduled from a sibling rather than through the
// broadcast that drops the reduced axis, and an operand of a broadcast
// reduction result from its other operands. The helper a scheduler calls after
// scheduling one reference tensor.
void propagateSchedule(TensorView* reference);

// matchLoopAxes of an inlined tensor, checked to cover its compute position
// (a consumer re-scheduled after the inlining is an error naming both).
std::vector<int64_t> inlinedLoopAxes(const TensorView* tv, const TensorView* consumer);

// Which loop each loop axis of a fusion's computed tensors runs in. A loop
// axis left of a tensor's compute position runs in the matching loop of
// every consumer, so the loops those consumers run it in are one loop:
// siblings (two reductions of one inlined input) share their outer loops.
// Each set of axes joined this way is one loop, owned by the member that is
// no further inlined (its axis is at or right of its compute position) that
// comes first in the fusion's order. An analysis of the fusion as it is: recompute it
// after scheduling changes.
class LoopOwners {
 public:
  // `deciding`: a tensor whose compute position is being decided, taken as
  // not inlined.
  explicit LoopOwners(const Fusion& fusion, const TensorView* deciding = nullptr);
  std::pair<const TensorView*, int64_t> owner(const TensorView* tv, int64_t axis) const;

  // Takes `deciding` as inlined past its axis `axis`, which runs in the
  // loops of `consumer_axes` (one per consumer): those become one loop, as
  // inlining into consumers that run in different loops does.
  void inlineDecidingAxis(int64_t axis, const std::vector<std::pair<const TensorView*, int64_t>>& consumer_axes);
  // Whether the tensors computed in the loop of (tv, axis) can run in one
  // loop: the loops joined in it are bound alike and nested in the same
  // loop, and no value computed in it reaches another of them through a
  // tensor computed outside it, or from a reduction over it (both need the
  // whole loop to have run first).
  bool runsAsOneLoop(const TensorView* tv, int64_t axis) const;

 private:
  int64_t computePosition(const TensorView* tv) const;
  int64_t slot(const TensorView* tv, int64_t axis) const;
  int64_t find(int64_t slot) const;
  void assignOwners();

  const Fusion* fusion_;
  std::vector<TensorView*> tensors_;                           // the fusion's order
  const TensorView* deciding_;
  int64_t deciding_position_ = 0;
  std::unordered_map<const TensorView*, int64_t> first_slot_;  // slots of a tensor: one per axis
  mutable std::vector<int64_t> parent_;                        // union-find over slots
  std::vector<std::pair<const TensorView*, int64_t>> owner_;   // per class root slot
};

// The tensor and axis whose loop `tv`'s loop axis `axis` runs in (LoopOwners
// of tv's fusion, computed for this call).
std::pair<const TensorView*, int64_t> loopOwner(const TensorView* tv, int64_t axis);

// Inlines every computed tensor of the active fusion as deep as legal.
void inlineMost(Fusion* fusion);

}  // namespace smelt
