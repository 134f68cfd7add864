#include "fuzz/fuzz_case.h"

#include <algorithm>
#include <memory>
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

bool isSegmenterRejection(const std::string& message) {
  return message.find("cannot segment the fusion") != std::string::npos ||
         message.find("cannot split the reduction") != std::string::npos;
}

// Runs `inputs` through `cache`; "" when every output matches ATen's.
std::string firstCacheMismatch(FusionExecutorCache& cache, const std::vector<at::Tensor>& inputs,
                               const std::vector<at::Tensor>& expected, double tolerance) {
  const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  if (outputs.size() != expected.size()) {
    return "the cache returned " + std::to_string(outputs.size()) + " outputs, expected " +
           std::to_string(expected.size());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string mismatch = sim::testing::outputMismatch(i, outputs[i], expected[i], tolerance, tolerance);
    if (!mismatch.empty()) return mismatch;
  }
  return "";
}

CaseResult runSegmentedCase(uint64_t seed, std::mt19937_64& rng, const FuzzLimits& limits) {
  CaseResult result;
  result.segmented = true;
  auto owned = std::make_unique<Fusion>();
  Fusion& fusion = *owned;
  FusionGuard guard(&fusion);
  Transcript transcript;
  std::unique_ptr<FusionExecutorCache> cache;
  int64_t signatures_before = 0;
  result.stage = "build";
  try {
    const RandomFusion built = buildRandomFusion(rng, transcript, limits);
    result.stage = "reference";
    const double tolerance = built.half_precision ? 1e-2 : 1e-4;
    struct Run {
      std::string stage;
      std::vector<at::Tensor> inputs, expected;
    };
    std::vector<Run> runs = {{"run", smelt::testing::randomInputs(fusion, built.input_shapes, seed), {}},
                             {"cached run", smelt::testing::randomInputs(fusion, built.input_shapes, seed + 1), {}}};
    if (const auto other = otherInputShapes(built, rng, limits)) {
      runs.push_back({"resized run", smelt::testing::randomInputs(fusion, *other, seed + 2), {}});
    }
    for (Run& run : runs) run.expected = smelt::testing::evaluateWithATen(fusion, run.inputs);
    cache = std::make_unique<FusionExecutorCache>(std::move(owned));
    for (const Run& run : runs) {
      result.stage = run.stage;
      signatures_before = cache->numSignatures();
      transcript.add("cache.runFusionWithInputs(/* " + run.stage + ": " + inputSignature(run.inputs) + " */);");
      result.detail = firstCacheMismatch(*cache, run.inputs, run.expected, tolerance);
      transcript.add("// " + cache->lastRun().toString());
      if (run.stage == "run") result.segments = static_cast<int64_t>(cache->lastRun().segments.size());
      if (result.detail.empty() && run.stage == "cached run") {
        const FusionRun& last = cache->lastRun();
        const bool recompiled = std::any_of(last.segments.begin(), last.segments.end(),
                                            [](const SegmentRun& segment) { return segment.compiled; });
        if (last.new_signature || recompiled) result.detail = "the repeat with the same sizes did not reuse every kernel";
      }
      if (!result.detail.empty()) break;
    }
    result.verdict = result.detail.empty() ? Verdict::Correct : Verdict::Bug;
  } catch (const Error& e) {
    result.detail = e.what();
    // Before the cache exists the fusion was not valid to build or evaluate
    // (as for the other cases); in the cache only the segmenter may decline.
    const bool segmenter_declined = cache != nullptr && cache->numSignatures() == signatures_before &&
                                    isSegmenterRejection(result.detail);
    const bool rejected = cache == nullptr ? !isInternalError(result.detail) : segmenter_declined &&
                                                                                  !isInternalError(result.detail);
    result.verdict = rejected ? Verdict::Rejected : Verdict::Bug;
  } catch (const std::exception& e) {
    result.verdict = Verdict::Bug;
    result.detail = std::string("foreign exception: ") + e.what();
  }
  result.transcript = transcript.toString();
  return result;
}

}  // namespace

CaseResult runFuzzCase(uint64_t seed, bool compile, const FuzzLimits& limits) {
  std::mt19937_64 mode_rng(seed ^ 0x5e6d3e47a11ce5edULL);
  if (std::bernoulli_distribution(limits.segmented_chance)(mode_rng)) {
    std::mt19937_64 rng(seed);
    return runSegmentedCase(seed, rng, limits);
  }
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
