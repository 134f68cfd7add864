// The simulator's race detector and error checks on hand-built kernels, run
// through the raw-buffer entry point (no torch): barriers removed, buffers
// overlapped, predicates dropped, barriers made divergent.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "fusion/error.h"
#include "runtime/simulator/interpreter.h"
#include "simulator/sim_kernels.h"

namespace smelt::sim::testing {
namespace {

// A contiguous float tensor on the host.
struct Host {
  std::vector<float> data;
  std::vector<int64_t> sizes;
  Host(std::vector<int64_t> shape, float fill = std::nanf("")) : sizes(std::move(shape)) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    data.assign(static_cast<size_t>(n), fill);
  }
  TensorArg arg() {
    TensorArg t;
    t.data = data.data();
    t.dtype = DataType::Float;
    t.sizes = sizes;
    t.strides.assign(sizes.size(), 1);
    for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d) {
      t.strides[d] = t.strides[d + 1] * sizes[d + 1];
    }
    return t;
  }
};

Host iota(std::vector<int64_t> shape, float scale = 1.0f) {
  Host h(std::move(shape));
  for (size_t i = 0; i < h.data.size(); ++i) {
    h.data[i] = scale * static_cast<float>(static_cast<int64_t>((i * 37) % 101) - 50);
  }
  return h;
}

SimOptions withOrder(ThreadOrder order, uint64_t seed = 0) {
  SimOptions o;
  o.order = order;
  o.seed = seed;
  return o;
}

const ThreadOrder kOrders[] = {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random};

// The races of one kind.
std::vector<RaceReport> racesOf(const SimReport& r, RaceKind kind) {
  std::vector<RaceReport> out;
  for (const RaceReport& race : r.races) {
    if (race.kind == kind) out.push_back(race);
  }
  return out;
}

std::vector<SimError> errorsOf(const SimReport& r, SimError::Kind kind) {
  std::vector<SimError> out;
  for (const SimError& e : r.errors) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Transpose through shared memory
// ---------------------------------------------------------------------------

SimReport runTranspose(const TestKernel& k, Host& in, Host& out, const SimOptions& o) {
  TensorArg i = in.arg(), t = out.arg();
  return simulateBuffers(k.kernel, {i}, {t}, {}, o);
}

TEST(SimulatorRaces, TransposeWithSyncIsCleanAndCorrectInEveryOrder) {
  auto k = transposeKernel(true);
  Host in = iota({20, 12});
  for (ThreadOrder order : kOrders) {
    Host out({12, 20});
    SimReport r = runTranspose(*k, in, out, withOrder(order, 7));
    EXPECT_TRUE(r.clean()) << r.toString();
    EXPECT_EQ(r.blocks_simulated, 2 * 3);
    for (int64_t i = 0; i < 20; ++i) {
      for (int64_t j = 0; j < 12; ++j) {
        ASSERT_EQ(out.data[j * 20 + i], in.data[i * 12 + j]) << i << ", " << j;
      }
    }
  }
}

TEST(SimulatorRaces, TransposeWithoutSyncReportsRawWithBufferOffsetsThreadsAndPositions) {
  auto k = transposeKernel(false);
  for (ThreadOrder order : kOrders) {
    Host in = iota({16, 16});
    Host out({16, 16});
    SimReport r = runTranspose(*k, in, out, withOrder(order, 3));
    ASSERT_FALSE(r.clean());
    std::vector<RaceReport> raw = racesOf(r, RaceKind::RAW);
    ASSERT_EQ(raw.size(), 1u) << r.toString();
    EXPECT_EQ(r.races.size(), 1u) << r.toString();
    EXPECT_TRUE(r.errors.empty()) << r.toString();
    const RaceReport& race = raw[0];
    EXPECT_EQ(race.first.buffer, "T1");
    EXPECT_EQ(race.second.buffer, "T1");
    EXPECT_TRUE(race.first.is_write);
    EXPECT_FALSE(race.second.is_write);
    EXPECT_EQ(race.first.position, k->position("write"));
    EXPECT_EQ(race.second.position, k->position("read"));
    // The reader (x, y) reads tile slot x * 8 + y, written by thread (y, x).
    EXPECT_EQ(race.first.thread.x, race.second.thread.y);
    EXPECT_EQ(race.first.thread.y, race.second.thread.x);
    EXPECT_NE(race.first.thread.x, race.first.thread.y);
    const int64_t slot = race.second.thread.x * 8 + race.second.thread.y;
    EXPECT_EQ(race.first.byte_offset / 4, slot);
    EXPECT_EQ(race.first.buffer_byte, race.first.byte_offset);  // T1 sits at address 0
    // 56 off-diagonal slots of 4 bytes, in each of the 4 blocks.
    EXPECT_EQ(race.bytes, 4 * 56 * 4);
    EXPECT_EQ(race.min_byte, 4);
    EXPECT_EQ(race.max_byte, 4 * 63 - 1);
    const std::string text = r.toString();
    EXPECT_NE(text.find("RAW race"), std::string::npos) << text;
    EXPECT_NE(text.find("T1"), std::string::npos) << text;
  }
}

// ---------------------------------------------------------------------------
// Two shared buffers overlapping in bytes
// ---------------------------------------------------------------------------

struct OverlapRun {
  Host out1{{64}}, out2{{64}};
  SimReport report;
};

OverlapRun runOverlap(const TestKernel& k, const SimOptions& o) {
  Host in0 = iota({64}), in1 = iota({64}, 0.5f);
  OverlapRun run;
  run.report = simulateBuffers(k.kernel, {in0.arg(), in1.arg()}, {run.out1.arg(), run.out2.arg()},
                               {}, o);
  for (int64_t t = 0; t < 64; ++t) {
    run.out1.data[t] -= in0.data[63 - t];        // 0 where correct
    run.out2.data[t] -= 2 * in1.data[63 - t];
  }
  return run;
}

bool allZero(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return x == 0; });
}

