// Cases the fusion fuzzer found (test_fusion_fuzz.cpp), reduced to the calls
// that matter: each used to crash, throw an internal error or produce a wrong
// result, and must now be correct (simulated against ATen) or rejected with
// a smelt::Error naming the problem.
#include <gtest/gtest.h>

#include "common/expect_error.h"
#include "common/example_fusions.h"
#include "codegen/cuda_codegen.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "runtime/fusion_executor_cache.h"
#include "runtime/nvrtc_compiler.h"
#include "scheduler/registry.h"
#include "simulator/expect_kernel_correct.h"

namespace smelt::sim::testing {
namespace {

// A Local tensor bound to TIDx, read by a consumer that is serial over that
// axis: every element came from thread 0's registers (wrong results).
TEST(FuzzRegression, LocalTensorReadAcrossThreadsIsRejected) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({3}, DataType::Double);
  fusion.addInput(t0);
  TensorView* t2 = erf(t0);
  TensorView* t3 = set(t2);
  TensorView* t4 = ceil(t3);
  fusion.addOutput(t4);
  t3->axis(0)->parallelize(ParallelType::TIDx);
  t4->split(0, 8);
  t2->setMemoryType(MemoryType::Local);
  t4->reorder({{1, 0}});
  t3->inlineMost();
  EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "tensor T2 is in Local memory", "bound to TIDx",
                     "T3 does not read it along an axis bound to TIDx", "Shared");
  // Reading it in the same thread is fine.
  t4->axis(0)->parallelize(ParallelType::TIDx);
  EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "T2", "TIDx");  // split: not the same loop
  t3->setMemoryType(MemoryType::Shared);
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Seed 20: T3 inlined into its consumers, then its inlined axis bound to
// TIDz. Validating T3's producer followed T3's stale compute position and
// hit an internal check; now T3 itself is reported first.
TEST(FuzzRegression, ParallelizingAnInlinedAxisIsRejectedByName) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({2});
  fusion.addInput(t1);
  TensorView* t3 = castOp(DataType::Half, t1);
  TensorView* t6 = castOp(DataType::Float, t3);
  fusion.addOutput(t6);
  t3->inlineMost();
  t3->axis(0)->parallelize(ParallelType::TIDz);
  EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "inconsistent parallelization across compute-at",
                     "tensor T1", "TIDz");
  // A producer inlined after that: inlineMost follows T3's stale position.
  TensorView* cached = t1->cacheAfter();
  EXPECT_SMELT_ERROR(cached->inlineMost(), "tensor T1 is computed at position 1", "no longer maps",
                     "parallelized after computeAt/inlineAt");
}

// A block reduction whose output rows do not divide the serial split: the
// generated CUDA made every thread store the result, those past the last
// row out of bounds of T1 (the simulator, modelling the intended
// semantics, did not show it). Now only in-bounds lane 0 stores.
TEST(FuzzRegression, BlockReductionStoresOnlyInBoundsFromOneThread) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({5, 6});
  fusion.addInput(t0);
  TensorView* t1 = sum(t0, {1});
  fusion.addOutput(t1);
  t1->axis(1)->parallelize(ParallelType::TIDx);
  t1->split(0, 2);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  const std::string cuda = generateCuda(kernel, "row_sum");
  EXPECT_NE(cuda.find("if ((i0 * 2) + i1 < 5 && index_t(threadIdx.x) == 0) T1.data[(i0 * 2) + i1] = reduced;"),
            std::string::npos)
      << cuda;
  EXPECT_NO_THROW(compileCuda(cuda, "row_sum"));
  EXPECT_EQ(firstFinding(kernel, atenReference(fusion, randomInputs(fusion), 1e-5, 1e-4)), "");
}

// Seed 960: a block max-reduction into a Shared tensor. Every thread of the
// block stored the same result: a write-write race on T2's bytes.
TEST(FuzzRegression, BlockReductionIntoSharedMemoryHasOneWriter) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({4});
  fusion.addInput(t1);
  TensorView* t2 = max(t1, {0});
  TensorView* t4 = abs(t2);
  fusion.addOutput(t4);
  t2->axis(0)->parallelize(ParallelType::TIDx);
  t2->setMemoryType(MemoryType::Shared);
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Seed 609: relu (and abs) of a bool tensor were accepted, though torch
// defines neither: the fusion had no reference result.
TEST(FuzzRegression, ReluAndAbsOfBoolAreRejectedAsTorchDoes) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* flags = makeConcreteTensor({4}, DataType::Bool);
  fusion.addInput(flags);
  EXPECT_SMELT_ERROR(relu(flags), "relu: tensor T0 is bool");
  EXPECT_SMELT_ERROR(abs(flags), "abs: tensor T0 is bool");
}

