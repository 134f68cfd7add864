#include "runtime/simulator/async_proxy.h"

#include <algorithm>
#include <cstring>

#include "fusion/error.h"
#include "lower/hopper_layout.h"
#include "runtime/simulator/value_convert.h"

namespace smelt::sim {

void AsyncProxy::reset(int32_t threads, int64_t shared_bytes, int64_t local_bytes, uint8_t* smem,
                       SharedShadow* shadow) {
  threads_ = threads;
  local_bytes_ = local_bytes;
  smem_ = smem;
  shadow_ = shadow;
  barriers_.clear();
  landings_.clear();
  landed_.assign(static_cast<size_t>(shared_bytes), -1);
  tma_in_flight_.assign(static_cast<size_t>(shared_bytes), 0);
  generic_writer_.assign(static_cast<size_t>(shared_bytes), 0);
  writer_fences_.assign(static_cast<size_t>(shared_bytes), 0);
  fences_.assign(static_cast<size_t>(threads), 0);
  acc_in_flight_.assign(static_cast<size_t>(threads * local_bytes), 0);
  unfenced_local_.assign(static_cast<size_t>(threads * local_bytes), 0);
  uncommitted_.assign(static_cast<size_t>(threads), {});
  committed_.assign(static_cast<size_t>(threads), {});
}

AsyncProxy::Barrier* AsyncProxy::barrier(int64_t byte, const AccessEvent& ev) {
  auto it = barriers_.find(byte);
  if (it != barriers_.end()) return &it->second;
  findings_.error(SimError::Kind::UninitializedRead, ev,
                  "mbarrier at shared byte " + std::to_string(byte) + " used before mbarrier.init");
  return nullptr;
}

void AsyncProxy::init(int64_t byte, int32_t arrivals, const std::string& name,
                      const AccessEvent& ev) {
  if (byte % 8 != 0) {
    findings_.error(SimError::Kind::Misaligned, ev,
                    "mbarrier at shared byte " + std::to_string(byte) + " is not 8-byte aligned");
  }
  Barrier& b = barriers_[byte];
  b = Barrier{};
  b.name = name;
  b.arrivals = b.pending = arrivals;
  b.observed.assign(static_cast<size_t>(threads_), 0);
  // A generic write: other threads see it after a block barrier, the async
  // proxy after this thread's fence.proxy.async.
  if (shadow_ != nullptr) shadow_->write(byte, 8, ev);
  for (int64_t i = byte; i < byte + 8; ++i) {
    generic_writer_[i] = ev.thread + 1;
    writer_fences_[i] = fences_[ev.thread];
  }
}

void AsyncProxy::arrive(int64_t byte, int32_t transaction_bytes, const AccessEvent& ev) {
  if (shadow_ != nullptr) shadow_->read(byte, 8, ev);
  Barrier* b = barrier(byte, ev);
  if (b == nullptr) return;
  if (b->pending == 0) {
    findings_.error(SimError::Kind::Deadlock, ev,
                    "arrival on mbarrier " + b->name + " beyond its count of " +
                        std::to_string(b->arrivals) + " in phase " + std::to_string(b->phase));
    return;
  }
  b->transaction_bytes += transaction_bytes;
  --b->pending;
  completeIfDone(byte, *b);
}

void AsyncProxy::completeIfDone(int64_t byte, Barrier& b) {
  if (b.pending != 0 || b.transaction_bytes != 0) return;
  for (Copy& copy : b.copies) {
    const auto index = static_cast<int32_t>(landings_.size());
    landings_.push_back({byte, b.phase, copy.issue});
    const int64_t n = static_cast<int64_t>(copy.image.size());
    std::memcpy(smem_ + copy.dst_byte, copy.image.data(), copy.image.size());
    if (shadow_ != nullptr) shadow_->asyncWrite(copy.dst_byte, n);
    for (int64_t i = copy.dst_byte; i < copy.dst_byte + n; ++i) {
      --tma_in_flight_[i];
      landed_[i] = index;
      generic_writer_[i] = 0;
    }
  }
  b.copies.clear();
  ++b.phase;
  b.pending = b.arrivals;
}

bool AsyncProxy::tryWait(int64_t byte, int64_t parity, const AccessEvent& ev) {
  if (shadow_ != nullptr) shadow_->read(byte, 8, ev);
  Barrier* b = barrier(byte, ev);
  if (b == nullptr) return true;
  // try_wait.parity p returns once the current phase's parity is not p: the
  // latest completed phase of parity p is then the one just before it.
  if ((b->phase & 1) == (parity & 1)) return false;
  uint32_t& seen = b->observed[ev.thread];
  seen = std::max(seen, b->phase);
  return true;
}

void AsyncProxy::tmaLoad(const RtTensorMap& map, const GlobalView& src, int64_t row, int64_t col,
                         int64_t dst_byte, int64_t barrier_byte, const AccessEvent& ev) {
  const int64_t alignment = map.swizzle128 ? hopper::kSwizzleAtomBytes : 128;
  if (dst_byte % alignment != 0) {
    findings_.error(SimError::Kind::Misaligned, ev,
                    "TMA load to shared byte " + std::to_string(dst_byte) + " is not " +
                        std::to_string(alignment) + "-byte aligned");
    return;
  }
  if (src.strides.size() != 2 || src.strides[1] != 1 || (src.strides[0] * src.elem_size) % 16 != 0) {
    findings_.error(SimError::Kind::Misaligned, ev,
                    "tensor map " + map.name + ": the tensor must be row-major with rows a multiple "
                    "of 16 bytes apart, as cuTensorMapEncodeTiled requires");
    return;
  }
  Copy copy;
  copy.dst_byte = dst_byte;
  copy.issue = ev;
  const int64_t e = src.elem_size;
  copy.image.assign(static_cast<size_t>(map.box_rows * map.box_cols * e), 0);
  for (int64_t r = 0; r < map.box_rows; ++r) {
    for (int64_t c = 0; c < map.box_cols; ++c) {
      const int64_t gr = row + r, gc = col + c;
      if (gr < 0 || gr >= src.sizes[0] || gc < 0 || gc >= src.sizes[1]) continue;  // zero fill
      const int64_t logical = (r * map.box_cols + c) * e;
      const int64_t at = map.swizzle128 ? hopper::swizzle128(dst_byte + logical) - dst_byte : logical;
      std::memcpy(&copy.image[at], src.data + (gr * src.strides[0] + gc) * e, static_cast<size_t>(e));
    }
  }
  const int64_t n = static_cast<int64_t>(copy.image.size());
  for (int64_t i = dst_byte; i < dst_byte + n; ++i) {
    if (tma_in_flight_[i] == 0) continue;
    findings_.error(SimError::Kind::AsyncCopyInFlight, ev,
                    "TMA load into shared byte " + std::to_string(i) +
                        " while an earlier TMA copy to it is still in flight");
    break;
  }
  Barrier* b = barrier(barrier_byte, ev);
  if (b == nullptr) return;
  for (int64_t i = barrier_byte; i < barrier_byte + 8; ++i) {
    if (!unfenced(i)) continue;
    findings_.error(SimError::Kind::MissingFence, ev,
                    "TMA load completes on mbarrier " + b->name + ", whose mbarrier.init by thread " +
                        std::to_string(generic_writer_[i] - 1) +
                        " no fence.proxy.async made visible to the async proxy");
    break;
  }
  for (int64_t i = dst_byte; i < dst_byte + n; ++i) ++tma_in_flight_[i];
  b->copies.push_back(std::move(copy));
  b->transaction_bytes -= n;  // complete_tx: the copy's bytes count now, its data land at completion
  completeIfDone(barrier_byte, *b);
}

bool AsyncProxy::unfenced(int64_t byte) const {
  const int32_t writer = generic_writer_[byte];
  return writer != 0 && fences_[writer - 1] == writer_fences_[byte];
}

uint32_t AsyncProxy::observedBy(const Landing& l, int32_t first, int32_t count) const {
  const Barrier& b = barriers_.at(l.barrier_byte);
  uint32_t seen = b.observed[first];
  for (int32_t t = first + 1; t < first + count; ++t) seen = std::min(seen, b.observed[t]);
  return seen;
}

void AsyncProxy::asyncRead(int64_t byte, int64_t count, int32_t first_reader, int32_t readers,
                           const AccessEvent& ev, const char* what) {
  for (int64_t i = byte; i < byte + count; ++i) {
    if (tma_in_flight_[i] != 0) {
      findings_.error(SimError::Kind::AsyncCopyInFlight, ev,
                      std::string(what) + " of shared byte " + std::to_string(i) +
                          " while a TMA copy to it is in flight (missing mbarrier wait)");
      return;
    }
    if (unfenced(i)) {
      findings_.error(SimError::Kind::MissingFence, ev,
                      std::string(what) + " of shared byte " + std::to_string(i) + " written by thread " +
                          std::to_string(generic_writer_[i] - 1) +
                          " without a fence.proxy.async after the write");
      return;
    }
    if (landed_[i] >= 0) {
      const Landing& l = landings_[landed_[i]];
      if (observedBy(l, first_reader, readers) <= l.phase) {
        findings_.race(RaceKind::RAW, l.issue, true, ev, false, i);
      }
    }
  }
}

void AsyncProxy::sharedAccess(int64_t byte, int64_t count, bool is_write, const AccessEvent& ev) {
  for (int64_t i = byte; i < byte + count; ++i) {
    if (tma_in_flight_[i] != 0) {
      findings_.error(SimError::Kind::AsyncCopyInFlight, ev,
                      std::string(is_write ? "write" : "read") + " of shared byte " +
                          std::to_string(i) +
                          " while a TMA copy to it is in flight (missing mbarrier wait)");
      return;
    }
    if (landed_[i] >= 0) {
      const Landing& l = landings_[landed_[i]];
      if (barriers_.at(l.barrier_byte).observed[ev.thread] <= l.phase) {
        findings_.race(RaceKind::RAW, l.issue, true, ev, is_write, i);
      }
    }
    if (is_write) {
      landed_[i] = -1;
      generic_writer_[i] = ev.thread + 1;
      writer_fences_[i] = fences_[ev.thread];
    }
  }
}

void AsyncProxy::localAccess(int64_t offset, int64_t count, bool is_write, const AccessEvent& ev) {
  const size_t base = static_cast<size_t>(ev.thread * local_bytes_ + offset);
  for (int64_t i = 0; i < count; ++i) {
    if (acc_in_flight_[base + i] != 0) {
      findings_.error(SimError::Kind::AsyncCopyInFlight, ev,
                      std::string(is_write ? "write" : "read") +
                          " of a wgmma accumulator while its wgmma is in flight (missing "
                          "wgmma.wait_group)");
      return;
    }
  }
  if (is_write) std::fill_n(unfenced_local_.begin() + static_cast<int64_t>(base), count, 1);
}

void AsyncProxy::wgmma(const Instr& in, int64_t a_byte, int64_t b_byte,
                       const std::vector<WgmmaLane>& lanes, const AccessEvent& ev) {
  const int64_t n = in.count, m = hopper::kWgmmaM, k = hopper::kWgmmaK;
  for (int64_t start : {a_byte, b_byte}) {
    const int64_t into_atom = start % hopper::kSwizzleAtomBytes;
    if (into_atom % 32 != 0 || into_atom >= hopper::kSwizzleRowBytes) {
      findings_.error(SimError::Kind::Misaligned, ev,
                      "wgmma operand at shared byte " + std::to_string(start) +
                          " is not 0, 32, 64 or 96 bytes into a 1024-byte-aligned swizzled tile");
      return;
    }
  }
  const DataType dtype = p_.buffers[in.in.buffer].dtype;
  const int64_t e = dataTypeSize(dtype);
  // Operand tiles through the descriptors codegen builds from these addresses.
  auto tile = [&](int64_t start, int64_t rows) {
    const hopper::Descriptor d =
        hopper::decodeDescriptor(hopper::wgmmaDescriptor(static_cast<uint32_t>(start)));
    std::vector<double> values(static_cast<size_t>(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const int64_t byte = hopper::descriptorByte(d, r, c * e);
        asyncRead(byte, e, ev.thread, hopper::kWarpgroupThreads, ev, "wgmma operand read");
        if (shadow_ != nullptr) shadow_->read(byte, e, ev);
        values[r * k + c] = loadValue(dtype, smem_ + byte);
      }
    }
    return values;
  };
  const std::vector<double> a = tile(a_byte, m), b = tile(b_byte, n);
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    const int32_t t = ev.thread + static_cast<int32_t>(lane);
    const size_t base = static_cast<size_t>(t * local_bytes_ + lanes[lane].acc_offset);
    if (std::any_of(unfenced_local_.begin() + base, unfenced_local_.begin() + base + 2 * n,
                    [](uint8_t u) { return u != 0; })) {
      findings_.error(SimError::Kind::MissingFence, {t, ev.pc, in.out.buffer, ev.step},
                      "wgmma uses accumulators written since the thread's last wgmma.fence");
    }
    for (int64_t i = 0; i < n / 2; ++i) {
      const hopper::RowCol rc = hopper::wgmmaAccumulatorElement(static_cast<int64_t>(lane), i);
      uint8_t* reg = lanes[lane].acc + 4 * i;
      double d = in.accumulate ? loadValue(DataType::Float, reg) : 0.0;
      for (int64_t kk = 0; kk < k; ++kk) d += a[rc.row * k + kk] * b[rc.col * k + kk];
      storeValue(DataType::Float, reg, d);
    }
    for (size_t i = base; i < base + static_cast<size_t>(2 * n); ++i) ++acc_in_flight_[i];
    uncommitted_[t].push_back({lanes[lane].acc_offset, 2 * n});
  }
}