TEST(SimulatorRaces, OverlappingBuffersWithBarrierAreCleanAndCorrect) {
  auto k = overlapKernel(true);
  for (ThreadOrder order : kOrders) {
    OverlapRun run = runOverlap(*k, withOrder(order, 11));
    EXPECT_TRUE(run.report.clean()) << run.report.toString();
    EXPECT_TRUE(allZero(run.out1.data));
    EXPECT_TRUE(allZero(run.out2.data));
  }
}

TEST(SimulatorRaces, OverlappingBuffersWithoutBarrierReportWarAndGiveWrongNumbers) {
  auto k = overlapKernel(false);
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    OverlapRun run = runOverlap(*k, withOrder(order));
    std::vector<RaceReport> war = racesOf(run.report, RaceKind::WAR);
    ASSERT_EQ(war.size(), 1u) << run.report.toString();
    EXPECT_EQ(run.report.races.size(), 1u) << run.report.toString();
    const RaceReport& race = war[0];
    EXPECT_EQ(race.first.buffer, "A");
    EXPECT_FALSE(race.first.is_write);
    EXPECT_EQ(race.first.position, k->position("last_read_a"));
    EXPECT_EQ(race.second.buffer, "B");
    EXPECT_TRUE(race.second.is_write);
    EXPECT_EQ(race.second.position, k->position("first_write_b"));
    // Thread t reads A[63 - t]; B[31 - t] is the same 4 bytes.
    EXPECT_EQ(race.second.thread.x, 31 - race.first.thread.x);
    EXPECT_EQ(race.first.buffer_byte, 4 * (63 - race.first.thread.x));
    EXPECT_EQ(race.second.buffer_byte, race.first.byte_offset - 128);
    EXPECT_EQ(race.min_byte, 128);
    EXPECT_EQ(race.max_byte, 255);
    EXPECT_FALSE(allZero(run.out1.data)) << "a wrong plan must give wrong numbers";
    EXPECT_TRUE(allZero(run.out2.data));
  }
}

// ---------------------------------------------------------------------------
// Out of bounds, divergence, uninitialized reads, order dependence
// ---------------------------------------------------------------------------

TEST(SimulatorRaces, MissingPredicateReportsOutOfBounds) {
  auto k = pointwiseKernel(false);
  Host a = iota({10, 13}), b = iota({10, 13}), out({10, 13});
  const std::string s = k->kernel.scalar_inputs[0]->symbol();
  SimReport r = simulateBuffers(k->kernel, {a.arg(), b.arg()}, {out.arg()}, {{s, 2.0}});
  std::vector<SimError> oob = errorsOf(r, SimError::Kind::OutOfBounds);
  ASSERT_EQ(oob.size(), 3u) << r.toString();  // reads of T0 and T1, write of the output
  EXPECT_EQ(oob[0].buffer, "T0");
  EXPECT_EQ(oob[0].position, k->position("load"));
  EXPECT_GT(oob[0].occurrences, 1);
  EXPECT_NE(oob[0].message.find("out-of-bounds read of T0["), std::string::npos) << oob[0].message;
  EXPECT_EQ(oob[1].buffer, "T1");
  EXPECT_EQ(oob[2].buffer, k->kernel.outputs[0]->name);
  EXPECT_EQ(oob[2].position, k->position("store"));
  EXPECT_NE(oob[2].message.find("out-of-bounds write"), std::string::npos) << oob[2].message;
  EXPECT_TRUE(r.races.empty());
}

