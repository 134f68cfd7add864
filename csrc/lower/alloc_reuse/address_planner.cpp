#include "lower/alloc_reuse/address_planner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "fusion/error.h"
#include "lower/alloc_reuse/baseline_planners.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {

namespace {

// Alignments are powers of two (validateBuffers), so is every granule taken
// from them: a mask, not a division, in the search's innermost loops.
int64_t alignUpConstant(int64_t value, int64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

// ---------------------------------------------------------------------------
// Lower bound: maximum-weight clique search over bit rows.

class CliqueSearch {
 public:
  CliqueSearch(const std::vector<int64_t>& weight, const ConflictGraph& conflicts,
               int64_t node_budget)
      : weight_(weight), conflicts_(conflicts), nodes_left_(node_budget) {}

  int64_t best() const { return best_; }

  // Extends the clique of weight `current` with vertices of `candidates`
  // (every one adjacent to the whole clique).
  void expand(std::vector<uint64_t> candidates, int64_t current) {
    best_ = std::max(best_, current);
    if (nodes_left_-- <= 0) return;
    int64_t reachable = current + weightOf(candidates);
    while (reachable > best_) {
      int v = heaviest(candidates);
      if (v < 0) return;
      std::vector<uint64_t> next = candidates;
      const auto& row = conflicts_.row(static_cast<size_t>(v));
      for (size_t w = 0; w < next.size(); ++w) next[w] &= row[w];
      expand(std::move(next), current + weight_[v]);
      candidates[v / 64] &= ~(uint64_t{1} << (v % 64));
      reachable -= weight_[v];
    }
  }

 private:
  int64_t weightOf(const std::vector<uint64_t>& set) const {
    int64_t sum = 0;
    forEach(set, [&](int v) { sum += weight_[v]; });
    return sum;
  }
  int heaviest(const std::vector<uint64_t>& set) const {
    int best = -1;
    forEach(set, [&](int v) {
      if (best < 0 || weight_[v] > weight_[best]) best = v;
    });
    return best;
  }
  template <typename F>
  static void forEach(const std::vector<uint64_t>& set, F&& f) {
    for (size_t w = 0; w < set.size(); ++w) {
      for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1) {
        f(static_cast<int>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
      }
    }
  }

  const std::vector<int64_t>& weight_;
  const ConflictGraph& conflicts_;
  int64_t nodes_left_;
  int64_t best_ = 0;
};

// ---------------------------------------------------------------------------
// Constant-size placement problem (local indices 0..n-1).

struct Problem {
  std::vector<size_t> global;  // local -> input index
  std::vector<int64_t> bytes, align, first_write, last_read;
  std::vector<std::vector<int>> neighbors;  // local conflicting indices
  int64_t lower_bound = 0;

  size_t size() const { return global.size(); }
};

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

struct Layout {
  std::vector<int64_t> offsets;
  int64_t total = 0;
};

enum class Fit { Best, First };

// Places buffers one by one in `order`; each goes into a gap between placed
// conflicting buffers (tightest fitting gap for Best, lowest for First), or on
// top of them all.
Layout placeGreedy(const Problem& p, const std::vector<int>& order, Fit fit) {
  Layout layout;
  layout.offsets.assign(p.size(), -1);
  std::vector<int> obstacles;  // the placed buffers `i` conflicts with, by offset
  obstacles.reserve(p.size());
  for (int i : order) {
    obstacles.clear();
    for (int j : p.neighbors[i]) {
      if (layout.offsets[j] >= 0) obstacles.push_back(j);
    }
    std::sort(obstacles.begin(), obstacles.end(),
              [&](int a, int b) { return layout.offsets[a] < layout.offsets[b]; });
    const int64_t size = p.bytes[i];
    const int64_t align = p.align[i];
    int64_t chosen = -1;
    int64_t chosen_gap = std::numeric_limits<int64_t>::max();
    int64_t cursor = 0;  // end of the conflicting bytes seen so far
    for (int j : obstacles) {
      const int64_t start = layout.offsets[j];
      int64_t candidate = alignUpConstant(cursor, align);
      if (candidate + size <= start) {
        int64_t gap = start - cursor;
        if (gap < chosen_gap) {
          chosen = candidate;
          chosen_gap = gap;
          if (fit == Fit::First) break;
        }
      }
      cursor = std::max(cursor, start + p.bytes[j]);
    }
    if (chosen < 0) chosen = alignUpConstant(cursor, align);
    layout.offsets[i] = chosen;
    layout.total = std::max(layout.total, chosen + size);
  }
  return layout;
}

struct Ordering {
  const char* name;
  std::vector<int> order;
};

std::vector<Ordering> heuristicOrderings(const Problem& p) {
  const size_t n = p.size();
  auto lifetime = [&](int i) { return p.last_read[i] - p.first_write[i] + 1; };
  auto sorted = [&](auto&& before) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), before);
    return order;
  };
  std::vector<int64_t> conflicting_bytes(n);
  for (size_t i = 0; i < n; ++i) {
    conflicting_bytes[i] = p.bytes[i];
    for (int j : p.neighbors[i]) conflicting_bytes[i] += p.bytes[j];
  }
  std::vector<Ordering> orderings;
  orderings.push_back({"size", sorted([&](int a, int b) {
                         if (p.bytes[a] != p.bytes[b]) return p.bytes[a] > p.bytes[b];
                         return p.first_write[a] < p.first_write[b];
                       })});
  orderings.push_back({"size*lifetime", sorted([&](int a, int b) {
                         return p.bytes[a] * lifetime(a) > p.bytes[b] * lifetime(b);
                       })});
  orderings.push_back({"lifetime", sorted([&](int a, int b) {
                         if (lifetime(a) != lifetime(b)) return lifetime(a) > lifetime(b);
                         return p.bytes[a] > p.bytes[b];
                       })});
  orderings.push_back({"first-write", sorted([&](int a, int b) {
                         if (p.first_write[a] != p.first_write[b]) {
                           return p.first_write[a] < p.first_write[b];
                         }
                         return p.last_read[a] > p.last_read[b];
                       })});
  orderings.push_back({"conflicting-bytes", sorted([&](int a, int b) {
                         return conflicting_bytes[a] > conflicting_bytes[b];
                       })});
  return orderings;
}

