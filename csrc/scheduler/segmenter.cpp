#include "scheduler/segmenter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "fusion/clone.h"
#include "fusion/error.h"
#include "scheduler/registry.h"
#include "scheduler/segment_extents.h"
#include "scheduler/segment_rewrite.h"

namespace smelt {

namespace {

std::string names(const std::vector<const Val*>& vals) {
  std::string text;
  for (size_t i = 0; i < vals.size(); ++i) {
    const TensorView* tv = vals[i]->asTensor();
    text += (i ? ", " : "") + (tv ? tv->name() : vals[i]->toString());
  }
  return text;
}

class Segmenter {
 public:
  Segmenter(const Fusion& fusion, const RuntimeInfo& runtime, const ParamsOverride& override_params,
            const SegmentCheck& check)
      : fusion_(fusion), runtime_(runtime), override_(override_params), check_(check),
        exprs_(fusion.exprs()) {
    for (size_t i = 0; i < exprs_.size(); ++i) {
      index_.emplace(exprs_[i], static_cast<int>(i));
      for (const Val* out : exprs_[i]->outputs()) producer_[out] = static_cast<int>(i);
    }
    readers_.assign(exprs_.size(), {});
    for (size_t i = 0; i < exprs_.size(); ++i) {
      for (const Val* out : exprs_[i]->outputs()) {
        for (const Expr* use : out->uses()) {
          auto reader = index_.find(use);
          if (reader != index_.end()) readers_[i].push_back(reader->second);
        }
      }
      std::sort(readers_[i].begin(), readers_[i].end());
      readers_[i].erase(std::unique(readers_[i].begin(), readers_[i].end()), readers_[i].end());
    }
  }

  // Segments until the check accepts every segment; each refusal takes one
  // group out of the candidates, so this ends.
  SegmentedFusion run() {
    std::vector<std::string> refused;
    while (true) {
      refusal_.reset();
      SegmentedFusion result = segmentOnce();
      if (!refusal_) {
        result.refused = std::move(refused);
        result.candidates_checked = candidates_checked_;
        return result;
      }
      refused_.insert(*refusal_);
      refused.push_back(refusal_->second);
    }
  }

 private:
  std::string checked(const Segment& segment) const {
    if (!check_) return "";
    RuntimeInfo runtime(*segment.fusion, segmentInputInfos(segment, runtime_), runtime_.target());
    return check_(segment, runtime);
  }

