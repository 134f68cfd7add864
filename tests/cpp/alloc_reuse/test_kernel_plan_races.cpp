// The promoteReuse mutation test against the CPU simulator's race detector:
// kernels planned with reuse run clean, and deleting any barrier that
// promoteReuse inserted makes the detector report a race. Multi-thread
// kernels whose reuse is not thread-private at the chosen addresses only (a
// one-thread block cannot race; B2's back-edge barrier guards a reuse that
// happens to be thread-private when Csub lands on Asub): for the others the
// plan verifier is the check (test_kernel_plan_analyses.cpp).
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "alloc_reuse/kernel_plan_test_util.h"
#include "common/smem_case_fusions.h"
#include "runtime/simulator/interpreter.h"

namespace smelt::alloc_reuse {
namespace {

using testing::LoweredKernel;
using testing::lowerWith;

// Contiguous float storage for every Global input and output of the kernel.
struct Storage {
  std::vector<std::vector<float>> data;
  std::vector<sim::TensorArg> inputs;
  std::vector<sim::TensorArg> outputs;
};

Storage storageFor(const kir::Kernel& kernel) {
  Storage s;
  auto make = [&](const kir::Buffer* b, std::vector<sim::TensorArg>& into) {
    sim::TensorArg arg;
    int64_t elements = 1;
    for (const IntExpr& e : b->shape) arg.sizes.push_back(e.constant().value());
    arg.strides.assign(arg.sizes.size(), 1);
    for (size_t d = arg.sizes.size(); d-- > 0;) {
      arg.strides[d] = elements;
      elements *= arg.sizes[d];
    }
    s.data.emplace_back(static_cast<size_t>(elements), 1.0f);
    into.push_back(arg);
  };
  s.data.reserve(kernel.inputs.size() + kernel.outputs.size());
  for (const kir::Buffer* b : kernel.inputs) make(b, s.inputs);
  for (const kir::Buffer* b : kernel.outputs) make(b, s.outputs);
  size_t k = 0;
  for (auto& arg : s.inputs) arg.data = s.data[k++].data();
  for (auto& arg : s.outputs) arg.data = s.data[k++].data();
  return s;
}

sim::SimReport run(const kir::Kernel& kernel) {
  Storage s = storageFor(kernel);
  return sim::simulateBuffers(kernel, s.inputs, s.outputs, {});
}

void deleteInsertedBarrier(const kir::Kernel& kernel, int index) {
  int seen = 0;
  std::function<bool(kir::StmtList&)> walk = [&](kir::StmtList& body) {
    for (size_t i = 0; i < body.size(); ++i) {
      auto* sync = dynamic_cast<kir::BlockSync*>(body[i].get());
      if (sync != nullptr && sync->inserted_for_reuse && seen++ == index) {
        body.erase(body.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
      if (auto* loop = dynamic_cast<kir::ForLoop*>(body[i].get())) {
        if (walk(loop->body)) return true;
      }
    }
    return false;
  };
  ASSERT_TRUE(walk(const_cast<kir::Kernel&>(kernel).body));
}

TEST(KernelPlanRaces, DeletingAPromoteReuseBarrierRaces) {
  auto build = [] { cases::buildSkippedSyncInterval().tv0->promoteReuse(); };
  int mutants = 0;
  for (SmemAllocator allocator : {SmemAllocator::Best, SmemAllocator::Stack}) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      LoweredKernel planned = lowerWith(build, hazards, allocator);
      sim::SimReport clean = run(*planned.kernel);
      EXPECT_TRUE(clean.clean()) << clean.toString();
      for (int i = 0; i < planned.insertedBarriers(); ++i) {
        LoweredKernel k = lowerWith(build, hazards, allocator);
        deleteInsertedBarrier(*k.kernel, i);
        EXPECT_FALSE(run(*k.kernel).clean()) << "barrier " << i << "\n" << k.kernel->toString();
        ++mutants;
      }
    }
  }
  EXPECT_EQ(mutants, 4);
}

// Every planned case kernel with several threads runs race-free.
TEST(KernelPlanRaces, PlannedKernelsRunClean) {
  std::vector<std::function<void()>> builds = {
      [] { cases::buildTiledGemm(); },
      [] { cases::buildTiledGemm(64, 64, 64, 2); },
      [] { cases::buildTiledGemm(64, 64, 64, 2).c_sub->promoteReuse(); },
      [] { cases::buildSimpleCase().sum->axis(0)->parallelize(ParallelType::TIDx); },
      [] { cases::buildNeedsReorderedPush().sum->axis(0)->parallelize(ParallelType::TIDx); },
  };
  for (size_t b = 0; b < builds.size(); ++b) {
    for (SmemHazards hazards : {SmemHazards::Precise, SmemHazards::Conservative}) {
      LoweredKernel k = lowerWith(builds[b], hazards);
      sim::SimReport report = run(*k.kernel);
      EXPECT_TRUE(report.clean()) << "build " << b << "\n" << report.toString();
    }
  }
}

}  // namespace
}  // namespace smelt::alloc_reuse