// Sections: cliques of pairwise-conflicting buffers, one per buffer: the
// buffer and its conflicting neighbours that start no later than it (first
// write, then index), largest first, each kept while it conflicts with every
// member kept so far. For interval conflicts these are the buffers live at
// each first write, which include every maximal clique: the sections' bounds
// are then the max-live cut at every program point. A section contained in
// another is dropped (its bound is never the larger one).
struct Sections {
  std::vector<uint64_t> members;
  // Every start is a multiple of the smallest alignment `granule` of the
  // section, so a member stacked under another occupies its size rounded up
  // to it; only the topmost member saves its rounding.
  std::vector<int64_t> granule, padded_bytes;
  // Per section, its members with their rounding, most rounding first: the
  // top of a stack of some members saves at most the most of theirs.
  std::vector<std::vector<std::pair<int, int64_t>>> by_rounding;
  // The lowest total of the whole section stacked from 0: exact where its
  // members' alignments differ and they are few, stackBound() otherwise.
  std::vector<int64_t> lowest_stack;
  std::vector<std::vector<int>> of_buffer;  // the sections holding each buffer

  size_t size() const { return members.size(); }
  int64_t padded(size_t s, int64_t bytes) const { return alignUpConstant(bytes, granule[s]); }
  // Lowest total of a stack of the members `open` (pairwise conflicting)
  // above `base`, of `open_padded` padded bytes.
  int64_t stackBound(size_t s, int64_t base, int64_t open_padded, int64_t slack) const {
    return alignUpConstant(base, granule[s]) + open_padded - slack;
  }
  // The most rounding the top of a stack of the members `open` can save.
  int64_t topSlack(size_t s, uint64_t open) const {
    for (const auto& [i, rounding] : by_rounding[s]) {
      if ((open >> i) & 1) return rounding;
    }
    return 0;
  }

  // Sections whose members' alignments differ (and are few): the exact
  // lowest stack of any subset of members above any base, which the padded
  // sum misses by up to an alignment per larger-aligned member.
  struct MixedStacks {
    std::vector<int> list;  // the members
    int64_t modulus = 0;    // their largest alignment
    int granule_shift = 0;  // log2 of the granule
    // rises[subset * residues + r]: lowest top less the base, for a base of
    // r granules modulo `modulus`.
    std::vector<int64_t> rises;
    size_t residues() const { return static_cast<size_t>(modulus >> granule_shift); }
  };
  std::vector<MixedStacks> mixed;  // per section; empty `list` where not kept

  // Lowest total of the members `open` stacked above `base` (a section
  // that keeps a table).
  int64_t mixedStackBound(size_t s, int64_t base, uint64_t open) const {
    const MixedStacks& m = mixed[s];
    size_t subset = 0;
    for (size_t k = 0; k < m.list.size(); ++k) subset |= ((open >> m.list[k]) & 1) << k;
    const int64_t start = alignUpConstant(base, granule[s]);
    const size_t residue = static_cast<size_t>((start & (m.modulus - 1)) >> m.granule_shift);
    return start + m.rises[subset * m.residues() + residue];
  }
};

constexpr size_t kMaxSearchBuffers = 64;  // buffer sets are bit masks
// Node budget of the search tried before the long iterated greedy: enough
// to settle components of a dozen buffers.
constexpr int64_t kShortSearchNodes = 4096;
// The iterated greedy before the long search: a few hundred rounds per
// buffer at most (small components are the search's).
constexpr int64_t kMaxGreedyRoundsPerBuffer = 256;

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

// The largest section stacked from 0: a lower bound that counts alignment
// padding, so above the max-live bound when sizes are not multiples of the
// alignments.
int64_t paddedSectionBound(const Sections& sections) {
  int64_t bound = 0;
  for (size_t s = 0; s < sections.size(); ++s) bound = std::max(bound, sections.lowest_stack[s]);
  return bound;
}