void AsyncProxy::wgmmaFence(int32_t thread) {
  std::fill_n(unfenced_local_.begin() + thread * local_bytes_, local_bytes_, 0);
}

void AsyncProxy::wgmmaCommit(int32_t thread) {
  committed_[thread].push_back(std::move(uncommitted_[thread]));
  uncommitted_[thread].clear();
}

void AsyncProxy::wgmmaWait(int32_t thread, int32_t pending) {
  while (static_cast<int64_t>(committed_[thread].size()) > pending) {
    for (const Range& r : committed_[thread].front()) {
      const size_t base = static_cast<size_t>(thread * local_bytes_ + r.offset);
      for (size_t i = base; i < base + static_cast<size_t>(r.count); ++i) --acc_in_flight_[i];
    }
    committed_[thread].pop_front();
  }
}

void AsyncProxy::blockBarrier() {
  for (auto& [byte, b] : barriers_) {
    const uint32_t seen = *std::max_element(b.observed.begin(), b.observed.end());
    std::fill(b.observed.begin(), b.observed.end(), seen);
  }
}

void AsyncProxy::step(const Instr& in, int32_t t, int32_t pc) {
  const AccessEvent ev{t, pc, in.out.buffer, host_.steps(t)};
  switch (in.op) {
    case Op::MbarrierInit:
    case Op::MbarrierArrive: {
      const int64_t byte = host_.byteOf(in.out, t, pc, 1);
      if (byte < 0) return;
      if (in.op == Op::MbarrierArrive) return arrive(byte, in.count, ev);
      const std::string name = p_.buffers[in.out.buffer].name + "[" +
                               std::to_string(host_.evaluate(in.out.index, t)) + "]";
      return init(byte, in.count, name, ev);
    }
    case Op::TmaLoad: {
      const RtTensorMap& map = p_.tensor_maps[in.tensor_map];
      const int64_t dst = host_.byteOf(in.out, t, pc, map.box_rows * map.box_cols);
      const int64_t barrier = host_.byteOf(in.in, t, pc, 1);
      if (dst < 0 || barrier < 0) return;
      return tmaLoad(map, host_.global(map.tensor), host_.evaluate(in.extent, t),
                     host_.evaluate(in.extent2, t), dst, barrier, ev);
    }
    case Op::FenceProxyAsync: ++fences_[t]; return;
    case Op::WgmmaFence: return wgmmaFence(t);
    case Op::WgmmaCommit: return wgmmaCommit(t);
    case Op::WgmmaWait: return wgmmaWait(t, in.count);
    default: SMELT_INTERNAL_CHECK(false, "not a thread's Hopper instruction");
  }
}