// Seed 1338: a sum over 4 elements whose reduction axis was split as
// [4 (nparts), 1] -> [4, 1, 1] -> [4, 1, ceil(1/4), 4]: the last split
// overruns its input (extent 1) while the logical index stays below 4, so
// elements were summed several times (-4.49 for -1.58). The split's input
// is now bounded too.
TEST(FuzzRegression, NestedNonDivisibleSplitVisitsEachElementOnce) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({4});
  fusion.addInput(t1);
  TensorView* t8 = sum(t1, {0});
  fusion.addOutput(t8);
  t8->split(0, 4, false);
  t8->split(0, 4, false);
  t8->split(2, 4);
  t8->axis(1)->parallelize(ParallelType::TIDx);
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Seed 1480: a Shared tensor whose serial axis was inlined into its
// consumer's TIDx loop got one element for the whole block, which every
// thread wrote (a WAW race): allocation looked at the tensor's own binding,
// not at the loop's.
TEST(FuzzRegression, SharedTensorInsideAThreadLoopGetsAnElementPerThread) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({6});
  fusion.addInput(t1);
  TensorView* t3 = set(relu(t1));
  TensorView* t5 = erf(t3);
  fusion.addOutput(t5);
  t5->axis(0)->parallelize(ParallelType::TIDx);
  t3->setMemoryType(MemoryType::Shared);
  inlineMost(&fusion);
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Seeds 402 and 1680: a Global output written one element per block
// (BIDy/BIDx) and read whole by a serial consumer in the same kernel: block
// 0 read what other blocks had not written yet (no grid-wide barrier).
TEST(FuzzRegression, GlobalTensorReadAcrossBlocksIsRejected) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({4}, DataType::Double);
  fusion.addInput(t0);
  TensorView* t2 = cos(t0);
  TensorView* t3 = exp(t2);
  fusion.addOutput(t3);
  fusion.addOutput(t2);
  t2->axis(0)->parallelize(ParallelType::BIDx);
  EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "tensor T1 is in Global memory", "bound to BIDx",
                     "blocks cannot synchronize within a kernel: parallelize T2 the same way");
  t3->axis(0)->parallelize(ParallelType::BIDx);
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Seed 20953: a Global reduction with a serial step and a TIDx reduction axis
// had every thread accumulate its partial sum into the one output element
// before the block reduction (a duplicate Global write, wrong on a GPU). Such
// a schedule is refused; with a register accumulator it is correct.
TEST(FuzzRegression, SerialStepsBeforeABlockReductionNeedARegisterAccumulator) {
  for (bool accumulator : {false, true}) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    TensorView* t0 = makeConcreteTensor({8});
    fusion.addInput(t0);
    TensorView* t1 = sum(t0, {0});
    fusion.addOutput(t1);
    t1->split(0, 4, false);  // [r4 (TIDx), r2 serial]
    t1->axis(0)->parallelize(ParallelType::TIDx);
    if (!accumulator) {
      EXPECT_SMELT_ERROR(GpuLower(&fusion).run(), "tensor T1 reduces both serially and across "
                         "threads in Global memory", "cacheBefore()");
      continue;
    }
    t1->cacheBefore();
    expectKernelCorrect(fusion, randomInputs(fusion));
  }
}

// Seed 23628: a sum over the outer axis of [1, 5] whose kept axis is
// vectorized. Its init was placed before the reduction loop using the
// vectorized loop's index, which exists only inside that loop (NVRTC failed
// to compile it; the simulator read a stale index and left four elements
// NaN). A vectorized axis inside the reduction loop now gets its own init
// loop, and the simulator names an index used outside its loop.
TEST(FuzzRegression, ReductionInitCopiesAVectorizedLoopInsideTheReductionLoop) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({1, 5});
  fusion.addInput(t0);
  TensorView* t1 = sum(t0, {0});
  TensorView* t2 = broadcast(t1, {true, false});
  TensorView* t3 = minimum(t2, t2);
  fusion.addOutput(t3);
  t2->setMemoryType(MemoryType::Shared);
  t1->axis(1)->parallelize(ParallelType::Vectorize);
  t3->axis(1)->parallelize(ParallelType::TIDx);
  t1->cacheAfter();
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  EXPECT_NO_THROW(compileCuda(generateCuda(kernel, "vectorized_init"), "vectorized_init"));
  EXPECT_EQ(firstFinding(kernel, atenReference(fusion, randomInputs(fusion), 1e-5, 1e-5)), "");
}

