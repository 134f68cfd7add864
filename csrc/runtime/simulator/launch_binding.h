// A kernel bound to one launch's arguments: the launch dimensions, every
// index symbol's value (tensor sizes and strides, scalars, blockDim and
// gridDim), and where each buffer's elements live (Global: the argument's
// storage or a scratch array; Shared: its planned byte address in the
// block's array; Local: its offset in a thread's arena). Also which blocks of
// the grid the interpreter runs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lower/kir.h"
#include "runtime/simulator/interpreter.h"
#include "runtime/simulator/program.h"

namespace smelt::sim {

// Where one buffer's elements live for this launch.
struct Memory {
  MemoryType memory = MemoryType::Local;
  DataType dtype = DataType::Float;
  int64_t elem_size = 4;
  int64_t elements = 0;  // valid indices: [0, elements)
  int64_t offset = 0;    // Shared: byte address; Local: byte offset in a thread's arena
  uint8_t* data = nullptr;  // Global
  std::vector<int64_t> sizes, strides;  // Global arguments (a TMA's source)
};

// The kernel bound to its arguments: launch dims, symbol values, buffer layout.
struct Launch {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t threads = 1;
  std::vector<int64_t> base_slots;  // every non-runtime symbol's value
  std::vector<Memory> memory;       // per buffer id
  std::vector<int64_t> shared_address;  // per buffer id (0 unless Shared)
  int64_t shared_bytes = 0;
  int64_t local_bytes = 0;
  std::vector<std::vector<uint8_t>> scratch;  // Global buffers that are not arguments
};

// Throws smelt::Error for argument counts or dtypes that differ from the
// kernel's, unbound symbols, bad launch dimensions, more than CUDA's 1024
// threads per block, and shared buffers without a planned address.
Launch bindLaunch(const Program& p, const kir::Kernel& kernel,
                  const std::vector<TensorArg>& inputs, const std::vector<TensorArg>& outputs,
                  const std::map<std::string, double>& scalars);

// The linear indices of the blocks to run: all of them, or (sampling) the
// first, the last and `random_blocks` others drawn with the options' seed.
std::vector<int64_t> chooseBlocks(int64_t total, const SimOptions& options);

}  // namespace smelt::sim
