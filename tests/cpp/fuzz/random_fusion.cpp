#include "fuzz/random_fusion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>

#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"

namespace smelt::fuzz {

int64_t Transcript::rejectedCount() const {
  return std::count_if(lines_.begin(), lines_.end(), [](const std::string& line) {
    return line.find("// rejected") != std::string::npos;
  });
}

std::string Transcript::toString() const {
  std::ostringstream os;
  for (const std::string& line : lines_) os << "  " << line << "\n";
  return os.str();
}

namespace {

constexpr int64_t kBroadcast = -1;

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }
template <typename T>
const T& pickOf(std::mt19937_64& rng, const std::vector<T>& items) {
  return items.at(static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(items.size()) - 1)));
}

std::string joined(const std::vector<int64_t>& values) {
  std::ostringstream os;
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  return os.str();
}

// A tensor of the fusion being built with, per dimension, the id of the axis
// it runs over (kBroadcast for a broadcast axis). Two tensors may meet in a
// binary op when, dimension by dimension, their ids agree or one broadcasts.
struct Live {
  TensorView* tv;
  std::vector<int64_t> axes;
};

bool compatible(const Live& a, const Live& b) {
  if (a.axes.size() != b.axes.size()) return false;
  for (size_t d = 0; d < a.axes.size(); ++d) {
    if (a.axes[d] != b.axes[d] && a.axes[d] != kBroadcast && b.axes[d] != kBroadcast) return false;
  }
  return true;
}

std::vector<int64_t> joinAxes(const Live& a, const Live& b) {
  std::vector<int64_t> axes = a.axes;
  for (size_t d = 0; d < axes.size(); ++d) {
    if (axes[d] == kBroadcast) axes[d] = b.axes[d];
  }
  return axes;
}

class FusionBuilder {
 public:
  FusionBuilder(std::mt19937_64& rng, Transcript& transcript, const FuzzLimits& limits)
      : rng_(rng), log_(transcript), limits_(limits) {}

  RandomFusion build() {
    Fusion* fusion = Fusion::current();
    const int64_t base_rank = pick(rng_, 1, limits_.max_rank);
    for (int64_t d = 0; d < base_rank; ++d) extents_.push_back(pick(rng_, 1, limits_.max_extent));
    symbolic_ = chance(rng_, limits_.symbolic_fusion_chance);
    if (symbolic_) log_.add("// run on sizes {" + joined(extents_) + "}");
    result_.base_extents = extents_;
    const int64_t inputs = pick(rng_, 1, limits_.max_inputs);
    for (int64_t i = 0; i < inputs; ++i) addInput(*fusion, base_rank);
    const int64_t ops = pick(rng_, 1, limits_.max_ops);
    for (int64_t i = 0; i < ops; ++i) addOp(&FusionBuilder::addRandomOp);
    // Last, so that its reshape (or wide result) is the output the fusion computes.
    if (chance(rng_, limits_.normalize_flatten_chance)) {
      addOp(&FusionBuilder::addNormalizeAndFlatten);
    } else if (chance(rng_, limits_.reduce_broadcast_widen_chance)) {
      addOp(&FusionBuilder::addReduceBroadcastAndWiden);
    }
    // The newest tensor is an output, and sometimes another one is too.
    std::vector<TensorView*> outputs = {live_.back().tv};
    if (live_.size() > 2 && chance(rng_, 0.4)) {
      TensorView* other = live_[static_cast<size_t>(pick(rng_, 0, static_cast<int64_t>(live_.size()) - 2))].tv;
      if (!other->isFusionInput()) outputs.push_back(other);
    }
    for (TensorView* out : outputs) {
      fusion->addOutput(out);
      log_.add("fusion.addOutput(" + out->name() + ");");
    }
    return result_;
  }

