// Every acceptance case (common/case_corpus.h: the case fusions lowered by
// GpuLower, the hand-built B3 and D1 kernels) planned and run in the
// simulator: race-free and equal to the reference in both hazard modes and
// in nvFuser's stack mode; then the mutation table: every barrier removed,
// every planned buffer moved onto a live neighbour, every predicate dropped
// must be caught (race, out-of-bounds or never-written read, or a wrong
// result).
#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <sstream>

#include "common/case_corpus.h"
#include "common/kir_mutations.h"
#include "lower/alloc_reuse/aliasing.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt::sim::testing {
namespace {

using cases::CaseKernel;
using cases::hazardsName;
using smelt::testing::KernelMutation;
using smelt::testing::PlannedKernel;

// For a hand-built kernel: small random inputs, and as the reference its
// outputs with every shared buffer on bytes of its own (no reuse), which must
// run clean.
Reference noReuseReference(kir::Kernel& kernel) {
  Reference ref;
  at::manual_seed(0);
  for (const kir::Buffer* b : kernel.inputs) {
    std::vector<int64_t> shape;
    for (const IntExpr& e : b->shape) shape.push_back(e.constant().value());
    ref.inputs.push_back(
        (at::randn(shape, at::kDouble) * 0.1).to(smelt::testing::toScalarType(b->dtype)));
  }
  std::vector<std::optional<IntExpr>> planned;
  int64_t top = 0;
  for (auto& b : kernel.buffers) {
    planned.push_back(b->address);
    if (b->memory != MemoryType::Shared || b->alias_of != nullptr) continue;
    top = (top + b->alignment - 1) / b->alignment * b->alignment;
    b->address = IntExpr(top);
    top += b->bytes().constant().value();
  }
  for (auto& b : kernel.buffers) {
    if (b->alias_of != nullptr && b->memory == MemoryType::Shared) {
      b->address = b->alias_of->address;
    }
  }
  SimResult run = simulate(kernel, ref.inputs);
  EXPECT_TRUE(run.report.clean()) << run.report.toString();
  ref.expected = run.outputs;
  for (size_t i = 0; i < kernel.buffers.size(); ++i) kernel.buffers[i]->address = planned[i];
  return ref;
}

Reference referenceFor(PlannedKernel& k) {
  if (k.fusion == nullptr) return noReuseReference(*k.kernel);
  return atenReference(*k.fusion, randomInputs(*k.fusion), 1e-4, 1e-4);
}

class SimulatorCases : public ::testing::TestWithParam<CaseKernel> {};

TEST_P(SimulatorCases, RaceFreeAndCorrectInBothHazardModesAndStackMode) {
  struct Config {
    SmemHazards hazards;
    SmemAllocator allocator;
  };
  for (Config c : {Config{SmemHazards::Precise, SmemAllocator::Best},
                   Config{SmemHazards::Conservative, SmemAllocator::Best},
                   Config{SmemHazards::Conservative, SmemAllocator::Stack}}) {
    PlannedKernel k = GetParam().plan(c.hazards, c.allocator);
    EXPECT_EQ(firstFinding(*k.kernel, referenceFor(k)), "")
        << hazardsName(c.hazards) << (c.allocator == SmemAllocator::Stack ? " stack" : "") << "\n"
        << k.kernel->toString() << k.kernel->summary();
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, SimulatorCases, ::testing::ValuesIn(cases::caseKernels()),
                         [](const auto& info) { return info.param.name; });

int64_t threadsPerBlock(const kir::Kernel& kernel) {
  int64_t threads = 1;
  for (const IntExpr& e : kernel.launch.block) threads *= e.constant().value_or(2);
  return threads;
}

// The mutation table. Every mutant must be caught, except equivalent ones,
// listed with their proof:
// - a barrier in a one-thread block orders nothing;
// - a barrier promoteReuse inserted for the conservative (nvFuser's) rule
//   between two buffers the plan put at one address, where the precise
//   analysis proves the reuse thread-private: on the kernel without the
//   barrier, precise aliasing (aliasing.h) would make one an alias of the
//   other (case B2: Csub has Asub's per-thread layout).
std::string equivalence(const kir::Kernel& kernel, const KernelMutation& m) {
  if (m.kind != KernelMutation::Kind::RemoveBarrier) return "";
  if (threadsPerBlock(kernel) == 1) return "equivalent: one thread per block";
  for (const alloc_reuse::ReuseBarrier& r : kernel.smem_plan->reuse_barriers) {
    if (r.inserted != m.stmt || r.next == nullptr ||
        !r.buffer->address->sameAs(*r.next->address)) {
      continue;
    }
    for (const alloc_reuse::AliasDecision& d : alloc_reuse::findAliases(
             kernel, alloc_reuse::computeLiveness(kernel), SmemHazards::Precise)) {
      if ((d.alias == r.buffer && d.base == r.next) || (d.alias == r.next && d.base == r.buffer)) {
        return "equivalent: at one address, the precise analysis proves the reuse thread-private";
      }
    }
  }
  return "";
}

TEST(SimulatorMutations, EveryMutationOfEveryCaseKernelIsCaught) {
  std::ostringstream table;
  table << "| case | hazards | mutation | caught by |\n|---|---|---|---|\n";
  int caught = 0, equivalent = 0, missed = 0;
  for (const CaseKernel& c : cases::caseKernels()) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      PlannedKernel k = c.plan(hazards);
      const Reference ref = referenceFor(k);
      ASSERT_EQ(firstFinding(*k.kernel, ref), "") << c.name << " " << hazardsName(hazards);
      for (KernelMutation& m : smelt::testing::kernelMutations(*k.kernel)) {
        m.apply();
        std::string finding = firstFinding(*k.kernel, ref);
        if (finding.empty()) finding = equivalence(*k.kernel, m);
        m.undo();
        if (finding.rfind("equivalent", 0) == 0) {
          ++equivalent;
        } else if (finding.empty()) {
          ADD_FAILURE() << c.name << " " << hazardsName(hazards) << ": \"" << m.description
                        << "\" went unnoticed";
          finding = "NOT CAUGHT";
          ++missed;
        } else {
          ++caught;
        }
        table << "| " << c.name << " | " << hazardsName(hazards) << " | " << m.description << " | "
              << finding << " |\n";
      }
    }
  }
  std::cout << table.str() << caught << " mutants caught, " << missed << " missed, " << equivalent
            << " equivalent\n";
  EXPECT_EQ(missed, 0);
  EXPECT_GT(caught, 0);
}

}  // namespace
}  // namespace smelt::sim::testing