// Exact search over canonical layouts. Any layout can be pushed down until,
// taken in address order, every buffer sits at its lowest feasible offset
// given the buffers before it: at 0 or right above (aligned) a conflicting
// one. The search builds exactly those sequences (offsets non-decreasing,
// ties by index) under a capacity: every layout it finds fits the capacity,
// and a search that ends without one proves that none does. run() first
// deepens from the target (p.lower_bound), where the section bounds prune
// hardest: when no layout fits, the least bound among the pruned branches is
// a proved lower bound and the next capacity, so the first layout found is
// optimal. Then (budget left over from a deepening that could not settle the
// target) branch and bound from the incumbent: capacity one byte below the
// best layout so far, until a search fails (that layout is optimal) or the
// budget is spent.
// Pruning, all valid for every completion of a partial layout:
// - a buffer that fits entirely below the last offset can never be placed in
//   address order (its spot stays free): the branch duplicates another;
// - every unplaced buffer starts at or above the last offset, hence above
//   every placed buffer it conflicts with (`above`), and ends its size higher;
// - the unplaced members of a section are stacked above its floor (the
//   highest end of its placed members), the last offset and the lowest start
//   any of them can take;
// - twins (same size, alignment and conflicts) are placed in index order.
// Decomposition: when the unplaced buffers fall into groups that conflict
// with no other group, each group's placement depends only on the placed
// buffers, so the groups are searched one after another (a failing group
// fails the branch) instead of in every interleaving: that turns the
// product of the groups' search trees into their sum, which is what lets a
// proof of infeasibility finish on sets of dozens of buffers.
class ExactSearch {
 public:
  ExactSearch(const Problem& p, const std::vector<uint64_t>& adjacency, const Sections& sections,
              Layout incumbent, int64_t node_budget, std::chrono::steady_clock::time_point deadline)
      : p_(p), adjacency_(adjacency), sections_(sections), best_(std::move(incumbent)),
        nodes_left_(node_budget), deadline_(deadline) {
    offsets_.assign(p.size(), -1);
    solution_.assign(p.size(), -1);
    lowest_.assign(p.size() + 1, std::vector<int64_t>(p.size(), 0));
    above_.assign(p.size() + 1, std::vector<int64_t>(p.size(), 0));
    floor_.assign(sections.size(), 0);
    open_padded_ = sections.padded_bytes;
    candidates_.resize(p.size() + 1);
    rankCandidates();
    all_ = p.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << p.size()) - 1;
    collectTwins();
  }

  // True when the search finished within its budget: best() is optimal.
  // Three quarters of the budget go to the deepening from below (where
  // layouts at the target are found and proofs are made); if that runs out,
  // the rest to branch and bound from above.
  bool run() {
    const int64_t budget = nodes_left_;
    const auto final_deadline = deadline_;
    nodes_left_ = budget / 4 * 3;
    deadline_ = std::chrono::steady_clock::now() + (final_deadline - std::chrono::steady_clock::now()) / 4 * 3;
    int64_t capacity = p_.lower_bound;
    while (capacity < best_.total) {
      const Outcome outcome = probe(capacity);
      if (outcome == Outcome::Found) return true;
      if (outcome == Outcome::Cut) break;
      capacity = next_capacity_;  // no layout is below it
    }
    if (!budget_exhausted_) return true;
    budget_exhausted_ = false;
    nodes_left_ = budget - nodes_;
    deadline_ = final_deadline;
    while (probe(best_.total - 1) == Outcome::Found) {
    }
    return !budget_exhausted_;  // else nothing is below the incumbent
  }
  const Layout& best() const { return best_; }
  int64_t nodes() const { return nodes_; }
  int64_t splits() const { return splits_; }

 private:
  enum class Outcome { Found, None, Cut };
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

  // A search under `capacity` of at most `limit` nodes, trying candidates at
  // one offset in `ranks_[order]` order. A layout found becomes best_; None:
  // no layout fits (proved), and next_capacity_ is the least pruned bound;
  // Cut: the limit or the budget ran out first.
  Outcome searchUnder(int64_t capacity, int64_t limit, size_t order) {
    capacity_ = capacity;
    next_capacity_ = std::numeric_limits<int64_t>::max();
    probe_left_ = limit;
    rank_ = &ranks_[order];
    const bool found = search(all_, 0, -1, -1);
    if (!found) return budget_exhausted_ ? Outcome::Cut : Outcome::None;
    int64_t total = 0;
    for (size_t i = 0; i < p_.size(); ++i) total = std::max(total, solution_[i] + p_.bytes[i]);
    best_ = Layout{solution_, total};
    return Outcome::Found;
  }

  // Searches whose first wrong choice near offset 0 they never get to undo
  // are cut short and restarted with another tie order, the limit doubling
  // every round, until one finds a layout, one finishes without (a proof), or
  // the budget is spent. Each round tries the fixed orders, then as many
  // random ones (seeded: plans are reproducible), which find layouts at the
  // target the fixed ones miss on sets of 30-60 buffers.
  Outcome probe(int64_t capacity) {
    const size_t fixed = ranks_.size();
    for (int64_t limit = 64 * static_cast<int64_t>(p_.size());; limit *= 2) {
      ranks_.resize(fixed);
      for (size_t r = 0; r < fixed; ++r) {
        std::vector<int> order(p_.size());
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng_);
        ranks_.push_back(ranksOf(order));
      }
      for (size_t order = 0; order < ranks_.size(); ++order) {
        const Outcome outcome = searchUnder(capacity, limit, order);
        if (outcome != Outcome::Cut) return outcome;
        if (phaseSpent()) return Outcome::Cut;
        budget_exhausted_ = false;
      }
    }
  }

  static std::vector<int> ranksOf(const std::vector<int>& order) {
    std::vector<int> rank(order.size());
    for (size_t k = 0; k < order.size(); ++k) rank[static_cast<size_t>(order[k])] = static_cast<int>(k);
    return rank;
  }

  bool phaseSpent() const { return nodes_left_ <= 0 || std::chrono::steady_clock::now() > deadline_; }

  // Tie orders among candidates at one offset: larger first; in the tightest
  // sections first; larger size x lifetime first; longer-lived first.
  void rankCandidates() {
    std::vector<int64_t> tightest(p_.size(), 0);
    for (size_t s = 0; s < sections_.size(); ++s) {
      for (uint64_t bits = sections_.members[s]; bits != 0; bits &= bits - 1) {
        const int i = __builtin_ctzll(bits);
        tightest[i] = std::max(tightest[i], sections_.lowest_stack[s]);
      }
    }
    auto lifetime = [&](int i) { return p_.last_read[i] - p_.first_write[i] + 1; };
    using Key = std::function<std::pair<int64_t, int64_t>(int)>;
    const Key keys[] = {
        [&](int i) { return std::make_pair(p_.bytes[i], int64_t{0}); },
        [&](int i) { return std::make_pair(tightest[i], p_.bytes[i]); },
        [&](int i) { return std::make_pair(p_.bytes[i] * lifetime(i), p_.bytes[i]); },
        [&](int i) { return std::make_pair(lifetime(i), p_.bytes[i]); },
    };
    for (const Key& key : keys) {
      std::vector<int> order(p_.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) > key(b); });
      ranks_.push_back(ranksOf(order));
    }
  }

  // The lowest offset at or above `from` where `i` overlaps no placed buffer
  // it conflicts with: a candidate overlapping one overlaps it up to its end.
  int64_t lowestFeasible(int i, int64_t from) const {
    int64_t offset = from;
    const uint64_t obstacles = adjacency_[i] & placed_;
    for (bool moved = true; moved;) {
      moved = false;
      for (uint64_t bits = obstacles; bits != 0; bits &= bits - 1) {
        const int j = __builtin_ctzll(bits);
        int64_t start = offsets_[j];
        int64_t end = start + p_.bytes[j];
        if (offset < end && start < offset + p_.bytes[i]) {
          offset = alignUpConstant(end, p_.align[i]);
          moved = true;
        }
      }
    }
    return offset;
  }

  // Swapping two twins maps a layout onto another.
  void collectTwins() {
    lower_twins_.assign(p_.size(), 0);
    for (size_t i = 0; i < p_.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        const uint64_t bi = uint64_t{1} << i, bj = uint64_t{1} << j;
        if (p_.bytes[i] == p_.bytes[j] && p_.align[i] == p_.align[j] &&
            (adjacency_[i] & ~bj) == (adjacency_[j] & ~bi)) {
          lower_twins_[i] |= bj;
        }
      }
    }
  }

  // Notes the least total of a pruned branch: the next capacity to try.
  bool fits(int64_t bound) {
    if (bound <= capacity_) return true;
    next_capacity_ = std::min(next_capacity_, bound);
    return false;
  }

  // False when some completion bound exceeds the capacity (or a buffer is
  // stranded).
  bool feasible(size_t placed, uint64_t unplaced, int64_t last_offset) {
    const std::vector<int64_t>& lowest = lowest_[placed];
    const std::vector<int64_t>& above = above_[placed];
    for (uint64_t bits = unplaced; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      if (lowest[i] + p_.bytes[i] <= last_offset) return false;
      if (!fits(std::max(above[i], alignUpConstant(last_offset, p_.align[i])) + p_.bytes[i])) return false;
    }
    for (size_t s = 0; s < sections_.size(); ++s) {
      const uint64_t open = sections_.members[s] & unplaced;
      if (open == 0) continue;
      const int64_t base = std::max(floor_[s], last_offset);
      const int64_t slack = sections_.topSlack(s, open);
      if (!fits(sections_.stackBound(s, base, open_padded_[s], slack))) return false;
      // The open members' lowest start prunes only where every one of them
      // starts above `highest_base` (starts are multiples of the granule):
      // most sections stop at their first member.
      const int64_t highest_base = capacity_ - open_padded_[s] + slack;
      int64_t lowest_start = std::numeric_limits<int64_t>::max();
      for (uint64_t bits = open; bits != 0 && lowest_start > highest_base; bits &= bits - 1) {
        lowest_start = std::min(lowest_start, above[__builtin_ctzll(bits)]);
      }
      if (lowest_start > highest_base && !fits(sections_.stackBound(s, lowest_start, open_padded_[s], slack))) {
        return false;
      }
      if (!sections_.mixed[s].list.empty()) {
        if (!fits(sections_.mixedStackBound(s, base, open))) return false;
        for (uint64_t bits = open; bits != 0; bits &= bits - 1) {
          lowest_start = std::min(lowest_start, above[__builtin_ctzll(bits)]);
        }
        if (lowest_start > base && !fits(sections_.mixedStackBound(s, lowest_start, open))) return false;
      }
    }
    return true;
  }

  void place(int c, int64_t offset, size_t placed) {
    offsets_[c] = offset;
    placed_ |= uint64_t{1} << c;
    std::vector<int64_t>& next = lowest_[placed + 1];
    std::vector<int64_t>& next_above = above_[placed + 1];
    next = lowest_[placed];
    next_above = above_[placed];
    const int64_t end = offset + p_.bytes[c];
    for (int i : p_.neighbors[c]) {
      if (offsets_[i] >= 0) continue;
      const int64_t above_c = alignUpConstant(end, p_.align[i]);
      // Every spot from i's lowest up to c's end now overlaps c, and every
      // spot below i's lowest overlapped a buffer already.
      if (next[i] < end && offset < next[i] + p_.bytes[i]) next[i] = lowestFeasible(i, above_c);
      next_above[i] = std::max(next_above[i], above_c);
    }
    for (int s : sections_.of_buffer[c]) {
      floor_trail_.push_back(floor_[s]);
      floor_[s] = std::max(floor_[s], end);
      open_padded_[s] -= sections_.padded(s, p_.bytes[c]);
    }
  }

  void unplace(int c) {
    const std::vector<int>& sections = sections_.of_buffer[c];
    for (auto s = sections.rbegin(); s != sections.rend(); ++s) {
      floor_[*s] = floor_trail_.back();
      floor_trail_.pop_back();
      open_padded_[*s] += sections_.padded(*s, p_.bytes[c]);
    }
    offsets_[c] = -1;
    placed_ &= ~(uint64_t{1} << c);
  }

  // The groups of `unplaced` that conflict with no other group.
  struct Groups {
    std::array<uint64_t, kMaxSearchBuffers> masks;
    size_t count = 0;
  };
  Groups independentGroups(uint64_t unplaced) const {
    Groups groups;
    for (uint64_t rest = unplaced; rest != 0;) {
      uint64_t group = rest & (~rest + 1), frontier = group;
      while (frontier != 0) {
        uint64_t reached = 0;
        for (uint64_t bits = frontier; bits != 0; bits &= bits - 1) reached |= adjacency_[__builtin_ctzll(bits)];
        frontier = reached & unplaced & ~group;
        group |= frontier;
      }
      groups.masks[groups.count++] = group;
      rest &= ~group;
    }
    return groups;
  }

  // Records the offsets of the placed buffers of `scope`: part of a layout.
  bool keepScope(uint64_t scope) {
    for (uint64_t bits = scope & placed_; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      solution_[i] = offsets_[i];
    }
    return true;
  }

  // Places every unplaced buffer of `scope` (no unplaced buffer outside it
  // conflicts with one inside); on success their offsets are in solution_.
  bool search(uint64_t scope, size_t placed, int64_t last_offset, int last_index) {
    ++nodes_;
    if (nodes_left_-- <= 0 || probe_left_-- <= 0 ||
        ((nodes_ & 255) == 0 && std::chrono::steady_clock::now() > deadline_)) {
      budget_exhausted_ = true;
      return false;
    }
    const uint64_t unplaced = scope & ~placed_;
    if (unplaced == 0) return keepScope(scope);
    if (!feasible(placed, unplaced, last_offset)) return false;
    Groups groups = independentGroups(unplaced);
    if (groups.count > 1) {
      ++splits_;
      // Fail first: the group holding the most bytes is searched first.
      auto weight = [&](uint64_t group) {
        int64_t sum = 0;
        for (; group != 0; group &= group - 1) sum += p_.bytes[__builtin_ctzll(group)];
        return sum;
      };
      const auto first = groups.masks.begin(), last = first + static_cast<std::ptrdiff_t>(groups.count);
      std::stable_sort(first, last, [&](uint64_t a, uint64_t b) { return weight(a) > weight(b); });
      for (auto group = first; group != last; ++group) {
        if (!search(*group, placed, last_offset, last_index)) return false;
      }
      return keepScope(scope & placed_);
    }
    const std::vector<int64_t>& lowest = lowest_[placed];
    // A candidate must start below the top of every other unplaced buffer's
    // lowest spot, or that buffer would be left entirely below it.
    int64_t first_top = std::numeric_limits<int64_t>::max(), second_top = first_top;
    int first_top_index = -1;
    for (uint64_t bits = unplaced; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      const int64_t top = lowest[i] + p_.bytes[i];
      if (top < first_top) {
        second_top = first_top;
        first_top = top;
        first_top_index = i;
      } else {
        second_top = std::min(second_top, top);
      }
    }
    // One list per depth, reused: a group searched after a split starts at
    // its parent's depth, whose list the parent no longer needs.
    std::vector<Candidate>& candidates = candidates_[placed];
    candidates.clear();
    for (uint64_t bits = unplaced; bits != 0; bits &= bits - 1) {
      const int c = __builtin_ctzll(bits);
      const int64_t offset = lowest[c];
      if (offset < last_offset || (offset == last_offset && c < last_index)) continue;
      if ((lower_twins_[c] & unplaced) != 0) continue;
      if (offset >= (c == first_top_index ? second_top : first_top)) continue;
      if (!fits(offset + p_.bytes[c])) continue;
      candidates.push_back({offset, c});
    }
    // Lowest first; at one offset in the tie order.
    const std::vector<int>& rank = *rank_;
    std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
      if (a.offset != b.offset) return a.offset < b.offset;
      return rank[a.index] < rank[b.index];
    });
    for (const Candidate& c : candidates) {
      place(c.index, c.offset, placed);
      const bool found = search(scope, placed + 1, c.offset, c.index);
      unplace(c.index);
      if (found) return true;
      if (budget_exhausted_) return false;
    }
    return false;
  }

  const Problem& p_;
  const std::vector<uint64_t>& adjacency_;  // bit j of adjacency_[i]: i and j conflict
  const Sections& sections_;
  Layout best_;
  uint64_t all_ = 0;
  int64_t capacity_ = 0;  // only layouts of at most this total are sought
  int64_t next_capacity_ = 0;
  std::vector<uint64_t> lower_twins_;  // bit j of lower_twins_[i]: j < i is i's twin
  // Per number of placed buffers, for each buffer: its lowest feasible offset
  // (`lowest_`) and the aligned top of the placed buffers it conflicts with
  // (`above_`).
  std::vector<std::vector<int64_t>> lowest_, above_;
  std::vector<int64_t> offsets_, solution_;
  uint64_t placed_ = 0;
  std::vector<int64_t> floor_, open_padded_;  // per section
  std::vector<int64_t> floor_trail_;  // floors before each placement, for unplace()
  struct Candidate {
    int64_t offset;
    int index;
  };
  std::vector<std::vector<Candidate>> candidates_;  // per depth
  std::vector<std::vector<int>> ranks_;  // per tie order: each buffer's rank
  std::mt19937_64 rng_{0x7e5};  // random tie orders
  const std::vector<int>* rank_ = nullptr;
  int64_t nodes_left_;
  int64_t probe_left_ = kUnlimited;
  int64_t nodes_ = 0;
  int64_t splits_ = 0;  // nodes whose unplaced buffers fell into independent groups
  std::chrono::steady_clock::time_point deadline_;
  bool budget_exhausted_ = false;
};