 private:
  void addInput(Fusion& fusion, int64_t base_rank) {
    const int64_t rank = pick(rng_, 1, base_rank);
    Live in;
    std::vector<int64_t> shape;
    for (int64_t d = base_rank - rank; d < base_rank; ++d) {
      in.axes.push_back(d);
      shape.push_back(extents_[d]);
    }
    const DataType dtype = chance(rng_, 0.85) ? DataType::Float : pickOf(rng_, std::vector<DataType>{
        DataType::Double, DataType::Half, DataType::Int, DataType::Bool});
    result_.half_precision = result_.half_precision || dtype == DataType::Half;
    const bool symbolic = symbolic_ && chance(rng_, 0.8);
    // Now and then one dimension of a concrete input is a broadcast of
    // extent 1 (as define_tensor and torch.compile's static sizes make a
    // size-1 dimension), meeting the other inputs' extents along its axis: a
    // reduction over it, broadcast back, then meets a wider extent (the
    // torch fuzzer's reduce-size1-then-broadcast: x1 [1, 4] / x1.sum(0) + x0
    // [3, 4]). Inputs otherwise all view the base shape, so a size-1
    // extent there was size 1 in every tensor.
    if (!symbolic && chance(rng_, limits_.broadcast_input_chance)) {
      const auto d = static_cast<size_t>(pick(rng_, 0, rank - 1));
      in.axes[d] = kBroadcast;
      shape[d] = 1;
      std::vector<IterDomain*> ids;
      for (size_t k = 0; k < shape.size(); ++k) {
        ids.push_back(fusion.newIterDomain(shape[k], k == d ? IterType::Broadcast : IterType::Iteration));
      }
      in.tv = fusion.newTensor(dtype, std::move(ids), MemoryType::Global);
      log_.add(in.tv->name() + " = makeConcreteTensor({" + joined(shape) + "}, " + toString(dtype) +
               ");  // dimension " + std::to_string(d) + " a broadcast");
    } else if (symbolic) {
      in.tv = makeContigTensor(rank, dtype);
      log_.add(in.tv->name() + " = makeContigTensor(" + std::to_string(rank) + ", " + toString(dtype) +
               ");");
    } else {
      in.tv = makeConcreteTensor(shape, dtype);
      log_.add(in.tv->name() + " = makeConcreteTensor({" + joined(shape) + "}, " + toString(dtype) + ");");
    }
    fusion.addInput(in.tv);
    result_.input_shapes.push_back(shape);
    result_.input_base_axes.push_back(in.axes);
    result_.symbolic_inputs.push_back(symbolic);
    noteExtents(in);
    live_.push_back(in);
  }

  // The extent of each axis id, the first time a tensor has it (a symbolic
  // one where a symbolic input brought it): what expand and full give it.
  void noteExtents(const Live& live) {
    const std::vector<IterDomain*> axes = live.tv->logicalNoReductions();
    for (size_t d = 0; d < live.axes.size(); ++d) {
      if (live.axes[d] != kBroadcast) extent_of_.emplace(live.axes[d], axes[d]->loopExtent());
    }
  }

  IntExpr extentOf(int64_t axis_id) const {
    auto it = extent_of_.find(axis_id);
    return it != extent_of_.end() ? it->second : IntExpr(extents_.at(static_cast<size_t>(axis_id)));
  }

  // After a layout op: an axis the op made a plain broadcast (an extent-1
  // entry of a reshape) meets anything.
  static Live withBroadcastsOf(TensorView* tv, std::vector<int64_t> axes) {
    const std::vector<IterDomain*> ids = tv->logicalNoReductions();
    for (size_t d = 0; d < axes.size(); ++d) {
      if (ids[d]->isBroadcast() && !ids[d]->hasExpandedExtent()) axes[d] = kBroadcast;
    }
    return Live{tv, axes};
  }

  void record(const std::string& call, const Live& result) {
    log_.add(result.tv->name() + " = " + call + ";");
    noteExtents(result);
    live_.push_back(result);
  }

  Live anyLive() { return pickOf(rng_, live_); }

  bool isIntegralOrBool(const TensorView* tv) const { return !isFloatingType(tv->dtype()); }

  // An op the op layer rejects (smelt::Error) is logged and skipped.
  void addOp(void (FusionBuilder::*op)()) {
    try {
      (this->*op)();
    } catch (const Error& e) {
      std::string why = e.what();
      log_.add("// op rejected: " + why.substr(0, why.find('\n')));
    }
  }

  void addRandomOp() {
    switch (pick(rng_, 0, 14)) {
      case 0: case 1: return addUnary();
      case 2: case 3: return addBinary();
      case 4: return addCompareOrWhere();
      case 5: return addCast();
      case 6: return addBroadcast();
      case 7: return addReduction();
      case 8: return addPad();
      case 9: return addExpand();
      case 10: return addFull();
      case 11: return addPermute();
      case 12: return addSqueeze();
      case 13: return addReshape();
      default: return addSet();
    }
  }

  void addUnary() {
    using Op = TensorView* (*)(TensorView*);
    struct Named { const char* name; Op op; };
    static const std::vector<Named> ops = {
        {"neg", neg}, {"exp", exp}, {"tanh", tanh}, {"abs", abs}, {"relu", relu},
        {"sigmoid", sigmoid}, {"sin", sin}, {"cos", cos}, {"erf", erf}, {"floor", floor},
        {"ceil", ceil}, {"sqrt", sqrt}, {"log1p", log1p}, {"logicalNot", logicalNot}};
    const Live in = anyLive();
    const Named& op = pickOf(rng_, ops);
    // torch rejects neg and rounding of bool; smelt must too (checked by the builder).
    record(std::string(op.name) + "(" + in.tv->name() + ")", Live{op.op(in.tv), in.axes});
  }

