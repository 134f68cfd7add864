// Collects the simulator's findings into a SimReport: merges repeats of the
// same problem (a race inside a loop fires for every byte and iteration) and
// formats each distinct one once, with names and positions from the program.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "runtime/simulator/program.h"
#include "runtime/simulator/sim_report.h"

namespace smelt::sim {

// One thread's access to memory, as the findings and the shadow see it.
struct AccessEvent {
  int32_t thread = 0;  // linear index in the block
  int32_t pc = 0;      // instruction (gives the statement position and text)
  int32_t buffer = 0;
  uint32_t step = 0;   // instructions the thread executed since the last barrier
};

class Findings {
 public:
  Findings(const Program& program, const SimOptions& options,
           const std::vector<int64_t>& shared_address)
      : program_(program), options_(options), shared_address_(shared_address) {}

  // Called before each block: thread coordinates and messages use these.
  void setBlock(ThreadIndex block, int64_t block_dim_x, int64_t block_dim_y) {
    block_ = block;
    bdx_ = block_dim_x;
    bdy_ = block_dim_y;
  }

  void race(RaceKind kind, const AccessEvent& first, bool first_write, const AccessEvent& second,
            bool second_write, int64_t byte);
  void outOfBounds(const AccessEvent& access, bool is_write, int64_t index, int64_t elements);
  void uninitialized(const AccessEvent& access, int64_t byte);
  // thread_b is at pc_b, or has exited when pc_b < 0.
  void divergentBarrier(int32_t thread_a, int32_t pc_a, int32_t thread_b, int32_t pc_b);
  // `a` stores Global element `index`, which thread `first_thread` of block
  // `first_block` already stored in this launch.
  void duplicateGlobalWrite(const AccessEvent& a, int64_t index, ThreadIndex first_block,
                            int32_t first_thread);

  SimReport& report() { return report_; }

 private:
  ThreadIndex thread(int32_t linear) const;
  std::string where(const AccessEvent& a) const;  // "position 7 (Compute ...) by thread (..) of block (..)"
  // True when this finding is new and within the cap; counts repeats otherwise.
  bool admit(const std::tuple<int, int, int, int, int>& key);
  // Records one SimError per distinct (kind, a, b, c, d); repeats only count.
  // `message` is called for a new finding only.
  template <typename Message>
  void error(SimError::Kind kind, int a, int b, int c, int d, int32_t pc, std::string buffer,
             Message message);

  const Program& program_;
  const SimOptions& options_;
  const std::vector<int64_t>& shared_address_;  // per buffer id (Shared only)
  ThreadIndex block_;
  int64_t bdx_ = 1, bdy_ = 1;
  SimReport report_;
  // Distinct finding -> index in races/errors (-1 when dropped by the cap).
  std::map<std::tuple<int, int, int, int, int>, int64_t> seen_;
  int64_t kept_ = 0;
};

}  // namespace smelt::sim
