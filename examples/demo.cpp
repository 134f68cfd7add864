// smelt_demo: the main job. It builds two fusions (a softmax and a tiled
// matmul with operands staged through shared memory), schedules them with the
// C++ primitives, prints the math and every tensor's schedule, lowers them and
// prints the kernel IR (loop nest, allocations, barriers) and its summary.
// Later stages extend it to shared-memory plans, CUDA and execution.
#include <iostream>

#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "lower/lower.h"

namespace {

void printKernel(smelt::Fusion& fusion) {
  smelt::GpuLower lower(&fusion);
  const smelt::kir::Kernel& kernel = lower.run();
  std::cout << "--- kernel IR ---\n" << kernel.toString() << "--- summary ---\n"
            << kernel.summary() << "\n";
}

void softmax() {
  using namespace smelt;
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* x = makeConcreteTensor({1024, 500});
  fusion.addInput(x);
  TensorView* row_max = broadcast(max(x, {1}), {false, true});
  TensorView* e = exp(sub(x, row_max));
  TensorView* y = div(e, broadcast(sum(e, {1}), {false, true}));
  fusion.addOutput(y);
  // One row per block, 128 threads across the row.
  y->split(1, 128);
  y->axis(0)->parallelize(ParallelType::BIDx);
  y->axis(2)->parallelize(ParallelType::TIDx);
  propagateSchedule(y);
  inlineMost(&fusion);
  std::cout << "=== softmax over rows, one row per block ===\n" << fusion.toString();
  printKernel(fusion);
}

void tiledMatmul() {
  using namespace smelt;
  Fusion fusion;
  FusionGuard guard(&fusion);
  TensorView* a = makeConcreteTensor({256, 128});
  TensorView* b = makeConcreteTensor({128, 256});
  fusion.addInput(a);
  fusion.addInput(b);
  TensorView* c = matmul(a, b);  // [M, rK, N]
  fusion.addOutput(c);
  TensorView* a_s = a->cacheAfter()->setMemoryType(MemoryType::Shared)->setName("A_s");
  TensorView* b_s = b->cacheAfter()->setMemoryType(MemoryType::Shared)->setName("B_s");
  // 32x32 output tiles, a K loop in steps of 32.
  c->split(0, 32)->split(2, 32)->split(4, 32);  // [Mo, Mi, rKo, rKi, No, Ni]
  c->reorder({{0, 0}, {4, 1}, {2, 2}, {1, 3}, {5, 4}, {3, 5}});  // [Mo, No, rKo, Mi, Ni, rKi]
  c->axis(0)->parallelize(ParallelType::BIDy);
  c->axis(1)->parallelize(ParallelType::BIDx);
  c->axis(3)->parallelize(ParallelType::TIDy);
  c->axis(4)->parallelize(ParallelType::TIDx);
  a_s->computeAt(c, 3);  // A_s: [Mo, rKo, Mi, Ki]
  b_s->computeAt(c, 3);  // B_s: [No, rKo, Ni, Ki]
  // Each thread of the 32x32 block loads one element of each tile.
  a_s->axis(-1)->parallelize(ParallelType::TIDx);
  b_s->axis(-1)->parallelize(ParallelType::TIDy);
  inlineMost(&fusion);
  std::cout << "=== tiled matmul, A and B staged through shared memory ===\n"
            << fusion.toString();
  printKernel(fusion);
}

}  // namespace

int main() {
  try {
    softmax();
    tiledMatmul();
  } catch (const smelt::Error& e) {
    std::cerr << "smelt_demo: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
