#include <gtest/gtest.h>

#include "alloc_reuse/plan_test_util.h"
#include "common/expect_error.h"
#include "fusion/device_limits.h"
#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"
#include "lower/alloc_reuse/plan_report.h"
#include "lower/alloc_reuse/stack_allocator.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {
namespace {

using testing::makeBuffer;

std::string verifyError(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                        const AddressPlan& plan, int64_t limit) {
  try {
    verifyPlan(buffers, conflicts, plan, limit);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

std::vector<Buffer> streamK() {
  return {makeBuffer("A_tiles", 33280, 1, 10, 0), makeBuffer("B_tiles", 32768, 1, 10, 1),
          makeBuffer("red_buf", 131072, 12, 20, 2), makeBuffer("C_tile", 2048, 22, 25, 3)};
}

TEST(VerifyPlan, TotalOverTheDeviceLimitListsTheBuffers) {
  auto buffers = streamK();
  ConflictGraph conflicts = conflictsFromBarriers(buffers, {});
  AddressPlan plan = planAddresses(buffers, conflicts);
  SharedMemoryLimits limits;
  EXPECT_NO_THROW(verifyPlan(buffers, conflicts, plan, limits.limitBytes(90)));
  std::string message = verifyError(buffers, conflicts, plan, limits.limitBytes(86));
  EXPECT_TRUE(contains(message, "199168")) << message;
  EXPECT_TRUE(contains(message, "101376")) << message;
  for (const Buffer& b : buffers) EXPECT_TRUE(contains(message, b.name)) << message;
  EXPECT_TRUE(contains(message, "live [12, 20]")) << message;
}

TEST(VerifyPlan, OverlappingConflictingBuffersAreNamed) {
  std::vector<Buffer> buffers = {makeBuffer("left", 64, 0, 5, 0), makeBuffer("right", 64, 3, 8, 1),
                                 makeBuffer("other", 16, 9, 9, 2)};
  ConflictGraph conflicts = conflictsFromIntervals(buffers);
  AddressPlan plan = planAddresses(buffers, conflicts);
  plan.addresses[1] = 32;
  std::string message = verifyError(buffers, conflicts, plan, 1 << 20);
  EXPECT_TRUE(contains(message, "'left' (64 B at 0")) << message;
  EXPECT_TRUE(contains(message, "'right' (64 B at 32")) << message;
  EXPECT_TRUE(contains(message, "overlap")) << message;
  EXPECT_FALSE(contains(message, "'other'")) << message;
}

TEST(VerifyPlan, MisalignedAddressIsReported) {
  std::vector<Buffer> buffers = {makeBuffer("vec", 64, 0, 5, 0, 128)};
  AddressPlan plan = planAddresses(buffers, ConflictGraph(1));
  plan.addresses[0] = 64;
  plan.total_bytes = 128;
  std::string message = verifyError(buffers, ConflictGraph(1), plan, 1 << 20);
  EXPECT_TRUE(contains(message, "'vec'")) << message;
  EXPECT_TRUE(contains(message, "not aligned to 128")) << message;
}

TEST(VerifyPlan, SymbolicOverlapWithoutStackingIsRejected) {
  IntExpr n = IntExpr::symbol("n");
  std::vector<Buffer> buffers = {makeBuffer("s", n * 4, 0, 5, 0), makeBuffer("t", n * 4, 0, 5, 1)};
  ConflictGraph conflicts = conflictsFromIntervals(buffers);
  AddressPlan plan = planAddresses(buffers, conflicts);
  EXPECT_NO_THROW(verifyPlan(buffers, conflicts, plan, 1 << 20));
  plan.stacked_on[1] = AddressPlan::kNotStacked;
  plan.addresses[1] = 0;
  std::string message = verifyError(buffers, conflicts, plan, 1 << 20);
  EXPECT_TRUE(contains(message, "not provably disjoint")) << message;
}

TEST(VerifyPlan, ForgedStackingLinkIsRejected) {
  IntExpr n = IntExpr::symbol("n");
  std::vector<Buffer> buffers = {makeBuffer("s", n * 4, 0, 5, 0), makeBuffer("t", n * 4, 0, 5, 1)};
  ConflictGraph conflicts = conflictsFromIntervals(buffers);
  AddressPlan plan = planAddresses(buffers, conflicts);
  plan.addresses[1] = plan.addresses[0] + 16;
  std::string message = verifyError(buffers, conflicts, plan, 1 << 20);
  EXPECT_TRUE(contains(message, "claims to sit on")) << message;
}

TEST(SharedMemoryLimits, DeviceTableUnlessOverridden) {
  SharedMemoryLimits limits;
  for (int arch : {75, 80, 86, 89, 90}) {
    EXPECT_TRUE(limits.knows(arch));
    EXPECT_EQ(limits.limitBytes(arch), DeviceLimits::forArch(arch).max_shared_memory_per_block) << "sm_" << arch;
  }
  EXPECT_FALSE(limits.knows(70));
  EXPECT_SMELT_ERROR(limits.limitBytes(70), "no shared-memory limit known for sm_70");
  limits.setLimit(70, 98304);
  EXPECT_EQ(limits.limitBytes(70), 98304);
  limits.setLimit(90, 49152);
  EXPECT_EQ(limits.limitBytes(90), 49152);
  EXPECT_THROW(limits.setLimit(75, 0), Error);
}

TEST(PlanReport, TextListsBuffersTotalsAndTimeline) {
  auto buffers = streamK();
  std::vector<int64_t> barriers = {11};
  AddressPlan plan = planAddresses(buffers, conflictsFromBarriers(buffers, {11, 21}));
  ReportContext context;
  context.aliased_to = {"", "", "", "A_tiles"};
  context.barrier_positions = barriers;
  context.inserted_barriers = {{21, "promoteReuse(red_buf): reuse by C_tile"}};
  std::string text = planReportText(buffers, plan, context);
  EXPECT_TRUE(contains(text, "name")) << text;
  EXPECT_TRUE(contains(text, "aliased-to")) << text;
  EXPECT_TRUE(contains(text, "red_buf")) << text;
  EXPECT_TRUE(contains(text, "[12, 20]")) << text;
  EXPECT_TRUE(contains(text, "total 131072 B, lower bound 131072 B, no reuse 199168 B")) << text;
  EXPECT_TRUE(contains(text, "inserted barrier at 21: promoteReuse(red_buf)")) << text;
  EXPECT_TRUE(contains(text, "timeline")) << text;
  EXPECT_TRUE(contains(text, "!")) << text;
}

TEST(PlanReport, JsonEscapesStringsAndPrintsExpressions) {
  IntExpr n = IntExpr::symbol("T0.size[0]");
  std::vector<Buffer> buffers = {makeBuffer("odd\"name\\", n * 4, 0, 3, 0),
                                 makeBuffer("tab\tname", 32, 1, 2, 1)};
  AddressPlan plan = planAddresses(buffers, conflictsFromIntervals(buffers));
  std::string json = planReportJson(buffers, plan);
  EXPECT_TRUE(contains(json, R"("odd\"name\\")")) << json;
  EXPECT_TRUE(contains(json, R"("tab\tname")")) << json;
  EXPECT_TRUE(contains(json, R"x("bytes": "(T0.size[0] * 4)")x")) << json;
  EXPECT_TRUE(contains(json, R"("symbolic": true)")) << json;
  EXPECT_TRUE(contains(json, R"("aliased_to": null)")) << json;
  EXPECT_EQ(jsonQuote(std::string("a\x01")), "\"a\\u0001\"");
}

TEST(PlanReport, SvgDrawsBuffersAndBothKindsOfBarrier) {
  auto buffers = streamK();
  AddressPlan plan = planStackAddresses(buffers, {11, 21}, 26);
  ReportContext context;
  context.barrier_positions = {11};
  context.inserted_barriers = {{21, "promoteReuse(red_buf) <C_tile>"}};
  std::string svg = planReportSvg(buffers, plan, context);
  EXPECT_TRUE(contains(svg, "<svg")) << svg;
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 5, true);
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) {
    ++rects;
  }
  EXPECT_EQ(rects, buffers.size() + 1);  // one per buffer plus the frame
  EXPECT_TRUE(contains(svg, "#d62728")) << svg;
  EXPECT_TRUE(contains(svg, "&lt;C_tile&gt;")) << svg;
}

TEST(PlanReport, SvgOfSymbolicPlanNeedsSymbolValues) {
  IntExpr n = IntExpr::symbol("n");
  std::vector<Buffer> buffers = {makeBuffer("s", n * 4, 0, 3, 0)};
  AddressPlan plan = planAddresses(buffers, ConflictGraph(1));
  EXPECT_THROW(planReportSvg(buffers, plan), Error);
  ReportContext context;
  context.symbol_values = {{"n", 8}};
  EXPECT_TRUE(contains(planReportSvg(buffers, plan, context), "32 B at 0"));
}

}  // namespace
}  // namespace smelt::alloc_reuse