  // A tensor that may meet `a` in a binary op, broadcast to its rank if it
  // has fewer dimensions (the leading ones new); nullptr if there is none.
  const Live* partnerOf(const Live& a) {
    std::vector<const Live*> candidates;
    for (const Live& b : live_) {
      if (compatible(a, b)) candidates.push_back(&b);
    }
    if (candidates.empty()) return nullptr;
    return pickOf(rng_, candidates);
  }

  void addBinary() {
    using Op = TensorView* (*)(Val*, Val*);
    struct Named { const char* name; Op op; bool floating_only; };
    static const std::vector<Named> ops = {
        {"add", add, false}, {"sub", sub, false}, {"mul", mul, false}, {"div", div, false},
        {"maximum", maximum, false}, {"minimum", minimum, false}, {"pow", pow, true},
        {"remainder", remainder, true}, {"fmod", fmod, true}, {"logicalAnd", logicalAnd, false},
        {"logicalOr", logicalOr, false}};
    const Live a = anyLive();
    const Named& op = pickOf(rng_, ops);
    if (a.tv->dtype() == DataType::Bool && (std::string(op.name) == "sub" || op.floating_only)) return;
    const bool with_scalar = chance(rng_, 0.3);
    const Live* b = with_scalar ? nullptr : partnerOf(a);
    if (b != nullptr) {
      if (b->tv->dtype() == DataType::Bool && (std::string(op.name) == "sub" || op.floating_only)) return;
      // Integer pow/remainder/fmod by tensors can divide by zero or take
      // negative powers, which ATen rejects: only floating operands.
      if (op.floating_only && (isIntegralOrBool(a.tv) || isIntegralOrBool(b->tv))) return;
      if (std::string(op.name) == "div" && (isIntegralOrBool(b->tv))) return;
      Live result{op.op(a.tv, b->tv), joinAxes(a, *b)};
      record(std::string(op.name) + "(" + a.tv->name() + ", " + b->tv->name() + ")", result);
      return;
    }
    if (op.floating_only && isIntegralOrBool(a.tv)) return;
    const double scalar = pickOf(rng_, std::vector<double>{2.0, 0.5, -1.5, 3.0});
    Val* s = constant(scalar, DataType::Double);
    Live result{op.op(a.tv, s), a.axes};
    std::ostringstream call;
    call << op.name << "(" << a.tv->name() << ", " << scalar << ")";
    record(call.str(), result);
  }

  void addCompareOrWhere() {
    using Op = TensorView* (*)(Val*, Val*);
    struct Named { const char* name; Op op; };
    static const std::vector<Named> ops = {{"eq", eq}, {"ne", ne}, {"lt", lt},
                                           {"le", le}, {"gt", gt}, {"ge", ge}};
    const Live a = anyLive();
    const Live* b = partnerOf(a);
    const Named& op = pickOf(rng_, ops);
    Live cond{op.op(a.tv, b->tv), joinAxes(a, *b)};
    record(std::string(op.name) + "(" + a.tv->name() + ", " + b->tv->name() + ")", cond);
    if (!chance(rng_, 0.6)) return;
    const Live* if_false = partnerOf(cond);
    Live result{where(cond.tv, a.tv, if_false->tv), joinAxes(Live{cond.tv, joinAxes(cond, a)}, *if_false)};
    record("where(" + cond.tv->name() + ", " + a.tv->name() + ", " + if_false->tv->name() + ")", result);
  }

  void addCast() {
    const Live in = anyLive();
    // Float -> integer of a non-finite or out-of-range value is undefined
    // (CUDA and ATen differ): integers only come from integers and bools.
    std::vector<DataType> targets = {DataType::Float, DataType::Double, DataType::Half, DataType::Bool};
    if (!isFloatingType(in.tv->dtype())) targets.push_back(DataType::Int32);
    const DataType dtype = pickOf(rng_, targets);
    result_.half_precision = result_.half_precision || dtype == DataType::Half;
    record("castOp(" + toString(dtype) + ", " + in.tv->name() + ")", Live{castOp(dtype, in.tv), in.axes});
  }

