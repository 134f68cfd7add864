#include "fusion/ir.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "fusion/error.h"
#include "fusion/fusion.h"

namespace smelt {

// ---- Val ----

bool Val::isFusionInput() const { return fusion_->isInput(this); }
bool Val::isFusionOutput() const { return fusion_->isOutput(this); }
TensorView* Val::asTensor() {
  return kind_ == Kind::Tensor ? static_cast<TensorView*>(this) : nullptr;
}
const TensorView* Val::asTensor() const {
  return kind_ == Kind::Tensor ? static_cast<const TensorView*>(this) : nullptr;
}

// ---- Scalar ----

Scalar::Scalar(Fusion* fusion, DataType dtype, double value)
    : Val(fusion, Kind::Scalar, dtype), is_constant_(true), value_(value) {}

Scalar::Scalar(Fusion* fusion, DataType dtype, std::string symbol)
    : Val(fusion, Kind::Scalar, dtype), is_constant_(false), symbol_(std::move(symbol)) {}

double Scalar::value() const {
  SMELT_CHECK(is_constant_, "scalar ", symbol_, " is symbolic and has no constant value");
  return value_;
}

std::string Scalar::toString() const {
  if (!is_constant_) return symbol_;
  if (dtype() == DataType::Bool) return value_ != 0 ? "true" : "false";
  if (!isFloatingType(dtype())) return std::to_string(static_cast<int64_t>(value_));
  if (std::isinf(value_)) return value_ > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os.precision(9);
  os << value_;
  std::string text = os.str();
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// ---- IterDomain ----

IterDomain::IterDomain(int64_t id, IntExpr extent, IterType iter_type)
    : id_(id), extent_(std::move(extent)), iter_type_(iter_type) {}

void IterDomain::setExpandedExtent(IntExpr extent) {
  SMELT_INTERNAL_CHECK(isBroadcast(), "only a broadcast axis can be expanded");
  has_expanded_extent_ = true;
  expanded_extent_ = std::move(extent);
}

IntExpr IterDomain::loopExtent() const {
  return has_expanded_extent_ ? expanded_extent_ : extent_;
}

IterDomain* IterDomain::parallelize(ParallelType pt) {
  SMELT_INTERNAL_CHECK(owner_ != nullptr);
  const auto& loop = owner_->loopDomain();
  auto pos = std::find(loop.begin(), loop.end(), this);
  SMELT_CHECK(pos != loop.end(), "parallelize(", pt, "): axis ", toString(), " of tensor ",
              owner_->name(), " is not in its loop domain (it was split or merged away)");
  if (pt != ParallelType::Serial && pt != ParallelType::Unroll) {
    for (size_t i = 0; i < loop.size(); ++i) {
      SMELT_CHECK(loop[i] == this || loop[i]->parallel_type_ != pt, "parallelize(", pt,
                  "): tensor ", owner_->name(), " already binds axis ", i, " (",
                  loop[i]->toString(), ") to ", pt, "; axis ",
                  std::distance(loop.begin(), pos), " cannot take it too");
    }
  }
  if (pt == ParallelType::Vectorize) {
    SMELT_CHECK(extent_.isConstant(), "parallelize(V): tensor ", owner_->name(), " axis ",
                std::distance(loop.begin(), pos), " has symbolic extent ", extent_,
                "; a vectorized axis needs a constant extent");
  }
  parallel_type_ = pt;
  return this;
}

std::string IterDomain::toString() const {
  std::ostringstream os;
  os << smelt::toString(iter_type_);
  if (parallel_type_ != ParallelType::Serial) os << smelt::toString(parallel_type_);
  os << id_ << "{" << extent_;
  if (has_expanded_extent_) os << " ex " << expanded_extent_;
  os << "}";
  return os.str();
}

// ---- Expr ----

std::string toString(UnaryOpType t) {
  switch (t) {
    case UnaryOpType::Neg: return "neg";
    case UnaryOpType::Exp: return "exp";
    case UnaryOpType::Tanh: return "tanh";
    case UnaryOpType::Abs: return "abs";
    case UnaryOpType::Relu: return "relu";
    case UnaryOpType::Cast: return "cast";
    case UnaryOpType::Sqrt: return "sqrt";
    case UnaryOpType::Rsqrt: return "rsqrt";
    case UnaryOpType::Log: return "log";
    case UnaryOpType::Log2: return "log2";
    case UnaryOpType::Log1p: return "log1p";
    case UnaryOpType::Exp2: return "exp2";
    case UnaryOpType::Expm1: return "expm1";
    case UnaryOpType::Sigmoid: return "sigmoid";
    case UnaryOpType::Erf: return "erf";
    case UnaryOpType::Reciprocal: return "reciprocal";
    case UnaryOpType::Sin: return "sin";
    case UnaryOpType::Cos: return "cos";
    case UnaryOpType::Tan: return "tan";
    case UnaryOpType::Asin: return "asin";
    case UnaryOpType::Acos: return "acos";
    case UnaryOpType::Atan: return "atan";
    case UnaryOpType::Sinh: return "sinh";
    case UnaryOpType::Cosh: return "cosh";
    case UnaryOpType::Asinh: return "asinh";
    case UnaryOpType::Acosh: return "acosh";
    case UnaryOpType::Atanh: return "atanh";
    case UnaryOpType::Log10: return "log10";
    case UnaryOpType::Erfc: return "erfc";
    case UnaryOpType::Lgamma: return "lgamma";
    case UnaryOpType::Floor: return "floor";
    case UnaryOpType::Ceil: return "ceil";
    case UnaryOpType::Round: return "round";
    case UnaryOpType::Trunc: return "trunc";
    case UnaryOpType::LogicalNot: return "logical_not";
    case UnaryOpType::Signbit: return "signbit";
    case UnaryOpType::BitwiseNot: return "bitwise_not";
#define SMELT_SPECIAL_NAME(Enum, name) \
  case UnaryOpType::Enum: return #name;
      SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_NAME)
#undef SMELT_SPECIAL_NAME
  }
  return "?";
}

std::string toString(BinaryOpType t) {
  switch (t) {
    case BinaryOpType::Add: return "add";
    case BinaryOpType::Sub: return "sub";
    case BinaryOpType::Mul: return "mul";
    case BinaryOpType::Div: return "div";
    case BinaryOpType::Maximum: return "maximum";
    case BinaryOpType::Minimum: return "minimum";
    case BinaryOpType::Pow: return "pow";
    case BinaryOpType::Remainder: return "remainder";
    case BinaryOpType::Fmod: return "fmod";
    case BinaryOpType::Atan2: return "atan2";
    case BinaryOpType::Hypot: return "hypot";
    case BinaryOpType::Copysign: return "copysign";
    case BinaryOpType::Nextafter: return "nextafter";
    case BinaryOpType::ShiftLeft: return "bitwise_left_shift";
    case BinaryOpType::ShiftRight: return "bitwise_right_shift";
    case BinaryOpType::Gcd: return "gcd";
    case BinaryOpType::Lcm: return "lcm";
    case BinaryOpType::Eq: return "eq";
    case BinaryOpType::Ne: return "ne";
    case BinaryOpType::Lt: return "lt";
    case BinaryOpType::Le: return "le";
    case BinaryOpType::Gt: return "gt";
    case BinaryOpType::Ge: return "ge";
    case BinaryOpType::LogicalAnd: return "logical_and";
    case BinaryOpType::LogicalOr: return "logical_or";
    case BinaryOpType::BitwiseAnd: return "bitwise_and";
    case BinaryOpType::BitwiseOr: return "bitwise_or";
    case BinaryOpType::BitwiseXor: return "bitwise_xor";
    case BinaryOpType::RandomUniform: return "random_uniform";
#define SMELT_SPECIAL_NAME(Enum, name) \
  case BinaryOpType::Enum: return #name;
      SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_NAME)
#undef SMELT_SPECIAL_NAME
  }
  return "?";
}

