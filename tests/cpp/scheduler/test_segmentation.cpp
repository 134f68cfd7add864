// Scheduler selection and segmentation: the scheduler chosen for each kind of
// fusion, and fusions no single scheduler takes split into segments whose
// kernels, run in order on the simulator, match ATen.
#include <gtest/gtest.h>

#include "common/example_fusions.h"
#include "common/expect_error.h"
#include "fusion/ops.h"
#include "scheduler/pointwise.h"
#include "scheduler/reduction.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler_test_util.h"
#include "scheduler/segmenter.h"

namespace smelt::testing {
namespace {

std::optional<SchedulerType> selected(Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  return selectScheduler(fusion, runtime);
}

SegmentedFusion segmentAndCheck(Fusion& fusion, const std::vector<at::Tensor>& inputs,
                                double tolerance = 1e-4,
                                const ParamsOverride& override_params = {}) {
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  SegmentedFusion segmented = segmentFusion(fusion, runtime, override_params);
  // What a later process makes of the groups (the runtime keeps them on disk).
  std::optional<SegmentedFusion> again = segmentFusionAs(fusion, runtime, segmented.groups, override_params);
  EXPECT_TRUE(again.has_value()) << segmented.toString();
  if (again) {
    EXPECT_EQ(again->toString(), segmented.toString());
  }
  std::vector<at::Tensor> got = runSegmentsInSimulator(fusion, segmented, inputs);
  std::vector<at::Tensor> want = evaluateWithATen(fusion, inputs);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(at::allclose(got[i].to(at::kDouble), want[i].to(at::kDouble), tolerance, tolerance))
        << "output " << i << "\n" << segmented.toString() << got[i] << want[i];
  }
  return segmented;
}

TEST(SchedulerSelection, EachKindOfFusion) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2);
    fusion.addInput(a);
    fusion.addOutput(exp(a));
    EXPECT_EQ(selected(fusion, {randn({3, 4})}), SchedulerType::Pointwise);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2);
    fusion.addInput(a);
    fusion.addOutput(sum(exp(a), {0}));
    EXPECT_EQ(selected(fusion, {randn({3, 4})}), SchedulerType::Reduction);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2);
    fusion.addInput(a);
    fusion.addOutput(sub(a, broadcast(max(a, {1}), {false, true})));
    EXPECT_EQ(selected(fusion, {randn({3, 4})}), SchedulerType::Persistent);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2);
    TensorView* b = makeContigTensor(2);
    fusion.addInput(a);
    fusion.addInput(b);
    fusion.addOutput(matmul(a, b));
    EXPECT_EQ(selected(fusion, {randn({3, 4}), randn({4, 5})}), SchedulerType::Matmul);
  }
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeContigTensor(2);
    fusion.addInput(a);
    fusion.addOutput(sum(a, {1}));
    fusion.addOutput(sum(a, {0}));
    std::vector<std::string> reasons;
    RuntimeInfo runtime(fusion, inputInfosOf(fusion, {randn({3, 4})}));
    EXPECT_EQ(selectScheduler(fusion, runtime, &reasons), std::nullopt);
    ASSERT_EQ(reasons.size(), 7u);
    EXPECT_EQ(reasons[0].rfind("library_matmul: the fusion has two reductions", 0), 0u) << reasons[0];
    EXPECT_EQ(reasons[5], "scatter: it has 0 scatters, not one");
    EXPECT_EQ(reasons[6], "scan: it has 0 scans, not one");
    EXPECT_EQ(reasons[1].rfind("matmul: the fusion has two reductions", 0), 0u) << reasons[1];
    EXPECT_EQ(reasons[4].rfind("pointwise: it has a reduction", 0), 0u) << reasons[4];
    EXPECT_SMELT_ERROR(scheduleFusion(fusion, runtime), "no scheduler takes this fusion",
                       "reduction: reductions T1 and T2 reduce different dimensions");
  }
}

TEST(Segmentation, OneSegmentWhenASchedulerTakesTheFusion) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  fusion.addInput(a);
  fusion.addOutput(sum(exp(a), {1}));
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({5, 9})});
  EXPECT_EQ(segmented.toString(), "segment 0 (reduction): T0 -> T2\n");
}

// The runtime's check lowers each segment; a segment it refuses is split
// further (never a failure at run time), and the refusal is reported.
TEST(Segmentation, ASegmentTheCheckRefusesIsSplitFurther) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  fusion.addInput(a);
  fusion.addOutput(sum(exp(a), {1}));
  const std::vector<at::Tensor> inputs{randn({5, 9})};
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  int checks = 0;
  const SegmentCheck one_op_only = [&](const Segment& segment, const RuntimeInfo& segment_runtime) {
    ++checks;
    EXPECT_EQ(segment_runtime.inputs().size(), segment.inputs.size());
    return segment.fusion->exprs().size() > 1 ? std::string("two ops") : std::string();
  };
  SegmentedFusion segmented = segmentFusion(fusion, runtime, {}, one_op_only);
  EXPECT_EQ(segmented.toString(),
            "segment 0 (pointwise): T0 -> T1\n"
            "segment 1 (reduction): T1 -> T2\n"
            "refused: T2 (reduction): two ops\n");
  EXPECT_EQ(checks, 3);  // the whole fusion, then each of the two segments
  std::vector<at::Tensor> got = runSegmentsInSimulator(fusion, segmented, inputs);
  EXPECT_TRUE(at::allclose(got[0], evaluateWithATen(fusion, inputs)[0], 1e-4, 1e-4));
  // An expression refused on its own cannot be segmented: an error naming it.
  const SegmentCheck no_reduction = [](const Segment& segment, const RuntimeInfo&) {
    return segment.scheduler == SchedulerType::Reduction ? std::string("no reduction") : std::string();
  };
  EXPECT_SMELT_ERROR(segmentFusion(fusion, runtime, {}, no_reduction), "cannot segment the fusion",
                     "sum", "no reduction");
}