  void addBroadcast() {
    const Live in = anyLive();
    if (static_cast<int64_t>(in.axes.size()) >= limits_.max_rank) return;
    const size_t position = static_cast<size_t>(pick(rng_, 0, static_cast<int64_t>(in.axes.size())));
    std::vector<bool> is_new(in.axes.size() + 1, false);
    is_new[position] = true;
    std::vector<int64_t> axes = in.axes;
    axes.insert(axes.begin() + static_cast<std::ptrdiff_t>(position), kBroadcast);
    if (chance(rng_, 0.3)) {
      const auto dim = static_cast<int64_t>(position);
      record("unsqueeze(" + in.tv->name() + ", " + std::to_string(dim) + ")",
             Live{unsqueeze(in.tv, dim), axes});
      return;
    }
    std::ostringstream call;
    call << "broadcast(" << in.tv->name() << ", new axis " << position << ")";
    record(call.str(), Live{broadcast(in.tv, is_new), axes});
  }

  // A broadcast dimension given the extent of an axis seen so far, so the
  // result meets tensors over that axis.
  void addExpand() {
    const Live in = anyLive();
    std::vector<size_t> broadcasts;
    for (size_t d = 0; d < in.axes.size(); ++d) {
      if (in.axes[d] == kBroadcast) broadcasts.push_back(d);
    }
    if (broadcasts.empty()) return;
    const size_t d = pickOf(rng_, broadcasts);
    std::vector<int64_t> ids;
    for (const auto& [id, extent] : extent_of_) ids.push_back(id);
    if (ids.empty()) return;  // every tensor so far broadcasts (a [1] input)
    const int64_t id = pickOf(rng_, ids);
    std::vector<IntExpr> shape(in.axes.size(), IntExpr(-1));
    shape[d] = extentOf(id);
    std::vector<int64_t> axes = in.axes;
    axes[d] = id;
    std::ostringstream call;
    call << "expand(" << in.tv->name() << ", dimension " << d << " to " << shape[d] << ")";
    record(call.str(), Live{expand(in.tv, shape), axes});
  }

  // A constant tensor over trailing axes of the base shape.
  void addFull() {
    const auto base_rank = static_cast<int64_t>(extents_.size());
    const int64_t rank = pick(rng_, 1, base_rank);
    Live result;
    std::vector<IntExpr> shape;
    for (int64_t d = base_rank - rank; d < base_rank; ++d) {
      result.axes.push_back(d);
      shape.push_back(extentOf(d));
    }
    const DataType dtype = pickOf(rng_, std::vector<DataType>{DataType::Float, DataType::Float, DataType::Half,
                                                              DataType::Int});
    result_.half_precision = result_.half_precision || dtype == DataType::Half;
    const double value = pickOf(rng_, std::vector<double>{0.5, -2.0, 3.0});
    result.tv = full(shape, value, dtype);
    std::ostringstream call;
    call << "full({";
    for (size_t d = 0; d < shape.size(); ++d) call << (d ? ", " : "") << shape[d];
    call << "}, " << value << ", " << toString(dtype) << ")";
    record(call.str(), result);
  }

  void addPermute() {
    const Live in = anyLive();
    if (in.axes.size() < 2) return;
    const auto rank = static_cast<int64_t>(in.axes.size());
    if (chance(rng_, 0.4)) {
      const int64_t a = pick(rng_, 0, rank - 1), b = pick(rng_, 0, rank - 1);
      std::vector<int64_t> axes = in.axes;
      std::swap(axes[static_cast<size_t>(a)], axes[static_cast<size_t>(b)]);
      record("transpose(" + in.tv->name() + ", " + std::to_string(a) + ", " + std::to_string(b) + ")",
             Live{transpose(in.tv, a, b), axes});
      return;
    }
    std::vector<int64_t> dims(in.axes.size());
    std::iota(dims.begin(), dims.end(), 0);
    std::shuffle(dims.begin(), dims.end(), rng_);
    std::vector<int64_t> axes;
    for (int64_t d : dims) axes.push_back(in.axes[static_cast<size_t>(d)]);
    record("permute(" + in.tv->name() + ", {" + joined(dims) + "})", Live{permute(in.tv, dims), axes});
  }

  // Squeezes one dimension: a broadcast or extent-1 one is dropped, another
  // one of constant extent is kept (as torch does), a symbolic one is an error.
  void addSqueeze() {
    const Live in = anyLive();
    if (in.axes.empty()) return;
    const int64_t d = pick(rng_, 0, static_cast<int64_t>(in.axes.size()) - 1);
    TensorView* out = squeeze(in.tv, {d});
    std::vector<int64_t> axes = in.axes;
    if (out->logicalNoReductions().size() < in.axes.size()) axes.erase(axes.begin() + d);
    record("squeeze(" + in.tv->name() + ", {" + std::to_string(d) + "})", Live{out, axes});
  }