  SegmentedFusion segmentOnce() {
    groups_.clear();
    copies_of_.assign(exprs_.size(), {});
    group_scheduler_.clear();
    std::vector<int> all(exprs_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    SegmentedFusion result;
    // A seed (a matmul's core) stays in a segment of the scheduler that took
    // it: another scheduler taking it together with more (an epilogue the
    // matmul scheduler declines, a second output) would run it as a plain
    // reduction.
    const std::vector<SeedGroup> seeds = seedGroups();
    if (std::optional<Segment> whole = trySegment(all)) {
      if (seeds.empty() || keepsItsSegments(whole->scheduler)) {
        choose(std::move(*whole), all, result);
        return result;
      }
    }
    group_of_.assign(exprs_.size(), -1);
    for (const SeedGroup& seed : seeds) {
      for (int e : seed.exprs) group_of_[e] = static_cast<int>(groups_.size());
      groups_.push_back(seed.exprs);
      group_scheduler_.push_back(seed.scheduler);
    }
    for (size_t i = 0; i < exprs_.size(); ++i) {
      if (group_of_[i] >= 0) continue;
      group_of_[i] = static_cast<int>(groups_.size());
      groups_.push_back({static_cast<int>(i)});
      std::vector<std::string> reasons;
      std::optional<Segment> alone = trySegment(groups_.back(), &reasons);
      SMELT_CHECK(alone.has_value(), "cannot segment the fusion: no scheduler takes ",
                  exprs_[i]->toString(), " on its own:", joined(reasons));
      group_scheduler_.push_back(alone->scheduler);
    }
    while (mergeBestEdge()) {
    }
    recomputeCheapInputs();
    for (int g : executionOrder()) {
      // Everything it computed is computed again where it is read: kept
      // among the groups (replay sees every expression), run as no kernel.
      if (outputsOf(groups_[g], g).empty()) {
        result.groups.push_back(groups_[g]);
        continue;
      }
      std::vector<std::string> reasons;
      std::optional<Segment> segment = trySegment(groups_[g], &reasons, g);
      SMELT_CHECK(segment.has_value(), "cannot segment the fusion: no scheduler takes the expressions of ",
                  exprs_[groups_[g].front()]->toString(), ", which merge no further:", joined(reasons));
      choose(std::move(*segment), groups_[g], result, g);
    }
    return result;
  }

 public:
  // The segments of `groups` (SegmentedFusion::groups of an earlier
  // segmentation of this fusion), made without searching or checking;
  // nullopt when they do not partition this fusion's expressions in an
  // order producers first, or some group no scheduler takes.
  std::optional<SegmentedFusion> replay(const std::vector<std::vector<int>>& groups) {
    // An expression may be in several groups (recomputeCheapInputs): the
    // first holds it, the others compute it again.
    group_of_.assign(exprs_.size(), -1);
    copies_of_.assign(exprs_.size(), {});
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].empty() || !std::is_sorted(groups[g].begin(), groups[g].end()) ||
          std::adjacent_find(groups[g].begin(), groups[g].end()) != groups[g].end()) {
        return std::nullopt;
      }
      for (int e : groups[g]) {
        if (e < 0 || e >= static_cast<int>(exprs_.size())) return std::nullopt;
        if (group_of_[e] < 0) {
          group_of_[e] = static_cast<int>(g);
        } else {
          copies_of_[e].push_back(static_cast<int>(g));
        }
      }
    }
    if (std::count(group_of_.begin(), group_of_.end(), -1) > 0) return std::nullopt;
    for (size_t g = 0; g < groups.size(); ++g) {
      // Every group holds an expression of its own; copies alone are no group.
      if (std::none_of(groups[g].begin(), groups[g].end(),
                       [&](int e) { return group_of_[e] == static_cast<int>(g); })) {
        return std::nullopt;
      }
      for (int e : groups[g]) {
        for (const Val* in : exprs_[e]->inputs()) {
          auto p = producer_.find(in);
          if (p != producer_.end() && group_of_[p->second] > static_cast<int>(g) &&
              !std::binary_search(groups[g].begin(), groups[g].end(), p->second)) {
            return std::nullopt;
          }
        }
      }
    }
    groups_ = groups;
    SegmentedFusion result;
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int>& members = groups[g];
      result.groups.push_back(members);
      if (outputsOf(members, static_cast<int>(g)).empty()) continue;  // computed again where read
      std::optional<Segment> segment = trySegment(members, nullptr, static_cast<int>(g));
      if (!segment) return std::nullopt;
      appendSegments(std::move(*segment), members, result, static_cast<int>(g));
    }
    return result;
  }

 private:
  void choose(Segment segment, const std::vector<int>& members, SegmentedFusion& result,
              int owner = -1) {
    const size_t first = result.segments.size();
    result.groups.push_back(members);
    appendSegments(std::move(segment), members, result, owner);
    // The pieces of a grid split are checked as what runs.
    for (size_t s = first; s < result.segments.size() && !refusal_; ++s) {
      const Segment& piece = result.segments[s];
      std::string reason = checked(piece);
      if (!reason.empty()) {
        refusal_.emplace(members, names(piece.outputs) + " (" + toString(piece.scheduler) + "): " + reason);
      }
    }
  }

  // A producer-consumer pair of groups and the bytes that would no longer go
  // through global memory if they were one segment.
  struct Edge {
    int producer;
    int consumer;
    int64_t saved_bytes;
    // Two groups reading a common tensor, neither reading the other's: one
    // segment reads it once and launches once (q's and k's rotary embedding
    // reading cos and sin).
    bool siblings = false;
  };

  // Merges the pair of groups that saves the most bytes among those a
  // scheduler still takes (ties: a matmul's group first, then the later
  // consumer first), siblings only when no producer-consumer pair merges;
  // false when no pair can merge.
  bool mergeBestEdge() {
    std::vector<Edge> edges;
    for (size_t c = 0; c < groups_.size(); ++c) {
      std::set<int> producers;
      for (int e : groups_[c]) {
        for (const Val* in : exprs_[e]->inputs()) {
          auto p = producer_.find(in);
          if (p != producer_.end() && group_of_[p->second] != static_cast<int>(c)) {
            producers.insert(group_of_[p->second]);
          }
        }
      }
      for (int p : producers) {
        edges.push_back({p, static_cast<int>(c), savedBytes(p, static_cast<int>(c))});
      }
    }
    // Among equal savings, a seed's epilogue first: grown from the output
    // backwards, a matmul's epilogue ending in a reshape (addmm's bias, then
    // .view(B, T, N)) became a pointwise segment the matmul could no longer
    // join; grown from the matmul, only the reshape is left (a view segment).
    auto touchesSeed = [&](const Edge& e) {
      return keepsItsSegments(group_scheduler_[e.producer]) ||
             keepsItsSegments(group_scheduler_[e.consumer]);
    };
    std::stable_sort(edges.begin(), edges.end(), [&](const Edge& a, const Edge& b) {
      if (a.saved_bytes != b.saved_bytes) return a.saved_bytes > b.saved_bytes;
      if (touchesSeed(a) != touchesSeed(b)) return touchesSeed(a);
      return groups_[a.consumer].front() > groups_[b.consumer].front();
    });
    for (const Edge& edge : edges) {
      if (merge(edge)) return true;
    }
    // Siblings only when no producer-consumer pair merges (they are many).
    std::vector<Edge> siblings = siblingEdges();
    std::stable_sort(siblings.begin(), siblings.end(),
                     [](const Edge& a, const Edge& b) { return a.saved_bytes > b.saved_bytes; });
    for (const Edge& edge : siblings) {
      if (merge(edge)) return true;
    }
    return false;
  }

  // Merges the pair `edge` when a scheduler takes the union and no cycle
  // forms; whether it did.
  bool merge(const Edge& edge) {
    std::vector<int> candidate = groups_[edge.producer];
    candidate.insert(candidate.end(), groups_[edge.consumer].begin(), groups_[edge.consumer].end());
    std::sort(candidate.begin(), candidate.end());
    auto known = merge_schedulers_.find(candidate);
    if (known != merge_schedulers_.end() && !known->second) return false;
    if (mergeMakesCycle(edge.producer, edge.consumer)) return false;
    if (edge.siblings && mergeMakesCycle(edge.consumer, edge.producer)) return false;
    std::optional<SchedulerType> merged = mergeScheduler(candidate);
    if (!merged) return false;
    // A seed's group keeps its scheduler: another taking it with more
    // would run the matmul as a plain reduction.
    for (int g : {edge.producer, edge.consumer}) {
      if (keepsItsSegments(group_scheduler_[g]) && *merged != group_scheduler_[g]) return false;
    }
    for (int x : groups_[edge.producer]) group_of_[x] = edge.consumer;
    groups_[edge.consumer] = candidate;
    groups_[edge.producer].clear();
    group_scheduler_[edge.consumer] = *merged;
    return true;
  }

  // The scheduler taking the merge candidate `members`, or nullopt. While
  // groups merge no expression is copied, so the answer depends on the
  // members alone: it is worked out once per candidate, not once per round
  // (most candidates a round declines are offered again in the next).
  std::optional<SchedulerType> mergeScheduler(const std::vector<int>& members) {
    SMELT_INTERNAL_CHECK(std::all_of(copies_of_.begin(), copies_of_.end(),
                                     [](const std::vector<int>& c) { return c.empty(); }),
                         "merge candidates are remembered only before recomputation");
    if (refused_.count(members)) return std::nullopt;  // refused since it was remembered
    auto [known, fresh] = merge_schedulers_.try_emplace(members);
    if (fresh) {
      std::optional<Segment> segment = trySegment(members);
      if (segment) known->second = segment->scheduler;
    }
    return known->second;
  }

  // Pairs of groups that read a common tensor (an input or another group's)
  // and do not read each other's; saved_bytes is what the common tensors
  // weigh (read once instead of twice).
  std::vector<Edge> siblingEdges() const {
    std::map<std::pair<int, int>, int64_t> shared;
    std::map<const Val*, std::set<int>> readers;
    std::set<std::pair<int, int>> reads;  // (producer group, consumer group)
    for (size_t e = 0; e < exprs_.size(); ++e) {
      for (const Val* in : exprs_[e]->inputs()) {
        if (in->asTensor() == nullptr || !producedOutside(in, group_of_[e])) continue;
        readers[in].insert(group_of_[e]);
        auto p = producer_.find(in);
        if (p != producer_.end()) reads.insert({group_of_[p->second], group_of_[e]});
      }
    }
    for (const auto& [tensor, groups] : readers) {
      for (auto a = groups.begin(); a != groups.end(); ++a) {
        for (auto b = std::next(a); b != groups.end(); ++b) {
          shared[{*a, *b}] += bytesOf(tensor->asTensor());
        }
      }
    }
    std::vector<Edge> edges;
    for (const auto& [pair, bytes] : shared) {
      const auto [a, b] = pair;
      if (reads.count({a, b}) || reads.count({b, a})) continue;  // a producer-consumer pair
      edges.push_back({a, b, bytes, /*siblings=*/true});
    }
    return edges;
  }

  // Whether `v` is a fusion input or computed outside group `g`.
  bool producedOutside(const Val* v, int g) const {
    auto p = producer_.find(v);
    return p == producer_.end() || group_of_[p->second] != g;
  }

  int64_t bytesOf(const TensorView* tv) const {
    int64_t numel = 1;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      if (!id->isBroadcast() || id->hasExpandedExtent()) numel *= runtime_.extent(id);
    }
    return numel * dataTypeSize(tv->dtype());
  }

  // The seeds of every scheduler (SchedulerEntry::seeds), each as the first
  // of its candidates that a scheduler keeping its segments takes, grown by
  // that scheduler's seed_growth where it still takes the result (sorted;
  // disjoint).
  struct SeedGroup {
    std::vector<int> exprs;
    SchedulerType scheduler;
  };
  std::vector<SeedGroup> seedGroups() {
    std::vector<SeedGroup> groups;
    std::set<int> taken;
    // The candidate's expressions, sorted, or nullopt when one is not among
    // the fusion's or another seed took it.
    auto indices = [&](const std::vector<const Expr*>& exprs) -> std::optional<std::vector<int>> {
      std::vector<int> found;
      for (const Expr* e : exprs) {
        auto it = index_.find(e);
        if (it == index_.end() || taken.count(it->second)) return std::nullopt;
        found.push_back(it->second);
      }
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      return found;
    };
    for (const SchedulerEntry& entry : schedulerEntries()) {
      if (!entry.seeds) continue;
      for (const SeedCandidates& seed : entry.seeds(fusion_)) {
        for (const std::vector<const Expr*>& candidate : seed) {
          std::optional<std::vector<int>> members = indices(candidate);
          if (!members) continue;
          std::optional<Segment> segment = trySegment(*members);
          if (!segment || !keepsItsSegments(segment->scheduler)) continue;
          const SchedulerEntry& taker = schedulerEntry(segment->scheduler);
          if (taker.seed_growth) {
            for (const std::vector<const Expr*>& grown : taker.seed_growth(candidate)) {
              std::optional<std::vector<int>> more = indices(grown);
              if (!more) continue;
              std::optional<Segment> bigger = trySegment(*more);
              if (bigger && bigger->scheduler == segment->scheduler) {
                members = std::move(more);
                break;
              }
            }
          }
          taken.insert(members->begin(), members->end());
          groups.push_back({std::move(*members), segment->scheduler});
          break;
        }
      }
    }
    return groups;
  }

  // Bytes of the tensors `producer` computes that only `consumer` (and
  // `producer` itself) reads and that are not fusion outputs. None when
  // `consumer` only regroups axes (reshape, squeeze, size-1 broadcast): it
  // runs as a view of the contiguous tensor the producer writes (no kernel,
  // no bytes), so merging it early would only bind the producer to the
  // reshape's loops, which a merge of expanded and iterated axes refuses
  // (repeat_kv's expand().clone().view(): the clone and its view became a
  // kernel of their own).
  int64_t savedBytes(int producer, int consumer) const {
    const auto regroups = [&](int e) {
      const ExprType type = exprs_[e]->type();
      return type == ExprType::Reshape || type == ExprType::Squeeze || type == ExprType::Broadcast;
    };
    if (std::all_of(groups_[consumer].begin(), groups_[consumer].end(), regroups)) return 0;
    // Likewise a producer that only reshapes a tensor it reads (the view of
    // a library matmul's [B*T, N] result as [B, T, N]): merged, it saves no
    // bytes, and its reshape would bar the normalization after the consumer
    // (the bias and residual add, then LayerNorm) from the consumer's kernel.
    const auto reshapes = [&](int e) {
      return exprs_[e]->type() == ExprType::Reshape || exprs_[e]->type() == ExprType::Squeeze;
    };
    if (std::all_of(groups_[producer].begin(), groups_[producer].end(), reshapes)) return 0;
    int64_t bytes = 0;
    for (int m : groups_[producer]) {
      const TensorView* tv = exprs_[m]->output();
      if (tv->isFusionOutput()) continue;
      bool read_by_consumer = false;
      bool read_elsewhere = false;
      for (int e : readers_[m]) {
        if (group_of_[e] == consumer) {
          read_by_consumer = true;
        } else if (group_of_[e] != producer) {
          read_elsewhere = true;
        }
      }
      if (!read_by_consumer || read_elsewhere) continue;
      bytes += bytesOf(tv);
    }
    return bytes;
  }

  // `segment` (of the expressions `members`), or its partial and final
  // segments when its scheduler splits it across blocks (grid_split_chunks,
  // after the override).
  void appendSegments(Segment segment, const std::vector<int>& members, SegmentedFusion& result,
                      int owner) {
    int64_t max_chunks = 1;
    const SchedulerEntry& entry = schedulerEntry(segment.scheduler);
    if (entry.grid_split_chunks) {
      RuntimeInfo runtime(*segment.fusion, segmentInputInfos(segment, runtime_), runtime_.target());
      max_chunks = entry.grid_split_chunks(*segment.fusion, runtime, override_);
    }
    if (max_chunks <= 1) {
      result.segments.push_back(std::move(segment));
      return;
    }
    int reduction = -1;
    for (int m : members) {
      if (exprs_[m]->type() == ExprType::Reduction) reduction = m;
    }
    const Expr* reduce = exprs_[reduction];
    std::unordered_set<const Val*> upstream{reduce->input(0)};
    std::vector<int> partial{reduction};
    std::vector<int> final{reduction};
    for (auto m = members.rbegin(); m != members.rend(); ++m) {
      if (*m == reduction) continue;
      if (*m < reduction && upstream.count(exprs_[*m]->output())) {
        partial.push_back(*m);
        upstream.insert(exprs_[*m]->inputs().begin(), exprs_[*m]->inputs().end());
      } else {
        final.push_back(*m);
      }
    }
    const std::vector<IterDomain*> reduced_input = reduce->input(0)->asTensor()->logicalNoReductions();
    const bool inner = reduce->output()->logicalDomain().back()->isReduction();
    GridSplit split{GridSplitRole::None, inner, inner ? reduced_input.back() : reduced_input.front(),
                    max_chunks, reduce->output(), reduce->input(0)};
    for (auto [part, role] : {std::pair{&partial, GridSplitRole::Partials},
                              std::pair{&final, GridSplitRole::Final}}) {
      std::sort(part->begin(), part->end());
      std::vector<std::string> reasons;
      std::optional<Segment> piece = trySegment(*part, &reasons, owner);
      SMELT_INTERNAL_CHECK(piece.has_value(), "a grid-split segment is taken by no scheduler:",
                           joined(reasons));
      SMELT_INTERNAL_CHECK(role != GridSplitRole::Partials ||
                               piece->outputs == std::vector<const Val*>{reduce->output()},
                           "the partial segment of a grid split writes more than its reduction");
      piece->grid_split = split;
      piece->grid_split.role = role;
      result.segments.push_back(std::move(*piece));
    }
  }

  // The values expressions `members` (sorted) compute that are fusion
  // outputs or read by expressions of other segments; `owner` as in
  // trySegment.
  std::vector<const Val*> outputsOf(const std::vector<int>& members, int owner) const {
    std::vector<const Val*> outputs;
    for (int m : members) {
      if (owner >= 0 && group_of_[m] != owner) continue;  // a copy
      for (const Val* out : exprs_[m]->outputs()) {
        bool used_outside = out->isFusionOutput();
        for (size_t r = 0; r < readers_[m].size() && !used_outside; ++r) {
          const int e = readers_[m][r];
          if (std::binary_search(members.begin(), members.end(), e)) continue;
          const auto& ins = exprs_[e]->inputs();
          used_outside = std::find(ins.begin(), ins.end(), out) != ins.end() &&
                         readsFromOutside(e, m);
        }
        if (used_outside) outputs.push_back(out);
      }
    }
    return outputs;
  }

  bool groupHas(int group, int expr) const {
    return std::binary_search(groups_[group].begin(), groups_[group].end(), expr);
  }

  // Whether expression `e`, outside the segment being made, gets the output
  // of expression `producer` from another segment: unless every group
  // holding `e` computes a copy of the producer (recomputeCheapInputs). The
  // producer's own group counts as another segment: a grid split makes two
  // of one group.
  bool readsFromOutside(int e, int producer) const {
    if (e >= static_cast<int>(group_of_.size()) || group_of_[e] < 0) return true;
    const auto computes_copy = [&](int g) {
      return g != group_of_[producer] && groupHas(g, producer);
    };
    return !computes_copy(group_of_[e]) ||
           !std::all_of(copies_of_[e].begin(), copies_of_[e].end(), computes_copy);
  }

  // Recomputation. A group reading a tensor that another group computes
  // from fusion inputs by element-wise expressions alone (casts,
  // arithmetic, broadcasts) computes it again from those inputs where they
  // weigh no more than the tensor and the group's scheduler still takes it:
  // layer-norm backward's weight-gradient kernels read dy, x, mean and rstd
  // (fp16 and two rows) instead of an fp32 dy and x-hat that the dx kernel
  // wrote for them, and that kernel writes dx alone. A group whose outputs
  // are all computed again where they are read runs no kernel.
  void recomputeCheapInputs() {
    for (int g : executionOrder()) {
      if (keepsItsSegments(group_scheduler_[g])) continue;
      bool changed = true;
      while (changed) {
        changed = false;
        for (const Val* v : externalTensorInputs(g)) {
          std::optional<std::vector<int>> cone = cheapCone(v);
          if (!cone || leafBytes(*cone, g) > bytesOf(v->asTensor())) continue;
          std::vector<int> candidate = groups_[g];
          candidate.insert(candidate.end(), cone->begin(), cone->end());
          std::sort(candidate.begin(), candidate.end());
          candidate.erase(std::unique(candidate.begin(), candidate.end()), candidate.end());
          std::optional<Segment> segment = trySegment(candidate, nullptr, g);
          if (!segment || segment->scheduler != group_scheduler_[g]) continue;
          for (int e : *cone) {
            if (!groupHas(g, e)) copies_of_[e].push_back(g);
          }
          groups_[g] = std::move(candidate);
          changed = true;
          break;
        }
      }
    }
  }

  // Tensors group `g` reads that other groups compute.
  std::vector<const Val*> externalTensorInputs(int g) const {
    std::vector<const Val*> inputs;
    for (int e : groups_[g]) {
      for (const Val* in : exprs_[e]->inputs()) {
        auto p = producer_.find(in);
        if (in->asTensor() != nullptr && p != producer_.end() && !groupHas(g, p->second) &&
            std::find(inputs.begin(), inputs.end(), in) == inputs.end()) {
          inputs.push_back(in);
        }
      }
    }
    return inputs;
  }

  // The expressions computing `v` from fusion inputs (sorted), when all are
  // element-wise, none computes a fusion output (its group writes that) and
  // there are at most kMaxRecomputed of them; else nullopt.
  static constexpr size_t kMaxRecomputed = 32;
  std::optional<std::vector<int>> cheapCone(const Val* v) const {
    std::set<int> cone;
    std::vector<const Val*> stack{v};
    while (!stack.empty()) {
      const Val* value = stack.back();
      stack.pop_back();
      auto p = producer_.find(value);
      if (p == producer_.end() || cone.count(p->second)) continue;
      const ExprType type = exprs_[p->second]->type();
      if (type != ExprType::Unary && type != ExprType::Binary && type != ExprType::Where &&
          type != ExprType::Broadcast && type != ExprType::Set && type != ExprType::Full) {
        return std::nullopt;
      }
      if (value->isFusionOutput()) return std::nullopt;
      cone.insert(p->second);
      if (cone.size() > kMaxRecomputed) return std::nullopt;
      for (const Val* in : exprs_[p->second]->inputs()) stack.push_back(in);
    }
    return std::vector<int>(cone.begin(), cone.end());
  }

  // Bytes of the fusion inputs the expressions `cone` read that group `g`
  // does not read already.
  int64_t leafBytes(const std::vector<int>& cone, int g) const {
    std::set<const Val*> read_by_group;
    for (int e : groups_[g]) read_by_group.insert(exprs_[e]->inputs().begin(), exprs_[e]->inputs().end());
    std::set<const Val*> leaves;
    for (int e : cone) {
      for (const Val* in : exprs_[e]->inputs()) {
        if (in->asTensor() != nullptr && in->isFusionInput() && !read_by_group.count(in)) {
          leaves.insert(in);
        }
      }
    }
    int64_t bytes = 0;
    for (const Val* leaf : leaves) bytes += bytesOf(leaf->asTensor());
    return bytes;
  }

  static std::string joined(const std::vector<std::string>& reasons) {
    std::string text;
    for (const std::string& r : reasons) text += "\n  " + r;
    return text;
  }

  bool inGroup(const std::vector<int>& members, const Val* val) const {
    auto p = producer_.find(val);
    return p != producer_.end() && std::binary_search(members.begin(), members.end(), p->second);
  }

  // A segment of the expressions `members` (sorted), with the scheduler that
  // takes it, or nullopt (and each scheduler's reason) when none does.
  // `owner`: the group the members are; an expression another group holds
  // (group_of_) is a copy that computes a value for its own readers alone.
  std::optional<Segment> trySegment(const std::vector<int>& members,
                                    std::vector<std::string>* reasons = nullptr, int owner = -1) {
    SMELT_INTERNAL_CHECK(std::adjacent_find(members.begin(), members.end()) == members.end(),
                         "segment candidate lists an expression twice");
    if (auto refusal = refused_.find(members); refusal != refused_.end()) {
      if (reasons != nullptr) reasons->push_back("refused by the check: " + refusal->second);
      return std::nullopt;
    }
    ++candidates_checked_;
    Segment segment;
    std::vector<const Expr*> exprs;
    std::unordered_set<const Val*> seen;
    for (int m : members) {
      const Expr* expr = exprs_[m];
      exprs.push_back(expr);
      for (const Val* in : expr->inputs()) {
        bool external = in->isFusionInput() || (in->asTensor() && !inGroup(members, in));
        if (external && seen.insert(in).second) segment.inputs.push_back(in);
      }
    }
    segment.outputs = outputsOf(members, owner);
    for (const Val* in : sizeOnlyInputs(fusion_, exprs, segment.inputs)) {
      segment.inputs.push_back(in);
    }
    segment.fusion = copySubgraph(fusion_, exprs, segment.inputs, segment.outputs, nullptr,
                                  segmentExtentRewrite(segment.inputs));
    checkSegmentSymbols(*segment.fusion);
    RuntimeInfo runtime(*segment.fusion, segmentInputInfos(segment, runtime_), runtime_.target());
    std::optional<SchedulerType> type = selectScheduler(*segment.fusion, runtime, reasons);
    if (!type) return std::nullopt;
    segment.scheduler = *type;
    return segment;
  }

  // Groups reachable from `from` (edges: producer group -> consumer group;
  // a copy of another group's expression feeds only its own group).
  std::vector<int> successors(int group) const {
    std::set<int> result;
    for (int m : groups_[group]) {
      if (group_of_[m] != group) continue;
      for (int e : readers_[m]) {
        if (group_of_[e] != group) result.insert(group_of_[e]);
      }
    }
    return {result.begin(), result.end()};
  }

  // Merging closes a cycle when `consumer` is reachable from `producer` via a third group.
  bool mergeMakesCycle(int producer, int consumer) const {
    std::vector<int> stack;
    std::set<int> visited;
    for (int s : successors(producer)) {
      if (s != consumer) stack.push_back(s);
    }
    while (!stack.empty()) {
      int g = stack.back();
      stack.pop_back();
      if (g == consumer) return true;
      if (!visited.insert(g).second) continue;
      for (int s : successors(g)) stack.push_back(s);
    }
    return false;
  }

  // Non-empty groups, producers first (ties: the earliest expression first).
  std::vector<int> executionOrder() const {
    std::vector<int> live;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].empty()) live.push_back(static_cast<int>(g));
    }
    std::map<int, int> pending;
    for (int g : live) pending[g] = 0;
    for (int g : live) {
      for (int s : successors(g)) ++pending[s];
    }
    std::vector<int> order;
    while (order.size() < live.size()) {
      int pick = -1;
      for (int g : live) {
        if (pending[g] != 0) continue;
        if (pick < 0 || groups_[g].front() < groups_[pick].front()) pick = g;
      }
      SMELT_INTERNAL_CHECK(pick >= 0, "segments form a cycle");
      pending[pick] = -1;
      for (int s : successors(pick)) --pending[s];
      order.push_back(pick);
    }
    return order;
  }

  const Fusion& fusion_;
  const RuntimeInfo& runtime_;
  const ParamsOverride& override_;
  const SegmentCheck& check_;
  std::vector<Expr*> exprs_;
  std::map<std::vector<int>, std::string> refused_;  // groups the check refused, and why
  // The first refusal of the latest segmentation: the group, and why.
  std::optional<std::pair<std::vector<int>, std::string>> refusal_;
  std::unordered_map<const Expr*, int> index_;  // position in exprs_
  std::unordered_map<const Val*, int> producer_;
  // Per expression, the expressions reading its outputs (sorted).
  std::vector<std::vector<int>> readers_;
  // Merge candidates already offered to the schedulers: the scheduler taking
  // each, nullopt for none (mergeScheduler).
  std::map<std::vector<int>, std::optional<SchedulerType>> merge_schedulers_;
  // Candidates made into a segment fusion and offered to the schedulers
  // (SegmentedFusion::candidates_checked).
  int64_t candidates_checked_ = 0;
  std::vector<std::vector<int>> groups_;
  std::vector<SchedulerType> group_scheduler_;  // the scheduler taking each group
  std::vector<int> group_of_;
  // Per expression, the groups other than group_of_'s that compute it again
  // (recomputeCheapInputs).
  std::vector<std::vector<int>> copies_of_;
};

}  // namespace