struct ConstantPlan {
  Layout layout;
  std::string strategy;
  std::vector<PlanAttempt> attempts;
  int64_t target = 0;    // max-live or, above it, the padded section bound
  bool optimal = false;  // proved: target reached or exhaustive search
  std::string search_note;  // what the exact search did, when it ran
};

// Connected components of the conflict graph, each sorted, in order of their
// smallest member. Buffers of different components never conflict, so each
// component can be laid out from offset 0 on its own.
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

// The problem restricted to `members` (local indices of `p`), with `target`
// as its lower bound: nothing below it is worth finding.
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

struct GreedyResult {
  Layout layout;
  std::string name;
  std::vector<int> order;
};

// Every ordering with best and first fit; stops at q.lower_bound. When
// `attempts` is given each try is recorded there.
GreedyResult bestGreedy(const Problem& q, std::vector<PlanAttempt>* attempts) {
  GreedyResult best;
  bool have = false;
  for (Ordering& ordering : heuristicOrderings(q)) {
    for (Fit fit : {Fit::Best, Fit::First}) {
      std::string name = std::string(fit == Fit::Best ? "best-fit/" : "first-fit/") + ordering.name;
      Layout layout = placeGreedy(q, ordering.order, fit);
      if (attempts != nullptr) attempts->push_back({name, layout.total});
      if (!have || layout.total < best.layout.total) {
        best = GreedyResult{std::move(layout), name, ordering.order};
        have = true;
      }
      if (best.layout.total <= q.lower_bound) return best;
    }
  }
  return best;
}

