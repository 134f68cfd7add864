#include "runtime/simulator/sim_report.h"

#include <sstream>

namespace smelt::sim {

std::string ThreadIndex::toString() const {
  std::ostringstream os;
  os << "(" << x << ", " << y << ", " << z << ")";
  return os.str();
}

std::string toString(RaceKind kind) {
  switch (kind) {
    case RaceKind::RAW: return "RAW";
    case RaceKind::WAR: return "WAR";
    case RaceKind::WAW: return "WAW";
  }
  return "?";
}

std::string toString(SimError::Kind kind) {
  switch (kind) {
    case SimError::Kind::OutOfBounds: return "out-of-bounds";
    case SimError::Kind::UninitializedRead: return "uninitialized-read";
    case SimError::Kind::DivergentBarrier: return "divergent-barrier";
    case SimError::Kind::DuplicateGlobalWrite: return "duplicate-global-write";
    case SimError::Kind::DivergentWarp: return "divergent-warp";
    case SimError::Kind::AsyncCopyInFlight: return "async-copy-in-flight";
    case SimError::Kind::Misaligned: return "misaligned";
    case SimError::Kind::Deadlock: return "deadlock";
    case SimError::Kind::MissingFence: return "missing-fence";
  }
  return "?";
}

namespace {
std::string sideText(const RaceAccess& a) {
  std::ostringstream os;
  os << (a.is_write ? "write" : "read") << " of " << a.buffer << " (buffer byte "
     << a.buffer_byte << ") by thread " << a.thread.toString() << " at position " << a.position
     << " (" << a.statement << ")";
  return os.str();
}
}  // namespace

std::string RaceReport::toString() const {
  std::ostringstream os;
  os << sim::toString(kind) << " race on shared bytes [" << min_byte << ", " << max_byte
     << "] (" << bytes << " byte conflicts) in block " << block.toString() << ": "
     << sideText(first) << ", then " << sideText(second) << ", shared byte " << first.byte_offset
     << ", no barrier between";
  return os.str();
}

std::string SimError::toString() const {
  std::ostringstream os;
  os << sim::toString(kind) << ": " << message;
  if (occurrences > 1) os << " (" << occurrences << " occurrences)";
  return os.str();
}

std::string SimReport::toString() const {
  std::ostringstream os;
  os << "simulated " << blocks_simulated << " of " << blocks_total << " blocks: ";
  if (clean()) {
    os << "clean\n";
    return os.str();
  }
  os << races.size() << " race(s), " << errors.size() << " error(s)";
  if (dropped_findings > 0) os << ", " << dropped_findings << " more finding(s) not kept";
  os << "\n";
  for (const RaceReport& r : races) os << "  " << r.toString() << "\n";
  for (const SimError& e : errors) os << "  " << e.toString() << "\n";
  return os.str();
}

}  // namespace smelt::sim
