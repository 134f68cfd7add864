// The shadow of one block's shared memory: for every byte, the last writer and
// up to two distinct readers in the current barrier epoch. Two readers suffice:
// a later write conflicts with "some other thread's read", and one of any two
// distinct readers is not the writer. Accesses by different threads in the
// same epoch where one is a write are races; reads of bytes that no thread has
// written in this block are reported once the epoch closes (a byte read first
// and written later in the same epoch by another thread is a race, not an
// uninitialized read).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/simulator/findings.h"

namespace smelt::sim {

class SharedShadow {
 public:
  explicit SharedShadow(Findings& findings) : findings_(findings) {}

  void reset(int64_t bytes);  // a new block: nothing written, epoch 1
  void read(int64_t byte, int64_t count, const AccessEvent& a);
  void write(int64_t byte, int64_t count, const AccessEvent& a);
  // Bytes an async copy landed in: written, by no thread of this epoch (the
  // ordering with their readers is the mbarrier's, checked in async_proxy.h).
  void asyncWrite(int64_t byte, int64_t count);
  // Called at each barrier and at the end of the block.
  void closeEpoch();

 private:
  static constexpr uint32_t kAsyncEpoch = UINT32_MAX;  // never the current epoch
  struct Byte {
    uint32_t write_epoch = 0;  // 0: never written in this block
    uint32_t read_epoch = 0;
    AccessEvent writer;
    AccessEvent reader[2];
    bool second_reader = false;
  };
  struct Candidate {  // a read of a never-written byte, judged at epoch close
    int64_t byte;
    AccessEvent reader;
  };

  void conflict(const AccessEvent& earlier, bool earlier_write, const AccessEvent& now,
                bool now_write, int64_t byte);

  Findings& findings_;
  std::vector<Byte> bytes_;
  std::vector<Candidate> candidates_;
  uint32_t epoch_ = 1;
};

}  // namespace smelt::sim
