// Guards inside main loops (an analysis: it changes nothing). A main loop is
// a non-trivial serial loop whose body, nested loops included, holds a serial
// reduction step (ReduceStep) and both writes and reads Shared buffers (tiles
// loaded and consumed per iteration): a tiled matmul's K loop. Its statements run on every K step of every tile, full
// tiles included, so two kinds of guard there cost every tile:
//   * a term that bounds a tensor axis (Predicate::Term::bounded_axis), on
//     any statement;
//   * any guard on a statement that computes into registers (a Local output).
// Not reported: a tile load's thread and prefetch guards (the circular
// buffer's `tile < trip count`), and the zero-filling in-bounds test of a
// load's operand, which selects rather than branches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/kir.h"

namespace smelt {

struct MainLoopGuard {
  int64_t position = -1;  // kir::numberPositions
  std::string buffer;     // the statement's output
  std::string guard;      // Predicate::toString
};

std::vector<MainLoopGuard> findMainLoopGuards(const kir::Kernel& kernel);

}  // namespace smelt
