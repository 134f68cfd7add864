// One fuzz case end to end: a random fusion and schedule from a seed, then
// lowering (with the shared-memory plan), CUDA generation, optionally NVRTC,
// and the simulator in every thread order against ATen's evaluation of the
// unscheduled fusion. A case is fine when it ends correct and race-free or
// in a smelt::Error with a message; anything else is a bug.
#pragma once

#include <cstdint>
#include <string>

#include "fuzz/random_fusion.h"

namespace smelt::fuzz {

enum class Verdict {
  Correct,   // lowered, generated (compiled) and simulated to ATen's result
  Rejected,  // a smelt::Error with a message, from a user-facing check
  Bug,       // a wrong result, race, internal error, foreign exception, ...
};

struct CaseResult {
  Verdict verdict = Verdict::Correct;
  // Where it ended: build, reference, schedule or (auto-scheduled) select and
  // auto-schedule, lower, codegen, nvrtc, simulate.
  std::string stage;
  bool auto_scheduled = false;  // by the scheduler registry rather than randomly
  bool segmented = false;       // run through FusionExecutorCache
  int64_t segments = 0;         // of the first cache run
  std::string detail;  // the error message or the simulator's finding
  std::string transcript;
  int64_t rejected_primitives = 0;
};

// Runs the case of `seed`; NVRTC compiles the kernel when `compile` is set.
// A share of the cases (FuzzLimits::auto_schedule_chance) is scheduled by
// the registry (selectScheduler, heuristics, schedule) instead of randomly:
// no scheduler taking the fusion is a rejection, any error after one took it
// a bug.
//
// Another share (FuzzLimits::segmented_chance, drawn from a generator of its
// own so the other cases keep their schedules) runs the unscheduled fusion
// through a FusionExecutorCache on CPU tensors (simulator, race detection):
// once, again on new values of the same sizes (which must reuse every
// kernel), and for a symbolic fusion on other sizes (otherInputShapes), each
// against ATen. The only rejection is segmentFusion's "cannot segment" /
// "cannot split" error before a new signature is recorded; any other error,
// a mismatch or a recompilation on the repeat is a bug.
CaseResult runFuzzCase(uint64_t seed, bool compile, const FuzzLimits& limits = {});

}  // namespace smelt::fuzz
