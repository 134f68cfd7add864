#include "lower/bank_conflicts.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fusion/error.h"
#include "fusion/symbols.h"

namespace smelt {

namespace {

constexpr int64_t kBanks = 32;
constexpr int64_t kWarp = 32;
constexpr size_t kMaxLoopCombinations = 16;

// One lane's access: its first byte and byte count, or nothing (guard false).
using LaneAccess = std::optional<std::pair<int64_t, int64_t>>;

// The wavefronts one phase of lanes' accesses takes: the most distinct
// 4-byte words that fall into one bank.
int64_t phaseWays(const std::vector<std::pair<int64_t, int64_t>>& accesses) {
  std::map<int64_t, std::set<int64_t>> words_per_bank;
  for (auto [byte, count] : accesses) {
    for (int64_t word = byte / 4; word <= (byte + count - 1) / 4; ++word) {
      words_per_bank[word % kBanks].insert(word);
    }
  }
  int64_t ways = accesses.empty() ? 0 : 1;
  for (const auto& [bank, words] : words_per_bank) {
    ways = std::max<int64_t>(ways, static_cast<int64_t>(words.size()));
  }
  return ways;
}

class Analyzer {
 public:
  explicit Analyzer(const kir::Kernel& kernel) : kernel_(kernel) {
    positions_ = kir::numberPositions(kernel.body);
    for (int d = 0; d < 3; ++d) {
      auto v = kernel.launch.block[d].constant();
      block_[d] = v.value_or(-1);
    }
    lanes_ = block_[0] > 0 && block_[1] > 0 && block_[2] > 0
                 ? std::min<int64_t>(kWarp, block_[0] * block_[1] * block_[2])
                 : 0;
  }

  BankConflictReport run() {
    walk(kernel_.body, {}, {});
    return std::move(report_);
  }

 private:
  struct LoopVar {
    std::string index;
    IntExpr extent;
    bool vectorized = false;  // one access of extent elements, at index 0
    bool iterates = false;    // emitted as a loop of more than one trip
  };

  void walk(const kir::StmtList& list, std::vector<LoopVar> loops,
            std::vector<const kir::Predicate*> guards) {
    for (const auto& stmt : list) {
      if (auto* loop = dynamic_cast<const kir::ForLoop*>(stmt.get())) {
        std::vector<LoopVar> inner = loops;
        if (!isParallelDim(loop->parallel_type)) {
          inner.push_back({loop->index, loop->extent,
                           loop->parallel_type == ParallelType::Vectorize, !loop->trivial});
        }
        if (isThreadDim(loop->parallel_type)) thread_loops_[loop->index] = loop->parallel_type;
        walk(loop->body, inner, guards);
      } else if (auto* ite = dynamic_cast<const kir::IfThenElse*>(stmt.get())) {
        std::vector<const kir::Predicate*> inner = guards;
        inner.push_back(&ite->predicate);
        walk(ite->then_body, loops, inner);
        walk(ite->else_body, loops, guards);  // the else side: not modelled as negated
      } else {
        analyze(*stmt, loops, guards);
      }
    }
  }

  // The values of a lane's symbols at one iteration vector.
  std::map<std::string, int64_t> laneValues(int64_t lane, const std::vector<LoopVar>& loops,
                                            const std::vector<int64_t>& iteration) const {
    std::map<std::string, int64_t> v;
    const int64_t tid[3] = {lane % block_[0], lane / block_[0] % block_[1],
                            lane / (block_[0] * block_[1])};
    for (int d = 0; d < 3; ++d) {
      v[threadIdxSymbol(d)] = tid[d];
      v[blockIdxSymbol(d)] = 0;
      v[blockDimSymbol(d)] = block_[d];
    }
    for (const auto& [index, pt] : thread_loops_) {
      v[index] = tid[pt == ParallelType::TIDx ? 0 : pt == ParallelType::TIDy ? 1 : 2];
    }
    for (size_t i = 0; i < loops.size(); ++i) v[loops[i].index] = iteration[i];
    return v;
  }

