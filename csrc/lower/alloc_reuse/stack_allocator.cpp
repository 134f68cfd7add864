#include "lower/alloc_reuse/stack_allocator.h"

#include <algorithm>
#include <map>
#include <string>

#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"

namespace smelt::alloc_reuse {

namespace {

class StackWalk {
 public:
  StackWalk(const std::vector<Buffer>& buffers, AddressPlan& plan)
      : buffers_(buffers), plan_(plan) {}

  void firstWrite(size_t i) { waiting_.push_back(i); }

  void blockSync(int64_t position) {
    if (!waiting_.empty()) {
      bool any_dead = std::any_of(waiting_.begin(), waiting_.end(),
                                  [&](size_t i) { return buffers_[i].last_read <= position; });
      if (!any_dead) return;  // every waiting buffer is live: no pops at this sync
      pushWaiting();
    }
    while (!stack_.empty() && buffers_[stack_.back()].last_read <= position) stack_.pop_back();
  }

  void pushWaiting() {
    std::sort(waiting_.begin(), waiting_.end(), [&](size_t a, size_t b) {
      if (buffers_[a].last_read != buffers_[b].last_read) {
        return buffers_[a].last_read > buffers_[b].last_read;
      }
      return buffers_[a].creation_order > buffers_[b].creation_order;
    });
    for (size_t i : waiting_) push(i);
    waiting_.clear();
  }

 private:
  void push(size_t i) {
    if (!stack_.empty()) {
      const size_t top = stack_.back();
      plan_.addresses[i] =
          alignUp(plan_.addresses[top] + buffers_[top].bytes, buffers_[i].alignment);
      plan_.stacked_on[i] = static_cast<int>(top);
    }
    stack_.push_back(i);
  }

  const std::vector<Buffer>& buffers_;
  AddressPlan& plan_;
  std::vector<size_t> waiting_;
  std::vector<size_t> stack_;
};

}  // namespace

AddressPlan planStackAddresses(const std::vector<Buffer>& buffers,
                               std::vector<int64_t> sync_positions, int64_t end_position) {
  validateBuffers(buffers);
  std::sort(sync_positions.begin(), sync_positions.end());
  for (const Buffer& b : buffers) {
    SMELT_CHECK(b.last_read <= end_position, "stack allocator: buffer '", b.name,
                "' is read at position ", b.last_read, ", after the kernel's end position ",
                end_position);
  }
  SMELT_CHECK(sync_positions.empty() || sync_positions.back() <= end_position,
              "stack allocator: a sync at position ", sync_positions.back(),
              " lies after the kernel's end position ", end_position);

  AddressPlan plan;
  plan.addresses.assign(buffers.size(), IntExpr(0));
  plan.stacked_on.assign(buffers.size(), AddressPlan::kNotStacked);
  plan.strategy = "stack";

  // Events by position: first writes join the waiting set before the sync at
  // the same position is handled.
  std::map<int64_t, std::vector<size_t>> first_writes;
  for (size_t i = 0; i < buffers.size(); ++i) first_writes[buffers[i].first_write].push_back(i);
  StackWalk walk(buffers, plan);
  auto next_write = first_writes.begin();
  for (int64_t sync : sync_positions) {
    for (; next_write != first_writes.end() && next_write->first <= sync; ++next_write) {
      for (size_t i : next_write->second) walk.firstWrite(i);
    }
    walk.blockSync(sync);
  }
  for (; next_write != first_writes.end(); ++next_write) {
    for (size_t i : next_write->second) walk.firstWrite(i);
  }
  walk.pushWaiting();

  bool symbolic = std::any_of(buffers.begin(), buffers.end(),
                              [](const Buffer& b) { return !b.bytes.isConstant(); });
  plan.total_bytes = planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  plan.no_reuse_bytes = noReuseBytes(buffers);
  plan.lower_bound_bytes = lowerBoundBytes(buffers, conflictsFromBarriers(buffers, sync_positions));
  plan.symbolic = symbolic;
  if (auto total = plan.total_bytes.constant()) {
    plan.attempts.push_back({plan.strategy, *total});
    plan.lower_bound_reached = *total <= plan.lower_bound_bytes;
    plan.optimal = plan.lower_bound_reached;
  }
  if (symbolic) {
    plan.notes.push_back("symbolic sizes: addresses are expressions over the stack below");
  }
  return plan;
}

}  // namespace smelt::alloc_reuse
