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
#include "lower/alloc_reuse/exact_search.h"
#include "lower/alloc_reuse/placement_problem.h"
#include "lower/alloc_reuse/verify.h"

namespace smelt::alloc_reuse {

using namespace placement;

namespace {

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

// Node budget of the search tried before the long iterated greedy: enough
// to settle components of a dozen buffers.
constexpr int64_t kShortSearchNodes = 4096;
// The iterated greedy before the long search: a few hundred rounds per
// buffer at most (small components are the search's).
constexpr int64_t kMaxGreedyRoundsPerBuffer = 256;

struct ConstantPlan {
  Layout layout;
  std::string strategy;
  std::vector<PlanAttempt> attempts;
  int64_t target = 0;    // max-live or, above it, the padded section bound
  bool optimal = false;  // proved: target reached or exhaustive search
  std::string search_note;  // what the exact search did, when it ran
};

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

// A connected component of the conflict graph (buffers of different ones
// never conflict), with its sections where it is small enough for bit masks.
struct Part {
  std::vector<int> members;
  Problem q;
  std::vector<uint64_t> adjacency;
  Sections sections;
};

// The components of `p`. The padded section bounds can only raise the target
// every stage stops at: p.lower_bound (and each part's) is raised to them.
std::vector<Part> partsOf(Problem& p) {
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
  return parts;
}

// The baseline, the greedy orderings on the whole problem (the best one into
// `whole`) and the textbook planners, in that order, into `plan`. True when
// one reaches the target: the plan is then optimal and final.
bool planIncumbents(const Problem& p, const PlannerOptions& options,
                    const std::optional<Incumbent>& baseline,
                    const std::function<std::vector<Incumbent>()>& textbook, ConstantPlan& plan,
                    GreedyResult& whole) {
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
  if (baseline && consider(baseline->name, baseline->layout)) return plan.optimal = true;
  whole = bestGreedy(p, &plan.attempts);
  if (!have || whole.layout.total < plan.layout.total) {
    plan.layout = whole.layout;
    plan.strategy = whole.name;
    have = true;
  }
  if (options.stop_at_lower_bound && plan.layout.total <= p.lower_bound) return plan.optimal = true;
  for (Incumbent& incumbent : textbook()) {
    if (consider(incumbent.name, std::move(incumbent.layout))) return plan.optimal = true;
  }
  return false;
}

// What planning one component found.
struct PartOutcome {
  Layout layout;
  bool proved = false;           // optimal for the component
  bool searched = false;         // the exact search ran
  bool complete = false;         // and exhausted it: the layout is optimal
  bool found_by_search = false;  // the exact search lowered the layout
  bool perturbed = false;        // the iterated greedy lowered its ordering's layout
  int64_t nodes = 0, splits = 0;
};

// One component from `greedy`, its best ordering: iterated greedy, then the
// exact search where the component is small enough.
PartOutcome planPart(const Part& part, GreedyResult greedy, const PlannerOptions& options,
                     std::chrono::steady_clock::time_point deadline) {
  const Problem& q = part.q;
  const size_t exact_limit = std::min(options.exact_search_max_buffers, kMaxSearchBuffers);
  PartOutcome out;
  out.layout = greedy.layout;  // the best so far
  out.proved = out.layout.total <= q.lower_bound;
  auto keep = [&](const Layout& candidate, bool from_search) {
    if (candidate.total < out.layout.total) {
      out.layout = candidate;
      out.found_by_search = out.found_by_search || from_search;
    }
    out.proved = out.proved || out.complete || out.layout.total <= q.lower_bound;
  };
  const int64_t n = static_cast<int64_t>(q.size());
  const bool searchable = q.size() <= exact_limit;
  uint64_t seed = 0x5eed;  // each walk its own changes
  auto iterate = [&](int64_t rounds, std::chrono::steady_clock::time_point until) {
    const int64_t before = greedy.layout.total;
    perturbGreedy(q, greedy, rounds, seed++, until);
    out.perturbed = out.perturbed || greedy.layout.total < before;
    keep(greedy.layout, false);
  };
  int64_t nodes_left = options.exact_search_node_budget;
  auto search = [&](int64_t budget) {
    ExactSearchResult exact =
        exactSearch(q, part.adjacency, part.sections, out.layout, budget, deadline);
    out.complete = exact.complete;
    out.searched = true;
    nodes_left -= exact.nodes;
    out.nodes += exact.nodes;
    out.splits += exact.splits;
    keep(exact.best, true);
  };
  const int64_t rounds = options.heuristic_rounds;
  // Each round costs O(n^2): few rounds on large components keep the
  // heuristic path near 1 ms at 128 buffers.
  if (!out.proved && rounds > 0) {
    iterate(std::max<int64_t>(4, std::min<int64_t>(rounds, 2048 / n)), deadline);
  }
  if (exact_limit == 0) return out;
  // Small components are settled (found or proved) by a short search.
  if (!out.proved && searchable) search(std::min(nodes_left, kShortSearchNodes));
  // Then the iterated greedy is the search's finder: layouts at a tight
  // target that the search in address order reaches only after many
  // restarts, it finds in a few thousand rounds. The search keeps at
  // least half the time left.
  if (!out.proved && rounds > 0) {
    auto until = deadline;
    if (searchable) {
      const auto now = std::chrono::steady_clock::now();
      until = now + (deadline - now) / 2;
    }
    iterate(std::max(rounds, std::min(options.search_greedy_work / (n * n),
                                      kMaxGreedyRoundsPerBuffer * n)),
            until);
  }
  if (!out.proved && searchable && nodes_left > 0) search(nodes_left);
  return out;
}

// Every component planned on its own from offset 0 (planPart), side by
// side; kept in `plan` where lower than the incumbents. `whole` is the best
// ordering of the whole problem (a single component starts from `plan`).
void planByComponents(const Problem& p, const std::vector<Part>& parts, const GreedyResult& whole,
                      const PlannerOptions& options,
                      std::chrono::steady_clock::time_point deadline, ConstantPlan& plan) {
  Layout composed;
  composed.offsets.assign(p.size(), 0);
  bool exact_ran = false, exact_complete = true, perturbed = false;
  bool found_by_search = false, proved_by_search = false, proved = false;
  int64_t search_nodes = 0, search_splits = 0;
  std::vector<PartOutcome> outcomes;
  for (const Part& part : parts) {
    GreedyResult greedy;
    if (parts.size() == 1) {
      greedy = whole;
      greedy.layout = plan.layout;  // the baseline may be better than every ordering
    } else {
      greedy = bestGreedy(part.q, nullptr);
    }
    PartOutcome out = planPart(part, std::move(greedy), options, deadline);
    perturbed = perturbed || out.perturbed;
    found_by_search = found_by_search || out.found_by_search;
    search_nodes += out.nodes;
    search_splits += out.splits;
    if (out.searched) {
      exact_ran = true;
      exact_complete = exact_complete && out.proved;
      proved_by_search = proved_by_search || out.complete;
    }
    for (size_t k = 0; k < part.members.size(); ++k) {
      composed.offsets[static_cast<size_t>(part.members[k])] = out.layout.offsets[k];
    }
    composed.total = std::max(composed.total, out.layout.total);
    outcomes.push_back(std::move(out));
  }
  proved = composed.total <= p.lower_bound;
  for (const PartOutcome& o : outcomes) {
    proved = proved || (o.proved && o.layout.total == composed.total);
  }
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
  const std::vector<Part> parts = partsOf(p);
  plan.target = p.lower_bound;
  GreedyResult whole;
  if (planIncumbents(p, options, baseline, textbook, plan, whole)) return plan;
  planByComponents(p, parts, whole, options, deadline, plan);
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