bool isComparison(BinaryOpType t) {
  return t == BinaryOpType::Eq || t == BinaryOpType::Ne || t == BinaryOpType::Lt ||
         t == BinaryOpType::Le || t == BinaryOpType::Gt || t == BinaryOpType::Ge;
}

bool isLogical(BinaryOpType t) {
  return t == BinaryOpType::LogicalAnd || t == BinaryOpType::LogicalOr;
}

bool isCopyLike(ExprType t) {
  switch (t) {
    case ExprType::Set:
    case ExprType::Broadcast:
    case ExprType::Expand:
    case ExprType::Permute:
    case ExprType::Squeeze:
    case ExprType::Reshape:
    case ExprType::Pad: return true;
    default: return false;
  }
}

#define SMELT_SPECIAL_CASE(Enum, name) case Type::Enum:
bool isSpecial(UnaryOpType t) {
  using Type = UnaryOpType;
  switch (t) {
    SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_CASE) return true;
    default: return false;
  }
}

bool isSpecial(BinaryOpType t) {
  using Type = BinaryOpType;
  switch (t) {
    SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_CASE) return true;
    default: return false;
  }
}
#undef SMELT_SPECIAL_CASE

bool isBitwise(BinaryOpType t) {
  return t == BinaryOpType::BitwiseAnd || t == BinaryOpType::BitwiseOr ||
         t == BinaryOpType::BitwiseXor;
}

