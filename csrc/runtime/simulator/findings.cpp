#include "runtime/simulator/findings.h"

#include <sstream>

namespace smelt::sim {

ThreadIndex Findings::thread(int32_t linear) const {
  ThreadIndex t;
  t.x = linear % bdx_;
  t.y = (linear / bdx_) % bdy_;
  t.z = linear / (bdx_ * bdy_);
  return t;
}

std::string Findings::where(const AccessEvent& a) const {
  std::ostringstream os;
  os << "position " << program_.instrs[a.pc].position << " (" << program_.stmt_text[a.pc]
     << ") by thread " << thread(a.thread).toString() << " of block " << block_.toString();
  return os.str();
}

bool Findings::admit(const std::tuple<int, int, int, int, int>& key) {
  auto [it, inserted] = seen_.emplace(key, -1);
  if (!inserted) return false;
  if (kept_ >= options_.max_findings) {
    ++report_.dropped_findings;
    return false;
  }
  ++kept_;
  return true;
}

void Findings::race(RaceKind kind, const AccessEvent& first, bool first_write,
                    const AccessEvent& second, bool second_write, int64_t byte) {
  auto key = std::make_tuple(static_cast<int>(kind), first.pc, second.pc, first.buffer,
                             second.buffer);
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    if (it->second < 0) return;
    RaceReport& r = report_.races[it->second];
    ++r.bytes;
    r.min_byte = std::min(r.min_byte, byte);
    r.max_byte = std::max(r.max_byte, byte);
    return;
  }
  if (!admit(key)) return;
  auto side = [&](const AccessEvent& a, bool is_write) {
    RaceAccess ra;
    ra.thread = thread(a.thread);
    ra.is_write = is_write;
    ra.position = program_.instrs[a.pc].position;
    ra.statement = program_.stmt_text[a.pc];
    ra.buffer = program_.buffers[a.buffer].name;
    ra.byte_offset = byte;
    ra.buffer_byte = byte - shared_address_[a.buffer];
    return ra;
  };
  RaceReport r;
  r.kind = kind;
  r.block = block_;
  r.first = side(first, first_write);
  r.second = side(second, second_write);
  r.bytes = 1;
  r.min_byte = r.max_byte = byte;
  seen_[key] = static_cast<int64_t>(report_.races.size());
  report_.races.push_back(std::move(r));
}

template <typename Message>
void Findings::error(SimError::Kind kind, int a, int b, int c, int d, int32_t pc,
                     std::string buffer, Message message) {
  auto key = std::make_tuple(100 + static_cast<int>(kind), a, b, c, d);
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    if (it->second >= 0) ++report_.errors[it->second].occurrences;
    return;
  }
  if (!admit(key)) return;
  seen_[key] = static_cast<int64_t>(report_.errors.size());
  report_.errors.push_back(
      {kind, program_.instrs[pc].position, std::move(buffer), message(), 1});
}

void Findings::outOfBounds(const AccessEvent& a, bool is_write, int64_t index,
                           int64_t elements) {
  const std::string& name = program_.buffers[a.buffer].name;
  error(SimError::Kind::OutOfBounds, a.pc, a.buffer, is_write ? 1 : 0, 0, a.pc, name, [&] {
    std::ostringstream os;
    os << "out-of-bounds " << (is_write ? "write" : "read") << " of " << name << "[" << index
       << "] (" << elements << " elements) at " << where(a);
    return os.str();
  });
}

void Findings::uninitialized(const AccessEvent& a, int64_t byte) {
  const std::string& name = program_.buffers[a.buffer].name;
  error(SimError::Kind::UninitializedRead, a.pc, a.buffer, 0, 0, a.pc, name, [&] {
    std::ostringstream os;
    os << "read of never-written shared memory: " << name << " byte "
       << byte - shared_address_[a.buffer] << " (shared byte " << byte << ") at " << where(a);
    return os.str();
  });
}

void Findings::divergentBarrier(int32_t thread_a, int32_t pc_a, int32_t thread_b,
                                int32_t pc_b) {
  error(SimError::Kind::DivergentBarrier, pc_a, pc_b, 0, 0, pc_a, "", [&] {
    std::ostringstream os;
    os << "divergent barrier in block " << block_.toString() << ": thread "
       << thread(thread_a).toString() << " waits at position " << program_.instrs[pc_a].position
       << " (" << program_.stmt_text[pc_a] << ") but thread " << thread(thread_b).toString();
    if (pc_b < 0) {
      os << " has exited";
    } else {
      os << " waits at position " << program_.instrs[pc_b].position << " ("
         << program_.stmt_text[pc_b] << ")";
    }
    os << "; the rest of the block was not simulated";
    return os.str();
  });
}

void Findings::duplicateGlobalWrite(const AccessEvent& a, int64_t index, ThreadIndex first_block,
                                    int32_t first_thread) {
  const std::string& name = program_.buffers[a.buffer].name;
  error(SimError::Kind::DuplicateGlobalWrite, a.pc, a.buffer, 0, 0, a.pc, name, [&] {
    std::ostringstream os;
    os << "two threads store " << name << "[" << index << "] in one launch: thread "
       << thread(first_thread).toString() << " of block " << first_block.toString()
       << ", then " << where(a) << " (a race unless the values agree; a predicate is missing)";
    return os.str();
  });
}

}  // namespace smelt::sim