  // A term over symbols the analysis does not bind (tensor sizes) is
  // assumed to hold: the lane is taken as in bounds.
  static bool holds(const kir::Predicate& p, const std::map<std::string, int64_t>& v) {
    for (const auto& t : p.terms) {
      int64_t a = 0, b = 0;
      try {
        a = t.lhs.evaluate(v);
        b = t.rhs.evaluate(v);
      } catch (const Error&) {
        continue;
      }
      if (t.kind == kir::Predicate::Term::Kind::LessThan && !(a < b)) return false;
      if (t.kind == kir::Predicate::Term::Kind::Equal && a != b) return false;
      if (t.kind == kir::Predicate::Term::Kind::GreaterEqual && !(a >= b)) return false;
    }
    return true;
  }

  // Iteration vectors: each loop at 0 and 1 (when it has a second trip).
  static std::vector<std::vector<int64_t>> iterations(const std::vector<LoopVar>& loops) {
    std::vector<std::vector<int64_t>> result{{}};
    for (const LoopVar& l : loops) {
      const bool second = !l.vectorized && (!l.extent.constant() || *l.extent.constant() > 1);
      std::vector<std::vector<int64_t>> next;
      for (const auto& r : result) {
        for (int64_t v : second ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}) {
          if (next.size() >= kMaxLoopCombinations) break;
          auto x = r;
          x.push_back(v);
          next.push_back(std::move(x));
        }
      }
      result = std::move(next);
    }
    return result;
  }

  // A shared access of one statement, evaluated per lane.
  // Accesses a statement makes that its fields do not spell out (a block
  // scan's workspace), kept alive for the Shapes pointing at them.
  std::deque<kir::Access> synthetic_accesses_;
  std::deque<kir::Predicate> synthetic_guards_;

  struct Shape {
    const kir::Access* access;
    const kir::Predicate* guard;  // nullptr: unguarded
    std::string kind;
    int64_t bytes_per_lane;
  };

  void analyze(const kir::Stmt& stmt, const std::vector<LoopVar>& loops,
               const std::vector<const kir::Predicate*>& guards) {
    std::vector<Shape> shapes;
    auto shared = [](const kir::Access& a) {
      return a.buffer != nullptr && a.buffer->memory == MemoryType::Shared;
    };
    // A vectorized loop makes each lane's access extent elements wide.
    int64_t vector = 1;
    for (const LoopVar& l : loops) {
      if (l.vectorized) vector *= l.extent.constant().value_or(1);
    }
    auto element = [&](const kir::Access& a) { return dataTypeSize(a.buffer->dtype) * vector; };
    switch (stmt.kind()) {
      case kir::StmtKind::Compute: {
        const auto& c = static_cast<const kir::Compute&>(stmt);
        for (const kir::Operand& op : c.operands) {
          if (op.access && shared(*op.access)) {
            shapes.push_back({&*op.access, &c.predicate, "read", element(*op.access)});
          }
        }
        if (shared(c.out)) shapes.push_back({&c.out, &c.predicate, "write", element(c.out)});
        break;
      }
      case kir::StmtKind::CpAsync: {
        const auto& c = static_cast<const kir::CpAsync&>(stmt);
        if (shared(c.dst)) shapes.push_back({&c.dst, nullptr, "cp.async", c.bytes});
        break;
      }
      case kir::StmtKind::LdMatrix: {
        const auto& l = static_cast<const kir::LdMatrix&>(stmt);
        if (shared(l.src)) shapes.push_back({&l.src, nullptr, "ldmatrix", 16});
        break;
      }
      case kir::StmtKind::BlockScan: {
        // Lane 31 of each warp writes its warp's total; every lane then
        // reads each warp's total in turn (one word: a broadcast).
        const auto& b = static_cast<const kir::BlockScan&>(stmt);
        const IntExpr thread = IntExpr::symbol("threadIdx.x");
        kir::Predicate last_lane;
        last_lane.terms.push_back({thread % 32, kir::Predicate::Term::Kind::Equal, 31});
        const kir::Access* total = &synthetic_accesses_.emplace_back(kir::Access{b.workspace, thread / 32});
        const kir::Access* any_total = &synthetic_accesses_.emplace_back(kir::Access{b.workspace, 0});
        const kir::Predicate* guard = &synthetic_guards_.emplace_back(last_lane);
        const int64_t bytes = dataTypeSize(b.workspace->dtype);
        shapes.push_back({total, guard, "write", bytes});
        shapes.push_back({any_total, nullptr, "read", bytes});
        break;
      }
      default: break;
    }
    const int64_t position = positions_.start.at(&stmt);
    for (const Shape& s : shapes) {
      try {
        report_.accesses.push_back(measure(stmt, s, loops, guards, position));
      } catch (const Error&) {
        report_.unevaluated_positions.push_back(position);
      }
    }
  }