DataType promoteOperandTypes(const std::vector<Val*>& operands) {
  bool have_tensor = false;
  DataType tensors = DataType::Bool;
  DataType scalars = DataType::Bool;
  bool have_scalar = false;
  for (const Val* v : operands) {
    if (v->asTensor() != nullptr) {
      tensors = have_tensor ? promoteTypes(tensors, v->dtype()) : v->dtype();
      have_tensor = true;
    } else {
      scalars = have_scalar ? promoteTypes(scalars, v->dtype()) : v->dtype();
      have_scalar = true;
    }
  }
  if (!have_tensor) return scalars;
  if (have_scalar && isFloatingType(scalars) && !isFloatingType(tensors)) return DataType::Float;
  if (have_scalar && isIntegralType(scalars) && tensors == DataType::Bool) return DataType::Int;
  return tensors;
}

std::string toString(ReductionOpType t) {
  switch (t) {
    case ReductionOpType::Sum: return "sum";
    case ReductionOpType::Max: return "max";
    case ReductionOpType::Prod: return "prod";
  }
  return "?";
}

Expr::Expr(ExprType type, std::vector<Val*> inputs, std::vector<Val*> outputs)
    : type_(type), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  for (Val* in : inputs_) {
    // add(x, x) is one use of x.
    if (std::find(in->uses_.begin(), in->uses_.end(), this) == in->uses_.end()) {
      in->uses_.push_back(this);
    }
  }
  for (Val* out : outputs_) {
    SMELT_INTERNAL_CHECK(out->definition_ == nullptr, "value ", out->toString(),
                         " already has a definition");
    out->definition_ = this;
  }
}

TensorView* Expr::output() const {
  SMELT_INTERNAL_CHECK(outputs_.size() == 1 && outputs_[0]->asTensor() != nullptr);
  return outputs_[0]->asTensor();
}

std::vector<TensorView*> Expr::tensorInputs() const {
  std::vector<TensorView*> result;
  for (Val* in : inputs_) {
    if (TensorView* tv = in->asTensor()) result.push_back(tv);
  }
  return result;
}

std::string Expr::toString() const {
  std::ostringstream os;
  os << output()->toString() << " = " << opName() << "(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i) os << ", ";
    const TensorView* tv = inputs_[i]->asTensor();
    os << (tv ? tv->name() : inputs_[i]->toString());
  }
  os << ")";
  return os.str();
}

void Expr::replaceInput(Val* old_val, Val* new_val) {
  bool found = false;
  for (Val*& in : inputs_) {
    if (in == old_val) {
      in = new_val;
      found = true;
    }
  }
  SMELT_INTERNAL_CHECK(found, "replaceInput: ", old_val->toString(), " is not an input of ",
                       toString());
  auto& old_uses = old_val->uses_;
  old_uses.erase(std::remove(old_uses.begin(), old_uses.end(), this), old_uses.end());
  auto& new_uses = new_val->uses_;
  if (std::find(new_uses.begin(), new_uses.end(), this) == new_uses.end()) {
    new_uses.push_back(this);
  }
  new_val->fusion()->graphChanged();
}