// Seed 23891: [2, 3] split by 1, the inner 1 merged with the 3, the merge
// split into 2 parts, the second part split by 3: [TIDx 2, 2, 1, 3]. The
// nparts split overruns the merged extent 3 (2 x 2 = 4 indices); the merge
// carried the overrun into the inner output of the first split, whose
// index wrapped into the TIDx one while every logical index stayed in
// range: thread 0 wrote row 1 too (a duplicate global write). The merged
// index is now bounded as well.
TEST(FuzzRegression, OverrunOfAMergeIntoASplitsInnerAxisIsBounded) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({2, 3});
  fusion.addInput(t0);
  TensorView* t1 = cos(t0);
  fusion.addOutput(t1);
  t1->split(0, 1);
  t1->merge(1);
  t1->axis(0)->parallelize(ParallelType::TIDx);
  t1->split(1, 2, false);
  t1->split(2, 3);
  t1->cacheBefore();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Seed 100097 (auto-scheduled): a sum over a reshaped input. The input's
// cache, a computed tensor after caching, has an axis (6) that stands for no
// dimension of the reduction; the scheduler went on with the layout it had
// before caching and hit an internal check. Now it declines the fusion.
TEST(FuzzRegression, SchedulerDeclinesACachedInputWhoseAxisMapsToNoDimension) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({6}, DataType::Half);
  fusion.addInput(t0);
  TensorView* t2 = reshape(t0, {2, 3});
  fusion.addOutput(sum(t2, {0}));
  const RuntimeInfo runtime(fusion, inputInfosOf(fusion, randomInputs(fusion)));
  EXPECT_SMELT_ERROR(scheduleFusion(fusion, runtime), "no scheduler takes this fusion",
                     "does not correspond to a dimension");
}

// Seeds 102196 and 100120 (auto-scheduled): the pointwise scheduler
// vectorized the cache of an input [1, 6] that a reshape squeezes to [6]; the
// extent-1 axis stands for no dimension of the output, and propagation left
// it innermost ("does not end in a vector axis"). The fusion was declined
// until a squeezed axis counted as needing no loop, as a broadcast (the
// scatter's squeeze-only segments): now it is scheduled, and runs right.
TEST(FuzzRegression, PointwiseSchedulesAnInputAxisSqueezedByAReshape) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({1, 6}, DataType::Half);
  fusion.addInput(t0);
  fusion.addOutput(neg(reshape(t0, {6})));
  const std::vector<at::Tensor> inputs = randomInputs(fusion);
  scheduleFusion(fusion, RuntimeInfo(fusion, inputInfosOf(fusion, inputs)));
  expectKernelCorrect(fusion, inputs);
  GpuLower lower(&fusion);
  EXPECT_NO_THROW(compileCuda(generateCuda(lower.run(), "squeezed_input"), "squeezed_input"));
}

// Seed 103321 (auto-scheduled): an output squeeze(T1) of rank 0 next to an
// output of T1's shape [1]: the cache of T1 was bound to BIDx by the
// schedule, read by the squeeze outside any BIDx loop (lowering refused
// it). The pointwise scheduler now declines an op that drops a dimension its
// computed input iterates.
TEST(FuzzRegression, PointwiseDeclinesASqueezeOfAScheduledDimension) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({1}, DataType::Half);
  fusion.addInput(t1);
  fusion.addOutput(erf(logicalNot(t1)));
  fusion.addOutput(squeeze(t1, {0}));
  const RuntimeInfo runtime(fusion, inputInfosOf(fusion, randomInputs(fusion)));
  EXPECT_SMELT_ERROR(scheduleFusion(fusion, runtime), "no scheduler takes this fusion", "drops dimension 0");
}

