// The shared-memory planner fuzzer: random buffer sets wider than the
// property tests' (test_plan_properties.cpp): sizes from 0 bytes to 1 MiB,
// not multiples of their alignment, alignments 1 to 1024, empty and
// single-point lifetimes, barriers anywhere (before the first and after the
// last position too), symbolic sizes built from several symbols with +, *
// and ceilDiv, and device limits the plan may exceed. For every set:
//   * both planners (best-fit and nvFuser's stack allocator) return a plan
//     the verifier accepts, or the input is malformed and validateBuffers
//     names it;
//   * no plan is below the lower bound, and the lower bound is at least the
//     largest number of live constant bytes at any one program position
//     (computed here independently);
//   * evaluated under random symbol values (0 included) every symbolic plan
//     is aligned, keeps conflicting buffers disjoint and is no smaller than
//     the live bytes at any position under those values;
//   * with a device limit below the plan's constant total the verifier
//     throws a smelt::Error naming the total;
//   * malformed input (bad alignment, backwards lifetimes, negative sizes,
//     barriers past the end) is a smelt::Error naming it;
//   * monotone: with constant sizes, planned bytes under Precise conflicts
//     (interval overlap) <= under Conservative ones (barriers) <= the stack
//     allocator, the planner chained as the kernel planner chains it; also on
//     kernel-like sets (benchmarks/kernel_like_sets.h), where Precise plans
//     must also verify and respect the bound;
//   * in both modes never above the free-list and linear-scan baselines,
//     never below the lower bound, and `optimal` only with the lower bound
//     reached or above it (kernel-like sets: also the status is one of the
//     three the report shows).
// SMELT_FUZZ_ITERS (default 1500 sets) and SMELT_FUZZ_SEED run it longer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <random>

#include "alloc_reuse/plan_test_util.h"
#include "kernel_like_sets.h"
#include "common/expect_error.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/baseline_planners.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {
namespace {

using testing::makeBuffer;

constexpr int64_t kUnlimited = int64_t{1} << 50;

int64_t envInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoll(value, nullptr, 10) : fallback;
}

struct BufferSet {
  std::vector<Buffer> buffers;
  std::vector<int64_t> barriers;
  int64_t end = 0;
  bool symbolic = false;
};

class SetGenerator {
 public:
  explicit SetGenerator(uint64_t seed) : rng_(seed) {}

  BufferSet next() {
    BufferSet set;
    const int64_t positions = pick(1, 60);
    set.end = positions;
    const int64_t n = pick(0, 24);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t first = pick(0, positions - 1);
      const int64_t last = chance(0.2) ? first : std::min(positions - 1, first + pick(0, positions / 2));
      Buffer b = makeBuffer("b" + std::to_string(i), size(), first, last, i, int64_t{1} << pick(0, 10));
      set.symbolic = set.symbolic || !b.bytes.isConstant();
      set.buffers.push_back(std::move(b));
    }
    // Barriers may repeat, sit on a buffer's first write or last read, or at the end.
    for (int64_t k = pick(0, 8); k > 0; --k) set.barriers.push_back(pick(0, positions));
    std::shuffle(set.buffers.begin(), set.buffers.end(), rng_);  // creation order != index
    return set;
  }

  std::map<std::string, int64_t> bindings() {
    return {{"n", pick(0, 70)}, {"m", pick(0, 9)}, {"k", chance(0.3) ? 0 : pick(1, 4096)}};
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  IntExpr size() {
    switch (pick(0, 9)) {
      case 0: return 0;
      case 1: return pick(1, 7);                // below any useful alignment
      case 2: return pick(1, 1 << 20);          // up to 1 MiB
      case 3: return IntExpr::symbol("n") * pick(1, 16);
      case 4: return IntExpr::symbol("n") * IntExpr::symbol("m") * 4;
      case 5: return ceilDiv(IntExpr::symbol("k"), pick(1, 8)) * 8 + pick(0, 64);
      default: return 4 * pick(1, 512);
    }
  }

  std::mt19937_64 rng_;
};