void Expr::replaceOutput(Val* old_val, Val* new_val) {
  for (Val*& out : outputs_) {
    if (out == old_val) {
      out = new_val;
      old_val->definition_ = nullptr;
      new_val->definition_ = this;
      new_val->fusion()->graphChanged();
      return;
    }
  }
  SMELT_INTERNAL_CHECK(false, "replaceOutput: ", old_val->toString(), " is not an output");
}

FullOp::FullOp(TensorView* out, Val* fill_value) : Expr(ExprType::Full, {fill_value}, {out}) {}

IotaOp::IotaOp(TensorView* out, Val* start, Val* step) : Expr(ExprType::Iota, {start, step}, {out}) {}

UnaryOp::UnaryOp(UnaryOpType op, TensorView* out, Val* in)
    : Expr(ExprType::Unary, {in}, {out}), op_(op) {}

std::string UnaryOp::opName() const {
  if (op_ == UnaryOpType::Cast) return "cast<" + smelt::toString(output()->dtype()) + ">";
  return smelt::toString(op_);
}

BinaryOp::BinaryOp(BinaryOpType op, TensorView* out, Val* lhs, Val* rhs)
    : Expr(ExprType::Binary, {lhs, rhs}, {out}), op_(op) {}

WhereOp::WhereOp(TensorView* out, Val* condition, Val* if_true, Val* if_false)
    : Expr(ExprType::Where, {condition, if_true, if_false}, {out}) {}

ReductionOp::ReductionOp(ReductionOpType op, TensorView* out, TensorView* in)
    : Expr(ExprType::Reduction, {in}, {out}), op_(op) {}

double ReductionOp::initValue() const {
  switch (op_) {
    case ReductionOpType::Sum: return 0.0;
    case ReductionOpType::Prod: return 1.0;
    case ReductionOpType::Max: break;
  }
  // The least value of the type: false for bool (-inf would convert to
  // true, and every row's max would be true); integers take their minimum
  // from -inf where the value is materialized.
  if (output()->dtype() == DataType::Bool) return 0.0;
  return -std::numeric_limits<double>::infinity();
}

BroadcastOp::BroadcastOp(TensorView* out, TensorView* in, std::vector<bool> is_new_axis)
    : Expr(ExprType::Broadcast, {in}, {out}), is_new_axis_(std::move(is_new_axis)) {}

std::string BroadcastOp::toString() const {
  std::ostringstream os;
  os << output()->toString() << " = broadcast(" << input(0)->asTensor()->name() << ", {";
  for (size_t i = 0; i < is_new_axis_.size(); ++i) {
    os << (i ? ", " : "") << (is_new_axis_[i] ? "true" : "false");
  }
  os << "})";
  return os.str();
}

ExpandOp::ExpandOp(TensorView* out, TensorView* in) : Expr(ExprType::Expand, {in}, {out}) {}

LoadStoreOp::LoadStoreOp(TensorView* out, TensorView* in) : Expr(ExprType::Set, {in}, {out}) {}

PadOp::PadOp(TensorView* out, TensorView* in, std::vector<std::pair<int64_t, int64_t>> widths,
             Val* pad_value)
    : Expr(ExprType::Pad, {in, pad_value}, {out}), widths_(std::move(widths)) {}

IndexSelectOp::IndexSelectOp(TensorView* out, TensorView* table, TensorView* index, int64_t dim,
                             IndexSelectMode mode)
    : Expr(ExprType::IndexSelect, {table, index}, {out}), dim_(dim), mode_(mode) {}

std::string IndexSelectOp::toString() const {
  std::ostringstream os;
  os << output()->toString() << " = " << opName() << "(" << table()->name() << ", " << dim_ << ", "
     << index()->name() << ")";
  return os.str();
}

ScatterOp::ScatterOp(TensorView* out, TensorView* self, TensorView* index, Val* src, int64_t dim,
                     ScatterCombine combine, bool wrap_negative)
    : Expr(ExprType::Scatter, {self, index, src}, {out}),
      dim_(dim),
      combine_(combine),
      wrap_negative_(wrap_negative) {}

const char* toString(ScatterCombine combine) {
  switch (combine) {
    case ScatterCombine::Set: return "set";
    case ScatterCombine::Add: return "add";
    case ScatterCombine::Mul: return "mul";
    case ScatterCombine::Max: return "max";
    case ScatterCombine::Min: return "min";
  }
  return "?";
}

