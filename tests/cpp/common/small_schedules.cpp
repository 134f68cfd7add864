#include "common/small_schedules.h"

#include "fusion/ops.h"
#include "fusion/transform_replay.h"

namespace smelt::cases {

void buildOuterReduction() {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({64, 32});
  fusion->addInput(a);
  TensorView* s = sum(a, {0});
  fusion->addOutput(s);
  s->axis(1)->parallelize(ParallelType::TIDx);
}

void buildBroadcastAndPad() {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({4, 6});
  fusion->addInput(a);
  TensorView* row = broadcast(sum(a, {1}), {false, true});
  TensorView* p = pad(a, {1, 1}, 2.0);  // [4, 8]
  fusion->addOutput(add(p, row));
  inlineMost(fusion);
}

SmemTranspose buildSmemTranspose() {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({32, 32});
  fusion->addInput(a);
  TensorView* tile = set(a)->setMemoryType(MemoryType::Shared);
  TensorView* out = set(tile);
  fusion->addOutput(out);
  tile->axis(0)->parallelize(ParallelType::TIDy);
  tile->axis(1)->parallelize(ParallelType::TIDx);
  out->reorder({{0, 1}});  // [j, i]
  out->axis(0)->parallelize(ParallelType::TIDy);
  out->axis(1)->parallelize(ParallelType::TIDx);
  return {tile, out};
}

void buildSharedTileOfType(DataType dtype) {
  Fusion* fusion = Fusion::current();
  TensorView* a = makeConcreteTensor({6, 40}, dtype);
  TensorView* b = makeConcreteTensor({6, 40}, dtype);
  fusion->addInput(a);
  fusion->addInput(b);
  TensorView* tile = set(a)->setMemoryType(MemoryType::Shared);
  TensorView* larger = maximum(tile, b);
  TensorView* as_float = castOp(DataType::Float, tile);
  TensorView* as_double = castOp(DataType::Double, tile);
  TensorView* row_sum = sum(as_double, {1});
  for (TensorView* out : {larger, as_float, row_sum}) fusion->addOutput(out);
  for (TensorView* tv : {tile, larger, as_float, as_double, row_sum}) {
    tv->axis(0)->parallelize(ParallelType::BIDx);
    tv->axis(1)->parallelize(ParallelType::TIDx);
  }
}

}  // namespace smelt::cases