// Groups that do not partition the fusion's expressions producers first,
// or that no scheduler takes, are not made into segments: the runtime then
// segments afresh.
TEST(Segmentation, GroupsThatDoNotFitTheFusionAreRefused) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  // Rows normalized by their sums, then summed over columns: the column
  // sum's segment reads the row segment's output.
  TensorView* normalized = div(x, broadcast(sum(x, {1}), {false, true}));
  fusion.addOutput(sum(normalized, {0}));
  const std::vector<at::Tensor> inputs{randn({6, 10})};
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
  const SegmentedFusion segmented = segmentAndCheck(fusion, inputs);
  ASSERT_GE(segmented.groups.size(), 2u) << segmented.toString();
  const int n = static_cast<int>(fusion.exprs().size());
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  std::vector<std::vector<int>> reversed(segmented.groups.rbegin(), segmented.groups.rend());
  std::vector<std::vector<int>> missing = segmented.groups;
  missing.back().pop_back();
  if (missing.back().empty()) missing.pop_back();
  std::vector<std::vector<int>> twice = segmented.groups;
  twice.push_back({segmented.groups.front().front()});
  for (const auto& groups : {reversed, missing, twice, {{n}}, {all}}) {
    EXPECT_FALSE(segmentFusionAs(fusion, runtime, groups).has_value());
  }
}

TEST(Segmentation, ReductionsOverDifferentAxes) {
  // s = sum(x, {1}); t = sum(s[:, None] * y, {0}): two kernels, s passes
  // through global memory.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  TensorView* y = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addInput(y);
  TensorView* s = sum(x, {1});
  fusion.addOutput(sum(mul(broadcast(s, {false, true}), y), {0}));
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({7, 13}), randn({7, 5})});
  EXPECT_EQ(segmented.toString(),
            "segment 0 (reduction): T0 -> T2\n"
            "segment 1 (reduction): T2, T1 -> T5\n");
  // x is not in the second segment: s's extent becomes its own size symbol.
  const Fusion& second = *segmented.segments[1].fusion;
  EXPECT_EQ(second.inputs()[0]->asTensor()->axis(0)->extent().toString(), "T2.size[0]");
}

TEST(Segmentation, SiblingReductionsAndPointwiseTail) {
  // Row sums and row maxima of one input, then combined: the two reductions
  // share their loops (x is read once) and the tail follows in the kernel.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(add(sum(x, {1}), max(x, {1})));
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({6, 10})});
  EXPECT_EQ(segmented.toString(), "segment 0 (reduction): T0 -> T3\n");
}

TEST(Segmentation, MatmulFollowedByReduction) {
  // rowsum(a @ b): the contraction over K and the sum over N cannot share a
  // kernel.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(2);
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addOutput(sum(matmul(a, b), {1}));
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({5, 6}), randn({6, 7})});
  ASSERT_EQ(segmented.segments.size(), 2u) << segmented.toString();
  EXPECT_EQ(segmented.segments[0].scheduler, SchedulerType::Matmul);
  EXPECT_EQ(segmented.segments[1].scheduler, SchedulerType::Reduction);
}

// A matmul the matmul scheduler takes keeps a segment of that scheduler.
// Its result an output that also feeds a pointwise op: the matmul scheduler
// writes one tensor and declined the whole fusion, which the reduction
// scheduler then took (the matmul as a plain reduction: no tiles, no tensor
// cores). A reshape epilogue (nn.Linear on a 3-D input viewed back), which
// the matmul scheduler leaves to a later segment on purpose, is cut off too.
TEST(Segmentation, MatmulKeepsItsSchedulerNextToASecondOutputOrAReshapeEpilogue) {
  for (int variant : {0, 1, 2}) {
    SCOPED_TRACE(variant);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* a = makeConcreteTensor({40, 32}, DataType::Half);
    TensorView* b = makeConcreteTensor({32, 24}, DataType::Half);
    fusion.addInput(a);
    fusion.addInput(b);
    TensorView* m = matmul(a, b);
    if (variant == 0) {
      fusion.addOutput(m);
      fusion.addOutput(relu(m));
    } else if (variant == 1) {
      fusion.addOutput(relu(reshape(m, {2, 20, 24})));
    } else {
      fusion.addOutput(reshape(relu(m), {4, 10, 24}));
    }
    SegmentedFusion segmented =
        segmentAndCheck(fusion, {randn({40, 32}, at::kHalf), randn({32, 24}, at::kHalf)}, 2e-2);
    ASSERT_EQ(segmented.segments.size(), 2u) << segmented.toString();
    EXPECT_EQ(segmented.segments[0].scheduler, SchedulerType::Matmul) << segmented.toString();
    EXPECT_EQ(segmented.segments[1].scheduler, SchedulerType::Pointwise) << segmented.toString();
  }
}