TEST(SimulatorRaces, PredicatedPointwiseIsCleanAndCorrect) {
  auto k = pointwiseKernel(true);
  Host a = iota({10, 13}), b = iota({10, 13}, 0.25f), out({10, 13});
  const std::string s = k->kernel.scalar_inputs[0]->symbol();
  SimReport r = simulateBuffers(k->kernel, {a.arg(), b.arg()}, {out.arg()}, {{s, 0.125}});
  EXPECT_TRUE(r.clean()) << r.toString();
  for (size_t i = 0; i < out.data.size(); ++i) {
    float expect = static_cast<float>(std::tanh(static_cast<float>(a.data[i] + b.data[i]) * 0.125));
    ASSERT_FLOAT_EQ(out.data[i], expect) << i;
  }
}

StagingKernelOptions diverging() {
  StagingKernelOptions o;
  o.diverge = true;
  return o;
}
StagingKernelOptions halfWriters() {
  StagingKernelOptions o;
  o.writers = 32;
  return o;
}
StagingKernelOptions everyoneWritesSlotZero() {
  StagingKernelOptions o;
  o.all_write_slot_zero = true;
  return o;
}

TEST(SimulatorRaces, DivergentBarrierIsReported) {
  auto k = stagingKernel(diverging());
  Host in = iota({64}), out({64});
  SimReport r = simulateBuffers(k->kernel, {in.arg()}, {out.arg()}, {});
  std::vector<SimError> div = errorsOf(r, SimError::Kind::DivergentBarrier);
  ASSERT_EQ(div.size(), 1u) << r.toString();
  EXPECT_EQ(div[0].position, k->position("sync"));
  EXPECT_NE(div[0].message.find("has exited"), std::string::npos) << div[0].message;
}

TEST(SimulatorRaces, UninitializedSharedReadIsReported) {
  auto k = stagingKernel(halfWriters());
  Host in = iota({64}), out({64});
  SimReport r = simulateBuffers(k->kernel, {in.arg()}, {out.arg()}, {});
  std::vector<SimError> uninit = errorsOf(r, SimError::Kind::UninitializedRead);
  ASSERT_EQ(uninit.size(), 1u) << r.toString();
  EXPECT_EQ(uninit[0].buffer, "S");
  EXPECT_EQ(uninit[0].position, k->position("read"));
  EXPECT_EQ(uninit[0].occurrences, 32 * 4);  // 32 threads x 4 bytes
  EXPECT_TRUE(r.races.empty()) << r.toString();
  EXPECT_EQ(out.data[5], in.data[5]);
  EXPECT_TRUE(std::isnan(out.data[40])) << "unwritten shared memory reads as NaN";
}

TEST(SimulatorRaces, OrderDependentKernelIsCaughtAndChangesWithOrder) {
  auto k = stagingKernel(everyoneWritesSlotZero());
  Host in = iota({64});
  Host forward({64}), reverse({64});
  SimReport rf = simulateBuffers(k->kernel, {in.arg()}, {forward.arg()}, {},
                                 withOrder(ThreadOrder::Forward));
  SimReport rr = simulateBuffers(k->kernel, {in.arg()}, {reverse.arg()}, {},
                                 withOrder(ThreadOrder::Reverse));
  for (const SimReport* r : {&rf, &rr}) {
    std::vector<RaceReport> waw = racesOf(*r, RaceKind::WAW);
    ASSERT_EQ(waw.size(), 1u) << r->toString();
    EXPECT_EQ(waw[0].first.position, k->position("write"));
    EXPECT_EQ(waw[0].second.position, k->position("write"));
    EXPECT_NE(waw[0].first.thread.x, waw[0].second.thread.x);
    EXPECT_EQ(waw[0].bytes, 63 * 4);
  }
  EXPECT_EQ(forward.data[0], in.data[63]);  // the last writer wins
  EXPECT_EQ(reverse.data[0], in.data[0]);
}

// ---------------------------------------------------------------------------
// Tiled matmul
// ---------------------------------------------------------------------------

struct MatmulRun {
  Host c{{64, 64}};
  SimReport report;
  double max_error = 0;
  double seconds = 0;
};

MatmulRun runMatmul(const TestKernel& k, const SimOptions& o) {
  Host a = iota({64, 64}, 0.01f), b = iota({64, 64}, -0.02f);
  MatmulRun run;
  auto start = std::chrono::steady_clock::now();
  run.report = simulateBuffers(k.kernel, {a.arg(), b.arg()}, {run.c.arg()}, {}, o);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 64; ++j) {
      double expect = 0;
      for (int64_t kk = 0; kk < 64; ++kk) {
        expect += static_cast<double>(a.data[i * 64 + kk]) * b.data[kk * 64 + j];
      }
      double err = std::fabs(run.c.data[i * 64 + j] - expect);
      run.max_error = std::isnan(err) ? INFINITY : std::max(run.max_error, err);
    }
  }
  return run;
}

