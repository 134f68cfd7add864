#include "runtime/simulator/cp_async_sim.h"

#include <cstddef>
#include <utility>

namespace smelt::sim {

void AsyncCopyGroups::reset(int32_t threads, int64_t shared_bytes) {
  in_flight_.assign(static_cast<size_t>(shared_bytes), 0);
  open_.assign(static_cast<size_t>(threads), {});
  committed_.assign(static_cast<size_t>(threads), {});
}

bool AsyncCopyGroups::inFlight(int64_t byte, int64_t bytes, int64_t* first) const {
  for (int64_t b = byte; b < byte + bytes; ++b) {
    if (in_flight_[b] == 0) continue;
    if (first != nullptr) *first = b;
    return true;
  }
  return false;
}

void AsyncCopyGroups::issue(int32_t t, const AsyncCopy& copy) {
  for (int64_t b = copy.byte; b < copy.byte + copy.bytes; ++b) ++in_flight_[b];
  open_[t].push_back(copy);
}

void AsyncCopyGroups::commit(int32_t t) {
  committed_[t].push_back(std::move(open_[t]));
  open_[t].clear();
}

int64_t AsyncCopyGroups::copiesInFlight(int32_t t) const {
  int64_t copies = static_cast<int64_t>(open_[t].size());
  for (const auto& group : committed_[t]) copies += static_cast<int64_t>(group.size());
  return copies;
}

}  // namespace smelt::sim
