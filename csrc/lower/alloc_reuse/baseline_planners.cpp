#include "lower/alloc_reuse/baseline_planners.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "fusion/error.h"
#include "lower/alloc_reuse/address_planner.h"

namespace smelt::baselines {

using alloc_reuse::AddressPlan;
using alloc_reuse::Buffer;
using alloc_reuse::ConflictGraph;

namespace {

int64_t constantBytes(const Buffer& b) {
  auto bytes = b.bytes.constant();
  SMELT_CHECK(bytes.has_value(), "baseline planner: buffer '", b.name,
              "' has a symbolic size; the baselines plan constant sizes only");
  return *bytes;
}

int64_t roundUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Fills in the figures every plan carries, from the addresses.
AddressPlan finishPlan(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                       std::vector<int64_t> addresses, const char* strategy) {
  AddressPlan plan;
  plan.addresses.assign(addresses.begin(), addresses.end());
  plan.stacked_on.assign(buffers.size(), AddressPlan::kNotStacked);
  plan.total_bytes = alloc_reuse::planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  plan.no_reuse_bytes = alloc_reuse::noReuseBytes(buffers);
  plan.lower_bound_bytes = alloc_reuse::lowerBoundBytes(buffers, conflicts);
  plan.strategy = strategy;
  const int64_t total = *plan.total_bytes.constant();
  plan.attempts.push_back({strategy, total});
  plan.lower_bound_reached = total <= plan.lower_bound_bytes;
  plan.optimal = plan.lower_bound_reached;
  return plan;
}

// Blocks of the free-list planner. A block merged into a bigger one sits at
// `offset` inside its `parent`; top-level blocks have no parent.
struct Block {
  int64_t bytes = 0;
  int parent = -1;
  int64_t offset = 0;
};

class FreeList {
 public:
  explicit FreeList(int64_t unit) : unit_(unit) {}

  // Returns the block the buffer of `bytes` now occupies (at its offset 0).
  int allocate(int64_t bytes) {
    const int64_t need = roundUp(bytes, unit_);
    // Best fit among blocks no more than kMatchRange times too big.
    auto fit = free_.lower_bound(need);
    if (fit != free_.end() && fit->first <= need * kMatchRange) {
      int block = fit->second;
      free_.erase(fit);
      return block;
    }
    // Merge smaller free blocks, largest first, until they cover `need`.
    std::vector<int> merged;
    int64_t covered = 0;
    for (auto it = free_.lower_bound(need); it != free_.begin() && covered < need;) {
      --it;
      merged.push_back(it->second);
      covered += it->first;
      it = free_.erase(it);
    }
    const int block = newBlock(std::max(need, covered));
    int64_t offset = 0;
    for (int child : merged) {
      blocks_[child].parent = block;
      blocks_[child].offset = offset;
      offset += blocks_[child].bytes;
    }
    return block;
  }

  void release(int block) { free_.emplace(blocks_[block].bytes, block); }

  // Top-level blocks one after another in creation order; nested blocks at
  // their parent's address plus their offset.
  std::vector<int64_t> blockAddresses() const {
    std::vector<int64_t> address(blocks_.size(), 0);
    int64_t end = 0;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if (blocks_[b].parent >= 0) continue;
      address[b] = end;
      end += blocks_[b].bytes;
    }
    // A parent is created after its children: resolve from the newest down.
    for (size_t b = blocks_.size(); b-- > 0;) {
      if (blocks_[b].parent >= 0) {
        address[b] = address[static_cast<size_t>(blocks_[b].parent)] + blocks_[b].offset;
      }
    }
    return address;
  }

 private:
  int newBlock(int64_t bytes) {
    blocks_.push_back({bytes, -1, 0});
    return static_cast<int>(blocks_.size()) - 1;
  }

  int64_t unit_;
  std::vector<Block> blocks_;
  std::multimap<int64_t, int> free_;  // bytes -> block
};

}  // namespace

std::vector<size_t> programOrder(const std::vector<Buffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].first_write != buffers[b].first_write) {
      return buffers[a].first_write < buffers[b].first_write;
    }
    if (buffers[a].creation_order != buffers[b].creation_order) {
      return buffers[a].creation_order < buffers[b].creation_order;
    }
    return a < b;
  });
  return order;
}

std::vector<std::vector<size_t>> releaseOrder(const std::vector<size_t>& order,
                                              const ConflictGraph& conflicts) {
  SMELT_CHECK(conflicts.size() == order.size(), "baseline planner: ", conflicts.size(),
              " conflict rows for ", order.size(), " buffers");
  std::vector<size_t> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = r;
  std::vector<std::vector<size_t>> released_before(order.size() + 1);
  for (size_t i = 0; i < order.size(); ++i) {
    size_t last = rank[i];
    for (size_t j : conflicts.neighbors(i)) last = std::max(last, rank[j]);
    released_before[last + 1].push_back(i);
  }
  return released_before;
}

AddressPlan planFreeListAddresses(const std::vector<Buffer>& buffers,
                                  const ConflictGraph& conflicts) {
  return finishPlan(buffers, conflicts, freeListOffsets(buffers, conflicts), "free list (TVM-style)");
}

std::vector<int64_t> freeListOffsets(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts) {
  alloc_reuse::validateBuffers(buffers);
  int64_t unit = 1;  // every block is a multiple of the largest alignment
  for (const Buffer& b : buffers) unit = std::max(unit, b.alignment);
  const std::vector<size_t> order = programOrder(buffers);
  const std::vector<std::vector<size_t>> released_before = releaseOrder(order, conflicts);
  FreeList free_list(unit);
  std::vector<int> block_of(buffers.size(), -1);
  for (size_t r = 0; r < order.size(); ++r) {
    for (size_t i : released_before[r]) free_list.release(block_of[i]);
    block_of[order[r]] = free_list.allocate(constantBytes(buffers[order[r]]));
  }
  const std::vector<int64_t> block_address = free_list.blockAddresses();
  std::vector<int64_t> addresses(buffers.size(), 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    addresses[i] = block_address[static_cast<size_t>(block_of[i])];
  }
  return addresses;
}

AddressPlan planLinearScanAddresses(const std::vector<Buffer>& buffers,
                                    const ConflictGraph& conflicts) {
  return finishPlan(buffers, conflicts, linearScanOffsets(buffers, conflicts),
                    "linear scan (program order)");
}

std::vector<int64_t> linearScanOffsets(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts) {
  alloc_reuse::validateBuffers(buffers);
  const std::vector<size_t> order = programOrder(buffers);
  const std::vector<std::vector<size_t>> released_before = releaseOrder(order, conflicts);
  std::vector<int64_t> addresses(buffers.size(), 0);
  std::vector<bool> live(buffers.size(), false);
  for (size_t r = 0; r < order.size(); ++r) {
    for (size_t i : released_before[r]) live[i] = false;
    const size_t i = order[r];
    const int64_t bytes = constantBytes(buffers[i]);
    std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of live buffers
    for (size_t j = 0; j < buffers.size(); ++j) {
      if (live[j]) taken.push_back({addresses[j], addresses[j] + constantBytes(buffers[j])});
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + bytes <= begin) break;
      offset = std::max(offset, roundUp(end, buffers[i].alignment));
    }
    addresses[i] = offset;
    live[i] = true;
  }
  return addresses;
}

}  // namespace smelt::baselines