// Iterated greedy: a walk of small random changes to an ordering (a block of
// it moved earlier, or two buffers swapped), each kept when best fit then
// leaves no more bytes above the target; `best` is the lowest layout seen.
// Deterministic (seeded), `rounds` tries at most.
void perturbGreedy(const Problem& q, GreedyResult& best, int64_t rounds, uint64_t seed,
                   std::chrono::steady_clock::time_point deadline) {
  if (q.size() < 3) return;
  // The walk keeps a change that leaves no more bytes above the target,
  // summed over the buffers: unlike the total, that measure falls with
  // every buffer brought under the target, so the walk is not blind on the
  // plateaus of equal totals.
  auto excess = [&](const Layout& layout) {
    int64_t sum = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      sum += std::max<int64_t>(0, layout.offsets[i] + q.bytes[i] - q.lower_bound);
    }
    return sum;
  };
  std::vector<int> current = best.order;
  int64_t current_excess = excess(placeGreedy(q, current, Fit::Best));
  std::mt19937_64 rng(seed + q.size());
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  for (int64_t round = 0; round < rounds && best.layout.total > q.lower_bound; ++round) {
    if ((round & 7) == 7 && std::chrono::steady_clock::now() > deadline) break;
    std::vector<int> order = current;
    const size_t a = pick(order.size()), b = pick(order.size());
    if (a == b) continue;
    if (rng() & 1) {
      std::swap(order[a], order[b]);
    } else {  // move order[max] to position min
      const size_t lo = std::min(a, b), hi = std::max(a, b);
      std::rotate(order.begin() + static_cast<std::ptrdiff_t>(lo),
                  order.begin() + static_cast<std::ptrdiff_t>(hi),
                  order.begin() + static_cast<std::ptrdiff_t>(hi) + 1);
    }
    Layout layout = placeGreedy(q, order, Fit::Best);
    const int64_t e = excess(layout);
    if (layout.total < best.layout.total) {
      best.name = "iterated best-fit";
      best.layout = layout;
      best.order = order;
    }
    if (e <= current_excess) {
      current = std::move(order);
      current_excess = e;
    }
  }
}