std::string ScatterOp::nameOf(ScatterCombine combine) {
  return combine == ScatterCombine::Set ? "scatter" : std::string("scatter_") + smelt::toString(combine);
}

std::string ScatterOp::toString() const {
  std::ostringstream os;
  os << output()->toString() << " = " << opName() << "(" << self()->name() << ", " << dim_ << ", "
     << index()->name() << ", "
     << (src()->asTensor() ? src()->asTensor()->name() : src()->toString())
     << (wrap_negative_ ? ", wrap_negative" : "") << ")";
  return os.str();
}

ScanOp::ScanOp(TensorView* out, TensorView* in, int64_t dim, ScanCombine combine)
    : Expr(ExprType::Scan, {in}, {out}), dim_(dim), combine_(combine) {}

double ScanOp::initValue() const {
  const double inf = std::numeric_limits<double>::infinity();
  const bool is_bool = output()->dtype() == DataType::Bool;
  switch (combine_) {
    case ScanCombine::Add: return 0.0;
    case ScanCombine::Mul: return 1.0;
    case ScanCombine::Max: return is_bool ? 0.0 : -inf;
    case ScanCombine::Min: return is_bool ? 1.0 : inf;
    case ScanCombine::LogAddExp: return -inf;
  }
  return 0.0;
}

int64_t ScanOp::loopAxis() const {
  const TensorView* out = output();
  const IterDomain* axis = out->logicalDomain().at(dim_);
  for (int64_t k = 0; k < out->nDims(); ++k) {
    if (out->axis(k) == axis) return k;
  }
  return -1;
}

std::string ScanOp::nameOf(ScanCombine combine) {
  switch (combine) {
    case ScanCombine::Add: return "cumsum";
    case ScanCombine::Mul: return "cumprod";
    case ScanCombine::Max: return "cummax";
    case ScanCombine::Min: return "cummin";
    case ScanCombine::LogAddExp: return "logcumsumexp";
  }
  return "?";
}

std::string ScanOp::toString() const {
  std::ostringstream os;
  os << output()->toString() << " = " << opName() << "(" << in()->name() << ", " << dim_ << ")";
  return os.str();
}

std::string PadOp::opName() const {
  const bool crops_only = std::all_of(widths_.begin(), widths_.end(), [](const auto& w) {
    return w.first <= 0 && w.second <= 0;
  });
  return crops_only ? "slice" : "pad";
}

std::string PadOp::toString() const {
  std::ostringstream os;
  os << output()->toString() << " = " << opName() << "(" << input(0)->asTensor()->name() << ", {";
  for (size_t i = 0; i < widths_.size(); ++i) {
    os << (i ? ", " : "") << "{" << widths_[i].first << ", " << widths_[i].second << "}";
  }
  os << "}, " << padValue()->toString() << ")";
  return os.str();
}

// ---- cloneWith: the same op over values of another fusion ----

namespace {
TensorView* tensorAt(const std::vector<Val*>& vals, size_t i) {
  TensorView* tv = vals.at(i)->asTensor();
  SMELT_INTERNAL_CHECK(tv != nullptr, "cloneWith: value ", i, " must be a tensor");
  return tv;
}
}  // namespace

