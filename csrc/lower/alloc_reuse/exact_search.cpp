#include "lower/alloc_reuse/exact_search.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <random>

#include "fusion/error.h"

namespace smelt::alloc_reuse::placement {

namespace {

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

}  // namespace

ExactSearchResult exactSearch(const Problem& p, const std::vector<uint64_t>& adjacency,
                              const Sections& sections, Layout incumbent, int64_t node_budget,
                              std::chrono::steady_clock::time_point deadline) {
  ExactSearch search(p, adjacency, sections, std::move(incumbent), node_budget, deadline);
  ExactSearchResult result;
  result.complete = search.run();
  result.best = search.best();
  result.nodes = search.nodes();
  result.splits = search.splits();
  return result;
}

}  // namespace smelt::alloc_reuse::placement