// A valid layout from another planner, with the name it is reported under.
struct Incumbent {
  std::string name;
  Layout layout;
};

// The layout of `offsets` (input order) restricted to the problem's buffers.
Layout localLayout(const Problem& p, const std::vector<int64_t>& offsets) {
  Layout layout;
  for (size_t k = 0; k < p.size(); ++k) {
    layout.offsets.push_back(offsets[p.global[k]]);
    layout.total = std::max(layout.total, layout.offsets.back() + p.bytes[k]);
  }
  return layout;
}

// `baseline`, when given, is tried first; `textbook()` gives more incumbents,
// asked for only when the greedy orderings miss the target. The result is
// never larger than any of them. p.lower_bound is raised to the padded
// section bound where that is higher.
ConstantPlan planConstantSizes(Problem p, const PlannerOptions& options,
                               const std::optional<Incumbent>& baseline,
                               const std::function<std::vector<Incumbent>()>& textbook) {
  ConstantPlan plan;
  if (p.size() == 0) {
    plan.strategy = "empty";
    plan.optimal = true;
    return plan;
  }
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(options.search_time_limit_ms * 1000.0));

  // Connected components (buffers of different ones never conflict), each
  // with its sections where it is small enough for bit masks; the padded
  // section bounds can only raise the target every stage stops at.
  struct Part {
    std::vector<int> members;
    Problem q;
    std::vector<uint64_t> adjacency;
    Sections sections;
  };
  std::vector<Part> parts;
  for (std::vector<int>& members : components(p)) {
    Part part{std::move(members), {}, {}, {}};
    part.q = subProblem(p, part.members, 0);
    if (part.q.size() <= kMaxSearchBuffers) {
      part.adjacency = adjacencyMasks(part.q);
      part.sections = sectionCliques(part.q, part.adjacency);
      p.lower_bound = std::max(p.lower_bound, paddedSectionBound(part.sections));
    }
    parts.push_back(std::move(part));
  }
  for (Part& part : parts) part.q.lower_bound = p.lower_bound;
  plan.target = p.lower_bound;

  bool have = false;
  // Records a candidate; true when the search may stop (target reached).
  auto consider = [&](const std::string& name, Layout layout) {
    plan.attempts.push_back({name, layout.total});
    if (!have || layout.total < plan.layout.total) {
      plan.layout = std::move(layout);
      plan.strategy = name;
      have = true;
    }
    return options.stop_at_lower_bound && plan.layout.total <= p.lower_bound;
  };
  if (baseline && consider(baseline->name, baseline->layout)) {
    plan.optimal = true;
    return plan;
  }
  GreedyResult whole = bestGreedy(p, &plan.attempts);
  if (!have || whole.layout.total < plan.layout.total) {
    plan.layout = whole.layout;
    plan.strategy = whole.name;
    have = true;
  }
  if (options.stop_at_lower_bound && plan.layout.total <= p.lower_bound) {
    plan.optimal = true;
    return plan;
  }
  for (Incumbent& incumbent : textbook()) {
    if (consider(incumbent.name, std::move(incumbent.layout))) {
      plan.optimal = true;
      return plan;
    }
  }

  // Per component: greedy (when there are several), iterated greedy, then
  // the exact search where the component is small enough.
  const size_t exact_limit = std::min(options.exact_search_max_buffers, kMaxSearchBuffers);
  Layout composed;
  composed.offsets.assign(p.size(), 0);
  struct Outcome {
    int64_t total;
    bool proved;
  };
  std::vector<Outcome> outcomes;
  bool exact_ran = false, exact_complete = true, perturbed = false;
  bool found_by_search = false, proved_by_search = false;
  int64_t search_nodes = 0, search_splits = 0;
  for (const Part& part : parts) {
    const Problem& q = part.q;
    const std::vector<int>& members = part.members;
    GreedyResult greedy;
    if (parts.size() == 1) {
      greedy = whole;
      greedy.layout = plan.layout;  // the baseline may be better than every ordering
    } else {
      greedy = bestGreedy(q, nullptr);
    }
    Layout layout = greedy.layout;  // the best so far
    bool proved = layout.total <= q.lower_bound;
    bool searched = false, complete = false;  // exhaustively: every layout above is optimal
    auto keep = [&](const Layout& candidate, bool from_search) {
      if (candidate.total < layout.total) {
        layout = candidate;
        found_by_search = found_by_search || from_search;
      }
      proved = proved || complete || layout.total <= q.lower_bound;
    };
    const int64_t n = static_cast<int64_t>(q.size());
    const bool searchable = q.size() <= exact_limit;
    uint64_t seed = 0x5eed;  // each walk its own changes
    auto iterate = [&](int64_t rounds, std::chrono::steady_clock::time_point until) {
      const int64_t before = greedy.layout.total;
      perturbGreedy(q, greedy, rounds, seed++, until);
      perturbed = perturbed || greedy.layout.total < before;
      keep(greedy.layout, false);
    };
    int64_t nodes_left = options.exact_search_node_budget;
    auto search = [&](int64_t budget) {
      ExactSearch exact(q, part.adjacency, part.sections, layout, budget, deadline);
      complete = exact.run();
      searched = true;
      nodes_left -= exact.nodes();
      search_nodes += exact.nodes();
      search_splits += exact.splits();
      keep(exact.best(), true);
    };
    const int64_t rounds = options.heuristic_rounds;
    // Each round costs O(n^2): few rounds on large components keep the
    // heuristic path near 1 ms at 128 buffers.
    if (!proved && rounds > 0) {
      iterate(std::max<int64_t>(4, std::min<int64_t>(rounds, 2048 / n)), deadline);
    }
    if (exact_limit > 0) {
      // Small components are settled (found or proved) by a short search.
      if (!proved && searchable) search(std::min(nodes_left, kShortSearchNodes));
      // Then the iterated greedy is the search's finder: layouts at a tight
      // target that the search in address order reaches only after many
      // restarts, it finds in a few thousand rounds. The search keeps at
      // least half the time left.
      if (!proved && rounds > 0) {
        auto until = deadline;
        if (searchable) {
          const auto now = std::chrono::steady_clock::now();
          until = now + (deadline - now) / 2;
        }
        iterate(std::max(rounds, std::min(options.search_greedy_work / (n * n), kMaxGreedyRoundsPerBuffer * n)),
                until);
      }
      if (!proved && searchable && nodes_left > 0) search(nodes_left);
    }
    if (searched) {
      exact_ran = true;
      exact_complete = exact_complete && proved;
      proved_by_search = proved_by_search || complete;
    }
    for (size_t k = 0; k < members.size(); ++k) {
      composed.offsets[static_cast<size_t>(members[k])] = layout.offsets[k];
    }
    composed.total = std::max(composed.total, layout.total);
    outcomes.push_back({layout.total, proved});
  }
  bool proved = composed.total <= p.lower_bound;
  for (const Outcome& o : outcomes) proved = proved || (o.proved && o.total == composed.total);
  std::string name;
  if (exact_ran) {
    plan.search_note = "exact search: " + std::to_string(search_nodes) + " nodes, " +
                       std::to_string(search_splits) + " split into independent groups";
  }
  if (found_by_search || proved_by_search || (exact_ran && !exact_complete)) {
    name = exact_complete ? "exact" : "exact (budget spent)";
  } else {
    name = perturbed ? "iterated best-fit" : "best-fit";
  }
  if (parts.size() > 1) name = "per-component " + name;
  const int64_t composed_total = composed.total;
  if (exact_ran || perturbed || parts.size() > 1) plan.attempts.push_back({name, composed_total});
  if (composed_total < plan.layout.total) {
    plan.layout = std::move(composed);
    plan.strategy = name;
  }
  plan.optimal = plan.layout.total <= p.lower_bound || (proved && plan.layout.total <= composed_total);
  return plan;
}