// x1 [d, c] + x0.unsqueeze(1).sum(0, keepdim=True) with x1 also read by a
// second output (the torch fuzzer's seed 200376, dynamic): the reduction's
// reference broadcasts d, so no loop of its schedule binds d, and x1's cache,
// inlined into neither output, spanned a serial loop of d's symbolic extent
// ("Local tensor T.. needs T1.size[0] registers" after the reduction
// scheduler accepted). The schedulers of reductions decline; the segmenter
// gives the reduction a kernel of its own.
TEST(Segmentation, BufferAcrossADimensionTheReductionBroadcasts) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x0 = makeContigTensor(2);
  TensorView* x1 = makeContigTensor(2);
  fusion.addInput(x0);
  fusion.addInput(x1);
  TensorView* v2 = broadcast(sum(unsqueeze(x0, 1), {0}), {true, false, false});
  fusion.addOutput(add(broadcast(x1, {true, false, false}), v2));
  fusion.addOutput(neg(x1));
  EXPECT_NE(reductionRejectReason(fusion).find("the reduction T3 broadcasts it"), std::string::npos)
      << reductionRejectReason(fusion);
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({4, 6}), randn({5, 6})});
  EXPECT_EQ(segmented.segments.size(), 2u) << segmented.toString();
}

// A reshape of a permuted value in one pointwise kernel: the schedule
// propagated from the output replays the reshape's merges and splits onto the
// permute's output (constant extents: [4, 6] -> [6, 4] -> [2, 3, 4]; symbolic:
// [a, b, c] -> [b, a, c] -> [b * a, c]).
TEST(Segmentation, ReshapeOfAPermuteIsOnePointwiseKernel) {
  {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeConcreteTensor({4, 6});
    fusion.addInput(x);
    fusion.addOutput(exp(reshape(permute(x, {1, 0}), {2, 3, 4})));
    EXPECT_EQ(segmentAndCheck(fusion, {randn({4, 6})}).toString(),
              "segment 0 (pointwise): T0 -> T3\n");
  }
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  fusion.addInput(x);
  fusion.addOutput(exp(reshape(permute(x, {1, 0, 2}), {-1, x->axis(2)->extent()})));
  EXPECT_EQ(segmentAndCheck(fusion, {randn({2, 3, 5})}).toString(),
            "segment 0 (pointwise): T0 -> T3\n");
}

// A reduction or normalization of a reshaped value: the reshape regroups the
// input's axes into the reduction's dimensions, which the reduction
// schedulers' register copy of the input cannot follow, so the reshape (and
// a permute before it, in the same pointwise kernel) runs first and the
// reduction's kernel reads the reshaped tensor from global memory.
TEST(Segmentation, ReductionOfAReshapeReadsItFromItsOwnKernel) {
  struct Case {
    const char* what;
    std::vector<int64_t> shape;  // of the input; empty: rank 3, symbolic extents
    void (*build)(TensorView* x);
    at::Tensor input;
    const char* segments;
  };
  const Case cases[] = {
      {"sum of a reshape", {4, 6},
       [](TensorView* x) { Fusion::current()->addOutput(sum(reshape(x, {3, 8}), {1})); },
       randn({4, 6}),
       "segment 0 (pointwise): T0 -> T1\n"
       "segment 1 (reduction): T1 -> T2\n"},
      {"sum of a reshaped permute", {4, 6},
       [](TensorView* x) {
         Fusion::current()->addOutput(sum(reshape(permute(x, {1, 0}), {3, 8}), {1}));
       },
       randn({4, 6}),
       "segment 0 (pointwise): T0 -> T2\n"
       "segment 1 (reduction): T2 -> T3\n"},
      // [a, b, c] permuted to [b, a, c], merged to [b * a, c].
      {"sum and softmax of a reshaped permute, symbolic extents", {},
       [](TensorView* x) {
         TensorView* rows = reshape(permute(x, {1, 0, 2}), {-1, x->axis(2)->extent()});
         Fusion::current()->addOutput(sum(rows, {0}));
         Fusion::current()->addOutput(examples::rowSoftmax(rows));
       },
       randn({2, 3, 5}),
       "segment 0 (pointwise): T0 -> T2\n"
       "segment 1 (reduction): T2 -> T3\n"
       "segment 2 (persistent): T2 -> T10\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = c.shape.empty() ? makeContigTensor(3) : makeConcreteTensor(c.shape);
    fusion.addInput(x);
    c.build(x);
    EXPECT_EQ(segmentAndCheck(fusion, {c.input}).toString(), c.segments);
  }
  // Why the reduction scheduler refuses the whole first fusion.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({4, 6});
  fusion.addInput(x);
  cases[0].build(x);
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, {cases[0].input}));
  std::vector<std::string> reasons;
  EXPECT_EQ(selectScheduler(fusion, runtime, &reasons), std::nullopt);
  ASSERT_EQ(reasons.size(), 7u);
  EXPECT_EQ(reasons[3],
            "reduction: axis i0{4} of T0 does not correspond to a dimension of T2");
}

// View, normalize, view back with symbolic sizes (issue 17, class 5): the
// last segment splits the merged extent back into x's sizes but reads only
// the normalized tensor, whose extent it knows as a symbol of its own; it
// takes x as an input too, for its sizes.
TEST(Segmentation, ViewBackAfterANormalizationTakesTheInputForItsSizes) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(4);
  fusion.addInput(x);
  using examples::sizeOf;
  TensorView* rows = reshape(x, {sizeOf(x, 0), sizeOf(x, 1), -1});
  TensorView* e = exp(sub(rows, broadcast(max(rows, {2}), {false, false, true})));
  TensorView* softmax = div(e, broadcast(sum(e, {2}), {false, false, true}));
  fusion.addOutput(reshape(softmax, {sizeOf(x, 0), sizeOf(x, 1), sizeOf(x, 2), sizeOf(x, 3)}));
  const SegmentedFusion segmented = segmentAndCheck(fusion, {randn({2, 3, 4, 5})});
  ASSERT_GE(segmented.segments.size(), 2u) << segmented.toString();
  const std::vector<const Val*>& last = segmented.segments.back().inputs;
  EXPECT_NE(std::find(last.begin(), last.end(), x), last.end()) << segmented.toString();
}

