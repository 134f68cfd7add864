#include "lower/alloc_reuse/verify.h"

#include <optional>
#include <sstream>

#include "fusion/device_limits.h"
#include "fusion/error.h"

namespace smelt::alloc_reuse {

namespace {

class PlanChecker {
 public:
  PlanChecker(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
              const AddressPlan& plan)
      : buffers_(buffers), conflicts_(conflicts), plan_(plan) {}

  std::vector<std::string> problems(int64_t device_limit_bytes) {
    checkLinks();
    if (!problems_.empty()) return problems_;  // the rest relies on sound links
    checkAlignment();
    checkConflicts();
    checkTotal(device_limit_bytes);
    return problems_;
  }

  std::string describe(size_t i) const {
    const Buffer& b = buffers_[i];
    std::ostringstream os;
    os << "'" << b.name << "' (" << b.bytes << " B at " << plan_.addresses[i] << ", align "
       << b.alignment << ", live [" << b.first_write << ", " << b.last_read << "])";
    return os.str();
  }

 private:
  std::optional<int64_t> constantEnd(size_t i) const {
    auto addr = plan_.addresses[i].constant();
    auto bytes = buffers_[i].bytes.constant();
    if (!addr || !bytes) return std::nullopt;
    return *addr + *bytes;
  }

  void checkLinks() {
    const size_t n = buffers_.size();
    for (size_t i = 0; i < n; ++i) {
      const int below = plan_.stacked_on[i];
      if (below == AddressPlan::kNotStacked) continue;
      if (below < 0 || static_cast<size_t>(below) >= n || static_cast<size_t>(below) == i) {
        problems_.push_back(describe(i) + " is stacked on invalid buffer index " +
                            std::to_string(below));
        continue;
      }
      size_t steps = 0;
      for (int k = below; k != AddressPlan::kNotStacked && steps <= n; k = plan_.stacked_on[k]) {
        ++steps;
      }
      if (steps > n) {
        problems_.push_back(describe(i) + " is part of a stacked_on cycle");
        continue;
      }
      const size_t b = static_cast<size_t>(below);
      IntExpr expected = alignUp(plan_.addresses[b] + buffers_[b].bytes, buffers_[i].alignment);
      if (!expected.sameAs(plan_.addresses[i])) {
        problems_.push_back(describe(i) + " claims to sit on " + describe(b) +
                            " but its address is not " + expected.toString());
      }
    }
  }

  void checkAlignment() {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (auto addr = plan_.addresses[i].constant()) {
        if (*addr < 0 || *addr % buffers_[i].alignment != 0) {
          problems_.push_back(describe(i) + " is not aligned to " +
                              std::to_string(buffers_[i].alignment) + " B");
        }
      } else if (plan_.stacked_on[i] == AddressPlan::kNotStacked) {
        problems_.push_back(describe(i) +
                            " has a symbolic address not derived from a stacked buffer");
      }
    }
  }

  // True when x's bytes provably end at or below y's address.
  bool provablyBelow(size_t x, size_t y) const {
    const auto x_end = constantEnd(x);
    for (int k = static_cast<int>(y); k != AddressPlan::kNotStacked; k = plan_.stacked_on[k]) {
      const size_t a = static_cast<size_t>(k);
      auto a_addr = plan_.addresses[a].constant();
      if (x_end && a_addr && *a_addr >= *x_end) return true;
      if (a != y && plan_.addresses[a].sameAs(plan_.addresses[x]) &&
          buffers_[a].bytes.sameAs(buffers_[x].bytes)) {
        return true;  // y sits above a buffer occupying exactly x's bytes
      }
    }
    return false;
  }

  void checkConflicts() {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      for (size_t j : conflicts_.neighbors(i)) {
        if (j <= i) continue;
        auto i_end = constantEnd(i);
        auto j_end = constantEnd(j);
        bool disjoint;
        if (i_end && j_end) {
          disjoint = *i_end <= *plan_.addresses[j].constant() ||
                     *j_end <= *plan_.addresses[i].constant() ||
                     buffers_[i].bytes.constant() == 0 || buffers_[j].bytes.constant() == 0;
        } else {
          disjoint = provablyBelow(i, j) || provablyBelow(j, i);
        }
        if (!disjoint) {
          problems_.push_back("conflicting buffers " + describe(i) + " and " + describe(j) +
                              (i_end && j_end ? " overlap" : " are not provably disjoint"));
        }
      }
    }
  }

  void checkTotal(int64_t device_limit_bytes) {
    auto total = plan_.total_bytes.constant();
    if (!total) return;  // symbolic total: checked against the limit at launch
    for (size_t i = 0; i < buffers_.size(); ++i) {
      auto end = constantEnd(i);
      if (!end || *end > *total) {
        problems_.push_back(describe(i) + " ends beyond the plan's total of " +
                            std::to_string(*total) + " B");
      }
    }
    if (*total > device_limit_bytes) {
      std::ostringstream os;
      os << "total " << *total << " B exceeds the device limit of " << device_limit_bytes
         << " B; buffers:";
      for (size_t i = 0; i < buffers_.size(); ++i) os << "\n    " << describe(i);
      problems_.push_back(os.str());
    }
  }

  const std::vector<Buffer>& buffers_;
  const ConflictGraph& conflicts_;
  const AddressPlan& plan_;
  std::vector<std::string> problems_;
};

}  // namespace

void verifyPlan(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                const AddressPlan& plan, int64_t device_limit_bytes) {
  validateBuffers(buffers);
  SMELT_CHECK(conflicts.size() == buffers.size() && plan.addresses.size() == buffers.size() &&
                  plan.stacked_on.size() == buffers.size(),
              "verifyPlan: ", buffers.size(), " buffers but ", conflicts.size(),
              " conflict rows, ", plan.addresses.size(), " addresses and ",
              plan.stacked_on.size(), " stacking links");
  PlanChecker checker(buffers, conflicts, plan);
  std::vector<std::string> problems = checker.problems(device_limit_bytes);
  if (problems.empty()) return;
  std::ostringstream os;
  os << "shared-memory plan (" << plan.strategy << ") is invalid:";
  for (const std::string& p : problems) os << "\n  - " << p;
  os << "\n  total " << plan.total_bytes << " B, device limit " << device_limit_bytes << " B";
  throw Error(os.str());
}

void SharedMemoryLimits::setLimit(int compute_capability, int64_t bytes) {
  SMELT_CHECK(bytes > 0, "shared-memory limit for sm_", compute_capability,
              " must be positive, got ", bytes);
  overrides_[compute_capability] = bytes;
}

bool SharedMemoryLimits::knows(int compute_capability) const {
  return overrides_.count(compute_capability) > 0 || compute_capability >= DeviceLimits::table().front().arch;
}

int64_t SharedMemoryLimits::limitBytes(int compute_capability) const {
  auto it = overrides_.find(compute_capability);
  if (it != overrides_.end()) return it->second;
  SMELT_CHECK(knows(compute_capability), "no shared-memory limit known for sm_", compute_capability,
              "; set one with SharedMemoryLimits::setLimit");
  return DeviceLimits::forArch(compute_capability).max_shared_memory_per_block;
}

}  // namespace smelt::alloc_reuse