  // flatten, or a reshape that merges two neighbouring dimensions, splits a
  // constant one into two factors or inserts an extent-1 entry; the changed
  // dimensions meet only their own descendants.
  void addReshape() {
    const Live in = anyLive();
    if (in.axes.empty()) return;
    const int64_t d = pick(rng_, 0, static_cast<int64_t>(in.axes.size()) - 1);
    reshapeAt(in, d, pick(rng_, 0, 3));
  }

  // The reshape of kind `kind` (0: flatten and 1: reshape merging dimension
  // d with a neighbour, 2: splitting d, 3: an extent-1 entry before d).
  void reshapeAt(const Live& in, int64_t d, int64_t kind) {
    const std::vector<IterDomain*> ids = in.tv->logicalNoReductions();
    std::vector<IntExpr> shape;
    for (const IterDomain* id : ids) {
      shape.push_back(id->isBroadcast() && !id->hasExpandedExtent() ? IntExpr(1) : id->loopExtent());
    }
    std::vector<int64_t> axes = in.axes;
    const auto rank = static_cast<int64_t>(axes.size());
    const auto at = [](int64_t i) { return static_cast<std::ptrdiff_t>(i); };
    // Dimensions d and d + 1 (d and d - 1 for the last) as one new axis.
    const int64_t first = std::min(d, rank - 2);
    const auto mergeAxes = [&] {
      axes.erase(axes.begin() + at(first), axes.begin() + at(first) + 2);
      axes.insert(axes.begin() + at(first), next_axis_id_++);
    };
    std::ostringstream call;
    TensorView* out = nullptr;
    switch (kind) {
      case 0:
        if (rank < 2) return;
        call << "flatten(" << in.tv->name() << ", " << first << ", " << first + 1 << ")";
        out = flatten(in.tv, first, first + 1);
        mergeAxes();
        break;
      case 1: {
        if (rank < 2) return;
        const auto merged = static_cast<size_t>(first);
        shape[merged] = shape[merged] * shape[merged + 1];
        shape.erase(shape.begin() + at(first) + 1);
        mergeAxes();
        break;
      }
      case 2: {
        const std::optional<int64_t> extent = shape[static_cast<size_t>(d)].constant();
        if (!extent || *extent < 4 || *extent % 2 != 0) return;
        shape[static_cast<size_t>(d)] = *extent / 2;
        shape.insert(shape.begin() + at(d), 2);
        axes[static_cast<size_t>(d)] = next_axis_id_++;
        axes.insert(axes.begin() + at(d), next_axis_id_++);
        break;
      }
      default:
        if (rank >= limits_.max_rank) return;
        shape.insert(shape.begin() + at(d), 1);
        axes.insert(axes.begin() + at(d), kBroadcast);
    }
    if (out == nullptr) {
      call << "reshape(" << in.tv->name() << ", {";
      for (size_t k = 0; k < shape.size(); ++k) call << (k ? ", " : "") << shape[k];
      call << "})";
      out = reshape(in.tv, shape);
    }
    record(call.str(), withBroadcastsOf(out, axes));
  }