TEST(Segmentation, SoftmaxRowTooLongToKeepOnChip) {
  // 32k floats per row: x and exp(x - max) do not fit one block's shared
  // memory together. The row maxima take a kernel of their own; the rest
  // keeps exp(x - max) in shared memory. The one row of 32k is long enough
  // for the heuristics to split the maximum across 8 blocks (partial maxima,
  // then their maximum).
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(x);
  fusion.addOutput(examples::rowSoftmax(x));
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({1, 32768})}, 1e-6);
  EXPECT_EQ(segmented.toString(),
            "segment 0 (reduction): T0 -> T1 (partial results, rows in at most 8 chunks)\n"
            "segment 1 (reduction): T0 -> T1 (reduces the partial results)\n"
            "segment 2 (persistent): T1, T0 -> T7\n");
}

// Sets grid_split on the reduction parameters of every reduction segment.
ParamsOverride forceGridSplit(int64_t max_chunks) {
  return [max_chunks](HeuristicParams& params) {
    dynamic_cast<ReductionParams&>(params).grid_split = max_chunks;
  };
}

// Forces grid_split = max_chunks; checks the two segments (the partial one
// reading `partial_inputs`, the final one `final_inputs`) in the simulator
// against ATen and the chunks a launch on `inputs` gets.
void expectGridSplit(Fusion& fusion, const std::vector<at::Tensor>& inputs, int64_t max_chunks,
                     const std::string& partial_segment, const std::string& final_segment,
                     int64_t chunks) {
  SegmentedFusion segmented = segmentAndCheck(fusion, inputs, 1e-4, forceGridSplit(max_chunks));
  EXPECT_EQ(segmented.toString(),
            "segment 0 (reduction): " + partial_segment + " (partial results, rows in at most " +
                std::to_string(max_chunks) + " chunks)\nsegment 1 (reduction): " + final_segment +
                " (reduces the partial results)\n");
  RuntimeInfo whole(fusion, inputInfosOf(fusion, inputs));
  EXPECT_EQ(gridSplitChunksOf(segmented.segments[0], whole), chunks);
  EXPECT_EQ(gridSplitChunksOf(segmented.segments[1], whole), chunks);
}

// A grid split forced on small rows: the partial kernel reduces each row in
// chunks (as many as the largest divisor of the row length allows), the
// final kernel reduces the chunks' results and runs the epilogue.
TEST(Segmentation, GridSplitOfLongRowsIntoPartialAndFinalKernels) {
  struct Case {
    int64_t rows, cols, max_chunks, chunks;
  };
  for (Case c : {Case{3, 1000, 8, 8}, Case{2, 999, 16, 9}, Case{4, 997, 8, 1}, Case{1, 64, 64, 64}}) {
    SCOPED_TRACE(::testing::Message() << c.rows << " x " << c.cols << ", " << c.max_chunks);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(2);
    TensorView* bias = makeContigTensor(1);
    fusion.addInput(x);
    fusion.addInput(bias);
    fusion.addOutput(add(mul(sum(mul(x, x), {1}), 0.5), bias));
    expectGridSplit(fusion, {randn({c.rows, c.cols}), randn({c.rows})}, c.max_chunks, "T0 -> T3",
                    "T2, T1 -> T5", c.chunks);
  }
}

TEST(Segmentation, GridSplitOfARowMaximumWithoutPrologue) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  fusion.addInput(x);
  fusion.addOutput(max(x, {2}));
  // The final kernel reads the [2, 3, 13] partial maxima in place of T0.
  expectGridSplit(fusion, {randn({2, 3, 1001})}, 16, "T0 -> T1", "T0 -> T1", 13);
}

// Columns: every P-th row goes to one of P partial rows, the final kernel
// reduces the partial rows and adds the bias.
TEST(Segmentation, GridSplitOfLongColumnsIntoPartialAndFinalKernels) {
  struct Case {
    int64_t rows, cols, max_chunks, chunks;
  };
  for (Case c : {Case{1000, 5, 8, 8}, Case{999, 3, 16, 9}, Case{997, 4, 8, 1}}) {
    SCOPED_TRACE(::testing::Message() << c.rows << " x " << c.cols << ", " << c.max_chunks);
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* x = makeContigTensor(2);
    TensorView* bias = makeContigTensor(1);
    fusion.addInput(x);
    fusion.addInput(bias);
    fusion.addOutput(add(sum(mul(x, 2.0), {0}), bias));
    expectGridSplit(fusion, {randn({c.rows, c.cols}), randn({c.cols})}, c.max_chunks, "T0 -> T3",
                    "T2, T1 -> T4", c.chunks);
  }
  // A transposed (non-contiguous) input of rank 3: regrouping copies it.
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3)->setContiguity({false, false, false});
  fusion.addInput(x);
  fusion.addOutput(max(x, {0}));
  expectGridSplit(fusion, {randn({4, 3, 999}).permute({2, 1, 0})}, 16, "T0 -> T1", "T0 -> T1", 9);
}