// Symbolic-size buffers stacked above `constant_total` in first-write order.
// A buffer shares an existing slot only when its size expression and
// alignment are the slot's and it conflicts with none of the slot's occupants.
// Returns how many buffers shared a slot.
size_t stackSymbolicBuffers(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                            int64_t constant_total, AddressPlan& plan) {
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].bytes.isConstant()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].first_write != buffers[b].first_write) {
      return buffers[a].first_write < buffers[b].first_write;
    }
    return buffers[a].creation_order < buffers[b].creation_order;
  });
  struct Slot {
    std::vector<size_t> occupants;  // the first one defines address, size, alignment
  };
  std::vector<Slot> slots;
  size_t shared = 0;
  for (size_t i : order) {
    const Buffer& b = buffers[i];
    bool placed = false;
    for (Slot& slot : slots) {
      const size_t first = slot.occupants.front();
      if (!buffers[first].bytes.sameAs(b.bytes) || buffers[first].alignment != b.alignment) {
        continue;
      }
      bool clash = std::any_of(slot.occupants.begin(), slot.occupants.end(),
                               [&](size_t o) { return conflicts.conflicts(o, i); });
      if (clash) continue;
      plan.addresses[i] = plan.addresses[first];
      plan.stacked_on[i] = plan.stacked_on[first];
      slot.occupants.push_back(i);
      placed = true;
      ++shared;
      break;
    }
    if (placed) continue;
    if (slots.empty()) {
      plan.addresses[i] = alignUp(IntExpr(constant_total), b.alignment);
    } else {
      const size_t below = slots.back().occupants.front();
      plan.addresses[i] = alignUp(plan.addresses[below] + buffers[below].bytes, b.alignment);
      plan.stacked_on[i] = static_cast<int>(below);
    }
    slots.push_back(Slot{{i}});
  }
  return shared;
}

}  // namespace

