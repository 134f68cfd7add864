// The simulator's model of sm_80 cp.async copies into shared memory: each
// thread's copies are issued into an open group, commit_group closes it,
// and wait_group N lands the oldest groups until N remain. A copy's bytes
// are "in flight" from issue to landing; the interpreter reports any plain
// access to them (a missing wait) and any copy into bytes still in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace smelt::sim {

struct AsyncCopy {
  int64_t byte = 0;    // shared-memory byte address of the destination
  int32_t bytes = 0;   // 4, 8 or 16
  int32_t buffer = 0;  // the destination buffer's id (for reports)
  uint8_t data[16] = {};  // the source's bytes at issue; zeros when the predicate failed
};

class AsyncCopyGroups {
 public:
  // Every thread starts with no copies; no shared byte is in flight.
  void reset(int32_t threads, int64_t shared_bytes);

  // Whether any byte of [byte, byte + bytes) is in flight; the first such byte.
  bool inFlight(int64_t byte, int64_t bytes, int64_t* first = nullptr) const;

  // Adds the copy to thread t's open group (its bytes in flight from now).
  void issue(int32_t t, const AsyncCopy& copy);
  // commit_group: the open group becomes the newest committed one.
  void commit(int32_t t);
  int64_t committedGroups(int32_t t) const { return static_cast<int64_t>(committed_[t].size()); }
  // Copies issued and not landed, committed or not.
  int64_t copiesInFlight(int32_t t) const;
  // Lands the oldest committed group into `smem`: its bytes leave flight and
  // `landed(copy)` is called for each copy after it is written.
  template <typename Landed>
  void retireOldest(int32_t t, uint8_t* smem, Landed&& landed);

 private:
  std::vector<uint16_t> in_flight_;  // per shared byte: copies to it not landed
  std::vector<std::vector<AsyncCopy>> open_;
  std::vector<std::deque<std::vector<AsyncCopy>>> committed_;
};

template <typename Landed>
void AsyncCopyGroups::retireOldest(int32_t t, uint8_t* smem, Landed&& landed) {
  for (const AsyncCopy& copy : committed_[t].front()) {
    for (int64_t b = copy.byte; b < copy.byte + copy.bytes; ++b) --in_flight_[b];
    for (int32_t i = 0; i < copy.bytes; ++i) smem[copy.byte + i] = copy.data[i];
    landed(copy);
  }
  committed_[t].pop_front();
}

}  // namespace smelt::sim