TEST(Segmentation, GridSplitRefusedWhereRowsCannotBeRegrouped) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeContigTensor(3);
  fusion.addInput(x);
  fusion.addOutput(sum(x, {1}));
  RuntimeInfo runtime(fusion, inputInfosOf(fusion, {randn({2, 100, 3})}));
  EXPECT_SMELT_ERROR(segmentFusion(fusion, runtime, forceGridSplit(4)),
                     "cannot split the reduction across blocks (grid_split = 4)",
                     "T1 reduces neither its innermost nor its outermost dimension alone");
  // Rows of a tensor sized after an input the segment does not otherwise
  // read: the runtime would regroup that input too.
  Fusion sized;
  FusionGuard sized_guard(&sized);
  TensorView* y = makeContigTensor(2);
  sized.addInput(y);
  sized.addOutput(sum(full({y->axis(0)->extent(), y->axis(1)->extent()}, 1.0, DataType::Float), {1}));
  const std::vector<at::Tensor> rows = {randn({3, 100})};
  EXPECT_SMELT_ERROR(segmentFusion(sized, RuntimeInfo(sized, inputInfosOf(sized, rows)), forceGridSplit(4)),
                     "cannot split the reduction across blocks (grid_split = 4)",
                     "input T0 is read for its sizes alone");
  segmentAndCheck(sized, rows);
}

// Issue 17, class 3: a tensor expanded from a size-1 dimension next to an
// output that shares no dimension with it. No scheduler takes both outputs,
// so each expression is first tried as a segment of its own, and the one
// reading the expanded tensor was refused: its input, of the expanded
// extent, was checked against extent 1 ("fusion input T3 dimension 0 has
// extent 1 but the given tensor has size 2"). Expanding to another input's
// size (the GQA repeat_kv and causal-mask patterns) then left the expand's
// segment without that input: it now reads it for its sizes alone.
TEST(Segmentation, ExpandedTensorNextToAnIndependentOutput) {
  for (bool symbolic : {true, false}) {
    for (bool to_other_input : {false, true}) {
      SCOPED_TRACE(::testing::Message() << (symbolic ? "symbolic" : "static") << " extents, expanded to "
                                        << (to_other_input ? "x.size(0)" : "2"));
      Fusion fusion;
      FusionGuard guard(&fusion);
      TensorView* a = symbolic ? makeContigTensor(1) : makeConcreteTensor({16});
      TensorView* x = symbolic ? makeContigTensor(2) : makeConcreteTensor({3, 5});
      fusion.addInput(a);
      fusion.addInput(x);
      fusion.addOutput(mul(x, 2.0));
      const IntExpr rows = to_other_input ? x->axis(0)->extent() : IntExpr(2);
      fusion.addOutput(mul(expand(broadcast(a, {true, false}), {rows, -1}), 1.0));
      const SegmentedFusion segmented = segmentAndCheck(fusion, {randn({16}), randn({3, 5})});
      const bool size_only = symbolic && to_other_input;
      EXPECT_EQ(segmented.toString(),
                std::string("segment 0 (pointwise): T1 -> T2\n") +
                    "segment 1 (pointwise): T0" + (size_only ? ", T1" : "") + " -> T5\n");
    }
  }
}

// The expanded tensor is an output (stored once, stride 0, as torch's
// expand) and read by a segment other than its own, which is given that
// stride-0 tensor of the expanded extent.
TEST(Segmentation, ExpandedTensorPassedBetweenSegments) {
  auto owned = std::make_unique<Fusion>();
  Fusion& fusion = *owned;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(1);
  TensorView* x = makeContigTensor(2);
  fusion.addInput(a);
  fusion.addInput(x);
  TensorView* e = expand(broadcast(a, {true, false}), {x->axis(0)->extent(), -1});
  fusion.addOutput(e);
  fusion.addOutput(sum(mul(e, x), {0}));
  fusion.addOutput(sum(add(e, x), {1}));
  const std::vector<at::Tensor> inputs = {randn({6}), randn({4, 6})};
  const SegmentedFusion segmented = segmentAndCheck(fusion, inputs);
  EXPECT_EQ(segmented.toString(),
            "segment 0 (reduction): T0, T1 -> T3, T5\n"
            "segment 1 (reduction): T3, T1 -> T7\n");
  FusionExecutorCache cache(std::move(owned));
  const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  const at::Tensor expanded = inputs[0].expand({4, 6});
  EXPECT_TRUE(at::equal(outputs[0], expanded));
  EXPECT_EQ(outputs[0].strides(), expanded.strides());
  EXPECT_TRUE(at::allclose(outputs[2], (expanded + inputs[1]).sum({1}), 1e-5, 1e-5));
}