int64_t lowerBoundBytes(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts) {
  SMELT_CHECK(conflicts.size() == buffers.size(), "lowerBoundBytes: conflict graph has ",
              conflicts.size(), " buffers, buffer list has ", buffers.size());
  const size_t n = buffers.size();
  std::vector<int64_t> weight(n, 0);
  for (size_t i = 0; i < n; ++i) weight[i] = buffers[i].bytes.constant().value_or(0);
  // Sweep in (first_write, index) order; candidates for buffer i are its
  // conflicting neighbours seen so far. For interval conflicts they are
  // exactly the buffers live at i's first write, all pairwise conflicting.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].first_write < buffers[b].first_write;
  });
  constexpr int64_t kCliqueNodeBudget = 200000;
  CliqueSearch search(weight, conflicts, kCliqueNodeBudget);
  std::vector<uint64_t> seen((n + 63) / 64, 0);
  for (size_t i : order) {
    std::vector<uint64_t> candidates = seen;
    const auto& row = conflicts.row(i);
    for (size_t w = 0; w < candidates.size(); ++w) candidates[w] &= row[w];
    search.expand(std::move(candidates), weight[i]);
    seen[i / 64] |= uint64_t{1} << (i % 64);
  }
  return search.best();
}

AddressPlan planAddresses(const std::vector<Buffer>& buffers, const ConflictGraph& conflicts,
                          const PlannerOptions& options) {
  validateBuffers(buffers);
  SMELT_CHECK(conflicts.size() == buffers.size(), "planAddresses: conflict graph has ",
              conflicts.size(), " buffers, buffer list has ", buffers.size());
  AddressPlan plan;
  plan.addresses.assign(buffers.size(), IntExpr(0));
  plan.stacked_on.assign(buffers.size(), AddressPlan::kNotStacked);
  plan.lower_bound_bytes = lowerBoundBytes(buffers, conflicts);
  plan.no_reuse_bytes = noReuseBytes(buffers);

  Problem problem = makeProblem(buffers, conflicts, plan.lower_bound_bytes);
  std::optional<Incumbent> baseline;
  const bool all_constant = std::all_of(buffers.begin(), buffers.end(),
                                        [](const Buffer& b) { return b.bytes.isConstant(); });
  if (options.baseline != nullptr) {
    if (all_constant) {
      verifyPlan(buffers, conflicts, *options.baseline, std::numeric_limits<int64_t>::max());
      std::vector<int64_t> offsets;
      for (const IntExpr& address : options.baseline->addresses) offsets.push_back(*address.constant());
      baseline = Incumbent{"baseline:" + options.baseline->strategy, localLayout(problem, offsets)};
    } else {
      plan.notes.push_back("baseline plan ignored: some sizes are symbolic");
    }
  }
  // The textbook planners (constant sizes only) as incumbents: the plan is
  // never worse than either of them.
  auto textbook = [&]() -> std::vector<Incumbent> {
    if (!all_constant) return {};
    return {{"free list", localLayout(problem, baselines::freeListOffsets(buffers, conflicts))},
            {"linear scan", localLayout(problem, baselines::linearScanOffsets(buffers, conflicts))}};
  };
  ConstantPlan constant = planConstantSizes(problem, options, baseline, textbook);
  for (size_t k = 0; k < problem.size(); ++k) {
    plan.addresses[problem.global[k]] = constant.layout.offsets[k];
  }
  plan.strategy = constant.strategy;
  plan.attempts = std::move(constant.attempts);
  plan.lower_bound_reached = constant.layout.total <= plan.lower_bound_bytes;
  plan.optimal = constant.optimal;
  if (!constant.search_note.empty()) plan.notes.push_back(constant.search_note);
  if (!plan.lower_bound_reached && constant.layout.total <= constant.target) {
    plan.notes.push_back("optimal by alignment padding: no layout is below " + std::to_string(constant.target) +
                         " B (a clique of conflicting buffers stacked as low as their alignments allow; "
                         "max live " +
                         std::to_string(plan.lower_bound_bytes) + " B)");
  }

  if (!all_constant) {
    const size_t symbolic_count = static_cast<size_t>(std::count_if(
        buffers.begin(), buffers.end(), [](const Buffer& b) { return !b.bytes.isConstant(); }));
    size_t shared = stackSymbolicBuffers(buffers, conflicts, constant.layout.total, plan);
    plan.symbolic = true;
    plan.optimal = false;
    plan.lower_bound_reached = false;
    plan.strategy = "symbolic-stack (constant part: " + constant.strategy + ")";
    plan.notes.push_back(std::to_string(symbolic_count) +
                         " buffer(s) have symbolic sizes: stacked above the " +
                         std::to_string(constant.layout.total) +
                         " B constant-size region in first-write order; " +
                         std::to_string(shared) +
                         " of them share an identical-size slot with non-conflicting buffers");
  }
  plan.total_bytes = planTotalBytes(buffers, plan.addresses, plan.stacked_on);
  return plan;
}

}  // namespace smelt::alloc_reuse