TEST(SimulatorRaces, TiledMatmulIsCleanAndCorrectInEveryOrder) {
  auto k = matmulKernel();
  for (ThreadOrder order : kOrders) {
    MatmulRun run = runMatmul(*k, withOrder(order, 5));
    EXPECT_TRUE(run.report.clean()) << run.report.toString();
    EXPECT_LT(run.max_error, 1e-3);
    RecordProperty(std::string("seconds_") + std::to_string(static_cast<int>(order)),
                   std::to_string(run.seconds));
  }
}

TEST(SimulatorRaces, TiledMatmulWithoutRawBarrierReportsRaw) {
  auto k = matmulKernel(/*sync_before_use=*/false, true);
  MatmulRun run = runMatmul(*k, {});
  std::vector<RaceReport> raw = racesOf(run.report, RaceKind::RAW);
  ASSERT_GE(raw.size(), 2u) << run.report.toString();  // As and Bs
  for (const RaceReport& race : raw) {
    EXPECT_TRUE(race.first.position == k->position("stage_a") ||
                race.first.position == k->position("stage_b"));
    EXPECT_EQ(race.second.position, k->position("multiply"));
  }
  EXPECT_TRUE(racesOf(run.report, RaceKind::WAW).empty()) << run.report.toString();
}

TEST(SimulatorRaces, TiledMatmulWithoutWarBarrierReportsWar) {
  auto k = matmulKernel(true, /*sync_before_overwrite=*/false);
  MatmulRun run = runMatmul(*k, {});
  std::vector<RaceReport> war = racesOf(run.report, RaceKind::WAR);
  ASSERT_EQ(war.size(), 2u) << run.report.toString();  // As and Bs
  for (const RaceReport& race : war) {
    EXPECT_EQ(race.first.position, k->position("multiply"));
    EXPECT_FALSE(race.first.is_write);
    EXPECT_TRUE(race.second.position == k->position("stage_a") ||
                race.second.position == k->position("stage_b"));
  }
  EXPECT_TRUE(racesOf(run.report, RaceKind::RAW).empty()) << run.report.toString();
}

// ---------------------------------------------------------------------------
// Options and argument errors
// ---------------------------------------------------------------------------

TEST(SimulatorRaces, BlockSamplingRunsFirstLastAndRandomBlocks) {
  auto k = transposeKernel(true);
  Host in = iota({80, 80});  // 10 x 10 blocks
  Host out({80, 80});
  SimOptions o;
  o.sampling = BlockSampling::Sampled;
  o.random_blocks = 3;
  o.seed = 42;
  SimReport r = runTranspose(*k, in, out, o);
  EXPECT_TRUE(r.clean()) << r.toString();
  EXPECT_EQ(r.blocks_total, 100);
  EXPECT_EQ(r.blocks_simulated, 5);
  EXPECT_EQ(out.data[0], in.data[0]);                    // block (0, 0)
  EXPECT_EQ(out.data[80 * 80 - 1], in.data[80 * 80 - 1]);  // the last block
  int64_t written = std::count_if(out.data.begin(), out.data.end(),
                                  [](float v) { return !std::isnan(v); });
  EXPECT_EQ(written, 5 * 64);
}

TEST(SimulatorRaces, MalformedKernelsAndArgumentsThrow) {
  auto k = transposeKernel(true);
  Host in = iota({8, 8}), out({8, 8});
  EXPECT_THROW(simulateBuffers(k->kernel, {}, {out.arg()}, {}), Error);
  TensorArg wrong = in.arg();
  wrong.dtype = DataType::Double;
  EXPECT_THROW(simulateBuffers(k->kernel, {wrong}, {out.arg()}, {}), Error);
  // A shared buffer the planner has not placed.
  for (auto& b : k->kernel.buffers) {
    if (b->memory == MemoryType::Shared) b->address.reset();
  }
  try {
    simulateBuffers(k->kernel, {in.arg()}, {out.arg()}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no planned address"), std::string::npos) << e.what();
  }
  // A symbol nothing binds.
  auto p = pointwiseKernel(true);
  Host a = iota({4, 4}), b = iota({4, 4}), o({4, 4});
  try {
    simulateBuffers(p->kernel, {a.arg(), b.arg()}, {o.arg()}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p->kernel.scalar_inputs[0]->symbol()), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace smelt::sim::testing
