#include "runtime/simulator/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "fusion/error.h"
#include "fusion/mma_fragment.h"
#include "fusion/random_bits.h"
#include "lower/hopper_layout.h"
#include "runtime/simulator/async_proxy.h"
#include "runtime/simulator/block_scan_sim.h"
#include "runtime/simulator/cp_async_sim.h"
#include "runtime/simulator/element_math.h"
#include "runtime/simulator/findings.h"
#include "runtime/simulator/launch_binding.h"
#include "runtime/simulator/program.h"
#include "runtime/simulator/shadow.h"
#include "runtime/simulator/value_convert.h"

namespace smelt::sim {
namespace {

constexpr int32_t kExited = -1;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class BlockRunner : private ProxyHost {
 public:
  BlockRunner(const Program& p, const Launch& L, const SimOptions& options, Findings& findings)
      : p_(p),
        L_(L),
        options_(options),
        findings_(findings),
        shadow_(findings),
        proxy_(p, findings, *this),
        nslots_(p.symbols.size()),
        nthreads_(static_cast<int32_t>(L.threads)),
        block_scan_(nthreads_) {
    slots_.resize(static_cast<size_t>(nthreads_) * nslots_);
    locals_.resize(static_cast<size_t>(nthreads_ * L.local_bytes));
    smem_.resize(static_cast<size_t>(L.shared_bytes));
    pc_.resize(nthreads_);
    steps_.resize(nthreads_);
    arrived_.resize(nthreads_);
    contrib_.resize(nthreads_);
    order_.resize(nthreads_);
    ready_.resize(nthreads_);
  }

  void run(int64_t block_linear) {
    const int64_t bx = block_linear % L_.grid[0];
    const int64_t by = (block_linear / L_.grid[0]) % L_.grid[1];
    const int64_t bz = block_linear / (L_.grid[0] * L_.grid[1]);
    block_linear_ = block_linear;
    findings_.setBlock({bx, by, bz}, L_.block[0], L_.block[1]);
    rng_.seed(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(block_linear));
    // Uninitialized memory reads as NaN (0xff bytes), so a missing write shows.
    std::fill(smem_.begin(), smem_.end(), 0xff);
    std::fill(locals_.begin(), locals_.end(), 0xff);
    if (options_.detect_races) shadow_.reset(L_.shared_bytes);
    copies_.reset(nthreads_, L_.shared_bytes);
    if (p_.uses_hopper) {
      proxy_.reset(nthreads_, L_.shared_bytes, L_.local_bytes, smem_.data(),
                   options_.detect_races ? &shadow_ : nullptr);
    }
    for (int32_t t = 0; t < nthreads_; ++t) {
      int64_t* s = &slots_[static_cast<size_t>(t) * nslots_];
      std::copy(L_.base_slots.begin(), L_.base_slots.end(), s);
      s[kThreadIdx + 0] = t % L_.block[0];
      s[kThreadIdx + 1] = (t / L_.block[0]) % L_.block[1];
      s[kThreadIdx + 2] = t / (L_.block[0] * L_.block[1]);
      s[kBlockIdx + 0] = bx;
      s[kBlockIdx + 1] = by;
      s[kBlockIdx + 2] = bz;
      pc_[t] = 0;
      steps_[t] = 0;
      arrived_[t] = 0;
      ready_[t] = 1;
    }
    for (;;) {
      makeOrder();
      if (!runToBarriers() || (p_.uses_hopper && proxy_.deadlocked(arrived_))) break;
      const int32_t barrier = arrived_[0];
      auto other = std::find_if(arrived_.begin(), arrived_.end(),
                                [&](int32_t a) { return a != barrier; });
      if (other != arrived_.end()) {
        // Report a waiting thread first: "waits here, but that one exited".
        int32_t a = barrier == kExited ? static_cast<int32_t>(other - arrived_.begin()) : 0;
        int32_t b = barrier == kExited ? 0 : static_cast<int32_t>(other - arrived_.begin());
        findings_.divergentBarrier(a, arrived_[a], b, arrived_[b]);
        break;
      }
      if (barrier == kExited) break;
      for (int32_t t = 0; t < nthreads_; ++t) ready_[t] = arrived_[t] != kExited;
      if (p_.uses_hopper) proxy_.blockBarrier();
      nextEpoch();
      const Instr& in = p_.instrs[barrier];
      if (in.op == Op::BlockReduce || in.op == Op::BlockBroadcast || in.op == Op::BlockScan) {
        for (int32_t t : order_) finishBlockOp(in, barrier, t);
        nextEpoch();
      }
    }
    if (p_.uses_hopper) proxy_.finishBlock({0, static_cast<int32_t>(p_.instrs.size()) - 1, -1, 0});
    if (options_.detect_races) shadow_.closeEpoch();
  }

 private:
  // Runs the ready threads, and the warp-collective statements whose warps
  // have all arrived, until every thread waits at a block barrier or has
  // exited. False when a warp diverged at a collective (reported).
  bool runToBarriers() {
    for (;;) {
      for (int32_t t : order_) {
        if (!ready_[t]) continue;
        ready_[t] = 0;
        arrived_[t] = runThread(t);
      }
      bool progressed = false;
      for (int32_t warp = 0; warp < nthreads_; warp += mma::kWarpSize) {
        // The threads of a collective statement a lane of this warp reached:
        // the warp, or the aligned warpgroup of four holding it.
        int32_t at = -1;
        for (int32_t t = warp; t < std::min<int32_t>(nthreads_, warp + mma::kWarpSize) && at < 0; ++t) {
          if (groupWidth(t) > 0) at = t;
        }
        if (at < 0) continue;
        const int32_t width = groupWidth(at);
        const int32_t lo = warp - warp % width;
        const int32_t hi = std::min<int32_t>(nthreads_, lo + width);
        const int32_t pc = arrived_[at];
        // A lane blocked on an mbarrier may still come: the group waits.
        if (p_.uses_hopper && std::any_of(&arrived_[lo], &arrived_[lo] + (hi - lo), [&](int32_t a) {
              return a != kExited && p_.instrs[a].op == Op::MbarrierWait;
            })) {
          warp = hi - mma::kWarpSize;
          continue;
        }
        for (int32_t t = lo; t < hi; ++t) {
          if (arrived_[t] == pc) continue;
          std::string elsewhere = arrived_[t] == kExited
                                      ? "has exited"
                                      : "is at position " +
                                            std::to_string(p_.instrs[arrived_[t]].position) +
                                            " (" + p_.stmt_text[arrived_[t]] + ")";
          findings_.error(SimError::Kind::DivergentWarp, {at, pc, -1, steps_[at]},
                          "divergent warp: lane " + std::to_string(at % mma::kWarpSize) +
                              " reached a warp-collective statement but lane " +
                              std::to_string(t % mma::kWarpSize) + " " + elsewhere +
                              "; the rest of the block was not simulated");
          return false;
        }
        if (hi - lo != width) {
          findings_.error(SimError::Kind::DivergentWarp, {at, pc, -1, steps_[at]},
                          "collective statement of " + std::to_string(width) +
                              " threads in a partial group of " + std::to_string(hi - lo) +
                              " threads");
          return false;
        }
        if (p_.instrs[pc].op == Op::LdMatrix) {
          ldmatrix(p_.instrs[pc], pc, lo);
        } else if (p_.instrs[pc].op == Op::Mma) {
          mmaSync(p_.instrs[pc], pc, lo);
        } else {
          proxy_.wgmmaGroup(p_.instrs[pc], pc, lo);
        }
        for (int32_t t = lo; t < hi; ++t) {
          pc_[t] = pc + 1;
          ready_[t] = 1;
        }
        progressed = true;
        warp = hi - mma::kWarpSize;
      }
      for (int32_t t = 0; p_.uses_hopper && t < nthreads_; ++t) {
        const int32_t pc = arrived_[t];
        if (pc == kExited || p_.instrs[pc].op != Op::MbarrierWait || !proxy_.waitReady(t, pc)) continue;
        pc_[t] = pc + 1;
        ready_[t] = 1;
        progressed = true;
      }
      if (!progressed) return true;
    }
  }

  // Threads executing thread t's current statement together: 32 for warp-
  // and 128 for warpgroup-collective statements, 0 for any other.
  int32_t groupWidth(int32_t t) const {
    if (arrived_[t] == kExited) return 0;
    const Op op = p_.instrs[arrived_[t]].op;
    if (op == Op::LdMatrix || op == Op::Mma) return mma::kWarpSize;
    return op == Op::Wgmma ? static_cast<int32_t>(hopper::kWarpgroupThreads) : 0;
  }

  // ProxyHost: what the Hopper statements (async_proxy.h) need of this block.
  int64_t evaluate(int32_t index_code, int32_t t) override { return p_.code.eval(index_code, slotsOf(t)); }
  uint32_t steps(int32_t t) const override { return steps_[t]; }
  int64_t byteOf(const RtAccess& a, int32_t t, int32_t pc, int64_t n) override {
    const int64_t index = evaluate(a.index, t);
    const Memory& m = L_.memory[a.buffer];
    if (index < 0 || index + n > m.elements) {
      findings_.outOfBounds({t, pc, a.buffer, steps_[t]}, true, index < 0 ? index : index + n - 1, m.elements);
      return -1;
    }
    return m.offset + index * m.elem_size;
  }
  uint8_t* localArena(int32_t t) override { return localsOf(t); }
  GlobalView global(int32_t b) const override {
    const Memory& m = L_.memory[b];
    return {m.data, m.elem_size, m.elements, m.sizes, m.strides};
  }

  // Lane 8j + r of the warp from `lane0` names row r of matrix j; each lane
  // receives its two elements of every matrix (fusion/mma_fragment.h).
  void ldmatrix(const Instr& in, int32_t pc, int32_t lane0) {
    double rows[4][8][8];
    const Memory& src = L_.memory[in.in.buffer];
    for (int32_t j = 0; j < in.count; ++j) {
      for (int32_t r = 0; r < 8; ++r) {
        const int32_t t = lane0 + 8 * j + r;
        const int64_t index = p_.code.eval(in.in.index, slotsOf(t));
        if ((src.offset + index * src.elem_size) % 16 != 0) {
          findings_.error(SimError::Kind::Misaligned, {t, pc, in.in.buffer, steps_[t]},
                          "ldmatrix row at element " + std::to_string(index) +
                              " is not 16-byte aligned");
        }
        for (int32_t c = 0; c < 8; ++c) rows[j][r][c] = load(in.in.buffer, index + c, t, pc);
      }
    }
    for (int32_t lane = 0; lane < mma::kWarpSize; ++lane) {
      const int32_t t = lane0 + lane;
      const int64_t index = p_.code.eval(in.out.index, slotsOf(t));
      for (int32_t j = 0; j < in.count; ++j) {
        for (int32_t e = 0; e < 2; ++e) {
          const mma::RowCol at = mma::ldmatrixElement(lane, e, in.transpose);
          store(in.out.buffer, index + 2 * j + e, t, pc, rows[j][at.row][at.col]);
        }
      }
    }
  }

  // D = A B + C over the warp's fragments, accumulated in double and stored
  // as fp32 (the hardware's fp32 accumulation order is unspecified).
  void mmaSync(const Instr& in, int32_t pc, int32_t lane0) {
    double a[mma::kM][mma::kK], b[mma::kK][mma::kN], c[mma::kM][mma::kN];
    for (int32_t lane = 0; lane < mma::kWarpSize; ++lane) {
      const int32_t t = lane0 + lane;
      const int64_t ai = p_.code.eval(in.in.index, slotsOf(t));
      const int64_t bi = p_.code.eval(in.in2.index, slotsOf(t));
      const int64_t ci = p_.code.eval(in.out.index, slotsOf(t));
      for (int64_t i = 0; i < mma::kAElementsPerLane; ++i) {
        const mma::RowCol at = mma::aElement(lane, i);
        a[at.row][at.col] = load(in.in.buffer, ai + i, t, pc);
      }
      for (int64_t i = 0; i < mma::kBElementsPerLane; ++i) {
        const mma::RowCol at = mma::bElement(lane, i);
        b[at.row][at.col] = load(in.in2.buffer, bi + i, t, pc);
      }
      for (int64_t i = 0; i < mma::kCElementsPerLane; ++i) {
        const mma::RowCol at = mma::cElement(lane, i);
        c[at.row][at.col] = load(in.out.buffer, ci + i, t, pc);
      }
    }
    for (int32_t lane = 0; lane < mma::kWarpSize; ++lane) {
      const int32_t t = lane0 + lane;
      const int64_t ci = p_.code.eval(in.out.index, slotsOf(t));
      for (int64_t i = 0; i < mma::kCElementsPerLane; ++i) {
        const mma::RowCol at = mma::cElement(lane, i);
        double d = c[at.row][at.col];
        for (int64_t k = 0; k < mma::kK; ++k) d += a[at.row][k] * b[k][at.col];
        store(in.out.buffer, ci + i, t, pc, d);
      }
    }
  }

  // One cp.async: the source is read now (it is global memory the kernel
  // does not write), the destination bytes are claimed now (a WAR/WAW with
  // another thread's access since the last barrier is a race) and land when
  // a wait_group retires the copy's group.
  void issueCopy(const Instr& in, int32_t t, int32_t pc) {
    const int64_t* s = slotsOf(t);
    const Memory& dst = L_.memory[in.out.buffer];
    const Memory& src = L_.memory[in.in.buffer];
    const int64_t n = in.count / dst.elem_size;
    const int64_t dst_index = p_.code.eval(in.out.index, s);
    const AccessEvent ev{t, pc, in.out.buffer, steps_[t]};
    if (dst_index < 0 || dst_index + n > dst.elements) {
      findings_.outOfBounds(ev, true, dst_index < 0 ? dst_index : dst_index + n - 1, dst.elements);
      return;
    }
    AsyncCopy copy;
    copy.byte = dst.offset + dst_index * dst.elem_size;
    copy.bytes = in.count;
    copy.buffer = in.out.buffer;
    if (copy.byte % in.count != 0) {
      findings_.error(SimError::Kind::Misaligned, ev,
                      "cp.async of " + std::to_string(in.count) + " bytes to shared byte " +
                          std::to_string(copy.byte) + " is not aligned to its size");
    }
    if (holds(in.pred, s)) {
      const int64_t src_index = p_.code.eval(in.in.index, s);
      if (src_index < 0 || src_index + n > src.elements) {
        findings_.outOfBounds({t, pc, in.in.buffer, steps_[t]}, false,
                              src_index < 0 ? src_index : src_index + n - 1, src.elements);
        return;
      }
      if ((src_index * src.elem_size) % in.count != 0) {
        findings_.error(SimError::Kind::Misaligned, {t, pc, in.in.buffer, steps_[t]},
                        "cp.async of " + std::to_string(in.count) + " bytes from element " +
                            std::to_string(src_index) + " is not aligned to its size");
      }
      std::memcpy(copy.data, src.data + src_index * src.elem_size, static_cast<size_t>(in.count));
    }
    if (int64_t b = 0; copies_.inFlight(copy.byte, copy.bytes, &b)) {
      findings_.error(SimError::Kind::AsyncCopyInFlight, ev,
                      "cp.async into shared byte " + std::to_string(b) +
                          " while an earlier copy to it is still in flight");
    }
    if (options_.detect_races) shadow_.write(copy.byte, copy.bytes, ev);
    copies_.issue(t, copy);
  }

  void retireGroup(int32_t t, int32_t pc) {
    copies_.retireOldest(t, smem_.data(), [&](const AsyncCopy& copy) {
      // Landing is this thread's write: other threads see it after a barrier.
      if (options_.detect_races) shadow_.write(copy.byte, copy.bytes, {t, pc, copy.buffer, steps_[t]});
    });
  }

  void exitWithCopiesInFlight(int32_t t, int32_t pc) {
    const int64_t copies = copies_.copiesInFlight(t);
    if (copies == 0) return;
    findings_.error(SimError::Kind::AsyncCopyInFlight, {t, pc, -1, steps_[t]},
                    "thread exits with " + std::to_string(copies) +
                        " cp.async copies in flight (no wait_group retired them)");
    copies_.commit(t);
    while (copies_.committedGroups(t) > 0) retireGroup(t, pc);
  }

  void makeOrder() {
    for (int32_t t = 0; t < nthreads_; ++t) order_[t] = t;
    if (options_.order == ThreadOrder::Reverse) {
      std::reverse(order_.begin(), order_.end());
    } else if (options_.order == ThreadOrder::Random) {
      std::shuffle(order_.begin(), order_.end(), rng_);
    }
  }

  void nextEpoch() {
    if (options_.detect_races) shadow_.closeEpoch();
    std::fill(steps_.begin(), steps_.end(), 0u);
  }

  int64_t* slotsOf(int32_t t) { return &slots_[static_cast<size_t>(t) * nslots_]; }
  uint8_t* localsOf(int32_t t) { return &locals_[static_cast<size_t>(t * L_.local_bytes)]; }

  bool holds(const RtPredicate& pred, const int64_t* s) const {
    for (uint32_t i = pred.begin; i < pred.end; ++i) {
      const RtTerm& term = p_.terms[i];
      int64_t a = p_.code.eval(term.lhs, s);
      int64_t b = p_.code.eval(term.rhs, s);
      switch (term.kind) {
        case kir::Predicate::Term::Kind::LessThan: if (!(a < b)) return false; break;
        case kir::Predicate::Term::Kind::Equal: if (a != b) return false; break;
        case kir::Predicate::Term::Kind::GreaterEqual: if (!(a >= b)) return false; break;
      }
    }
    return true;
  }

  // The element's bytes, or nullptr (reported) when the index is out of bounds.
  uint8_t* element(int32_t buffer, int64_t index, int32_t t, int32_t pc, bool is_write) {
    const Memory& m = L_.memory[buffer];
    if (index < 0 || index >= m.elements) {
      findings_.outOfBounds({t, pc, buffer, steps_[t]}, is_write, index, m.elements);
      return nullptr;
    }
    if (m.memory == MemoryType::Shared) {
      const int64_t byte = m.offset + index * m.elem_size;
      if (int64_t b = 0; copies_.inFlight(byte, m.elem_size, &b)) {
        findings_.error(SimError::Kind::AsyncCopyInFlight, {t, pc, buffer, steps_[t]},
                        std::string(is_write ? "write" : "read") + " of shared byte " +
                            std::to_string(b) +
                            " while a cp.async to it is in flight (missing wait_group)");
      }
    }
    if (p_.uses_hopper && m.memory != MemoryType::Global) {
      const AccessEvent ev{t, pc, buffer, steps_[t]};
      if (m.memory == MemoryType::Shared) {
        proxy_.sharedAccess(m.offset + index * m.elem_size, m.elem_size, is_write, ev);
      } else {
        proxy_.localAccess(m.offset + index * m.elem_size, m.elem_size, is_write, ev);
      }
    }
    switch (m.memory) {
      case MemoryType::Global:
        if (is_write && options_.detect_races) checkSingleWriter(buffer, index, t, pc);
        return m.data + index * m.elem_size;
      case MemoryType::Local: return localsOf(t) + m.offset + index * m.elem_size;
      case MemoryType::Shared: {
        const int64_t byte = m.offset + index * m.elem_size;
        if (options_.detect_races) {
          AccessEvent ev{t, pc, buffer, steps_[t]};
          if (is_write) {
            shadow_.write(byte, m.elem_size, ev);
          } else {
            shadow_.read(byte, m.elem_size, ev);
          }
        }
        return smem_.data() + byte;
      }
    }
    return nullptr;
  }

  // One writer per Global element and launch: the first (block, thread) to
  // store it owns it; the same thread may store it again (a serial loop).
  // A block all-reduce is the exception by design: every thread of the group
  // holds the result and stores the same value.
  // A combining scatter's writes are atomic on the GPU: they neither claim
  // nor contest an element (a Set scatter's duplicates are a race).
  void checkSingleWriter(int32_t buffer, int64_t index, int32_t t, int32_t pc) {
    const Instr& in = p_.instrs[pc];
    if (in.op == Op::BlockReduce) return;
    if (in.fn == Fn::Scatter && in.combine != ScatterCombine::Set) return;
    std::vector<int64_t>& owners = global_writers_[buffer];
    if (owners.empty()) owners.assign(static_cast<size_t>(L_.memory[buffer].elements), -1);
    const int64_t me = block_linear_ * nthreads_ + t;
    int64_t& owner = owners[static_cast<size_t>(index)];
    if (owner >= 0 && owner != me) {
      const int64_t block = owner / nthreads_;
      const ThreadIndex first_block{block % L_.grid[0], (block / L_.grid[0]) % L_.grid[1],
                                    block / (L_.grid[0] * L_.grid[1])};
      findings_.duplicateGlobalWrite({t, pc, buffer, steps_[t]}, index, first_block,
                                     static_cast<int32_t>(owner % nthreads_));
    }
    owner = me;
  }

  double load(int32_t buffer, int64_t index, int32_t t, int32_t pc) {
    const uint8_t* e = element(buffer, index, t, pc, false);
    return e ? loadValue(L_.memory[buffer].dtype, e) : kNaN;
  }

  void store(int32_t buffer, int64_t index, int32_t t, int32_t pc, double v) {
    if (uint8_t* e = element(buffer, index, t, pc, true)) storeValue(L_.memory[buffer].dtype, e, v);
  }

  double load(const RtAccess& a, int32_t t, int32_t pc) {
    return load(a.buffer, p_.code.eval(a.index, slotsOf(t)), t, pc);
  }

  void store(const RtAccess& a, int32_t t, int32_t pc, double v) {
    store(a.buffer, p_.code.eval(a.index, slotsOf(t)), t, pc, v);
  }

  double operand(const RtOperand& op, int32_t t, int32_t pc) {
    if (!holds(op.in_bounds, slotsOf(t))) return op.out_of_bounds_value;
    if (op.index_value >= 0) return static_cast<double>(p_.code.eval(op.index_value, slotsOf(t)));
    if (op.access.buffer < 0) return op.constant;
    return load(op.access, t, pc);
  }

  // Integer results of integer operands are computed in int64_t (wrapping to
  // the output's width on store): a double holds integers exactly only up to
  // 2^53, and int32 overflow must wrap as on the GPU and in torch.
  bool integerCompute(const Instr& in) const {
    if (!isIntegralType(L_.memory[in.out.buffer].dtype) || !hasIntegerForm(in.fn)) return false;
    for (uint32_t i = in.operand_begin; i < in.operand_end; ++i) {
      const RtOperand& op = p_.operands[i];
      if (op.access.buffer >= 0 && !isIntegerStorage(L_.memory[op.access.buffer].dtype)) {
        return false;
      }
      if (op.access.buffer < 0 && std::trunc(op.constant) != op.constant) return false;
    }
    return true;
  }

  // A literal as the kernel spells it in the result's type `dtype`: an
  // infinity (a max's or min's identity, a pad's value) is its type's
  // minimum or maximum (codegen's literal()), not int64_t's.
  static int64_t intLiteral(double v, DataType dtype) {
    if (!std::isinf(v)) return saturatingCast<int64_t>(v);
    uint8_t bytes[8];
    storeValue(dtype, bytes, v);
    return loadInt(dtype, bytes);
  }

  int64_t intOperand(const RtOperand& op, int32_t t, int32_t pc, DataType dtype = DataType::Int) {
    if (!holds(op.in_bounds, slotsOf(t))) return intLiteral(op.out_of_bounds_value, dtype);
    if (op.index_value >= 0) return p_.code.eval(op.index_value, slotsOf(t));
    if (op.access.buffer < 0) return intLiteral(op.constant, dtype);
    const uint8_t* e = element(op.access.buffer, p_.code.eval(op.access.index, slotsOf(t)), t,
                               pc, false);
    return e ? loadInt(L_.memory[op.access.buffer].dtype, e) : 0;
  }

  void computeInteger(const Instr& in, int32_t t, int32_t pc) {
    int64_t a[3] = {0, 0, 0};
    for (uint32_t i = in.operand_begin; i < in.operand_end; ++i) {
      a[i - in.operand_begin] = intOperand(p_.operands[i], t, pc, L_.memory[in.out.buffer].dtype);
    }
    const int64_t r = integerResult(in.fn, a, L_.memory[in.out.buffer].dtype);
    if (uint8_t* e = element(in.out.buffer, p_.code.eval(in.out.index, slotsOf(t)), t, pc, true)) {
      storeInt(L_.memory[in.out.buffer].dtype, e, r);
    }
  }

  // index_select: loads the index into its slot; an index outside the
  // table's extent is an error (torch raises), and nothing is written.
  bool bindGatheredIndex(const Instr& in, int32_t t, int32_t pc) {
    const int64_t index = intOperand(p_.operands[in.operand_begin + 1], t, pc);
    const int64_t extent = p_.code.eval(in.extent, slotsOf(t));
    if (index < 0 || index >= extent) {
      findings_.error(SimError::Kind::OutOfBounds, {t, pc, -1, steps_[t]},
                      "index_select: index value " + std::to_string(index) +
                          " is outside the table's extent " + std::to_string(extent));
      return false;
    }
    slotsOf(t)[in.slot] = index;
    return true;
  }

  // scatter: the index (negative ones wrapped where the op allows) must lie
  // in [0, size) of the output's dimension, as torch checks (nothing is
  // written otherwise); the element there is combined with src, integers in
  // int64_t.
  void scatter(const Instr& in, int32_t t, int32_t pc) {
    const int64_t raw = intOperand(p_.operands[in.operand_begin], t, pc);
    const int64_t size = p_.code.eval(in.extent, slotsOf(t));
    const int64_t index = in.wrap_negative && raw < 0 ? raw + size : raw;
    if (index < 0 || index >= size) {
      findings_.error(SimError::Kind::OutOfBounds, {t, pc, -1, steps_[t]},
                      "scatter: index " + std::to_string(raw) + " is out of bounds for dimension " +
                          std::to_string(in.scatter_dim) + " with size " + std::to_string(size));
      return;
    }
    slotsOf(t)[in.slot] = index;
    const RtOperand& src = p_.operands[in.operand_begin + 1];
    const int64_t at = p_.code.eval(in.out.index, slotsOf(t));
    const DataType dtype = L_.memory[in.out.buffer].dtype;
    if (isIntegralType(dtype)) {
      const uint8_t* e = element(in.out.buffer, at, t, pc, false);
      const int64_t old = e ? loadInt(dtype, e) : 0, v = intOperand(src, t, pc);
      const int64_t r = scatterCombine(in.combine, old, v);
      if (uint8_t* w = element(in.out.buffer, at, t, pc, true)) storeInt(dtype, w, r);
      return;
    }
    const double old = load(in.out.buffer, at, t, pc), v = operand(src, t, pc);
    const double r = scatterCombine(in.combine, old, v);
    store(in.out.buffer, at, t, pc, r);
  }

  // A scan step: the running value (operand 1) combines the element
  // (operand 0), in int64_t for integers and bool, and the output takes it
  // (as rounded to the running value's type).
  void scanStep(const Instr& in, int32_t t, int32_t pc) {
    const RtOperand& x = p_.operands[in.operand_begin];
    const RtOperand& carry = p_.operands[in.operand_begin + 1];
    if (isIntegerStorage(L_.memory[carry.access.buffer].dtype)) {
      const int64_t old = intOperand(carry, t, pc), v = intOperand(x, t, pc);
      const int64_t r = scanCombine(in.scan, old, v);
      const int64_t at = p_.code.eval(carry.access.index, slotsOf(t));
      if (uint8_t* e = element(carry.access.buffer, at, t, pc, true)) storeInt(L_.memory[carry.access.buffer].dtype, e, r);
      const int64_t stored = intOperand(carry, t, pc);
      if (uint8_t* e = element(in.out.buffer, p_.code.eval(in.out.index, slotsOf(t)), t, pc, true)) {
        storeInt(L_.memory[in.out.buffer].dtype, e, stored);
      }
      return;
    }
    store(carry.access, t, pc, scanCombine(in.scan, operand(carry, t, pc), operand(x, t, pc)));
    store(in.out, t, pc, operand(carry, t, pc));
  }

  void compute(const Instr& in, int32_t t, int32_t pc) {
    if (in.fn == Fn::Scatter) return scatter(in, t, pc);
    if (in.fn == Fn::Scan) return scanStep(in, t, pc);
    if (in.fn == Fn::Gather && !bindGatheredIndex(in, t, pc)) return;
    if (integerCompute(in)) return computeInteger(in, t, pc);
    if (in.fn == Fn::RandomUniform) {  // integer operands, exact past 2^53
      const int64_t seed = intOperand(p_.operands[in.operand_begin], t, pc);
      const int64_t counter = intOperand(p_.operands[in.operand_begin + 1], t, pc);
      store(in.out, t, pc,
            randomUniformValue(seed, counter, L_.memory[in.out.buffer].dtype == DataType::Double));
      return;
    }
    double a[3] = {0, 0, 0};
    for (uint32_t i = in.operand_begin; i < in.operand_end; ++i) {
      a[i - in.operand_begin] = operand(p_.operands[i], t, pc);
    }
    const double r = floatResult(in.fn, a, L_.memory[in.out.buffer].dtype);
    store(in.out, t, pc, r);
  }

  // Runs thread t from its program counter to the next barrier; returns that
  // barrier's instruction, or kExited.
  int32_t runThread(int32_t t) {
    int64_t* s = slotsOf(t);
    int32_t pc = pc_[t];
    for (;;) {
      const Instr& in = p_.instrs[pc];
      ++steps_[t];
      switch (in.op) {
        case Op::LoopBegin: {
          const int64_t extent = p_.code.eval(in.extent, s);
          s[in.extent_slot] = extent;
          s[in.slot] = 0;
          pc = extent > 0 ? pc + 1 : in.target;
          break;
        }
        case Op::LoopEnd: pc = ++s[in.slot] < s[in.extent_slot] ? in.target : pc + 1; break;
        case Op::Bind:
          s[in.slot] = s[in.extent_slot];
          ++pc;
          break;
        case Op::If: pc = holds(in.pred, s) ? pc + 1 : in.target; break;
        case Op::Jump: pc = in.target; break;
        case Op::Compute:
          if (holds(in.pred, s)) compute(in, t, pc);
          ++pc;
          break;
        case Op::ReduceInit:
          if (holds(in.pred, s)) store(in.out, t, pc, in.init);
          ++pc;
          break;
        case Op::ReduceStep:
          if (holds(in.pred, s)) {
            const double acc = load(in.out, t, pc);
            const double v = operand(p_.operands[in.operand_begin], t, pc);
            store(in.out, t, pc, combine(in.fn, acc, v));
          }
          ++pc;
          break;
        case Op::Sync:
          pc_[t] = pc + 1;
          return pc;
        case Op::BlockReduce:
        case Op::BlockBroadcast:
        case Op::BlockScan:
          arriveBlockOp(in, pc, t);
          pc_[t] = pc + 1;
          return pc;
        case Op::CpAsync:
          issueCopy(in, t, pc);
          ++pc;
          break;
        case Op::CpAsyncCommit:
          copies_.commit(t);
          ++pc;
          break;
        case Op::CpAsyncWait:
          while (copies_.committedGroups(t) > in.count) retireGroup(t, pc);
          ++pc;
          break;
        case Op::LdMatrix:
        case Op::Mma:
        case Op::Wgmma:
          pc_[t] = pc;  // resumes here; runToBarriers executes it for the whole warp(group)
          return pc;
        case Op::MbarrierWait:
          if (!proxy_.waitReady(t, pc)) {
            pc_[t] = pc;  // runToBarriers resumes it once the phase completes
            return pc;
          }
          ++pc;
          break;
        case Op::MbarrierInit: case Op::MbarrierArrive: case Op::TmaLoad: case Op::FenceProxyAsync:
        case Op::WgmmaFence: case Op::WgmmaCommit: case Op::WgmmaWait:
          proxy_.step(in, t, pc);
          ++pc;
          break;
        case Op::End:
          exitWithCopiesInFlight(t, pc);
          pc_[t] = pc;
          return kExited;
      }
    }
  }

  bool isGroupSource(uint8_t axes, int32_t t) const {
    const int64_t* s = &slots_[static_cast<size_t>(t) * nslots_];
    for (int d = 0; d < 3; ++d) {
      if ((axes >> d & 1) && s[kThreadIdx + d] != 0) return false;
    }
    return true;
  }

  BlockScanMemory blockScanMemory(int32_t pc) {  // a block scan's accesses, as its threads
    return {[this, pc](int32_t b, int64_t i, int32_t t, bool w) { return element(b, i, t, pc, w); },
            [this](int32_t code, int32_t t) { return p_.code.eval(code, slotsOf(t)); },
            [this](int32_t b) { return L_.memory[b].dtype; }};
  }
  // Before the statement's first barrier: each thread deposits its value.
  void arriveBlockOp(const Instr& in, int32_t pc, int32_t t) {
    if (in.op == Op::BlockScan) return block_scan_.arrive(in, t, blockScanMemory(pc));
    double v;
    if (in.op == Op::BlockReduce) {
      v = holds(in.pred, slotsOf(t)) ? load(in.in, t, pc) : in.init;
    } else {
      if (!isGroupSource(in.thread_axes, t)) return;
      v = load(in.in, t, pc);
    }
    if (in.workspace >= 0) {
      store(in.workspace, t, t, pc, v);
    } else {
      contrib_[t] = v;
    }
  }

  double deposited(const Instr& in, int32_t pc, int32_t reader, int32_t slot) {
    return in.workspace >= 0 ? load(in.workspace, slot, reader, pc) : contrib_[slot];
  }

  // After the first barrier: thread t reads its group and writes `out`.
  void finishBlockOp(const Instr& in, int32_t pc, int32_t t) {
    if (in.op == Op::BlockScan) return block_scan_.finish(in, t, blockScanMemory(pc));
    const int64_t* s = slotsOf(t);
    int64_t lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      const bool across = in.thread_axes >> d & 1;
      lo[d] = across ? 0 : s[kThreadIdx + d];
      hi[d] = across ? L_.block[d] : s[kThreadIdx + d] + 1;
    }
    auto linear = [&](int64_t x, int64_t y, int64_t z) {
      return static_cast<int32_t>(x + L_.block[0] * (y + L_.block[1] * z));
    };
    if (in.op == Op::BlockBroadcast) {
      store(in.out, t, pc, deposited(in, pc, t, linear(lo[0], lo[1], lo[2])));
      return;
    }
    if (!holds(in.write_pred, s)) return;
    double acc = in.init;
    for (int64_t z = lo[2]; z < hi[2]; ++z) {
      for (int64_t y = lo[1]; y < hi[1]; ++y) {
        for (int64_t x = lo[0]; x < hi[0]; ++x) {
          acc = combine(in.fn, acc, deposited(in, pc, t, linear(x, y, z)));
        }
      }
    }
    store(in.out, t, pc, acc);
  }

