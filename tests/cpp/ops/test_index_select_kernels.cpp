// index_select (embedding): a table read at the values of an index tensor,
// through the pointwise scheduler, GpuLower, the simulator (against ATen,
// and an index out of range reported as an error) and NVRTC.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/aten_reference.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "lower/lower.h"
#include "ops/pointwise_kernel_checks.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/simulator/simulator.h"
#include "scheduler/registry.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt {
namespace {

using sim::testing::expectKernelCorrect;
using smelt::testing::expectCompiles;

// embedding(ids [2, 5], table [11, 6]) * 2 + bias [6] as one pointwise kernel.
struct EmbeddingFusion {
  Fusion fusion;
  TensorView* out = nullptr;
  EmbeddingFusion() {
    FusionGuard guard(&fusion);
    TensorView* table = makeConcreteTensor({11, 6});
    TensorView* ids = makeConcreteTensor({2, 5}, DataType::Int);
    TensorView* bias = makeConcreteTensor({6});
    fusion.addInput(table);
    fusion.addInput(ids);
    fusion.addInput(bias);
    out = add(mul(indexSelect(table, 0, ids), 2.0), broadcast(bias, {true, true, false}));
    fusion.addOutput(out);
  }
  std::vector<at::Tensor> inputs(int64_t bad_value = -1) {
    at::Tensor ids = at::randint(0, 11, {2, 5}, at::TensorOptions().dtype(at::kLong));
    if (bad_value >= 0) ids[1][3] = bad_value;
    return {at::randn({11, 6}), ids, at::randn({6})};
  }
  void schedule(const std::vector<at::Tensor>& values) {
    RuntimeInfo runtime(fusion, inputInfosOf(fusion, values));
    ASSERT_EQ(selectScheduler(fusion, runtime), SchedulerType::Pointwise);
    scheduleFusion(fusion, runtime);
  }
};

TEST(IndexSelectKernels, EmbeddingMatchesATenAndCompiles) {
  EmbeddingFusion e;
  std::vector<at::Tensor> values = e.inputs();
  e.schedule(values);
  expectKernelCorrect(e.fusion, values);
  expectCompiles(e.fusion, "embedding");
}

TEST(IndexSelectKernels, AnIndexOutsideTheTableIsASimulatorError) {
  EmbeddingFusion e;
  std::vector<at::Tensor> values = e.inputs(11);
  e.schedule(values);
  GpuLower lower(&e.fusion);
  sim::SimResult result = sim::simulate(lower.run(), values, {}, {}, {});
  EXPECT_FALSE(result.report.clean());
  EXPECT_NE(result.report.toString().find("index_select: index value 11 is outside the table's extent 11"),
            std::string::npos)
      << result.report.toString();
}

TEST(IndexSelectKernels, ErrorsNameTheTensors) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* table = makeConcreteTensor({4, 3});
  TensorView* floats = makeConcreteTensor({2});
  EXPECT_SMELT_ERROR(indexSelect(table, 0, floats), "index_select: index T1 has dtype float");
  TensorView* ids = makeConcreteTensor({2}, DataType::Int);
  EXPECT_SMELT_ERROR(indexSelect(table, -3, ids), "index_select: dimension -3 is out of range for T0");
}

}  // namespace
}  // namespace smelt
