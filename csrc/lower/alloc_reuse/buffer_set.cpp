#include "lower/alloc_reuse/buffer_set.h"

#include <algorithm>

#include "fusion/error.h"

namespace smelt::alloc_reuse {

bool isPowerOfTwo(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

void validateBuffers(const std::vector<Buffer>& buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const std::string label =
        b.name.empty() ? "buffer #" + std::to_string(i) : "buffer '" + b.name + "'";
    SMELT_CHECK(isPowerOfTwo(b.alignment), "shared-memory plan: ", label,
                " has alignment ", b.alignment, ", which is not a positive power of two");
    if (auto bytes = b.bytes.constant()) {
      SMELT_CHECK(*bytes >= 0, "shared-memory plan: ", label, " has negative size ", *bytes,
                  " B");
    }
    SMELT_CHECK(b.first_write <= b.last_read, "shared-memory plan: ", label,
                " has last read at position ", b.last_read, " before its first write at ",
                b.first_write);
  }
}

ConflictGraph::ConflictGraph(size_t buffer_count)
    : rows_(buffer_count, std::vector<uint64_t>((buffer_count + 63) / 64, 0)) {}

void ConflictGraph::addConflict(size_t i, size_t j) {
  SMELT_CHECK(i < size() && j < size(), "ConflictGraph: index out of range (", i, ", ", j,
              ") for ", size(), " buffers");
  SMELT_CHECK(i != j, "ConflictGraph: a buffer cannot conflict with itself (", i, ")");
  rows_[i][j / 64] |= uint64_t{1} << (j % 64);
  rows_[j][i / 64] |= uint64_t{1} << (i % 64);
}

bool ConflictGraph::conflicts(size_t i, size_t j) const {
  SMELT_CHECK(i < size() && j < size(), "ConflictGraph: index out of range (", i, ", ", j,
              ") for ", size(), " buffers");
  return (rows_[i][j / 64] >> (j % 64)) & 1;
}

std::vector<size_t> ConflictGraph::neighbors(size_t i) const {
  std::vector<size_t> result;
  const auto& words = row(i);
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
      result.push_back(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
    }
  }
  return result;
}

namespace {

// Conflict iff the closed intervals [first_write, end[i]] overlap.
ConflictGraph conflictsFromEnds(const std::vector<Buffer>& buffers,
                                const std::vector<int64_t>& ends) {
  ConflictGraph graph(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (buffers[i].first_write <= ends[j] && buffers[j].first_write <= ends[i]) {
        graph.addConflict(i, j);
      }
    }
  }
  return graph;
}

}  // namespace

ConflictGraph conflictsFromIntervals(const std::vector<Buffer>& buffers) {
  std::vector<int64_t> ends;
  ends.reserve(buffers.size());
  for (const Buffer& b : buffers) ends.push_back(b.last_read);
  return conflictsFromEnds(buffers, ends);
}

int64_t barrierAfterLastRead(int64_t last_read, const std::vector<int64_t>& sorted_barriers,
                             int64_t no_barrier_end) {
  auto it = std::lower_bound(sorted_barriers.begin(), sorted_barriers.end(), last_read);
  return it == sorted_barriers.end() ? no_barrier_end : *it;
}

ConflictGraph conflictsFromBarriers(const std::vector<Buffer>& buffers,
                                    std::vector<int64_t> barrier_positions) {
  std::sort(barrier_positions.begin(), barrier_positions.end());
  int64_t latest = 0;
  for (const Buffer& b : buffers) latest = std::max(latest, b.last_read);
  std::vector<int64_t> ends;
  ends.reserve(buffers.size());
  for (const Buffer& b : buffers) {
    ends.push_back(barrierAfterLastRead(b.last_read, barrier_positions, latest));
  }
  return conflictsFromEnds(buffers, ends);
}

IntExpr noReuseBytes(const std::vector<Buffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].creation_order < buffers[b].creation_order;
  });
  IntExpr end = 0;
  for (size_t i : order) end = alignUp(end, buffers[i].alignment) + buffers[i].bytes;
  return end;
}

IntExpr planTotalBytes(const std::vector<Buffer>& buffers, const std::vector<IntExpr>& addresses,
                       const std::vector<int>& stacked_on) {
  SMELT_INTERNAL_CHECK(addresses.size() == buffers.size() && stacked_on.size() == buffers.size());
  // Ends that lie below the end of another expression: a buffer stacked on
  // them ends higher. A zero-size buffer the alignment does not move ends
  // exactly where the one below does, so it covers nothing (else the top of
  // a stack and the buffer under it would each be left out for the other).
  std::vector<IntExpr> covered_ends;
  for (size_t top = 0; top < buffers.size(); ++top) {
    const int below = stacked_on[top];
    if (below == AddressPlan::kNotStacked) continue;
    const IntExpr below_end = addresses.at(static_cast<size_t>(below)) + buffers.at(static_cast<size_t>(below)).bytes;
    if (!(addresses[top] + buffers[top].bytes).sameAs(below_end)) covered_ends.push_back(below_end);
  }
  auto alreadyBounded = [](const std::vector<IntExpr>& ends, const IntExpr& end) {
    return std::any_of(ends.begin(), ends.end(), [&](const IntExpr& e) { return e.sameAs(end); });
  };
  int64_t constant_max = 0;
  int64_t symbolic_floor = -1;  // a constant address that every symbolic top lies above
  std::vector<IntExpr> symbolic_ends;
  for (size_t i = 0; i < buffers.size(); ++i) {
    IntExpr end = addresses[i] + buffers[i].bytes;
    if (auto value = end.constant()) {
      constant_max = std::max(constant_max, *value);
      continue;
    }
    if (alreadyBounded(covered_ends, end) || alreadyBounded(symbolic_ends, end)) continue;
    symbolic_ends.push_back(end);
    int64_t floor = -1;
    for (int k = static_cast<int>(i); k != AddressPlan::kNotStacked; k = stacked_on[k]) {
      if (auto addr = addresses[k].constant()) floor = std::max(floor, *addr);
    }
    symbolic_floor = symbolic_floor < 0 ? floor : std::min(symbolic_floor, floor);
  }
  if (symbolic_ends.empty()) return constant_max;
  IntExpr total = symbolic_ends.front();
  for (size_t k = 1; k < symbolic_ends.size(); ++k) total = max(total, symbolic_ends[k]);
  if (constant_max > symbolic_floor) total = max(IntExpr(constant_max), total);
  return total;
}

std::string planStatusName(const AddressPlan& plan) {
  if (plan.symbolic) return "symbolic";
  if (plan.lower_bound_reached) return "bound reached";
  return plan.optimal ? "optimal" : "heuristic";
}

}  // namespace smelt::alloc_reuse