  const Program& p_;
  const Launch& L_;
  const SimOptions& options_;
  Findings& findings_;
  SharedShadow shadow_;
  AsyncProxy proxy_;  // mbarriers, TMA, wgmma (Hopper kernels only)
  int64_t block_linear_ = 0;
  // Per Global buffer written in this launch: the owner (block * threads +
  // thread) of each element, -1 when not stored yet.
  std::map<int32_t, std::vector<int64_t>> global_writers_;
  const int nslots_;
  const int32_t nthreads_;
  std::vector<int64_t> slots_;  // nthreads x nslots
  std::vector<uint8_t> locals_;  // nthreads x local_bytes
  std::vector<uint8_t> smem_;
  std::vector<int32_t> pc_;
  std::vector<uint32_t> steps_;
  std::vector<int32_t> arrived_;  // barrier instruction reached, or kExited
  std::vector<double> contrib_;   // block op values when there is no workspace
  BlockScanModel block_scan_;     // block scans' per-thread values
  std::vector<int32_t> order_;
  std::mt19937_64 rng_;
  // Tensor-core state: threads that may run in this phase, and the
  // cp.async copies in flight.
  std::vector<uint8_t> ready_;
  AsyncCopyGroups copies_;
};

}  // namespace

SimReport simulateBuffers(const kir::Kernel& kernel, const std::vector<TensorArg>& inputs,
                          const std::vector<TensorArg>& outputs,
                          const std::map<std::string, double>& scalars,
                          const SimOptions& options) {
  const Program program = compileKernel(kernel, scalars, options.index_type);
  const Launch launch = bindLaunch(program, kernel, inputs, outputs, scalars);
  Findings findings(program, options, launch.shared_address);
  const int64_t total = launch.grid[0] * launch.grid[1] * launch.grid[2];
  const std::vector<int64_t> blocks = chooseBlocks(total, options);
  BlockRunner runner(program, launch, options, findings);
  for (int64_t b : blocks) runner.run(b);
  SimReport& report = findings.report();
  report.blocks_total = total;
  report.blocks_simulated = static_cast<int64_t>(blocks.size());
  return std::move(report);
}

}  // namespace smelt::sim