  // A normalization whose dimension a reshape then merges with a
  // neighbour, as softmax(x, -1).flatten() or layer_norm(x).view(-1) do: a
  // sum or max over one dimension, broadcast back and combined with its
  // input, then a flatten or reshape of that dimension and the next. Run
  // through FusionExecutorCache, the reduction and the reshape land in
  // different segments (issue 17: the reshape's merge, replayed onto the
  // broadcast, gave wrong values).
  void addNormalizeAndFlatten() {
    std::vector<Live> candidates;
    for (const Live& live : live_) {
      if (live.axes.size() >= 2 && isFloatingType(live.tv->dtype())) candidates.push_back(live);
    }
    if (candidates.empty()) return;
    const Live in = pickOf(rng_, candidates);
    const auto rank = static_cast<int64_t>(in.axes.size());
    const int64_t d = pick(rng_, 0, rank - 1);
    const bool is_sum = chance(rng_, 0.5);
    std::vector<int64_t> kept = in.axes;
    kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(d));
    const Live reduced{is_sum ? sum(in.tv, {d}) : max(in.tv, {d}), kept};
    record(std::string(is_sum ? "sum" : "max") + "(" + in.tv->name() + ", {" + std::to_string(d) + "})",
           reduced);
    std::vector<bool> is_new(in.axes.size(), false);
    is_new[static_cast<size_t>(d)] = true;
    std::vector<int64_t> back_axes = in.axes;
    back_axes[static_cast<size_t>(d)] = kBroadcast;
    const Live back{broadcast(reduced.tv, is_new), back_axes};
    record("broadcast(" + reduced.tv->name() + ", back to " + in.tv->name() + ")", back);
    // Division would amplify the summation order's rounding: sub and mul only.
    const bool subtract = chance(rng_, 0.5);
    const Live combined{subtract ? sub(in.tv, back.tv) : mul(in.tv, back.tv), in.axes};
    record(std::string(subtract ? "sub" : "mul") + "(" + in.tv->name() + ", " + back.tv->name() + ")",
           combined);
    reshapeAt(combined, d, pick(rng_, 0, 1));
  }

  // A reduction over a broadcast dimension (extent 1), broadcast back,
  // combined with its input and then with a tensor wider along that
  // dimension: x1 * x1.sum(0, keepdim=True) + x0 for x1 [1, 4] and x0
  // [3, 4] (the torch fuzzer's reduce-size1-then-broadcast: the reduced
  // axis, of extent 1, is bound to a thread dimension that the wider tensor
  // makes longer; the block reduction left its result on thread 0 only).
  void addReduceBroadcastAndWiden() {
    struct Choice {
      Live in;
      size_t d;
      Live wide;
    };
    std::vector<Choice> choices;
    for (const Live& live : live_) {
      if (!isFloatingType(live.tv->dtype())) continue;
      for (size_t d = 0; d < live.axes.size(); ++d) {
        if (live.axes[d] != kBroadcast) continue;
        for (const Live& other : live_) {
          if (other.axes.size() == live.axes.size() && other.axes[d] != kBroadcast &&
              compatible(live, other) && isFloatingType(other.tv->dtype())) {
            choices.push_back({live, d, other});
          }
        }
      }
    }
    if (choices.empty()) return;
    const Choice choice = pickOf(rng_, choices);
    const auto d = static_cast<int64_t>(choice.d);
    const bool is_sum = chance(rng_, 0.5);
    std::vector<int64_t> kept = choice.in.axes;
    kept.erase(kept.begin() + d);
    const Live reduced{is_sum ? sum(choice.in.tv, {d}) : max(choice.in.tv, {d}), kept};
    record(std::string(is_sum ? "sum" : "max") + "(" + choice.in.tv->name() + ", {" + std::to_string(d) +
               "})",
           reduced);
    std::vector<bool> is_new(choice.in.axes.size(), false);
    is_new[choice.d] = true;
    const Live back{broadcast(reduced.tv, is_new), choice.in.axes};
    record("broadcast(" + reduced.tv->name() + ", back to " + choice.in.tv->name() + ")", back);
    const Live combined{mul(choice.in.tv, back.tv), choice.in.axes};
    record("mul(" + choice.in.tv->name() + ", " + back.tv->name() + ")", combined);
    const Live wide{add(combined.tv, choice.wide.tv), joinAxes(combined, choice.wide)};
    record("add(" + combined.tv->name() + ", " + choice.wide.tv->name() + ")", wide);
  }

  void addReduction() {
    const Live in = anyLive();
    if (in.tv->dtype() == DataType::Bool || in.axes.empty()) return;
    std::vector<int64_t> reduced, kept;
    for (size_t d = 0; d < in.axes.size(); ++d) {
      (chance(rng_, 0.5) ? reduced : kept).push_back(static_cast<int64_t>(d));
    }
    if (reduced.empty()) reduced.push_back(pick(rng_, 0, static_cast<int64_t>(in.axes.size()) - 1));
    const bool is_sum = chance(rng_, 0.5);
    Live result{is_sum ? sum(in.tv, reduced) : max(in.tv, reduced), {}};
    for (size_t d = 0; d < in.axes.size(); ++d) {
      if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) == reduced.end()) {
        result.axes.push_back(in.axes[d]);
      }
    }
    const std::string call = std::string(is_sum ? "sum" : "max") + "(" + in.tv->name() + ", {" + joined(reduced) + "})";
    if (result.axes.empty()) {  // a full reduction: nothing to broadcast back
      record(call, result);
      return;
    }
    record(call, result);
    // Usually broadcast back so the result meets its input again (softmax-like).
    if (chance(rng_, 0.7)) {
      std::vector<bool> is_new(in.axes.size(), false);
      std::vector<int64_t> axes = in.axes;
      for (int64_t d : reduced) {
        is_new[static_cast<size_t>(d)] = true;
        axes[static_cast<size_t>(d)] = kBroadcast;
      }
      TensorView* reduced_tv = live_.back().tv;
      record("broadcast(" + reduced_tv->name() + ", back to " + in.tv->name() + ")",
             Live{broadcast(reduced_tv, is_new), axes});
    }
  }

  void addPad() {
    const Live in = anyLive();
    if (in.axes.empty() || in.axes.back() == kBroadcast) return;
    const int64_t before = pick(rng_, 0, 2), after = pick(rng_, 0, 2);
    std::vector<int64_t> axes = in.axes;
    axes.back() = next_axis_id_++;  // a new extent: meets only its own descendants
    record("pad(" + in.tv->name() + ", {" + std::to_string(before) + ", " + std::to_string(after) + "})",
           Live{pad(in.tv, {before, after}, 1.0), axes});
  }

  void addSet() {
    const Live in = anyLive();
    record("set(" + in.tv->name() + ")", Live{set(in.tv), in.axes});
  }

  std::mt19937_64& rng_;
  Transcript& log_;
  FuzzLimits limits_;
  std::vector<int64_t> extents_;  // the base shape's sizes to run on
  bool symbolic_ = false;
  std::map<int64_t, IntExpr> extent_of_;
  std::vector<Live> live_;
  int64_t next_axis_id_ = 100;
  RandomFusion result_;
};