// Products of broadcasts that are not two matmul operands (torch fuzzer seed
// 501616: u = sigmoid(x)[:, None]; (u * u).sum() next to sigmoid(sigmoid(x))):
// the segmenter took u * u as a matmul core listing u's broadcast (and the
// sigmoid before it, as the operands' cast) twice, so the segment copy added
// sigmoid(x) as an output twice and every run failed. Also x.float() @
// x.float(), where one cast feeds both operands' broadcasts.
TEST(Segmentation, SquareOfABroadcastAndOneCastFeedingBothOperands) {
  {
    auto owned = std::make_unique<Fusion>();
    FusionGuard guard(owned.get());
    TensorView* x = makeContigTensor(1);
    owned->addInput(x);
    TensorView* sg = sigmoid(x);
    TensorView* u = broadcast(sg, {false, true});
    owned->addOutput(broadcast(sigmoid(sg), {true, false}));
    owned->addOutput(sum(mul(u, u), {0, 1}));
    const at::Tensor in = randn({5});
    FusionExecutorCache cache(std::move(owned));
    const std::vector<at::Tensor> outputs = cache.runFusionWithInputs({in});
    EXPECT_TRUE(at::allclose(outputs[0], in.sigmoid().sigmoid().unsqueeze(0)));
    EXPECT_TRUE(at::allclose(outputs[1], (in.sigmoid() * in.sigmoid()).sum(), 1e-5, 1e-5));
  }
  {
    auto owned = std::make_unique<Fusion>();
    FusionGuard guard(owned.get());
    TensorView* x = makeContigTensor(2, DataType::Half);
    owned->addInput(x);
    TensorView* c = castOp(DataType::Float, x);
    owned->addOutput(sum(mul(broadcast(c, {false, false, true}), broadcast(c, {true, false, false})), {1}));
    const at::Tensor in = randn({8, 8}).to(at::kHalf);
    FusionExecutorCache cache(std::move(owned));
    const at::Tensor out = cache.runFusionWithInputs({in})[0];
    EXPECT_TRUE(at::allclose(out, at::matmul(in.to(at::kFloat), in.to(at::kFloat)), 1e-3, 1e-3));
  }
}

// A reshape merging a dimension that a tensor before it broadcasts with one
// it iterates: x[:, None] + y flattened, and GQA's repeat_kv (kv[:, :, None]
// expanded, copied and flattened into the heads). The pointwise scheduler
// replayed the merge on x's cache as a merge of x's axis with an extent-1
// one, run in the loop of the whole product: x was read at the merged index
// (wrong values, past its end). It now declines, and the reshape reads the
// combined tensor from a kernel of its own.
TEST(Segmentation, ReshapeMergingABroadcastDimensionWithAnIteratedOne) {
  for (bool symbolic : {true, false}) {
    SCOPED_TRACE(symbolic ? "symbolic extents" : "static extents");
    {
      Fusion fusion;
      FusionGuard guard(&fusion);
      TensorView* x = symbolic ? makeContigTensor(2) : makeConcreteTensor({2, 3});
      TensorView* y = symbolic ? makeContigTensor(3) : makeConcreteTensor({2, 4, 3});
      fusion.addInput(x);
      fusion.addInput(y);
      TensorView* sum_xy = add(broadcast(x, {false, true, false}), y);
      fusion.addOutput(reshape(sum_xy, {-1, x->axis(1)->extent()}));
      // The broadcast of x is computed and partly merged: the pointwise
      // scheduler declines the whole, and the pieces run correctly.
      const std::vector<at::Tensor> inputs = {randn({2, 3}), randn({2, 4, 3})};
      const SegmentedFusion segmented = segmentAndCheck(fusion, inputs);
      EXPECT_EQ(segmented.segments.size(), 2u) << segmented.toString();
      auto owned = std::make_unique<Fusion>();
      {
        FusionGuard copy_guard(owned.get());
        TensorView* cx = symbolic ? makeContigTensor(2) : makeConcreteTensor({2, 3});
        TensorView* cy = symbolic ? makeContigTensor(3) : makeConcreteTensor({2, 4, 3});
        owned->addInput(cx);
        owned->addInput(cy);
        owned->addOutput(reshape(add(broadcast(cx, {false, true, false}), cy),
                                 {-1, cx->axis(1)->extent()}));
      }
      FusionExecutorCache cache(std::move(owned));
      const at::Tensor out = cache.runFusionWithInputs(inputs)[0];
      EXPECT_TRUE(at::allclose(out, (inputs[0].unsqueeze(1) + inputs[1]).reshape({-1, 3})));
    }
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* kv = symbolic ? makeContigTensor(4) : makeConcreteTensor({2, 2, 5, 4});
    fusion.addInput(kv);
    TensorView* repeated = set(expand(broadcast(kv, {false, false, true, false, false}), {-1, -1, 3, -1, -1}));
    fusion.addOutput(mul(reshape(repeated, {kv->axis(0)->extent(), -1, kv->axis(2)->extent(),
                                            kv->axis(3)->extent()}),
                         1.0));
    const SegmentedFusion segmented = segmentAndCheck(fusion, {randn({2, 2, 5, 4})});
    EXPECT_EQ(segmented.segments.size(), 2u) << segmented.toString();
  }
}

// GQA's repeat_kv after a projection: k.view(S, H, D).transpose(0, 1)
// [:, None].expand(H, R, S, D).clone().view(H * R, S, D). The reshape merges
// the repeat (expanded before the copy) with the heads, so no kernel runs
// its loops with the copy's producers; the copy is the last thing a kernel
// writes and the reshape a view of it. The copy and the reshape took one
// kernel of their own (merged first, as if a view cost bytes), after a
// kernel writing the un-repeated transpose: two kernels, not one.
TEST(Segmentation, RepeatedHeadsAreCopiedByTheirProducersKernelAndViewed) {
  const int64_t s = 8, h = 2, r = 3, d = 4;
  auto owned = std::make_unique<Fusion>();
  Fusion& fusion = *owned;
  FusionGuard guard(&fusion);
  TensorView* projected = makeConcreteTensor({s, h * d});
  fusion.addInput(projected);
  TensorView* heads = permute(reshape(mul(projected, 2.0), {s, h, d}), {1, 0, 2});
  TensorView* repeated = set(expand(broadcast(heads, {false, true, false, false}), {-1, r, -1, -1}));
  fusion.addOutput(heads);
  fusion.addOutput(reshape(repeated, {h * r, s, d}));
  const std::vector<at::Tensor> inputs = {randn({s, h * d})};
  EXPECT_EQ(segmentAndCheck(fusion, inputs).toString(),
            "segment 0 (pointwise): T0 -> T3, T6\n"
            "segment 1 (pointwise): T6 -> T7\n");
  FusionExecutorCache cache(std::move(owned));
  const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  const at::Tensor want_heads = (inputs[0] * 2.0).view({s, h, d}).transpose(0, 1);
  EXPECT_TRUE(at::allclose(outputs[0], want_heads));
  const at::Tensor want = want_heads.unsqueeze(1).expand({h, r, s, d}).reshape({h * r, s, d});
  EXPECT_TRUE(at::allclose(outputs[1], want));
  EXPECT_EQ(outputs[1].strides(), want.strides());
  const FusionRun& run = cache.lastRun();
  ASSERT_EQ(run.segments.size(), 2u);
  EXPECT_FALSE(run.segments[0].view);
  EXPECT_TRUE(run.segments[1].view);
}

