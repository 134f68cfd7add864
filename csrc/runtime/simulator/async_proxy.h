// The simulator's model of the Hopper async proxy for one block: mbarriers
// (phases, pending arrivals, transaction bytes), TMA box copies that land
// when the phase they complete on completes, wgmma executed per warpgroup
// with its accumulators in flight until wait_group, and the fences between
// the generic and the async proxy. The interpreter (interpreter.cpp) calls
// it for the Hopper instructions and on every shared and local access.
//
// What it reports:
//   * a wait that can never return (every thread of the block waiting or
//     exited): Deadlock, naming the barrier and its pending counts;
//   * a generic access to shared bytes a TMA copy has not landed in yet
//     (AsyncCopyInFlight), and a read of landed bytes by a thread that has
//     not waited for the phase they landed on (a RAW race with the copy). A
//     block barrier passes what one thread has observed to all;
//   * async-proxy accesses (a TMA completing on an mbarrier, wgmma reading
//     its operands) to shared bytes the writing thread has not fenced with
//     fence.proxy.async since its generic write (MissingFence); a wgmma
//     reading accumulators written since the thread's last wgmma.fence;
//   * a thread touching accumulators whose wgmma group no wait_group has
//     retired (AsyncCopyInFlight), and copies or groups left in flight.
// Not modelled: write-after-read ordering through mbarriers (a TMA
// overwriting a stage some thread still reads); that needs happens-before
// across threads beyond block barriers.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "runtime/simulator/findings.h"
#include "runtime/simulator/program.h"
#include "runtime/simulator/shadow.h"

namespace smelt::sim {

// A Global tensor as a TMA reads it.
struct GlobalView {
  const uint8_t* data = nullptr;
  int64_t elem_size = 0;
  int64_t elements = 0;  // valid element offsets: [0, elements)
  std::vector<int64_t> sizes, strides;  // in elements
};

// What the proxy needs of the interpreter running the block.
class ProxyHost {
 public:
  virtual ~ProxyHost() = default;
  virtual int64_t evaluate(int32_t index_code, int32_t thread) = 0;
  virtual uint32_t steps(int32_t thread) const = 0;
  // The byte address of `elements` elements from `a` in its memory (the
  // block's shared array or the thread's local arena); -1 (reported) when
  // they are out of bounds.
  virtual int64_t byteOf(const RtAccess& a, int32_t thread, int32_t pc, int64_t elements) = 0;
  virtual uint8_t* localArena(int32_t thread) = 0;
  virtual GlobalView global(int32_t buffer) const = 0;
};

class AsyncProxy {
 public:
  AsyncProxy(const Program& program, Findings& findings, ProxyHost& host)
      : p_(program), findings_(findings), host_(host) {}

  // Instructions: `step` runs one a thread executes alone (all but the wait
  // and wgmma); `waitReady` says whether a thread may pass an MbarrierWait;
  // `wgmmaGroup` runs a Wgmma for the warpgroup from thread `first`.
  void step(const Instr& in, int32_t thread, int32_t pc);
  bool waitReady(int32_t thread, int32_t pc);
  void wgmmaGroup(const Instr& in, int32_t pc, int32_t first);
  // Reports a deadlock and returns true when a thread still waits on an
  // mbarrier (`at`: each thread's instruction, negative when exited) once
  // no thread can make progress.
  bool deadlocked(const std::vector<int32_t>& at);

  // A new block; `shadow` is null without race detection.
  void reset(int32_t threads, int64_t shared_bytes, int64_t local_bytes, uint8_t* smem,
             SharedShadow* shadow);

  // `name` ("buffer[index]") names the barrier in findings.

 private:
  // One thread's part of a wgmma: where its accumulators are.
  struct WgmmaLane {
    uint8_t* acc = nullptr;   // its first accumulator
    int64_t acc_offset = 0;   // that register's byte offset in the thread's local arena
  };

