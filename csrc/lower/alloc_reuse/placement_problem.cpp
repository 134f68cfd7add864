#include "lower/alloc_reuse/placement_problem.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "fusion/error.h"

namespace smelt::alloc_reuse::placement {

namespace {

// The lowest top of every subset of `list` (pairwise conflicting) stacked
// above `base`, less `base`, indexed by the subset's bits in `list` order.
// Where alignments differ, a larger-aligned member stacked above others
// starts at its own alignment, so the order matters: over every order, by
// the lowest top of each subset stacked first (a lower top never hurts what
// follows).
std::vector<int64_t> lowestStackRises(const Problem& q, const std::vector<int>& list, int64_t base) {
  std::vector<int64_t> top(size_t{1} << list.size(), std::numeric_limits<int64_t>::max());
  top[0] = base;
  for (size_t subset = 0; subset < top.size(); ++subset) {
    for (size_t k = 0; k < list.size(); ++k) {
      if ((subset >> k) & 1) continue;
      const int i = list[k];
      const size_t next = subset | (size_t{1} << k);
      top[next] = std::min(top[next], alignUpConstant(top[subset], q.align[i]) + q.bytes[i]);
    }
  }
  for (int64_t& t : top) t -= base;
  return top;
}

constexpr size_t kMaxMixedStackMembers = 12;  // 4096 subsets
// Sections of mixed alignments with at most this many members keep the
// lowest stack of every subset above every base residue for the search.
constexpr size_t kMaxMixedTableMembers = 10;
constexpr size_t kMaxMixedTableEntries = size_t{1} << 14;

}  // namespace

Problem makeProblem(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                    int64_t lower_bound) {
  Problem p;
  std::vector<int> local(buffers.size(), -1);
  for (size_t i = 0; i < buffers.size(); ++i) {
    // Empty buffers overlap nothing: they stay at offset 0, outside the search.
    auto bytes = buffers[i].bytes.constant();
    if (!bytes || *bytes == 0) continue;
    local[i] = static_cast<int>(p.global.size());
    p.global.push_back(i);
    p.bytes.push_back(*bytes);
    p.align.push_back(buffers[i].alignment);
    p.first_write.push_back(buffers[i].first_write);
    p.last_read.push_back(buffers[i].last_read);
  }
  p.neighbors.resize(p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    for (size_t j : conflicts.neighbors(p.global[k])) {
      if (local[j] >= 0) p.neighbors[k].push_back(local[j]);
    }
  }
  p.lower_bound = lower_bound;
  return p;
}

std::vector<std::vector<int>> components(const Problem& p) {
  std::vector<int> component(p.size(), -1);
  std::vector<std::vector<int>> result;
  for (size_t start = 0; start < p.size(); ++start) {
    if (component[start] >= 0) continue;
    const int id = static_cast<int>(result.size());
    std::vector<int> members = {static_cast<int>(start)};
    component[start] = id;
    for (size_t k = 0; k < members.size(); ++k) {
      for (int j : p.neighbors[static_cast<size_t>(members[k])]) {
        if (component[static_cast<size_t>(j)] < 0) {
          component[static_cast<size_t>(j)] = id;
          members.push_back(j);
        }
      }
    }
    std::sort(members.begin(), members.end());
    result.push_back(std::move(members));
  }
  return result;
}

Problem subProblem(const Problem& p, const std::vector<int>& members, int64_t target) {
  Problem q;
  std::vector<int> local(p.size(), -1);
  for (size_t k = 0; k < members.size(); ++k) local[static_cast<size_t>(members[k])] = static_cast<int>(k);
  for (int m : members) {
    const size_t i = static_cast<size_t>(m);
    q.global.push_back(i);
    q.bytes.push_back(p.bytes[i]);
    q.align.push_back(p.align[i]);
    q.first_write.push_back(p.first_write[i]);
    q.last_read.push_back(p.last_read[i]);
  }
  q.neighbors.resize(members.size());
  for (size_t k = 0; k < members.size(); ++k) {
    for (int j : p.neighbors[static_cast<size_t>(members[k])]) {
      if (local[static_cast<size_t>(j)] >= 0) q.neighbors[k].push_back(local[static_cast<size_t>(j)]);
    }
  }
  q.lower_bound = target;
  return q;
}

std::vector<uint64_t> adjacencyMasks(const Problem& q) {
  SMELT_INTERNAL_CHECK(q.size() <= kMaxSearchBuffers);
  std::vector<uint64_t> adjacency(q.size(), 0);
  for (size_t i = 0; i < q.size(); ++i) {
    for (int j : q.neighbors[i]) adjacency[i] |= uint64_t{1} << j;
  }
  return adjacency;
}

Sections sectionCliques(const Problem& q, const std::vector<uint64_t>& adjacency) {
  const size_t n = q.size();
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return q.first_write[a] < q.first_write[b]; });
  std::vector<uint64_t> cliques;
  uint64_t seen = 0;
  for (int i : order) {
    std::vector<int> earlier;
    for (uint64_t bits = adjacency[i] & seen; bits != 0; bits &= bits - 1) {
      earlier.push_back(__builtin_ctzll(bits));
    }
    std::stable_sort(earlier.begin(), earlier.end(), [&](int a, int b) { return q.bytes[a] > q.bytes[b]; });
    uint64_t clique = uint64_t{1} << i;
    for (int j : earlier) {
      if ((adjacency[j] & clique) == (clique & ~(uint64_t{1} << j))) clique |= uint64_t{1} << j;
    }
    cliques.push_back(clique);
    seen |= uint64_t{1} << i;
  }
  Sections sections;
  sections.of_buffer.resize(n);
  for (size_t c = 0; c < cliques.size(); ++c) {
    bool contained = false;
    for (size_t d = 0; d < cliques.size() && !contained; ++d) {
      contained = d != c && (cliques[c] & ~cliques[d]) == 0 && (cliques[c] != cliques[d] || d < c);
    }
    if (contained) continue;
    int64_t granule = std::numeric_limits<int64_t>::max();
    for (uint64_t bits = cliques[c]; bits != 0; bits &= bits - 1) {
      granule = std::min(granule, q.align[__builtin_ctzll(bits)]);
    }
    int64_t padded = 0;
    int64_t modulus = granule;  // the largest alignment
    std::vector<int> list;
    std::vector<std::pair<int, int64_t>> rounding;
    for (uint64_t bits = cliques[c]; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      padded += alignUpConstant(q.bytes[i], granule);
      rounding.emplace_back(i, alignUpConstant(q.bytes[i], granule) - q.bytes[i]);
      list.push_back(i);
      modulus = std::max(modulus, q.align[i]);
      sections.of_buffer[i].push_back(static_cast<int>(sections.size()));
    }
    std::stable_sort(rounding.begin(), rounding.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    const int64_t slack = rounding.front().second;
    sections.members.push_back(cliques[c]);
    sections.granule.push_back(granule);
    sections.padded_bytes.push_back(padded);
    sections.by_rounding.push_back(std::move(rounding));
    int64_t lowest = sections.stackBound(sections.size() - 1, 0, padded, slack);
    Sections::MixedStacks mixed;
    if (modulus != granule && list.size() <= kMaxMixedTableMembers &&
        (size_t{1} << list.size()) * static_cast<size_t>(modulus / granule) <= kMaxMixedTableEntries) {
      mixed.list = list;
      mixed.modulus = modulus;
      mixed.granule_shift = __builtin_ctzll(static_cast<uint64_t>(granule));
      const size_t residues = mixed.residues();
      mixed.rises.resize((size_t{1} << list.size()) * residues);
      for (size_t r = 0; r < residues; ++r) {
        const std::vector<int64_t> rises = lowestStackRises(q, list, static_cast<int64_t>(r) * granule);
        for (size_t subset = 0; subset < rises.size(); ++subset) {
          mixed.rises[subset * residues + r] = rises[subset];
        }
      }
      lowest = std::max(lowest, mixed.rises[((size_t{1} << list.size()) - 1) * residues]);
    } else if (modulus != granule && list.size() <= kMaxMixedStackMembers) {
      lowest = std::max(lowest, lowestStackRises(q, list, 0).back());
    }
    sections.mixed.push_back(std::move(mixed));
    sections.lowest_stack.push_back(lowest);
  }
  return sections;
}

int64_t paddedSectionBound(const Sections& sections) {
  int64_t bound = 0;
  for (size_t s = 0; s < sections.size(); ++s) bound = std::max(bound, sections.lowest_stack[s]);
  return bound;
}

}  // namespace smelt::alloc_reuse::placement
