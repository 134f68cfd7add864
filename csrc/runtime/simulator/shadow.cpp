#include "runtime/simulator/shadow.h"

namespace smelt::sim {

void SharedShadow::reset(int64_t bytes) {
  bytes_.assign(static_cast<size_t>(bytes), Byte{});
  candidates_.clear();
  epoch_ = 1;
}

void SharedShadow::conflict(const AccessEvent& earlier, bool earlier_write,
                            const AccessEvent& now, bool now_write, int64_t byte) {
  // Order the two accesses by program progress since the barrier rather than
  // by which thread the scheduler happened to run first, so the kind does not
  // depend on ThreadOrder; ties keep the observed order.
  bool earlier_first = earlier.step <= now.step;
  const AccessEvent& first = earlier_first ? earlier : now;
  const AccessEvent& second = earlier_first ? now : earlier;
  bool first_write = earlier_first ? earlier_write : now_write;
  bool second_write = earlier_first ? now_write : earlier_write;
  RaceKind kind = first_write && second_write ? RaceKind::WAW
                  : first_write               ? RaceKind::RAW
                                              : RaceKind::WAR;
  findings_.race(kind, first, first_write, second, second_write, byte);
}

void SharedShadow::read(int64_t byte, int64_t count, const AccessEvent& a) {
  for (int64_t b = byte; b < byte + count; ++b) {
    Byte& s = bytes_[b];
    if (s.write_epoch == 0) {
      if (s.read_epoch != epoch_) candidates_.push_back({b, a});
    } else if (s.write_epoch == epoch_ && s.writer.thread != a.thread) {
      conflict(s.writer, true, a, false, b);
    }
    if (s.read_epoch != epoch_) {
      s.read_epoch = epoch_;
      s.reader[0] = a;
      s.second_reader = false;
    } else if (!s.second_reader && s.reader[0].thread != a.thread) {
      s.reader[1] = a;
      s.second_reader = true;
    }
  }
}

void SharedShadow::write(int64_t byte, int64_t count, const AccessEvent& a) {
  for (int64_t b = byte; b < byte + count; ++b) {
    Byte& s = bytes_[b];
    if (s.write_epoch == epoch_ && s.writer.thread != a.thread) {
      conflict(s.writer, true, a, true, b);
    }
    if (s.read_epoch == epoch_) {
      if (s.reader[0].thread != a.thread) {
        conflict(s.reader[0], false, a, true, b);
      } else if (s.second_reader) {
        conflict(s.reader[1], false, a, true, b);
      }
    }
    s.write_epoch = epoch_;
    s.writer = a;
  }
}

void SharedShadow::asyncWrite(int64_t byte, int64_t count) {
  for (int64_t b = byte; b < byte + count; ++b) {
    bytes_[b].write_epoch = kAsyncEpoch;
    bytes_[b].read_epoch = 0;
  }
}

void SharedShadow::closeEpoch() {
  for (const Candidate& c : candidates_) {
    const Byte& s = bytes_[c.byte];
    // Written in this epoch by another thread: already reported as a race.
    if (s.write_epoch == epoch_ && s.writer.thread != c.reader.thread) continue;
    findings_.uninitialized(c.reader, c.byte);
  }
  candidates_.clear();
  ++epoch_;
}

}  // namespace smelt::sim