// Two matmuls' rows normalized and weighted by one input, q / q.sum(1) * c
// for q = x @ wq and k = x @ wk. The matmul scheduler takes neither
// normalization, so each is a group of its own; they read the same c and
// neither reads the other: one persistent kernel for both.
TEST(Segmentation, SiblingsReadingACommonInputShareAKernel) {
  const int64_t m = 8, k = 16, n = 12;
  auto owned = std::make_unique<Fusion>();
  Fusion& fusion = *owned;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({m, k});
  TensorView* wq = makeConcreteTensor({k, n});
  TensorView* wk = makeConcreteTensor({k, n});
  TensorView* c = makeConcreteTensor({m, n});
  for (TensorView* in : {x, wq, wk, c}) fusion.addInput(in);
  auto normalized = [&](TensorView* t) {
    return mul(div(t, broadcast(sum(t, {1}), {false, true})), c);
  };
  fusion.addOutput(normalized(matmul(x, wq)));
  fusion.addOutput(normalized(matmul(x, wk)));
  const std::vector<at::Tensor> inputs = {randn({m, k}), randn({k, n}), randn({k, n}), randn({m, n})};
  const SegmentedFusion segmented = segmentAndCheck(fusion, inputs);
  std::vector<SchedulerType> schedulers;
  for (const Segment& segment : segmented.segments) schedulers.push_back(segment.scheduler);
  EXPECT_EQ(schedulers, (std::vector<SchedulerType>{SchedulerType::Matmul, SchedulerType::Matmul,
                                                    SchedulerType::Persistent}))
      << segmented.toString();
}

// Issue 17, class 4: the attention softmax of GPT-2, BERT, T5 and BART,
// softmax(s * 0.25 + mask, -1).view(B * H, T, T) with the mask broadcast
// over the heads. The view takes a pointwise segment; the persistent one
// writes exp(x - max) and its row sums. Its reference had three dimension
// runs (B, H and T: the mask breaks them), the outermost a serial loop, and
// exp(x - max), feeding both outputs, runs in neither's loops: "Local
// tensor T14 needs (T0.size[0] * 4) registers". B is bound to BIDz now.
TEST(Segmentation, AttentionSoftmaxWithAMaskBroadcastOverHeads) {
  for (bool symbolic : {true, false}) {
    SCOPED_TRACE(symbolic ? "symbolic extents" : "static extents");
    const int64_t b = 2, h = 3, t = 8;
    auto owned = std::make_unique<Fusion>();
    Fusion& fusion = *owned;
    FusionGuard guard(&fusion);
    TensorView* s = symbolic ? makeContigTensor(4) : makeConcreteTensor({b, h, t, t});
    TensorView* mask = symbolic ? makeContigTensor(3) : makeConcreteTensor({b, t, t});
    fusion.addInput(s);
    fusion.addInput(mask);
    TensorView* x = add(mul(s, 0.25), broadcast(mask, {false, true, false, false}));
    TensorView* e = exp(sub(x, broadcast(max(x, {3}), {false, false, false, true})));
    TensorView* y = div(e, broadcast(sum(e, {3}), {false, false, false, true}));
    fusion.addOutput(reshape(y, {-1, s->axis(2)->extent(), s->axis(3)->extent()}));
    std::vector<std::vector<at::Tensor>> runs = {{randn({b, h, t, t}), randn({b, t, t})}};
    if (symbolic) runs.push_back({randn({3, 2, 5, 5}), randn({3, 5, 5})});
    FusionExecutorCache cache(std::move(owned));
    for (const std::vector<at::Tensor>& inputs : runs) {
      const at::Tensor want = at::softmax(inputs[0] * 0.25 + inputs[1].unsqueeze(1), -1)
                                  .view({-1, inputs[0].size(2), inputs[0].size(3)});
      const at::Tensor got = cache.runFusionWithInputs(inputs).at(0);
      EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << got - want;
      EXPECT_EQ(got.sizes(), want.sizes());
      EXPECT_EQ(got.strides(), want.strides());
      const FusionRun& run = cache.lastRun();
      // The mask broadcasts the heads, so no loop merges batch and heads as
      // the view does: the softmax takes the masked scores, and the view
      // (whose rows merge batch and heads) runs as a view of its output.
      ASSERT_EQ(run.segments.size(), 2u) << run.toString();
      EXPECT_EQ(run.segments[0].scheduler, SchedulerType::Persistent) << run.toString();
      EXPECT_TRUE(run.segments[1].view) << run.toString();
    }
  }
}