  void init(int64_t barrier_byte, int32_t arrivals, const std::string& name, const AccessEvent& ev);
  void arrive(int64_t barrier_byte, int32_t transaction_bytes, const AccessEvent& ev);
  // True when the phase of `parity` has completed (the thread continues).
  bool tryWait(int64_t barrier_byte, int64_t parity, const AccessEvent& ev);
  void tmaLoad(const RtTensorMap& map, const GlobalView& src, int64_t row, int64_t col,
               int64_t dst_byte, int64_t barrier_byte, const AccessEvent& ev);
  void fence(int32_t thread) { ++fences_[thread]; }
  // The warpgroup's wgmma: `a_byte`/`b_byte` the operand tiles' shared
  // addresses (the descriptors' start), `lanes` its 128 threads from `ev`'s.
  void wgmma(const Instr& in, int64_t a_byte, int64_t b_byte, const std::vector<WgmmaLane>& lanes,
             const AccessEvent& ev);
  void wgmmaFence(int32_t thread);
  void wgmmaCommit(int32_t thread);
  void wgmmaWait(int32_t thread, int32_t pending);

 public:
  // Every generic access by the interpreter.
  void sharedAccess(int64_t byte, int64_t count, bool is_write, const AccessEvent& ev);
  void localAccess(int64_t offset, int64_t count, bool is_write, const AccessEvent& ev);
  // After a block-wide barrier: every thread has seen what any thread saw.
  void blockBarrier();
  // At the end of the block: copies that never landed, groups never retired.
  void finishBlock(const AccessEvent& end);

 private:
  struct Copy {
    int64_t dst_byte = 0;
    std::vector<uint8_t> image;  // the destination bytes, swizzled
    AccessEvent issue;
  };
  struct Barrier {
    std::string name;  // "buffer[index]"
    int64_t arrivals = 0;
    int64_t pending = 0;
    int64_t transaction_bytes = 0;  // expected minus completed, this phase
    uint32_t phase = 0;
    std::vector<uint32_t> observed;  // per thread: phases it knows completed
    std::vector<Copy> copies;        // landing at this phase's completion
  };
  struct Landing {
    int64_t barrier_byte;
    uint32_t phase;
    AccessEvent issue;
  };
  struct Range {
    int64_t offset, count;
  };

  Barrier* barrier(int64_t byte, const AccessEvent& ev);
  void completeIfDone(int64_t byte, Barrier& b);
  // Async-proxy access to shared bytes: in flight, unfenced or not observed
  // by the readers (the minimum over `readers` of their observed phases).
  void asyncRead(int64_t byte, int64_t count, int32_t first_reader, int32_t readers,
                 const AccessEvent& ev, const char* what);
  bool unfenced(int64_t byte) const;
  uint32_t observedBy(const Landing& l, int32_t first, int32_t count) const;

  const Program& p_;
  Findings& findings_;
  ProxyHost& host_;
  SharedShadow* shadow_ = nullptr;
  uint8_t* smem_ = nullptr;
  int32_t threads_ = 0;
  int64_t local_bytes_ = 0;
  std::map<int64_t, Barrier> barriers_;
  std::vector<Landing> landings_;
  std::vector<int32_t> landed_;        // per shared byte: into landings_, -1 none
  std::vector<uint16_t> tma_in_flight_;  // per shared byte
  std::vector<int32_t> generic_writer_;  // per shared byte: thread + 1, 0 none
  std::vector<uint32_t> writer_fences_;  // the writer's fence count at its write
  std::vector<uint32_t> fences_;         // per thread
  // Per thread x local byte: wgmma groups writing it; written since wgmma.fence.
  std::vector<uint8_t> acc_in_flight_;
  std::vector<uint8_t> unfenced_local_;
  std::vector<std::vector<Range>> uncommitted_;
  std::vector<std::deque<std::vector<Range>>> committed_;
};

}  // namespace smelt::sim
