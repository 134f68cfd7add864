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
  std::string stage;   // where it ended: build, reference, lower, codegen, nvrtc, simulate
  std::string detail;  // the error message or the simulator's finding
  std::string transcript;
  int64_t rejected_primitives = 0;
};

// Runs the case of `seed`; NVRTC compiles the kernel when `compile` is set.
CaseResult runFuzzCase(uint64_t seed, bool compile, const FuzzLimits& limits = {});

}  // namespace smelt::fuzz