// Seed 100437 (auto-scheduled): an output expanded along dimension 0 is
// stored with stride 0, and the pointwise schedule bound that dimension to
// TIDy: every TIDy thread stored the same elements (a duplicate global
// write). Only index 0 along an expanded output dimension stores now.
TEST(FuzzRegression, ExpandedOutputDimensionIsStoredOnce) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({3});
  fusion.addInput(t1);
  TensorView* t5 = expand(set(reshape(fmod(t1, t1), {1, 3})), {3, -1});
  fusion.addOutput(castOp(DataType::Double, t5));
  fusion.addOutput(t5);
  const std::vector<at::Tensor> inputs = randomInputs(fusion);
  scheduleFusion(fusion, RuntimeInfo(fusion, inputInfosOf(fusion, inputs)));
  expectKernelCorrect(fusion, inputs);
}

// Seed 302651: a 3-stage circular-buffered Shared cache whose main loop
// (over 4 columns) sits in a loop over the rows. Thread 0 loads, every
// thread reads; nothing ordered the last reads of a row before the next
// row's prologue overwrote the slots (a WAR race). A barrier follows the
// main loop when an enclosing loop iterates.
TEST(FuzzRegression, CircularBufferInsideAnIteratingLoopWaitsBeforeTheNextPrologue) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({2, 4});
  fusion.addInput(t0);
  TensorView* t1 = logicalAnd(t0, t0);
  TensorView* t4 = permute(t1, {1, 0});
  fusion.addOutput(t4);
  t4->split(1, 8, false);
  t4->axis(1)->parallelize(ParallelType::TIDx);
  TensorView* t6 = t0->cacheAfter();
  t6->setMemoryType(MemoryType::Shared);
  t6->computeAt(t1, 2);
  t6->circularBuffer(3);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  int64_t barriers = 0;  // at the top of the main loop and after it
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) { barriers += s->kind() == kir::StmtKind::BlockSync; });
  EXPECT_EQ(barriers, 2) << kernel.toString();
  EXPECT_EQ(firstFinding(kernel, atenReference(fusion, randomInputs(fusion), 1e-5, 1e-5)), "");
}

// Seed 302615 (auto-scheduled): two outputs broadcast from one input
// [2] -> [1, 2], vectorized by 2. Propagating the schedule through the input
// appended the broadcast axis the input lacks after the vector axis ("does
// not end in a vector axis of width 2"); the vector axis now moves behind
// such axes, which run once.
TEST(FuzzRegression, VectorAxisMovesBehindAnUnmappedBroadcastAxis) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t1 = makeConcreteTensor({2});
  fusion.addInput(t1);
  fusion.addOutput(broadcast(t1, {true, false}));
  fusion.addOutput(broadcast(t1, {true, false}));
  const std::vector<at::Tensor> inputs = randomInputs(fusion);
  const std::unique_ptr<HeuristicParams> params =
      scheduleFusion(fusion, RuntimeInfo(fusion, inputInfosOf(fusion, inputs)));
  EXPECT_NE(params->toString().find("vector_width=2"), std::string::npos) << params->toString();
  expectKernelCorrect(fusion, inputs);
}

// Seed 304426: a Shared tensor expanded along dimension 0, that dimension
// bound to TIDz: every TIDz thread stored the one slice the expanded axis
// has (a WAW race). Only the first index along it stores, per block.
TEST(FuzzRegression, ExpandedSharedDimensionIsStoredOncePerBlock) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({2});
  fusion.addInput(t0);
  TensorView* t3 = reshape(t0, {1, 2});
  TensorView* t7 = expand(t3, {2, -1});
  TensorView* t8 = pad(t7, {0, 2});
  fusion.addOutput(t8);
  t3->setMemoryType(MemoryType::Local);
  t7->axis(0)->parallelize(ParallelType::TIDz);
  t8->reorder({{1, 0}});
  t7->setMemoryType(MemoryType::Shared);
  t0->cacheAfter();
  expectKernelCorrect(fusion, randomInputs(fusion));
}

// Runs `fusion` through a FusionExecutorCache on `inputs`, expects every
// output to match ATen and returns what the run did.
FusionRun runCacheAgainstATen(std::unique_ptr<Fusion> fusion, const std::vector<at::Tensor>& inputs) {
  const std::vector<at::Tensor> expected = smelt::testing::evaluateWithATen(*fusion, inputs);
  FusionExecutorCache cache(std::move(fusion));
  const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  EXPECT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size() && i < expected.size(); ++i) {
    EXPECT_EQ(outputMismatch(i, outputs[i], expected[i], 1e-5, 1e-6), "");
  }
  return cache.lastRun();
}