// The largest sum of sizes live together at one position, for lifetimes
// extended to the next barrier at or after the last read (the conservative
// rule conflictsFromBarriers implements): a clique, so a bound. Symbolic
// sizes count under `values`, or not at all without them.
int64_t liveBytesBound(const BufferSet& set, const std::map<std::string, int64_t>* values = nullptr) {
  std::vector<int64_t> barriers = set.barriers;
  std::sort(barriers.begin(), barriers.end());
  int64_t best = 0;
  for (int64_t p = 0; p <= set.end; ++p) {
    int64_t live = 0;
    for (const Buffer& b : set.buffers) {
      const int64_t until = barrierAfterLastRead(b.last_read, barriers, set.end);
      if (b.first_write > p || p > until) continue;
      if (values != nullptr) {
        live += b.bytes.evaluate(*values);
      } else if (b.bytes.isConstant()) {
        live += *b.bytes.constant();
      }
    }
    best = std::max(best, live);
  }
  return best;
}

::testing::AssertionResult disjointUnder(const BufferSet& set, const ConflictGraph& conflicts,
                                         const AddressPlan& plan, const std::map<std::string, int64_t>& values) {
  const int64_t total = plan.total_bytes.evaluate(values);
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const Buffer& a = set.buffers[i];
    const int64_t a_begin = plan.addresses[i].evaluate(values);
    const int64_t a_end = a_begin + a.bytes.evaluate(values);
    if (a_begin % a.alignment != 0) return ::testing::AssertionFailure() << a.name << " misaligned";
    if (a_end > total) return ::testing::AssertionFailure() << a.name << " ends past the total";
    for (size_t j : conflicts.neighbors(i)) {
      const int64_t b_begin = plan.addresses[j].evaluate(values);
      const int64_t b_end = b_begin + set.buffers[j].bytes.evaluate(values);
      const bool empty = a_begin == a_end || b_begin == b_end;
      if (!empty && a_end > b_begin && b_end > a_begin) {
        return ::testing::AssertionFailure() << a.name << " overlaps " << set.buffers[j].name;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// The plan is at least the lower bound and at most each textbook baseline
// planned on the same conflicts.
void checkAgainstBaselines(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                           const AddressPlan& plan) {
  const int64_t total = *plan.total_bytes.constant();
  ASSERT_GE(total, plan.lower_bound_bytes);
  ASSERT_EQ(plan.lower_bound_reached, total == plan.lower_bound_bytes);
  ASSERT_TRUE(!plan.lower_bound_reached || plan.optimal);
  const AddressPlan free_list = baselines::planFreeListAddresses(buffers, conflicts);
  const AddressPlan linear = baselines::planLinearScanAddresses(buffers, conflicts);
  ASSERT_LE(total, *free_list.total_bytes.constant()) << plan.strategy;
  ASSERT_LE(total, *linear.total_bytes.constant()) << plan.strategy;
}

// Plans the set under Conservative conflicts (the stack plan as baseline)
// and under Precise ones (the Conservative plan as baseline), checks both,
// each against the textbook baselines, and the chain
// precise <= conservative <= stack.
void checkMonotone(const std::vector<Buffer>& buffers, const std::vector<int64_t>& barriers,
                   const AddressPlan& stack, int64_t* precise_total = nullptr,
                   int64_t* conservative_total = nullptr, std::string* precise_status = nullptr) {
  const ConflictGraph strict = conflictsFromBarriers(buffers, barriers);
  const ConflictGraph relaxed = conflictsFromIntervals(buffers);
  PlannerOptions options;
  options.search_time_limit_ms = 5;
  options.baseline = &stack;
  const AddressPlan conservative = planAddresses(buffers, strict, options);
  options.baseline = &conservative;
  const AddressPlan precise = planAddresses(buffers, relaxed, options);
  ASSERT_NO_THROW(verifyPlan(buffers, strict, conservative, kUnlimited));
  ASSERT_NO_THROW(verifyPlan(buffers, relaxed, precise, kUnlimited));
  const int64_t p = *precise.total_bytes.constant();
  const int64_t c = *conservative.total_bytes.constant();
  ASSERT_LE(p, c);
  ASSERT_LE(c, *stack.total_bytes.constant());
  ASSERT_GE(p, precise.lower_bound_bytes);
  ASSERT_GE(c, conservative.lower_bound_bytes);
  ASSERT_LE(precise.lower_bound_bytes, conservative.lower_bound_bytes);
  ASSERT_EQ(precise.lower_bound_reached, p == precise.lower_bound_bytes);
  ASSERT_NO_FATAL_FAILURE(checkAgainstBaselines(buffers, strict, conservative));
  ASSERT_NO_FATAL_FAILURE(checkAgainstBaselines(buffers, relaxed, precise));
  if (precise_total != nullptr) *precise_total = p;
  if (conservative_total != nullptr) *conservative_total = c;
  if (precise_status != nullptr) *precise_status = planStatusName(precise);
}

TEST(PlannerFuzz, EveryPlanVerifiesAndRespectsTheBound) {
  const int64_t iterations = envInt("SMELT_FUZZ_ITERS", 1500);
  const uint64_t seed = static_cast<uint64_t>(envInt("SMELT_FUZZ_SEED", 1));
  SetGenerator generator(seed);
  int64_t symbolic_sets = 0, over_limit_checks = 0, monotone_sets = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t iteration = 0; iteration < iterations; ++iteration) {
    const BufferSet set = generator.next();
    SCOPED_TRACE("set " + std::to_string(iteration) + " of seed " + std::to_string(seed));
    ASSERT_NO_THROW(validateBuffers(set.buffers));
    const ConflictGraph conflicts = conflictsFromBarriers(set.buffers, set.barriers);
    const AddressPlan best = planAddresses(set.buffers, conflicts);
    const AddressPlan stack = planStackAddresses(set.buffers, set.barriers, set.end);
    const int64_t bound = liveBytesBound(set);
    symbolic_sets += set.symbolic;
    for (const AddressPlan* plan : {&best, &stack}) {
      ASSERT_NO_THROW(verifyPlan(set.buffers, conflicts, *plan, kUnlimited)) << plan->strategy;
      ASSERT_GE(plan->lower_bound_bytes, bound) << plan->strategy;
      for (int k = 0; k < 3; ++k) {
        const auto values = generator.bindings();
        ASSERT_GE(plan->total_bytes.evaluate(values), plan->lower_bound_bytes) << plan->strategy;
        ASSERT_GE(plan->total_bytes.evaluate(values), liveBytesBound(set, &values)) << plan->strategy;
        ASSERT_TRUE(disjointUnder(set, conflicts, *plan, values)) << plan->strategy;
      }
      const std::optional<int64_t> total = plan->total_bytes.constant();
      if (total && *total > 0) {
        ++over_limit_checks;
        EXPECT_SMELT_ERROR(verifyPlan(set.buffers, conflicts, *plan, *total - 1), "total");
      }
    }
    if (!set.symbolic) {
      ASSERT_NO_FATAL_FAILURE(checkMonotone(set.buffers, set.barriers, stack));
      ++monotone_sets;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "planner fuzz: " << iterations << " buffer sets from seed " << seed << " (" << symbolic_sets
            << " symbolic) in " << seconds << " s; " << over_limit_checks << " over-limit plans rejected; "
            << monotone_sets << " sets checked precise <= conservative <= stack\n";
}

TEST(PlannerFuzz, KernelLikeSetsAreMonotoneAcrossModes) {
  const int64_t iterations = envInt("SMELT_FUZZ_ITERS", 1500) / 5;
  std::mt19937_64 rng(static_cast<uint64_t>(envInt("SMELT_FUZZ_SEED", 1)) + 17);
  int64_t sets = 0, precise_below = 0;
  std::map<std::string, int64_t> statuses;
  for (int64_t k = 0; k < iterations; ++k) {
    const size_t n = std::uniform_int_distribution<size_t>(5, 40)(rng);
    const bool phased = k % 2 == 0;
    const bool aligned = k % 4 < 2;
    const bench::KernelLikeSet set = bench::kernelLikeSet(rng, n, phased, aligned);
    SCOPED_TRACE("kernel-like set " + std::to_string(k));
    const AddressPlan stack = planStackAddresses(set.buffers, set.barriers, set.end);
    int64_t precise = 0, conservative = 0;
    std::string status;
    ASSERT_NO_FATAL_FAILURE(
        checkMonotone(set.buffers, set.barriers, stack, &precise, &conservative, &status));
    precise_below += precise < conservative;
    ++statuses[status];
    ++sets;
  }
  std::cout << "kernel-like sets: " << sets << " checked precise <= conservative <= stack ("
            << precise_below << " with precise strictly below conservative) and <= free list, linear scan;"
            << " precise status:";
  for (const auto& [status, count] : statuses) {
    EXPECT_TRUE(status == "bound reached" || status == "optimal" || status == "heuristic") << status;
    std::cout << " " << status << " " << count;
  }
  std::cout << "\n";
}

// The planner's target (issue 20) as a test: kernel-like sets of 8-64
// buffers (phased and unphased lifetimes, either size kind, both hazard
// modes) reach the max-live bound or a proved optimum above it in at least
// 99%. The time limit is lifted, so only the deterministic budgets (search
// nodes, iterated-greedy rounds) bound the planner: the outcome is the same
// on any machine and under sanitizers.
TEST(PlannerFuzz, KernelLikeSetsReachTheBoundOrAProvedOptimum) {
  std::mt19937_64 rng(2026);
  PlannerOptions options;
  options.search_time_limit_ms = 1e9;
  const int sets = 400;
  int settled = 0;
  for (int k = 0; k < sets; ++k) {
    const size_t n = std::uniform_int_distribution<size_t>(8, 64)(rng);
    const bool phased = k % 2 == 0;
    const bool aligned = k % 4 < 2;
    const bool precise = k % 8 < 4;
    const bench::KernelLikeSet set = bench::kernelLikeSet(rng, n, phased, aligned);
    const ConflictGraph conflicts =
        precise ? conflictsFromIntervals(set.buffers) : conflictsFromBarriers(set.buffers, set.barriers);
    const AddressPlan stack = planStackAddresses(set.buffers, set.barriers, set.end);
    options.baseline = &stack;
    const AddressPlan plan = planAddresses(set.buffers, conflicts, options);
    ASSERT_NO_THROW(verifyPlan(set.buffers, conflicts, plan, std::numeric_limits<int64_t>::max())) << k;
    settled += plan.optimal;
    if (!plan.optimal) std::cout << "set " << k << " (" << n << " buffers): " << planStatusName(plan) << "\n";
  }
  std::cout << "kernel-like sets of 8-64 buffers: " << settled << " of " << sets
            << " at the bound or proved optimal\n";
  EXPECT_GE(settled, sets * 99 / 100);
}

// Malformed sets are rejected by name, never planned.
TEST(PlannerFuzz, MalformedBuffersAreRejectedByName) {
  EXPECT_SMELT_ERROR(validateBuffers({makeBuffer("odd", 64, 0, 1, 0, 24)}), "odd", "alignment");
  EXPECT_SMELT_ERROR(validateBuffers({makeBuffer("backwards", 64, 5, 2, 0)}), "backwards");
  EXPECT_SMELT_ERROR(validateBuffers({makeBuffer("negative", -4, 0, 1, 0)}), "negative");
  EXPECT_SMELT_ERROR(validateBuffers({makeBuffer("zero_alignment", 4, 0, 1, 0, 0)}), "zero_alignment");
  EXPECT_SMELT_ERROR(planStackAddresses({makeBuffer("b", 4, 0, 1, 0)}, {51}, 50),
                     "sync at position 51 lies after the kernel's end position 50");
}

// Found by the fuzzer (seed 1, stack allocator): a zero-size buffer stacked,
// unmoved, on top of a symbolic one ends where that one ends; the total
// left out both ends as "covered" by the other and came out as 0 B (the
// verifier refused the plan).
TEST(PlannerFuzz, ZeroSizeBufferOnTopOfASymbolicStackKeepsTheTotal) {
  const IntExpr below_bytes = IntExpr::symbol("n") * 4 + 7;
  const std::vector<Buffer> buffers = {makeBuffer("below", below_bytes, 0, 3, 0, 1),
                                       makeBuffer("empty", 0, 2, 5, 1, 1)};
  AddressPlan plan;
  plan.addresses = {0, below_bytes};
  plan.stacked_on = {AddressPlan::kNotStacked, 0};
  plan.total_bytes = planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  EXPECT_EQ(plan.total_bytes.evaluate({{"n", 5}}), 27) << plan.total_bytes.toString();
  EXPECT_NO_THROW(verifyPlan(buffers, conflictsFromIntervals(buffers), plan, kUnlimited));
}

}  // namespace
}  // namespace smelt::alloc_reuse
