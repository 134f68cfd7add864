// The simulator's model of a block-level scan (kir::BlockScan, Op::BlockScan)
// for one block, in the three steps the CUDA code takes (codegen/scan_ops.h):
//   1. before its first barrier, each thread combines its items into a
//      partial (arrive());
//   2. still before that barrier, once its 32 lanes have arrived, each warp
//      scans their partials (the shuffles: lane l combines lanes 0..l in
//      order) and its lane 31 stores the warp's total into the workspace
//      (arrive() of the warp's last lane to arrive);
//   3. after the barrier, each thread reads every warp's total from the
//      workspace and sets its running value and the carry (finish()); the
//      second barrier follows.
// Every memory access goes through the interpreter's element() (the block
// scan's memory), so the race checker sees the workspace's writes and reads
// with their threads. Integer and bool scans compute in int64_t (exact, as
// the serial scan step), floating ones in double.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/simulator/program.h"

namespace smelt::sim {

// What the model needs of the interpreter, for the statement it runs.
struct BlockScanMemory {
  // Element `index` of a buffer as thread t reads or writes it; nullptr when
  // out of bounds (reported).
  std::function<uint8_t*(int32_t buffer, int64_t index, int32_t t, bool write)> element;
  // An index expression (IndexCode handle) in thread t's slots.
  std::function<int64_t(int32_t handle, int32_t t)> eval;
  std::function<DataType(int32_t buffer)> dtype;
};

class BlockScanModel {
 public:
  explicit BlockScanModel(int32_t threads);
  void arrive(const Instr& in, int32_t t, const BlockScanMemory& memory);
  void finish(const Instr& in, int32_t t, const BlockScanMemory& memory);

 private:
  template <typename T>
  struct Values {
    std::vector<T> partials;   // per thread (step 1)
    std::vector<T> inclusive;  // per thread, within its warp (step 2)
  };
  Values<double> floating_;
  Values<int64_t> integer_;
  std::vector<int32_t> arrived_;  // lanes of each warp arrived at the statement
};

}  // namespace smelt::sim
