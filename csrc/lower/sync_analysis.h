// Analysis: which reads of Shared or Global tensors may see an element written
// by a different thread of the block (and so need a barrier after the write — RAW — and, inside
// a loop, before the next iteration's write — WAR). Separate from the pass
// that inserts the barriers so tests can read it.
#pragma once

#include <string>
#include <vector>

#include "lower/lower_context.h"

namespace smelt {

struct CrossThreadAccess {
  const TensorView* tv = nullptr;    // the Shared or Global tensor
  const kir::Stmt* write = nullptr;  // a statement writing it
  const kir::Stmt* read = nullptr;   // a statement reading it
  // Why the threads may differ, e.g. "TIDx: writer axis 1, reader axis 0".
  std::string reason;
};

// Every (write, read) pair of a Shared or Global tensor whose element may be
// written and read by different threads of the block (a Global one: a fusion
// output that a later op of the kernel reads). A pair is thread-private when, for
// every thread dimension the launch uses, the writer and the reader run in the
// same loop bound to it, or in loops bound to it whose indices map element for
// element, or the writer reduces over it (a block reduction leaves the result
// on every thread).
std::vector<CrossThreadAccess> crossThreadAccesses(const LoweringContext& ctx);

// The tensor a computing statement writes and the tensors it reads.
const TensorView* writtenTensor(const kir::Stmt* stmt);
std::vector<const TensorView*> readTensors(const kir::Stmt* stmt);

}  // namespace smelt