class Scheduler {
 public:
  Scheduler(Fusion& fusion, std::mt19937_64& rng, Transcript& transcript)
      : fusion_(fusion), rng_(rng), log_(transcript) {}

  void run(int64_t steps) {
    for (int64_t i = 0; i < steps; ++i) step();
  }

 private:
  // Logs the call, then runs it; a smelt::Error marks the line rejected.
  void apply(const std::string& call, const std::function<void()>& action) {
    log_.add(call + ";");
    try {
      action();
    } catch (const Error& e) {
      std::string why = e.what();
      log_.markRejected(why.substr(0, why.find('\n')));
    }
  }

  // Puts the name of a tensor a primitive created on the line that created it.
  void named(const TensorView* created) { log_.prefixLast(created->name() + " = "); }

  TensorView* anyTensor(bool include_inputs) {
    std::vector<TensorView*> tensors;
    for (TensorView* tv : fusion_.allTensors()) {
      if (include_inputs || !tv->isFusionInput()) tensors.push_back(tv);
    }
    return tensors.empty() ? nullptr : pickOf(rng_, tensors);
  }

  int64_t anyAxis(const TensorView* tv) { return pick(rng_, 0, std::max<int64_t>(tv->nDims() - 1, 0)); }

  void step() {
    TensorView* tv = anyTensor(/*include_inputs=*/false);
    if (tv == nullptr) return;
    const std::string t = tv->name();
    switch (pick(rng_, 0, 13)) {
      case 0: case 1: {
        const int64_t axis = anyAxis(tv);
        const int64_t factor = pickOf(rng_, std::vector<int64_t>{1, 2, 3, 4, 8});
        const bool inner = chance(rng_, 0.7);
        return apply(t + "->split(" + std::to_string(axis) + ", " + std::to_string(factor) +
                         (inner ? "" : ", false") + ")",
                     [=] { tv->split(axis, factor, inner); });
      }
      case 2: {
        const int64_t axis = anyAxis(tv);
        return apply(t + "->merge(" + std::to_string(axis) + ")", [=] { tv->merge(axis); });
      }
      case 3: {
        std::vector<int64_t> order(static_cast<size_t>(tv->nDims()));
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng_);
        std::unordered_map<int64_t, int64_t> old_to_new;
        for (size_t i = 0; i < order.size(); ++i) old_to_new[static_cast<int64_t>(i)] = order[i];
        return apply(t + "->reorder({" + joined(order) + "})", [=] { tv->reorder(old_to_new); });
      }
      case 4: case 5: {
        const int64_t axis = anyAxis(tv);
        const ParallelType pt = pickOf(rng_, std::vector<ParallelType>{
            ParallelType::TIDx, ParallelType::TIDx, ParallelType::TIDy, ParallelType::TIDz,
            ParallelType::BIDx, ParallelType::BIDy, ParallelType::Unroll, ParallelType::Vectorize,
            ParallelType::Serial});
        return apply(t + "->axis(" + std::to_string(axis) + ")->parallelize(" + toString(pt) + ")",
                     [=] { tv->axis(axis)->parallelize(pt); });
      }
      case 6: {
        const std::vector<TensorView*> consumers = fusion_.consumersOf(tv);
        if (consumers.empty()) return;
        TensorView* consumer = pickOf(rng_, consumers);
        const int64_t pos = pick(rng_, -1, consumer->nDims());
        return apply(t + "->computeAt(" + consumer->name() + ", " + std::to_string(pos) + ")",
                     [=] { tv->computeAt(consumer, pos); });
      }
      case 7: {
        if (chance(rng_, 0.5)) return apply(t + "->inlineMost()", [=] { tv->inlineMost(); });
        const int64_t pos = pick(rng_, 0, tv->nDims());
        return apply(t + "->inlineAt(" + std::to_string(pos) + ")", [=] { tv->inlineAt(pos); });
      }
      case 8: {
        if (chance(rng_, 0.5)) {
          TensorView* in = anyTensor(/*include_inputs=*/true);
          return apply(in->name() + "->cacheAfter()", [=] { named(in->cacheAfter()); });
        }
        return apply(t + "->cacheBefore()", [=] { named(tv->cacheBefore()); });
      }
      case 9: case 10: {
        const MemoryType mt = chance(rng_, 0.7) ? MemoryType::Shared : MemoryType::Local;
        return apply(t + "->setMemoryType(" + toString(mt) + ")", [=] { tv->setMemoryType(mt); });
      }
      case 11: {
        if (chance(rng_, 0.5)) return apply("inlineMost(fusion)", [&] { inlineMost(&fusion_); });
        return apply(t + "->promoteReuse()", [=] { tv->promoteReuse(); });
      }
      case 12: {
        const int64_t stages = pick(rng_, 2, 4);
        return apply(t + "->circularBuffer(" + std::to_string(stages) + ")",
                     [=] { tv->circularBuffer(stages); });
      }
      default: return cachedLoad();
    }
  }

  // A fusion input cached into Shared or Local memory, computed inside a
  // loop of its consumer and circular-buffered across that loop.
  void cachedLoad() {
    std::vector<TensorView*> inputs;
    for (TensorView* tv : fusion_.allTensors()) {
      if (tv->isFusionInput() && !fusion_.consumersOf(tv).empty()) inputs.push_back(tv);
    }
    if (inputs.empty()) return;
    TensorView* in = pickOf(rng_, inputs);
    TensorView* cache = nullptr;
    apply(in->name() + "->cacheAfter()", [&] { named(cache = in->cacheAfter()); });
    if (cache == nullptr) return;
    const std::string c = cache->name();
    const MemoryType mt = chance(rng_, 0.7) ? MemoryType::Shared : MemoryType::Local;
    apply(c + "->setMemoryType(" + toString(mt) + ")", [=] { cache->setMemoryType(mt); });
    TensorView* consumer = pickOf(rng_, fusion_.consumersOf(cache));
    const int64_t pos = pick(rng_, 1, std::max<int64_t>(consumer->nDims(), 1));
    apply(c + "->computeAt(" + consumer->name() + ", " + std::to_string(pos) + ")",
          [=] { cache->computeAt(consumer, pos); });
    const int64_t stages = pick(rng_, 2, 3);
    apply(c + "->circularBuffer(" + std::to_string(stages) + ")", [=] { cache->circularBuffer(stages); });
  }

  Fusion& fusion_;
  std::mt19937_64& rng_;
  Transcript& log_;
};

}  // namespace