// Layer-norm backward: dx needs the rows' sums (a persistent kernel), dw and
// db sum over the rows (outer reductions, one kernel: they share its loops).
// The reductions compute dy as float and x-hat again from the fp16 inputs,
// mean and rstd instead of reading fp32 copies the persistent kernel would
// write for them: that kernel writes dx alone, and every segment reads
// fusion inputs only.
TEST(Segmentation, CheapInputsAreComputedAgainWhereTheyWeighLess) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* dy_in = makeContigTensor(2, DataType::Half);
  TensorView* x_in = makeContigTensor(2, DataType::Half);
  TensorView* w_in = makeContigTensor(1, DataType::Half);
  TensorView* mean_in = makeContigTensor(1);
  TensorView* rstd_in = makeContigTensor(1);
  for (TensorView* in : {dy_in, x_in, w_in, mean_in, rstd_in}) fusion.addInput(in);
  TensorView* dy = castOp(DataType::Float, dy_in);
  TensorView* rstd = broadcast(rstd_in, {false, true});
  TensorView* xhat = mul(sub(castOp(DataType::Float, x_in), broadcast(mean_in, {false, true})), rstd);
  TensorView* wdy = mul(broadcast(castOp(DataType::Float, w_in), {true, false}), dy);
  TensorView* c1 = broadcast(sum(mul(xhat, wdy), {1}), {false, true});
  TensorView* c2 = broadcast(sum(wdy, {1}), {false, true});
  TensorView* dx = mul(sub(wdy, add(mul(xhat, c1), c2)), rstd);
  fusion.addOutput(castOp(DataType::Half, dx));
  fusion.addOutput(sum(mul(dy, xhat), {0}));
  fusion.addOutput(sum(dy, {0}));
  SegmentedFusion segmented = segmentAndCheck(
      fusion, {randn({16, 64}, at::kHalf), randn({16, 64}, at::kHalf), randn({64}, at::kHalf),
               randn({16}), at::rand({16}).add(0.5)}, 2e-2);
  ASSERT_EQ(segmented.segments.size(), 2u) << segmented.toString();
  EXPECT_EQ(segmented.segments[0].scheduler, SchedulerType::Persistent);
  EXPECT_EQ(segmented.segments[0].outputs, std::vector<const Val*>{fusion.outputs()[0]});
  EXPECT_EQ(segmented.segments[1].scheduler, SchedulerType::Reduction);
  EXPECT_EQ(segmented.segments[1].outputs,
            (std::vector<const Val*>{fusion.outputs()[1], fusion.outputs()[2]}));
  for (const Segment& segment : segmented.segments) {
    for (const Val* in : segment.inputs) EXPECT_TRUE(in->isFusionInput()) << segmented.toString();
  }
}

// A tensor computed from inputs that weigh more than it (a sum of two fp32
// tensors) is passed between segments, not computed again.
TEST(Segmentation, InputsWeighingMoreThanTheTensorAreNotReadAgain) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeContigTensor(2);
  TensorView* b = makeContigTensor(2);
  fusion.addInput(a);
  fusion.addInput(b);
  TensorView* v = add(a, b);
  fusion.addOutput(sub(v, broadcast(max(v, {1}), {false, true})));
  fusion.addOutput(sum(v, {0}));
  SegmentedFusion segmented = segmentAndCheck(fusion, {randn({8, 32}), randn({8, 32})});
  ASSERT_EQ(segmented.segments.size(), 2u) << segmented.toString();
  EXPECT_EQ(segmented.segments[1].inputs, std::vector<const Val*>{v}) << segmented.toString();
}

// Issue 43: the search's work grows linearly with the number of repeated
// blocks (a transformer's layers). Each round merges the best pair a
// scheduler takes; the pairs it declined stay declined while their groups
// are unchanged, and are remembered rather than offered to the schedulers
// again every round. Offering them again made the search quadratic: 12, 26,
// 60, 152 candidates for 1, 2, 4, 8 blocks; now 12, 24, 48, 96.
TEST(Segmentation, SearchWorkGrowsLinearlyWithRepeatedBlocks) {
  const int64_t m = 8, k = 16;
  auto candidates = [&](int blocks) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* v = makeConcreteTensor({m, k});
    fusion.addInput(v);
    std::vector<at::Tensor> inputs = {randn({m, k})};
    for (int b = 0; b < blocks; ++b) {
      TensorView* w = makeConcreteTensor({k, k});
      fusion.addInput(w);
      inputs.push_back(randn({k, k}));
      TensorView* h = matmul(v, w);
      v = add(div(h, broadcast(sum(h, {1}), {false, true})), v);
    }
    fusion.addOutput(v);
    RuntimeInfo runtime(fusion, inputInfosOf(fusion, inputs));
    const SegmentedFusion segmented = segmentFusion(fusion, runtime);
    EXPECT_EQ(segmented.segments.size(), static_cast<size_t>(2 * blocks)) << segmented.toString();
    return segmented.candidates_checked;
  };
  const int64_t one = candidates(1), two = candidates(2), four = candidates(4), eight = candidates(8);
  SCOPED_TRACE(::testing::Message() << "candidates checked for 1, 2, 4, 8 blocks: " << one << ", "
                                    << two << ", " << four << ", " << eight);
  // Each block adds the same work: 4 more blocks cost what 2 and 2 did.
  EXPECT_EQ(eight - four, 2 * (four - two));
  EXPECT_LE(eight, 8 * one);
}

}  // namespace
}  // namespace smelt::testing