bool AsyncProxy::waitReady(int32_t t, int32_t pc) {
  const Instr& in = p_.instrs[pc];
  const int64_t byte = host_.byteOf(in.out, t, pc, 1);
  return byte < 0 ||
         tryWait(byte, host_.evaluate(in.extent, t), {t, pc, in.out.buffer, host_.steps(t)});
}

void AsyncProxy::wgmmaGroup(const Instr& in, int32_t pc, int32_t first) {
  std::vector<WgmmaLane> lanes(static_cast<size_t>(hopper::kWarpgroupThreads));
  for (int32_t lane = 0; lane < hopper::kWarpgroupThreads; ++lane) {
    const int32_t t = first + lane;
    const int64_t offset = host_.byteOf(in.out, t, pc, in.count / 2);
    if (offset < 0) return;
    lanes[lane] = {host_.localArena(t) + offset, offset};
  }
  // The descriptors are uniform across the warpgroup: the first thread's.
  const int64_t a = host_.byteOf(in.in, first, pc, 1);
  const int64_t b = host_.byteOf(in.in2, first, pc, 1);
  if (a >= 0 && b >= 0) wgmma(in, a, b, lanes, {first, pc, in.out.buffer, host_.steps(first)});
}

bool AsyncProxy::deadlocked(const std::vector<int32_t>& at) {
  for (int32_t t = 0; t < threads_; ++t) {
    if (at[t] < 0 || p_.instrs[at[t]].op != Op::MbarrierWait) continue;
    const Instr& in = p_.instrs[at[t]];
    const int64_t byte = host_.byteOf(in.out, t, at[t], 1);
    const auto it = barriers_.find(byte);
    if (it == barriers_.end()) return true;  // reported as used before init
    const Barrier& b = it->second;
    findings_.error(SimError::Kind::Deadlock,
                    {t, at[t], in.out.buffer, host_.steps(t)},
                  "deadlock: waits on mbarrier " + b.name + " for the phase of parity " +
                      std::to_string(host_.evaluate(in.extent, t)) + "; phase " + std::to_string(b.phase) + " has " +
                      std::to_string(b.pending) + " of " + std::to_string(b.arrivals) +
                      " arrivals and " + std::to_string(b.transaction_bytes) +
                      " transaction bytes pending, and every other thread waits or has exited");
    return true;
  }
  return false;
}

void AsyncProxy::finishBlock(const AccessEvent& end) {
  for (const auto& [byte, b] : barriers_) {
    if (b.copies.empty()) continue;
    findings_.error(SimError::Kind::AsyncCopyInFlight, b.copies.front().issue,
                    "TMA copy never landed: phase " + std::to_string(b.phase) + " of mbarrier " +
                        b.name + " did not complete");
  }
  for (int32_t t = 0; t < threads_; ++t) {
    if (uncommitted_[t].empty() && committed_[t].empty()) continue;
    findings_.error(SimError::Kind::AsyncCopyInFlight, {t, end.pc, -1, end.step},
                    "thread exits with wgmma groups in flight (no wait_group retired them)");
    return;
  }
}

}  // namespace smelt::sim