  BankConflictAccess measure(const kir::Stmt& stmt, const Shape& s,
                             const std::vector<LoopVar>& loops,
                             const std::vector<const kir::Predicate*>& guards,
                             int64_t position) const {
    SMELT_CHECK(lanes_ > 0 && s.access->buffer->address.has_value(), "not evaluable");
    const int64_t base = s.access->buffer->address->evaluate({});
    const int64_t elem = dataTypeSize(s.access->buffer->dtype);
    BankConflictAccess result;
    result.stmt = &stmt;
    result.position = position;
    result.buffer = s.access->buffer->name;
    result.kind = s.kind;
    result.bytes_per_lane = s.bytes_per_lane;
    result.in_loop = std::any_of(loops.begin(), loops.end(), [](const LoopVar& l) { return l.iterates; });
    const auto* ld = dynamic_cast<const kir::LdMatrix*>(&stmt);
    bool first = true;
    for (const auto& iteration : iterations(loops)) {
      std::vector<LaneAccess> lane(lanes_);
      for (int64_t l = 0; l < lanes_; ++l) {
        const auto v = laneValues(l, loops, iteration);
        bool active = s.guard == nullptr || holds(*s.guard, v);
        for (const kir::Predicate* g : guards) active = active && holds(*g, v);
        if (active) lane[l] = std::make_pair(base + s.access->index.evaluate(v) * elem, s.bytes_per_lane);
      }
      // Lanes of each phase.
      std::vector<std::vector<int64_t>> phases;
      if (ld != nullptr) {
        for (int64_t j = 0; j < ld->matrices; ++j) {
          std::vector<int64_t> p;
          for (int64_t r = 0; r < 8; ++r) p.push_back(8 * j + r);
          phases.push_back(p);
        }
      } else {
        const int64_t per_phase = s.bytes_per_lane <= 4 ? 32 : s.bytes_per_lane == 8 ? 16 : 8;
        for (int64_t first = 0; first < lanes_; first += per_phase) {
          std::vector<int64_t> p;
          for (int64_t l = first; l < std::min(lanes_, first + per_phase); ++l) p.push_back(l);
          phases.push_back(p);
        }
      }
      int64_t wavefronts = 0, ideal = 0;
      for (const auto& phase : phases) {
        std::vector<std::pair<int64_t, int64_t>> accesses;
        for (int64_t l : phase) {
          if (l < lanes_ && lane[l]) accesses.push_back(*lane[l]);
        }
        if (accesses.empty()) continue;
        const int64_t ways = phaseWays(accesses);
        result.ways = std::max(result.ways, ways);
        wavefronts += ways;
        ideal += 1;
      }
      if (first || wavefronts - ideal > result.wavefronts - result.ideal_wavefronts) {
        first = false;
        result.wavefronts = wavefronts;
        result.ideal_wavefronts = ideal;
      }
    }
    return result;
  }

  const kir::Kernel& kernel_;
  kir::ProgramPositions positions_;
  int64_t block_[3] = {1, 1, 1};
  int64_t lanes_ = 0;
  std::map<std::string, ParallelType> thread_loops_;
  BankConflictReport report_;
};

}  // namespace

int64_t BankConflictReport::conflicted() const {
  return std::count_if(accesses.begin(), accesses.end(),
                       [](const BankConflictAccess& a) { return !a.conflictFree(); });
}

std::string BankConflictReport::toString() const {
  std::ostringstream os;
  os << "bank conflicts: " << conflicted() << " of " << accesses.size()
     << " shared accesses conflict\n";
  for (const BankConflictAccess& a : accesses) {
    os << "  position " << a.position << " " << a.kind << " " << a.buffer << " "
       << a.bytes_per_lane << " B/lane: " << a.ways << "-way (" << a.wavefronts << "/"
       << a.ideal_wavefronts << " wavefronts)" << (a.in_loop ? " in a loop" : "") << "\n";
  }
  for (int64_t p : unevaluated_positions) os << "  position " << p << ": not evaluated\n";
  return os.str();
}

BankConflictReport analyzeBankConflicts(const kir::Kernel& kernel) {
  return Analyzer(kernel).run();
}

}  // namespace smelt