// Seed 1412 (through FusionExecutorCache): a reshaped input that is an
// output and read by another output, vectorized. The input iterates the
// dimension the view splits, so the pieces (2, 3) and the last dimension (6)
// form one run of 36 elements: 4-wide vectors.
TEST(FuzzRegression, CachedReshapedOutputVectorizes) {
  auto owned = std::make_unique<Fusion>();
  Fusion& fusion = *owned;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({1, 6, 6});
  fusion.addInput(t0);
  TensorView* t3 = reshape(t0, {1, 2, 3, 6});
  TensorView* t8 = castOp(DataType::Bool, t3);
  fusion.addOutput(t8);
  fusion.addOutput(t3);
  const FusionRun run = runCacheAgainstATen(std::move(owned), randomInputs(fusion));
  EXPECT_EQ(run.segments.size(), 1u) << run.toString();
  EXPECT_NE(run.toString().find("vector_width=4"), std::string::npos) << run.toString();
}

// Seeds 3465 and 5531 (through FusionExecutorCache): an output with an
// expanded axis is the pointwise reference, so its dimensions form three
// runs, and the outermost run stayed a serial loop. A tensor read by both
// outputs (T1; T0's cache) runs in neither output's loops, so it cannot be
// inlined and its register buffer spanned that loop: "Local tensor T1 needs
// T0.size[0] registers" at lowering. The third run is bound to BIDz now.
TEST(FuzzRegression, ThirdDimensionRunIsBoundToBIDzNotASerialLoop) {
  {  // seed 3465
    auto owned = std::make_unique<Fusion>();
    Fusion& fusion = *owned;
    FusionGuard guard(&fusion);
    TensorView* t0 = makeContigTensor(2, DataType::Bool);
    fusion.addInput(t0);
    TensorView* t1 = reshape(t0, {t0->axis(0)->extent(), 1, t0->axis(1)->extent()});
    TensorView* t2 = ne(t1, t1);
    fusion.addOutput(expand(t1, {-1, t0->axis(1)->extent(), -1}));
    fusion.addOutput(t2);
    const FusionRun run = runCacheAgainstATen(std::move(owned), randomInputs(fusion, {{4, 3}}, 3465));
    ASSERT_EQ(run.segments.size(), 1u) << run.toString();
    EXPECT_EQ(run.segments[0].launch.grid[2], 4) << run.toString();  // T0.size[0] blocks along z
  }
  {  // seed 5531
    auto owned = std::make_unique<Fusion>();
    Fusion& fusion = *owned;
    FusionGuard guard(&fusion);
    TensorView* t0 = makeContigTensor(2);
    fusion.addInput(t0);
    TensorView* t4 = expand(broadcast(t0, {false, true, false}), {-1, t0->axis(0)->extent(), -1});
    fusion.addOutput(tanh(t4));
    fusion.addOutput(castOp(DataType::Bool, t0));
    const FusionRun run = runCacheAgainstATen(std::move(owned), randomInputs(fusion, {{5, 3}}, 5531));
    ASSERT_EQ(run.segments.size(), 1u) << run.toString();
    EXPECT_EQ(run.segments[0].launch.grid[2], 5) << run.toString();
  }
}

// Runs `fusion` through a FusionExecutorCache on `inputs` and expects ATen's
// outputs; returns what ran.
FusionRun expectCacheMatchesATen(std::unique_ptr<Fusion> owned, const std::vector<at::Tensor>& inputs) {
  Fusion& fusion = *owned;
  const std::vector<at::Tensor> expected = smelt::testing::evaluateWithATen(fusion, inputs);
  FusionExecutorCache cache(std::move(owned));
  const std::vector<at::Tensor> outputs = cache.runFusionWithInputs(inputs);
  EXPECT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size() && i < expected.size(); ++i) {
    EXPECT_EQ(outputMismatch(i, outputs[i], expected[i], 1e-5, 1e-5), "") << cache.lastRun().toString();
  }
  return cache.lastRun();
}

