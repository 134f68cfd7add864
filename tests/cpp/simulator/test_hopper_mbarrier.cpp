// The simulator's mbarriers on hand-built kernels: phases and parities over
// a loop, the deadlock of a missing arrival or of transaction bytes nothing
// completes (named by barrier and pending counts), arrivals beyond the
// count, a barrier used before init or without the barrier after init; and
// the PTX the codegen emits, compiled by NVRTC for sm_90a.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "runtime/simulator/simulator.h"
#include "simulator/hopper_kernels.h"

namespace smelt {
namespace {

using namespace hopper_testing;

struct PhaseLoop {
  int64_t arrivals = 64;      // the barrier's count (64 threads arrive)
  bool sync_after_init = true;
  bool init = true;
  int64_t arriving_threads = 64;  // threads 0 .. this - 1 arrive
  int64_t expect_tx = 0;      // thread 0's arrivals announce these bytes
  int64_t parity_offset = 0;  // iteration i waits for parity (i + this) % 2
};

// 64 threads: thread 0 inits bars[1]; each of 4 iterations every thread
// arrives and waits for the phase of parity i % 2; then out[t] = in[t].
std::unique_ptr<TestKernel> phaseLoop(const PhaseLoop& c) {
  HopperKernel k = hopperKernel({{{64}, DataType::Float}}, {{64}, DataType::Float}, 64);
  kir::Buffer* bars = k.t->shared("bars", DataType::Int, 2, 0);
  kir::StmtList& body = *k.body;
  allocate(body, bars);
  if (c.init) {
    kir::IfThenElse* first = ifThen(body, all({eq(tx(), 0)}));
    mbarrierInit(first->then_body, bars, 1, c.arrivals);
    fenceProxyAsync(first->then_body);
  }
  if (c.sync_after_init) sync(body, "mbarrier init");
  kir::ForLoop* phases = loop(body, "i0", 4);
  if (c.expect_tx > 0) {
    kir::IfThenElse* first = ifThen(phases->body, all({eq(tx(), 0)}));
    mbarrierArrive(first->then_body, bars, 1, c.expect_tx);
    kir::IfThenElse* rest = ifThen(phases->body, all({ge(tx(), 1)}));
    mbarrierArrive(rest->then_body, bars, 1);
  } else {
    kir::IfThenElse* arriving = ifThen(phases->body, all({lt(tx(), c.arriving_threads)}));
    mbarrierArrive(arriving->then_body, bars, 1);
  }
  mbarrierWait(phases->body, bars, 1, (sym("i0") + c.parity_offset) % 2);
  compute(body, k.cast, at(k.out, tx()), {read(k.in[0], tx())});
  return std::move(k.t);
}

sim::SimResult simulatePhases(const TestKernel& t, sim::ThreadOrder order = sim::ThreadOrder::Forward) {
  sim::SimOptions options;
  options.order = order;
  return sim::simulate(t.kernel, {at::arange(64, at::kFloat)}, {}, {}, options);
}

TEST(HopperMbarrier, PhasesAlternateParityInEveryThreadOrder) {
  std::unique_ptr<TestKernel> t = phaseLoop({});
  for (auto order : {sim::ThreadOrder::Forward, sim::ThreadOrder::Reverse, sim::ThreadOrder::Random}) {
    sim::SimResult r = simulatePhases(*t, order);
    ASSERT_TRUE(r.report.clean()) << r.report.toString();
    EXPECT_TRUE(at::equal(r.outputs[0], at::arange(64, at::kFloat)));
  }
}

TEST(HopperMbarrier, MissingArrivalIsADeadlockNamingTheBarrier) {
  PhaseLoop c;
  c.arriving_threads = 63;
  sim::SimResult r = simulatePhases(*phaseLoop(c));
  ASSERT_EQ(r.report.errors.size(), 1u) << r.report.toString();
  const sim::SimError& e = r.report.errors[0];
  EXPECT_EQ(e.kind, sim::SimError::Kind::Deadlock);
  EXPECT_NE(e.message.find("mbarrier bars[1]"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("phase 0 has 1 of 64 arrivals"), std::string::npos) << e.message;
}

TEST(HopperMbarrier, CountAboveTheArrivalsDeadlocks) {
  PhaseLoop c;
  c.arrivals = 65;
  sim::SimResult r = simulatePhases(*phaseLoop(c));
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::Deadlock);
  EXPECT_NE(r.report.errors[0].message.find("phase 0 has 1 of 65 arrivals"), std::string::npos)
      << r.report.errors[0].message;
}

// try_wait.parity 1 on a fresh barrier returns at once (the phase before
// phase 0 counts as complete), so a loop starting at parity 1 runs ahead.
TEST(HopperMbarrier, WaitingOnTheOtherParityPassesAtOnce) {
  PhaseLoop c;
  c.parity_offset = 1;
  sim::SimResult r = simulatePhases(*phaseLoop(c));
  ASSERT_FALSE(r.report.errors.empty()) << "threads running a phase ahead must not pass";
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::Deadlock);
}

TEST(HopperMbarrier, ExpectedBytesNothingCompletesDeadlock) {
  PhaseLoop c;
  c.expect_tx = 1024;
  sim::SimResult r = simulatePhases(*phaseLoop(c));
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::Deadlock);
  EXPECT_NE(r.report.errors[0].message.find("0 of 64 arrivals and 1024 transaction bytes pending"),
            std::string::npos)
      << r.report.errors[0].message;
}

TEST(HopperMbarrier, UseBeforeInitIsReported) {
  PhaseLoop c;
  c.init = false;
  sim::SimResult r = simulatePhases(*phaseLoop(c));
  ASSERT_FALSE(r.report.errors.empty());
  EXPECT_EQ(r.report.errors[0].kind, sim::SimError::Kind::UninitializedRead);
  EXPECT_NE(r.report.errors[0].message.find("used before mbarrier.init"), std::string::npos);
}

TEST(HopperMbarrier, ArrivalWithoutABarrierAfterInitIsARace) {
  PhaseLoop c;
  c.sync_after_init = false;
  sim::SimResult r = simulatePhases(*phaseLoop(c));
  ASSERT_FALSE(r.report.races.empty()) << r.report.toString();
  EXPECT_EQ(r.report.races[0].kind, sim::RaceKind::RAW);
  EXPECT_EQ(r.report.races[0].first.buffer, "bars");
  EXPECT_EQ(r.report.races[0].first.buffer_byte, 8);
}

TEST(HopperMbarrier, CodegenEmitsThePtxAndNvrtcCompilesItForSm90a) {
  PhaseLoop c;
  c.expect_tx = 1024;
  std::unique_ptr<TestKernel> t = phaseLoop(c);
  const std::string cuda = generateCuda(t->kernel, "mbarrier_phases");
  for (const char* ptx : {"mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64",
                          "mbarrier.arrive.expect_tx.shared::cta.b64",
                          "mbarrier.try_wait.parity.shared::cta.b64", "fence.proxy.async.shared::cta",
                          "smelt::mbarrierInit(&bars[1], 64);",
                          "smelt::mbarrierArriveExpectTx(&bars[1], 1024);"}) {
    EXPECT_NE(cuda.find(ptx), std::string::npos) << ptx << "\n" << cuda;
  }
  CompiledKernel compiled = compileSm90a(t->kernel, "mbarrier_phases");
  EXPECT_EQ(compiled.ptxas.stack_frame_bytes, 0);
  EXPECT_EQ(compiled.ptxas.spill_store_bytes, 0);
}

}  // namespace
}  // namespace smelt
