// Random fusions and random schedules for the fusion fuzzer, reproducible
// from a seed. Every call made on the fusion is written to a transcript (one
// line each, C++-like) so a failing case can be read and turned into a named
// regression test.
//
// Fusions: 1-3 inputs whose axes are right-aligned views of one random base
// shape (extents 1-6, so binary operands broadcast against each other;
// sometimes one dimension of an input is a broadcast of extent 1); in
// about a third of the fusions most inputs have symbolic extents, bound only
// by the tensors a case runs on (so splits need not divide them). Then a few
// ops drawn from the op set: unary math, binary and comparison ops with
// tensors or scalars, where, cast, broadcast, expand, full, sum/max
// reductions, pad, set, and the layout ops permute, transpose, squeeze,
// unsqueeze, reshape and flatten; in some fusions, last, a reduction
// broadcast back onto its input whose reduced dimension a reshape or flatten
// then merges with a neighbour (softmax(x).flatten()), or a reduction over a
// broadcast dimension broadcast back and combined with a tensor wider along
// it (x1 * x1.sum(0, keepdim=True) + x0, x1 [1, 4], x0 [3, 4]). Values stay bounded
// (no integer division or negative integer powers, which ATen itself
// rejects) so results compare with ATen at float tolerance.
//
// Schedules: random split, merge, reorder, parallelize, computeAt, inlineAt /
// inlineMost, cacheAfter / cacheBefore, setMemoryType (Shared, Local),
// promoteReuse and circularBuffer on random tensors, and cached loads: an
// input cached into Shared or Local memory, computed at a random position of
// its consumer and circular-buffered. A primitive that throws smelt::Error is
// recorded as rejected and the schedule goes on.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fusion/fusion.h"

namespace smelt::fuzz {

class Transcript {
 public:
  void add(const std::string& line) { lines_.push_back(line); }
  void markRejected(const std::string& why) { lines_.back() += "  // rejected: " + why; }
  void prefixLast(const std::string& prefix) { lines_.back() = prefix + lines_.back(); }
  int64_t rejectedCount() const;
  std::string toString() const;

 private:
  std::vector<std::string> lines_;
};

struct FuzzLimits {
  int64_t max_inputs = 3;
  int64_t max_rank = 3;
  int64_t max_extent = 6;
  int64_t max_ops = 7;
  int64_t max_schedule_steps = 10;
  double symbolic_fusion_chance = 0.35;
  double auto_schedule_chance = 0.25;
  // Cases run unscheduled through FusionExecutorCache (segmented when no
  // scheduler takes the fusion whole) instead of being scheduled.
  double segmented_chance = 0.1;
  // Fusions that end in a reduction broadcast back onto its input and a
  // reshape merging the reduced dimension (addNormalizeAndFlatten).
  double normalize_flatten_chance = 0.2;
  // Concrete inputs with one dimension a broadcast (extent 1) that the
  // other inputs have wider.
  double broadcast_input_chance = 0.25;
  // Fusions (that do not end in addNormalizeAndFlatten) ending in a
  // reduction over a broadcast dimension, broadcast back and combined with a
  // tensor wider along it (addReduceBroadcastAndWiden).
  double reduce_broadcast_widen_chance = 0.25;
};

struct RandomFusion {
  bool half_precision = false;  // uses a 16-bit type: results compare at half precision
  std::vector<std::vector<int64_t>> input_shapes;  // the sizes to run it on, per input
  // Per input, the axes of the base shape it views (right-aligned; -1 for a
  // broadcast dimension, extent 1), and whether its extents are symbolic:
  // what otherInputShapes may resize.
  std::vector<std::vector<int64_t>> input_base_axes;
  std::vector<bool> symbolic_inputs;
  std::vector<int64_t> base_extents;
};

// Builds a random fusion in Fusion::current().
RandomFusion buildRandomFusion(std::mt19937_64& rng, Transcript& transcript, const FuzzLimits& limits = {});

// Sizes of the same fusion's inputs with different extents (1 to twice
// FuzzLimits::max_extent) on the base axes that only symbolic inputs view;
// nullopt when every axis is fixed by a concrete input or none changed.
std::optional<std::vector<std::vector<int64_t>>> otherInputShapes(const RandomFusion& fusion,
                                                                  std::mt19937_64& rng,
                                                                  const FuzzLimits& limits = {});

// Applies random scheduling primitives to the tensors of `fusion`.
void scheduleRandomly(Fusion& fusion, std::mt19937_64& rng, Transcript& transcript,
                      const FuzzLimits& limits = {});

}  // namespace smelt::fuzz