Expr* FullOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                        const std::vector<Val*>& outs) const {
  return f.newExpr<FullOp>(tensorAt(outs, 0), ins.at(0));
}
Expr* IndexSelectOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                               const std::vector<Val*>& outs) const {
  return f.newExpr<IndexSelectOp>(tensorAt(outs, 0), tensorAt(ins, 0), tensorAt(ins, 1), dim_, mode_);
}
Expr* ScatterOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                           const std::vector<Val*>& outs) const {
  return f.newExpr<ScatterOp>(tensorAt(outs, 0), tensorAt(ins, 0), tensorAt(ins, 1), ins.at(2), dim_,
                              combine_, wrap_negative_);
}
Expr* ScanOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                        const std::vector<Val*>& outs) const {
  return f.newExpr<ScanOp>(tensorAt(outs, 0), tensorAt(ins, 0), dim_, combine_);
}
Expr* IotaOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                        const std::vector<Val*>& outs) const {
  return f.newExpr<IotaOp>(tensorAt(outs, 0), ins.at(0), ins.at(1));
}
Expr* UnaryOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                         const std::vector<Val*>& outs) const {
  return f.newExpr<UnaryOp>(op_, tensorAt(outs, 0), ins.at(0));
}
Expr* BinaryOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                          const std::vector<Val*>& outs) const {
  return f.newExpr<BinaryOp>(op_, tensorAt(outs, 0), ins.at(0), ins.at(1));
}
Expr* WhereOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                         const std::vector<Val*>& outs) const {
  return f.newExpr<WhereOp>(tensorAt(outs, 0), ins.at(0), ins.at(1), ins.at(2));
}
Expr* ReductionOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                             const std::vector<Val*>& outs) const {
  return f.newExpr<ReductionOp>(op_, tensorAt(outs, 0), tensorAt(ins, 0));
}
Expr* BroadcastOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                             const std::vector<Val*>& outs) const {
  return f.newExpr<BroadcastOp>(tensorAt(outs, 0), tensorAt(ins, 0), is_new_axis_);
}
Expr* ExpandOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                          const std::vector<Val*>& outs) const {
  return f.newExpr<ExpandOp>(tensorAt(outs, 0), tensorAt(ins, 0));
}
Expr* LoadStoreOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                             const std::vector<Val*>& outs) const {
  return f.newExpr<LoadStoreOp>(tensorAt(outs, 0), tensorAt(ins, 0));
}
Expr* PermuteOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                           const std::vector<Val*>& outs) const {
  return f.newExpr<PermuteOp>(tensorAt(outs, 0), tensorAt(ins, 0), dims_);
}
Expr* SqueezeOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                           const std::vector<Val*>& outs) const {
  return f.newExpr<SqueezeOp>(tensorAt(outs, 0), tensorAt(ins, 0), is_squeezed_);
}
Expr* ReshapeOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                           const std::vector<Val*>& outs) const {
  return f.newExpr<ReshapeOp>(tensorAt(outs, 0), tensorAt(ins, 0));
}
Expr* PadOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                       const std::vector<Val*>& outs) const {
  return f.newExpr<PadOp>(tensorAt(outs, 0), tensorAt(ins, 0), widths_, ins.at(1));
}

namespace {
template <typename T>
std::string listText(const std::vector<T>& values) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << "}";
  return os.str();
}
}  // namespace

PermuteOp::PermuteOp(TensorView* out, TensorView* in, std::vector<int64_t> dims)
    : Expr(ExprType::Permute, {in}, {out}), dims_(std::move(dims)) {}

std::string PermuteOp::toString() const {
  return output()->toString() + " = permute(" + input(0)->asTensor()->name() + ", " +
         listText(dims_) + ")";
}

SqueezeOp::SqueezeOp(TensorView* out, TensorView* in, std::vector<bool> is_squeezed)
    : Expr(ExprType::Squeeze, {in}, {out}), is_squeezed_(std::move(is_squeezed)) {}

std::string SqueezeOp::toString() const {
  std::vector<std::string> flags;
  for (bool f : is_squeezed_) flags.push_back(f ? "true" : "false");
  return output()->toString() + " = squeeze(" + input(0)->asTensor()->name() + ", " +
         listText(flags) + ")";
}

ReshapeOp::ReshapeOp(TensorView* out, TensorView* in) : Expr(ExprType::Reshape, {in}, {out}) {}

MmaOp::MmaOp(TensorView* out, TensorView* a, TensorView* b, TensorCoreMatmulParams params)
    : Expr(ExprType::Mma, {a, b}, {out}), params_(params) {}

TensorView* MmaOp::a() const { return input(0)->asTensor(); }
TensorView* MmaOp::b() const { return input(1)->asTensor(); }

Expr* MmaOp::cloneWith(Fusion& f, const std::vector<Val*>& ins,
                       const std::vector<Val*>& outs) const {
  return f.newExpr<MmaOp>(outs.at(0)->asTensor(), ins.at(0)->asTensor(), ins.at(1)->asTensor(),
                          params_);
}

std::string MmaOp::toString() const { return Expr::toString() + " {" + params_.toString() + "}"; }

}  // namespace smelt
