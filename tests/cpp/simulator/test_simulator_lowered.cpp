// Kernels produced by the real lowering (GpuLower) for small schedules —
// non-divisible splits, inner and outer reductions, broadcast and pad, a
// transpose through shared memory, every dtype through a shared tile —
// simulated in every thread order and compared with ATen. The acceptance
// cases run in test_simulator_cases.cpp.
#include <gtest/gtest.h>

#include "common/smem_case_fusions.h"
#include "common/small_schedules.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt::sim::testing {
namespace {

TEST(SimulatorLowered, PointwiseWithNonDivisibleSplit) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildPointwiseNonDivisible();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, InnerReductionWithBlockReduce) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildRowSumBlockReduce();
  expectKernelCorrect(fusion, randomInputs(fusion), 1e-5, 1e-4);
}

TEST(SimulatorLowered, OuterReductionAcrossThreads) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildOuterReduction();
  expectKernelCorrect(fusion, randomInputs(fusion), 1e-5, 1e-4);
}

TEST(SimulatorLowered, BroadcastAndPad) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildBroadcastAndPad();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

TEST(SimulatorLowered, TransposeThroughSharedMemory) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSmemTranspose();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

class SimulatorDtypes : public ::testing::TestWithParam<DataType> {};

TEST_P(SimulatorDtypes, SharedTileMaximumCastAndSum) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  cases::buildSharedTileOfType(GetParam());
  expectKernelCorrect(fusion, randomInputs(fusion));
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, SimulatorDtypes,
                         ::testing::Values(DataType::Float, DataType::Double, DataType::Half,
                                           DataType::BFloat16, DataType::Int, DataType::Int32,
                                           DataType::Bool),
                         [](const auto& info) { return toString(info.param); });

}  // namespace
}  // namespace smelt::sim::testing