std::string SegmentedFusion::toString() const {
  std::ostringstream os;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    os << "segment " << i << " (" << smelt::toString(s.scheduler) << "): " << names(s.inputs)
       << " -> " << names(s.outputs);
    if (s.grid_split.role == GridSplitRole::Partials) {
      os << " (partial results, rows in at most " << s.grid_split.max_chunks << " chunks)";
    } else if (s.grid_split.role == GridSplitRole::Final) {
      os << " (reduces the partial results)";
    }
    os << "\n";
  }
  for (const std::string& r : refused) os << "refused: " << r << "\n";
  return os.str();
}

SegmentedFusion segmentFusion(const Fusion& fusion, const RuntimeInfo& runtime,
                              const ParamsOverride& override_params, const SegmentCheck& check) {
  std::shared_ptr<Fusion> rewritten = rewrittenForSegmentation(fusion, runtime);
  if (rewritten == nullptr) return Segmenter(fusion, runtime, override_params, check).run();
  const RuntimeInfo rewritten_runtime(*rewritten, runtime.inputs(), runtime.target());
  SegmentedFusion segmented = Segmenter(*rewritten, rewritten_runtime, override_params, check).run();
  return standingForComplete(fusion, std::move(rewritten), std::move(segmented));
}

std::optional<SegmentedFusion> segmentFusionAs(const Fusion& fusion, const RuntimeInfo& runtime,
                                               const std::vector<std::vector<int>>& groups,
                                               const ParamsOverride& override_params) {
  return Segmenter(fusion, runtime, override_params, {}).replay(groups);
}

int64_t gridSplitChunks(int64_t extent, int64_t max_chunks) {
  for (int64_t chunks = std::min(extent, max_chunks); chunks > 1; --chunks) {
    if (extent % chunks == 0) return chunks;
  }
  return 1;
}

int64_t gridSplitChunksOf(const Segment& segment, const RuntimeInfo& whole) {
  const GridSplit& split = segment.grid_split;
  if (split.role == GridSplitRole::None) return 1;
  return gridSplitChunks(whole.extent(split.reduced_axis), split.max_chunks);
}

}  // namespace smelt