RandomFusion buildRandomFusion(std::mt19937_64& rng, Transcript& transcript, const FuzzLimits& limits) {
  return FusionBuilder(rng, transcript, limits).build();
}

std::optional<std::vector<std::vector<int64_t>>> otherInputShapes(const RandomFusion& fusion,
                                                                  std::mt19937_64& rng,
                                                                  const FuzzLimits& limits) {
  std::vector<int64_t> extents = fusion.base_extents;
  std::vector<bool> fixed(extents.size(), false);
  for (size_t i = 0; i < fusion.input_base_axes.size(); ++i) {
    if (fusion.symbolic_inputs[i]) continue;
    for (int64_t axis : fusion.input_base_axes[i]) {
      if (axis != kBroadcast) fixed[static_cast<size_t>(axis)] = true;
    }
  }
  for (size_t d = 0; d < extents.size(); ++d) {
    if (!fixed[d]) extents[d] = pick(rng, 1, 2 * limits.max_extent);
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const std::vector<int64_t>& axes : fusion.input_base_axes) {
    std::vector<int64_t> shape;
    for (int64_t axis : axes) shape.push_back(axis == kBroadcast ? 1 : extents[static_cast<size_t>(axis)]);
    shapes.push_back(shape);
  }
  if (shapes == fusion.input_shapes) return std::nullopt;
  return shapes;
}

void scheduleRandomly(Fusion& fusion, std::mt19937_64& rng, Transcript& transcript,
                      const FuzzLimits& limits) {
  Scheduler(fusion, rng, transcript).run(pick(rng, 0, limits.max_schedule_steps));
}

}  // namespace smelt::fuzz