// Issue 17 (found again by the fuzzer's addNormalizeAndFlatten with the fix
// reverted: seeds 18 and 190 of the default run): x * sum(x, 1, keepdim)
// flattened. The reduction and the reshape land in different segments; the
// pointwise one replayed the flatten's merge onto the broadcast of the
// row sums, whose merged loop dropped the broadcast dimension, and read the
// row sums at the flat index: every row after the first was garbage.
// Symbolic and static extents (torch.compile defines static ones). Now the
// product runs in the persistent kernel of the sums (the flatten is left as
// a view of its output).
TEST(FuzzRegression, ReductionBroadcastThenFlattenMatchesATenThroughTheCache) {
  for (const bool symbolic : {true, false}) {
    auto owned = std::make_unique<Fusion>();
    FusionGuard guard(owned.get());
    TensorView* x = symbolic ? makeContigTensor(2) : makeConcreteTensor({4, 3});
    owned->addInput(x);
    TensorView* scaled = mul(x, broadcast(sum(x, {1}), {false, true}));
    owned->addOutput(reshape(scaled, {-1}));
    const FusionRun run = expectCacheMatchesATen(std::move(owned), {at::rand({4, 3})});
    ASSERT_EQ(run.segments.size(), 2u) << run.toString();
    EXPECT_EQ(run.segments[0].scheduler, SchedulerType::Persistent) << run.toString();
    EXPECT_TRUE(run.segments[1].view) << run.toString();
  }
}

// The same merge without a reduction: an input of size 1 along the merged
// dimension is read directly (not cached), indexed from its consumer, in
// the one pointwise kernel; an expand() computed before the merge puts a
// segment boundary after it (whose expanded size the next segment accepts).
TEST(FuzzRegression, BroadcastDimensionMergedByAReshapeMatchesATenThroughTheCache) {
  {
    auto owned = std::make_unique<Fusion>();
    FusionGuard guard(owned.get());
    TensorView* x = makeContigTensor(2);
    TensorView* column = examples::makeBroadcastingTensor({4, 1});
    owned->addInput(x);
    owned->addInput(column);
    owned->addOutput(flatten(add(x, column)));
    const FusionRun run = expectCacheMatchesATen(std::move(owned), {at::randn({4, 3}), at::randn({4, 1})});
    EXPECT_EQ(run.segments.size(), 1u) << run.toString();
  }
  {
    auto owned = std::make_unique<Fusion>();
    FusionGuard guard(owned.get());
    TensorView* column = examples::makeBroadcastingTensor({4, 1});
    owned->addInput(column);
    owned->addOutput(flatten(exp(expand(column, {-1, 3}))));
    expectCacheMatchesATen(std::move(owned), {at::randn({4, 1})});
  }
}

// Seed 5005546 of the fusion fuzzer: a broadcast output ([1], Global)
// computed inside a thread loop of 5 is stored by thread 0 alone, and the
// product next to it read it back in every thread without a barrier (the
// sync analysis took the shared loop for a thread-private access): NaN in
// the simulator's reverse thread order.
TEST(FuzzRegression, BroadcastOutputStoredByOneThreadIsReadAfterABarrier) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* t0 = makeConcreteTensor({5, 2});
  TensorView* t1 = fusion.newTensor(DataType::Float, {fusion.newIterDomain(1, IterType::Broadcast)},
                                    MemoryType::Global);
  fusion.addInput(t0);
  fusion.addInput(t1);
  TensorView* t2 = set(max(t0, {1}));
  TensorView* t3 = sum(t1, {0});
  TensorView* t4 = broadcast(t3, {true});
  TensorView* t5 = add(mul(t1, t4), t2);
  fusion.addOutput(t5);
  fusion.addOutput(t4);
  t2->axis(0)->parallelize(ParallelType::Vectorize);
  inlineMost(&fusion);
  t2->split(0, 1, false);
  t3->axis(0)->parallelize(ParallelType::TIDx);
  t5->axis(0)->parallelize(ParallelType::TIDx);
  GpuLower lower(&fusion);
  const kir::Kernel& kernel = lower.run();
  int64_t barriers = 0;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) { barriers += s->kind() == kir::StmtKind::BlockSync; });
  EXPECT_GE(barriers, 1) << kernel.toString();
  expectKernelCorrect(fusion, {at::randn({5, 2}), at::randn({1})});
}

}  // namespace
}  // namespace smelt::sim::testing
