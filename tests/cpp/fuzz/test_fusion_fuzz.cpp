// The seeded fusion fuzzer (fuzz_case.h): random fusions under random
// schedules must end correct and race-free or in a smelt::Error. CI runs a
// bounded number of seeds; longer runs:
//
//   SMELT_FUZZ_ITERS=20000 SMELT_FUZZ_SEED=1000000 build/tests/cpp/fuzz/test_fusion_fuzz
//
// SMELT_FUZZ_ITERS: cases (default 300), SMELT_FUZZ_SEED: first seed
// (default 1), SMELT_FUZZ_NVRTC_EVERY: NVRTC compiles every n-th case
// (default 8; NVRTC is most of a case's time; the cases run through
// FusionExecutorCache always compile each new kernel), SMELT_FUZZ_SEGMENTED:
// the share of cases run through FusionExecutorCache (default 0.1; 1 runs
// every seed's fusion through it). A bug prints the seed and the
// transcript of calls; crashes found so far are named regression tests in
// test_fuzz_regressions.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "fuzz/fuzz_case.h"

namespace smelt::fuzz {
namespace {

int64_t envInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoll(value, nullptr, 10) : fallback;
}

// Aborts the process, naming the seed, when one case runs longer than
// `limit`: a hang must fail the test rather than stall CI.
class HangWatchdog {
 public:
  explicit HangWatchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { watch(); }) {}
  ~HangWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void startCase(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    started_ = std::chrono::steady_clock::now();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (!done_ && std::chrono::steady_clock::now() - started_ > limit_) {
        std::fprintf(stderr, "fuzz case of seed %llu ran over %lld s: a hang\n",
                     static_cast<unsigned long long>(seed_), static_cast<long long>(limit_.count()));
        std::abort();
      }
    }
  }

  std::chrono::seconds limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  uint64_t seed_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::thread thread_;
};

TEST(FusionFuzz, RandomFusionsAndSchedulesEndCorrectOrInAnError) {
  const int64_t iterations = envInt("SMELT_FUZZ_ITERS", 300);
  const uint64_t first_seed = static_cast<uint64_t>(envInt("SMELT_FUZZ_SEED", 1));
  const int64_t nvrtc_every = std::max<int64_t>(envInt("SMELT_FUZZ_NVRTC_EVERY", 8), 1);
  FuzzLimits limits;
  if (const char* chance = std::getenv("SMELT_FUZZ_SEGMENTED"); chance != nullptr && *chance != '\0') {
    limits.segmented_chance = std::strtod(chance, nullptr);
  }
  HangWatchdog watchdog(std::chrono::seconds(120));

  std::map<Verdict, int64_t> verdicts;
  std::map<std::string, int64_t> rejected_at;
  std::map<Verdict, int64_t> segmented_verdicts;
  int64_t compiled = 0, rejected_primitives = 0, multi_segment = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(i);
    watchdog.startCase(seed);
    const bool compile = i % nvrtc_every == 0;
    const CaseResult result = runFuzzCase(seed, compile, limits);
    verdicts[result.verdict]++;
    rejected_primitives += result.rejected_primitives;
    if (result.verdict == Verdict::Rejected) rejected_at[result.stage]++;
    if (compile && result.verdict == Verdict::Correct) compiled++;
    if (result.segmented) segmented_verdicts[result.verdict]++;
    if (result.segmented && result.segments > 1) multi_segment++;
    if (result.verdict == Verdict::Bug) {
      ADD_FAILURE() << "seed " << seed << ": bug at " << result.stage << ": " << result.detail
                    << "\ncalls:\n" << result.transcript;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "fusion fuzz: " << iterations << " cases from seed " << first_seed << " in " << seconds
            << " s: " << verdicts[Verdict::Correct] << " correct (" << compiled << " NVRTC-compiled), "
            << verdicts[Verdict::Rejected] << " rejected with an error, " << verdicts[Verdict::Bug]
            << " bugs; " << rejected_primitives << " scheduling calls rejected\n";
  std::cout << "  through FusionExecutorCache: " << segmented_verdicts[Verdict::Correct] << " correct ("
            << multi_segment << " in several segments), " << segmented_verdicts[Verdict::Rejected]
            << " rejected, " << segmented_verdicts[Verdict::Bug] << " bugs\n";
  for (const auto& [stage, count] : rejected_at) std::cout << "  rejected at " << stage << ": " << count << "\n";
  // A fuzzer whose every case is rejected tests nothing (checked on runs
  // long enough to say).
  if (iterations >= 40) {
    EXPECT_GT(verdicts[Verdict::Correct], iterations / 4);
  }
}

}  // namespace
}  // namespace smelt::fuzz
