#include "fuzz/fuzz_case.h"

#include <random>

#include "codegen/cuda_codegen.h"
#include "fusion/error.h"
#include "lower/lower.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/registry.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt::fuzz {

namespace {

// SMELT_INTERNAL_CHECK failures are smelt::Errors too, but they say that a
// check inside smelt fired where a user-facing one should have: a bug.
bool isInternalError(const std::string& message) {
  return message.find("smelt internal error") != std::string::npos;
}

}  // namespace

CaseResult runFuzzCase(uint64_t seed, bool compile, const FuzzLimits& limits) {
  CaseResult result;
  std::mt19937_64 rng(seed);
  Fusion fusion;
  FusionGuard guard(&fusion);
  Transcript transcript;
  result.stage = "build";
  try {
    const RandomFusion built = buildRandomFusion(rng, transcript, limits);
    result.stage = "reference";
    const double tolerance = built.half_precision ? 1e-2 : 1e-4;
    const std::vector<at::Tensor> inputs = smelt::testing::randomInputs(fusion, built.input_shapes, seed);
    const sim::testing::Reference reference = sim::testing::atenReference(fusion, inputs, tolerance, tolerance);
    result.auto_scheduled = std::bernoulli_distribution(limits.auto_schedule_chance)(rng);
    if (result.auto_scheduled) {
      result.stage = "select";
      const RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
      const std::optional<SchedulerType> type = selectScheduler(fusion, runtime);
      if (!type) {
        result.verdict = Verdict::Rejected;
        result.transcript = transcript.toString() + "  // no scheduler takes it\n";
        return result;
      }
      result.stage = "auto-schedule";
      const SchedulerEntry& entry = schedulerEntry(*type);
      const std::unique_ptr<HeuristicParams> params = entry.heuristics(fusion, runtime);
      transcript.add("schedule with " + params->toString() + ";");
      entry.schedule(fusion, *params);
    } else {
      result.stage = "schedule";
      scheduleRandomly(fusion, rng, transcript, limits);
    }
    result.stage = "lower";
    GpuLower lower(&fusion);
    const kir::Kernel& kernel = lower.run();
    result.stage = "codegen";
    const std::string cuda = generateCuda(kernel, "fuzz_kernel");
    if (compile) {
      result.stage = "nvrtc";
      compileCuda(cuda, "fuzz_kernel");
    }
    result.stage = "simulate";
    result.detail = sim::testing::firstFinding(kernel, reference);
    result.verdict = result.detail.empty() ? Verdict::Correct : Verdict::Bug;
  } catch (const Error& e) {
    result.detail = e.what();
    // A kernel that lowered must generate, compile and simulate, and a
    // fusion given to the registry must be declined (selectScheduler) or
    // schedule and lower: any other error there is a bug.
    const bool bug = result.detail.empty() || isInternalError(result.detail) ||
                     result.stage == "codegen" || result.stage == "nvrtc" ||
                     result.stage == "simulate" || result.auto_scheduled;
    result.verdict = bug ? Verdict::Bug : Verdict::Rejected;
  } catch (const std::exception& e) {
    result.verdict = Verdict::Bug;
    result.detail = std::string("foreign exception: ") + e.what();
  }
  result.transcript = transcript.toString();
  result.rejected_primitives = transcript.rejectedCount();
  return result;
}

}  // namespace smelt::fuzz
