// Options and findings of the CPU kernel simulator (see simulator.h for the
// at::Tensor entry point and interpreter.h for the raw-buffer one). Kept free
// of torch headers so reports can be inspected and printed anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/types.h"

namespace smelt::sim {

// The order in which the threads of a block run within one barrier phase.
// A correct kernel gives the same results in every order; Reverse and Random
// make order-dependent bugs show in the numbers as well as in the race report.
enum class ThreadOrder { Forward, Reverse, Random };

// Which blocks of the grid run. All is exact; Sampled runs the first and the
// last block plus `random_blocks` others (chosen with `seed`), which keeps big
// grids fast at the price of outputs that only the sampled blocks wrote.
enum class BlockSampling { All, Sampled };

struct SimOptions {
  ThreadOrder order = ThreadOrder::Forward;
  uint64_t seed = 0;  // for ThreadOrder::Random and block sampling
  BlockSampling sampling = BlockSampling::All;
  int64_t random_blocks = 4;
  // The shared-memory shadow: races and reads of never-written shared bytes.
  // Out-of-bounds and divergent-barrier checks are always on.
  bool detect_races = true;
  // Distinct findings kept in the report; the rest are only counted.
  int64_t max_findings = 64;
  // The index type of the kernel variant simulated (CodegenOptions::
  // index_type): with Int32, index arithmetic that leaves int32 is an error.
  DataType index_type = DataType::Int;
};

struct ThreadIndex {
  int64_t x = 0, y = 0, z = 0;
  std::string toString() const;  // "(x, y, z)"
};

// One side of a race: who touched which shared byte, in which statement.
struct RaceAccess {
  ThreadIndex thread;
  bool is_write = false;
  // The statement's program position (kir::numberPositions: every
  // statement in program order, plus one end marker after each non-trivial
  // loop), the numbers Kernel::toString prints.
  int64_t position = -1;
  std::string statement;  // short text of the statement
  std::string buffer;     // the buffer through which the byte was accessed
  int64_t byte_offset = 0;  // of the first conflicting byte, in the block's shared array
  int64_t buffer_byte = 0;  // the same byte relative to `buffer`'s address
};

enum class RaceKind { RAW, WAR, WAW };
std::string toString(RaceKind kind);

// Conflicting accesses to the same shared byte by two different threads of a
// block with no barrier between them. `first` is the access that comes first
// in program order (by how far each thread had got since the last barrier,
// so a tile overwritten by the next loop iteration is WAR, a tile read before
// the barrier that should order it is RAW). Findings with the same kind,
// statements and buffers are merged; `bytes` counts the byte-level conflicts
// and [min_byte, max_byte] spans them.
struct RaceReport {
  RaceKind kind = RaceKind::RAW;
  ThreadIndex block;  // first block it was seen in
  RaceAccess first;
  RaceAccess second;
  int64_t bytes = 0;
  int64_t min_byte = 0;
  int64_t max_byte = 0;
  std::string toString() const;
};

struct SimError {
  // DuplicateGlobalWrite: two threads (of one block or of two) store to the
  // same Global element in one launch — a race when the values differ, and
  // wasted stores (a missing predicate) when they do not. DivergentWarp:
  // lanes of one warp at different warp-collective statements (ldmatrix,
  // mma) or some lanes missing; AsyncCopyInFlight: shared bytes touched while
  // a cp.async to them is in flight (no wait_group retired it), or a thread
  // exiting with copies in flight; Misaligned: an ldmatrix row or cp.async
  // not aligned as the instruction requires (also TMA and wgmma operands).
  // Hopper (async_proxy.h): AsyncCopyInFlight also covers TMA copies not
  // landed and wgmma accumulators not retired; Deadlock: threads waiting on
  // an mbarrier phase nothing can complete (or arriving beyond its count);
  // MissingFence: async-proxy access to a generic write without
  // fence.proxy.async, or a wgmma on registers written after wgmma.fence.
  enum class Kind {
    OutOfBounds, UninitializedRead, DivergentBarrier, DuplicateGlobalWrite, DivergentWarp,
    AsyncCopyInFlight, Misaligned, Deadlock, MissingFence
  };
  Kind kind;
  int64_t position = -1;  // statement (program position) where it happened
  std::string buffer;     // empty for a divergent barrier
  std::string message;    // the first occurrence, with block, thread and index
  int64_t occurrences = 1;
  std::string toString() const;
};
std::string toString(SimError::Kind kind);

struct SimReport {
  std::vector<RaceReport> races;
  std::vector<SimError> errors;
  int64_t blocks_total = 0;
  int64_t blocks_simulated = 0;
  int64_t dropped_findings = 0;  // distinct findings beyond SimOptions::max_findings
  bool clean() const { return races.empty() && errors.empty() && dropped_findings == 0; }
  std::string toString() const;
};

}  // namespace smelt::sim
