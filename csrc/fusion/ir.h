// The fusion IR: values (scalars and tensors), iteration domains with their
// split/merge history, and the expressions that connect them. Every node is
// owned by a Fusion; nodes refer to each other by raw pointer.
//
// A TensorView has a *logical* domain (its shape, one IterDomain per dimension,
// reduction dimensions included) and a *loop* domain, derived from the logical
// one by Split and Merge transforms (the schedule). Lowering turns each loop
// axis into a for-loop; the first `computePosition()` loops are shared with the
// tensor's consumer.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/int_expr.h"
#include "fusion/mma_params.h"
#include "fusion/types.h"

namespace smelt {

class Fusion;
class Expr;
class TensorView;
class IterDomain;

class Val {
 public:
  enum class Kind { Scalar, Tensor };
  virtual ~Val() = default;
  Val(const Val&) = delete;
  Val& operator=(const Val&) = delete;

  Kind valKind() const { return kind_; }
  DataType dtype() const { return dtype_; }
  Fusion* fusion() const { return fusion_; }
  Expr* definition() const { return definition_; }
  const std::vector<Expr*>& uses() const { return uses_; }
  bool isFusionInput() const;
  bool isFusionOutput() const;
  TensorView* asTensor();  // nullptr when this is a scalar
  const TensorView* asTensor() const;
  virtual std::string toString() const = 0;

 protected:
  Val(Fusion* fusion, Kind kind, DataType dtype) : fusion_(fusion), kind_(kind), dtype_(dtype) {}

 private:
  friend class Expr;
  friend class Fusion;
  Fusion* fusion_;
  Kind kind_;
  DataType dtype_;
  Expr* definition_ = nullptr;
  std::vector<Expr*> uses_;
};

// A scalar: a constant, or a symbolic value given at run time (a fusion input).
class Scalar : public Val {
 public:
  Scalar(Fusion* fusion, DataType dtype, double value);
  Scalar(Fusion* fusion, DataType dtype, std::string symbol);
  bool isConstant() const { return is_constant_; }
  double value() const;  // only for constants
  const std::string& symbol() const { return symbol_; }
  std::string toString() const override;

 private:
  bool is_constant_;
  double value_ = 0;
  std::string symbol_;
};

// A Split or a Merge between iteration domains of one tensor.
struct IdTransform {
  enum class Kind { Split, Merge };
  Kind kind;
  std::vector<IterDomain*> inputs;   // Split: {in};          Merge: {outer, inner}
  std::vector<IterDomain*> outputs;  // Split: {outer, inner}; Merge: {out}
  IntExpr factor;         // Split only
  bool inner_split = true;  // Split only: factor is the inner extent (else the outer one)
};

class IterDomain {
 public:
  IterDomain(int64_t id, IntExpr extent, IterType iter_type);

  int64_t id() const { return id_; }
  const IntExpr& extent() const { return extent_; }
  IterType iterType() const { return iter_type_; }
  bool isReduction() const { return iter_type_ == IterType::Reduction; }
  bool isBroadcast() const { return iter_type_ == IterType::Broadcast; }
  bool isIteration() const { return iter_type_ == IterType::Iteration; }
  // A broadcast that is not expanded: extent 1, one value for every index.
  bool isPlainBroadcast() const { return isBroadcast() && !has_expanded_extent_; }
  // A broadcast made concrete by expand() iterates over this extent (stride 0).
  bool hasExpandedExtent() const { return has_expanded_extent_; }
  const IntExpr& expandedExtent() const { return expanded_extent_; }
  void setExpandedExtent(IntExpr extent);
  // The trip count of this axis' loop: the expanded extent, else the extent.
  IntExpr loopExtent() const;

  ParallelType parallelType() const { return parallel_type_; }
  // Binds this loop axis to a grid/block index, vectorizes or unrolls it.
  // Throws smelt::Error (naming the tensor and axis) when another axis of the
  // same tensor already has this parallel type, or the axis is not a loop axis.
  IterDomain* parallelize(ParallelType pt);

  const IdTransform* definition() const { return definition_; }
  TensorView* owner() const { return owner_; }
  std::string toString() const;

 private:
  friend class TensorView;
  friend class Fusion;
  friend class GraphCopier;
  friend int64_t replayLike(TensorView*, const TensorView*,
                            const std::unordered_map<const IterDomain*, IterDomain*>&);
  int64_t id_;
  IntExpr extent_;
  IterType iter_type_;
  bool has_expanded_extent_ = false;
  IntExpr expanded_extent_;
  ParallelType parallel_type_ = ParallelType::Serial;
  const IdTransform* definition_ = nullptr;
  TensorView* owner_ = nullptr;
};

class TensorView : public Val {
 public:
  TensorView(Fusion* fusion, int64_t number, DataType dtype, std::vector<IterDomain*> logical,
             MemoryType memory_type);

  // "T3", or the name given with setName (used in plans, reports and CUDA).
  const std::string& name() const { return name_; }
  int64_t number() const { return number_; }
  TensorView* setName(const std::string& name);
  std::string toString() const override;

  const std::vector<IterDomain*>& logicalDomain() const { return logical_; }
  // The output of a reshape has a root domain (copies of its input's axes)
  // from which its logical domain derives by merges and splits (the view
  // transforms). Every other tensor's root domain is its logical domain.
  const std::vector<IterDomain*>& rootDomain() const { return root_.empty() ? logical_ : root_; }
  bool hasViewTransforms() const { return !root_.empty(); }
  const std::vector<IterDomain*>& loopDomain() const { return loop_; }
  // The axes the loop domain derives from by the schedule's splits and
  // merges: a scatter's output iterates over its index's shape (its
  // iteration domain), not over its logical (self's) shape; every other
  // tensor iterates over its logical domain.
  const std::vector<IterDomain*>& loopRoot() const {
    return iteration_.empty() ? logical_ : iteration_;
  }
  // The logical domain without reduction axes: what consumers see.
  std::vector<IterDomain*> logicalNoReductions() const;
  int64_t nDims() const { return static_cast<int64_t>(loop_.size()); }
  IterDomain* axis(int64_t i) const;
  bool hasReduction() const;
  // Contiguity of a fusion input's logical dimensions (all true by default).
  const std::vector<bool>& contiguity() const { return contiguity_; }
  TensorView* setContiguity(std::vector<bool> contiguity);

  MemoryType memoryType() const { return memory_type_; }
  TensorView* setMemoryType(MemoryType mtype);

  // ---- scheduling primitives (each returns this, so calls chain) ----
  // split(axis, factor): inner axis of extent `factor`, outer ceilDiv(extent, factor).
  // split(axis, nparts, false): outer axis of extent `nparts` (the "nparts" form).
  TensorView* split(int64_t axis, IntExpr factor, bool inner_split = true);
  TensorView* merge(int64_t axis_outer, int64_t axis_inner);
  TensorView* merge(int64_t axis_outer) { return merge(axis_outer, axis_outer + 1); }
  // reorder({{old, new}, ...}); unnamed axes keep their relative order.
  TensorView* reorder(const std::unordered_map<int64_t, int64_t>& old_to_new);

  // Computes this tensor (and every tensor on the paths to `consumer`) inside
  // the first `pos` loops of `consumer`, replaying the consumer's schedule.
  // pos may be negative (-1 = all of the consumer's loop axes).
  TensorView* computeAt(TensorView* consumer, int64_t pos);
  // Shares this tensor's first `pos` loops with its consumers, without changing
  // its schedule; throws when a loop axis does not map to every consumer's.
  TensorView* inlineAt(int64_t pos);
  // inlineAt(the largest legal position).
  TensorView* inlineMost();
  int64_t computePosition() const { return compute_position_; }
  // The largest position inlineAt accepts (0 for fusion inputs).
  int64_t maxInlinePosition() const;

  // Adds T' = set(this) and makes every other use of this read T'. Returns T'.
  TensorView* cacheAfter();
  // Makes this tensor's definition write a new tensor T' and this = set(T').
  // Returns T'.
  TensorView* cacheBefore();

  // Asks the shared-memory planner to make this Shared tensor's bytes
  // reusable after its last read, inserting a barrier if one is needed.
  TensorView* promoteReuse(bool enable = true);
  bool shouldPromoteReuse() const { return promote_reuse_; }

  // Multi-stage circular buffering of a Shared tensor computed inside a
  // serial loop (the loop of its axis computePosition() - 1, e.g. a GEMM's
  // K-tile loop): `stages` copies of its tile are allocated, a prologue loads
  // the first stages - 1 tiles, and iteration k loads tile k + stages - 1
  // while tile k is read (lower/circular_buffer.cpp). 1 turns it off.
  TensorView* circularBuffer(int64_t stages);
  int64_t circularBufferStages() const { return circular_buffer_stages_; }

  // Lays a Shared tensor out in rows of `row_elements` consecutive elements of
  // its row-major allocation, each followed by `padding` unused elements, so
  // that threads reading one element of each of several rows (a column of a
  // K-contiguous matmul tile) reach different banks. An allocation that is
  // not a constant multiple of `row_elements` (a tile of a broadcast operand)
  // stays unpadded. padRows(0, 0) removes the padding.
  TensorView* padRows(int64_t row_elements, int64_t padding);
  int64_t paddedRowElements() const { return padded_row_elements_; }
  int64_t rowPadding() const { return row_padding_; }

  // Human-readable schedule: logical domain, each transform, loop domain,
  // memory type and compute position.
  std::string transformsString() const;

  // Used by transform replay: install a new loop domain built elsewhere.
  void setLoopDomain(std::vector<IterDomain*> loop);
  // Used by cacheBefore: swap the definitions' output without touching uses.
  // Clears the root domain.
  void setLogicalDomain(std::vector<IterDomain*> logical);
  // Used by reshape (and cacheBefore, which moves a reshape's root along).
  void setRootDomain(std::vector<IterDomain*> root);
  // Used by scatter (and clone): the loop domain becomes `iteration`.
  void setIterationDomain(std::vector<IterDomain*> iteration);
  void setComputePosition(int64_t pos);

 private:
  int64_t normalizeAxis(int64_t axis, const char* what) const;
  void adopt(IterDomain* id);

  int64_t number_;
  std::string name_;
  std::vector<IterDomain*> root_;  // empty unless the definition is a reshape
  std::vector<IterDomain*> iteration_;  // empty unless the definition is a scatter
  std::vector<IterDomain*> logical_;
  std::vector<IterDomain*> loop_;
  std::vector<bool> contiguity_;
  MemoryType memory_type_;
  int64_t compute_position_ = 0;
  bool promote_reuse_ = false;
  int64_t circular_buffer_stages_ = 1;
  int64_t padded_row_elements_ = 0;
  int64_t row_padding_ = 0;
};

// ---------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------

enum class ExprType {
  Full, Iota, Unary, Binary, Where, Reduction, Broadcast, Expand, Set, Pad, Permute, Squeeze,
  Reshape, IndexSelect, Scatter, Scan, Mma,
};
// torch's special functions (csrc/codegen/special_math.h holds the one
// implementation the kernels and the simulator share): X(Enum, name), where
// name is the op's name and its function's in smelt::special. Floating
// results (integer and bool inputs compute in float, as torch), evaluated in
// double. Binary ones take torch's operand order: polygamma(n, x),
// igamma(a, x), zeta(x, q), the polynomials (x, n).
#define SMELT_SPECIAL_UNARY_OPS(X)                                                       \
  X(I0, i0) X(I0e, i0e) X(I1, i1) X(I1e, i1e) X(Digamma, digamma) X(Erfinv, erfinv)      \
  X(Ndtri, ndtri) X(LogNdtr, log_ndtr) X(Erfcx, erfcx) X(AiryAi, airy_ai)                \
  X(BesselJ0, bessel_j0) X(BesselJ1, bessel_j1) X(BesselY0, bessel_y0)                   \
  X(BesselY1, bessel_y1) X(ModifiedBesselK0, modified_bessel_k0)                         \
  X(ModifiedBesselK1, modified_bessel_k1) X(ScaledModifiedBesselK0, scaled_modified_bessel_k0) \
  X(ScaledModifiedBesselK1, scaled_modified_bessel_k1)                                   \
  X(SphericalBesselJ0, spherical_bessel_j0)
#define SMELT_SPECIAL_BINARY_OPS(X)                                                      \
  X(Polygamma, polygamma) X(Igamma, igamma) X(Igammac, igammac) X(Zeta, zeta)            \
  X(ChebyshevPolynomialT, chebyshev_polynomial_t)                                        \
  X(ChebyshevPolynomialU, chebyshev_polynomial_u)                                        \
  X(ChebyshevPolynomialV, chebyshev_polynomial_v)                                        \
  X(ChebyshevPolynomialW, chebyshev_polynomial_w)                                        \
  X(ShiftedChebyshevPolynomialT, shifted_chebyshev_polynomial_t)                         \
  X(ShiftedChebyshevPolynomialU, shifted_chebyshev_polynomial_u)                         \
  X(ShiftedChebyshevPolynomialV, shifted_chebyshev_polynomial_v)                         \
  X(ShiftedChebyshevPolynomialW, shifted_chebyshev_polynomial_w)                         \
  X(HermitePolynomialH, hermite_polynomial_h) X(HermitePolynomialHe, hermite_polynomial_he) \
  X(LaguerrePolynomialL, laguerre_polynomial_l) X(LegendrePolynomialP, legendre_polynomial_p)
#define SMELT_SPECIAL_ENUM(Enum, name) Enum,

enum class UnaryOpType {
  Neg, Exp, Tanh, Abs, Relu, Cast,
  Sqrt, Rsqrt, Log, Log2, Log1p, Exp2, Expm1, Sigmoid, Erf, Reciprocal, Sin, Cos,
  Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Log10, Erfc, Lgamma,
  Floor, Ceil, Round, Trunc,
  LogicalNot,
  Signbit,     // bool: the sign bit is set (-0.0 and negative NaNs too, as torch.signbit)
  BitwiseNot,  // integers only (bool's is logical_not)
  SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_ENUM)
};
enum class BinaryOpType {
  Add, Sub, Mul, Div, Maximum, Minimum,
  Pow, Remainder, Fmod,
  Atan2, Hypot, Copysign,  // floating results (integers compute in float)
  Nextafter,               // float and double only (half's steps are its own)
  ShiftLeft, ShiftRight,   // integers; torch's results for shifts outside [0, bits)
  Gcd, Lcm,                // integers
  Eq, Ne, Lt, Le, Gt, Ge,
  LogicalAnd, LogicalOr,
  BitwiseAnd, BitwiseOr, BitwiseXor,  // integers only (bool's are logical ops)
  // A pseudo-random number in [0, 1) of the output's floating type from an
  // integer seed and counter (randomUniform): a pure function of the two, so
  // a kernel, the simulator and a rerun draw the same value for an element.
  RandomUniform,
  SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_ENUM)
};
enum class ReductionOpType { Sum, Max, Prod };

std::string toString(UnaryOpType t);
std::string toString(BinaryOpType t);
std::string toString(ReductionOpType t);
// eq/ne/lt/le/gt/ge: bool results computed in the operands' promoted type.
bool isComparison(BinaryOpType t);
// logical_and/logical_or: bool results of operands read as bool.
bool isLogical(BinaryOpType t);
// bitwise_and/or/xor: integer operands and result.
bool isBitwise(BinaryOpType t);
// One of torch's special functions (SMELT_SPECIAL_*_OPS).
bool isSpecial(UnaryOpType t);
bool isSpecial(BinaryOpType t);
// An expression whose output element is its first operand's element: set and
// the layout ops (broadcast, expand, permute, squeeze, reshape), whose layout
// is all in the indexing, and pad, whose fill is in the operand's bounds.
bool isCopyLike(ExprType t);

// The type elementwise operands promote to, following torch: tensors decide
// among themselves (promoteTypes); a floating scalar lifts an integral or bool
// tensor result to float; with scalars only, the scalars promote.
DataType promoteOperandTypes(const std::vector<Val*>& operands);

class Expr {
 public:
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

  ExprType type() const { return type_; }
  const std::vector<Val*>& inputs() const { return inputs_; }
  const std::vector<Val*>& outputs() const { return outputs_; }
  Val* input(size_t i) const { return inputs_.at(i); }
  TensorView* output() const;  // every smelt expression has one tensor output
  std::vector<TensorView*> tensorInputs() const;
  // "T2 = add(T0, T1)" style.
  virtual std::string toString() const;
  virtual std::string opName() const = 0;
  // The same op with the same attributes, created in `fusion` over `inputs`
  // and `outputs` (values of that fusion, positions as in this expression).
  // Fusion::clone and segment copies rely on every expression type having it.
  virtual Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                          const std::vector<Val*>& outputs) const = 0;

  // Graph surgery for cacheAfter/cacheBefore.
  void replaceInput(Val* old_val, Val* new_val);
  void replaceOutput(Val* old_val, Val* new_val);

 protected:
  Expr(ExprType type, std::vector<Val*> inputs, std::vector<Val*> outputs);

 private:
  ExprType type_;
  std::vector<Val*> inputs_;
  std::vector<Val*> outputs_;
};

class FullOp : public Expr {
 public:
  FullOp(TensorView* out, Val* fill_value);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  Val* fillValue() const { return input(0); }
  std::string opName() const override { return "full"; }
};

// out[i] = start + i * step, i the element's row-major position in `out`
// (over one axis: torch.arange).
class IotaOp : public Expr {
 public:
  IotaOp(TensorView* out, Val* start, Val* step);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  Val* start() const { return input(0); }
  Val* step() const { return input(1); }
  std::string opName() const override { return "iota"; }
};

class UnaryOp : public Expr {
 public:
  UnaryOp(UnaryOpType op, TensorView* out, Val* in);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  UnaryOpType op() const { return op_; }
  std::string opName() const override;

 private:
  UnaryOpType op_;
};

class BinaryOp : public Expr {
 public:
  BinaryOp(BinaryOpType op, TensorView* out, Val* lhs, Val* rhs);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  BinaryOpType op() const { return op_; }
  // The promoted type of the operands: what a comparison compares in.
  DataType operandDtype() const { return promoteOperandTypes(inputs()); }
  std::string opName() const override { return smelt::toString(op_); }

 private:
  BinaryOpType op_;
};

class WhereOp : public Expr {
 public:
  WhereOp(TensorView* out, Val* condition, Val* if_true, Val* if_false);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  std::string opName() const override { return "where"; }
};

class ReductionOp : public Expr {
 public:
  ReductionOp(ReductionOpType op, TensorView* out, TensorView* in);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  ReductionOpType op() const { return op_; }
  double initValue() const;  // 0 for sum, -inf for max, 1 for prod
  std::string opName() const override { return smelt::toString(op_); }

 private:
  ReductionOpType op_;
};

class BroadcastOp : public Expr {
 public:
  BroadcastOp(TensorView* out, TensorView* in, std::vector<bool> is_new_axis);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  const std::vector<bool>& isNewAxis() const { return is_new_axis_; }
  std::string opName() const override { return "broadcast"; }
  std::string toString() const override;

 private:
  std::vector<bool> is_new_axis_;
};

class ExpandOp : public Expr {
 public:
  ExpandOp(TensorView* out, TensorView* in);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  std::string opName() const override { return "expand"; }
};

// set(): a copy, the op that moves data between memory types.
class LoadStoreOp : public Expr {
 public:
  LoadStoreOp(TensorView* out, TensorView* in);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  std::string opName() const override { return "set"; }
};

// A table read along `dim` at the values of an index tensor. An index
// outside the table's extent is an error when the kernel runs.
//  - select (torch.index_select for a 1-D index, torch.embedding for dim 0):
//    out = table's dimensions before `dim`, index's dimensions, table's
//    dimensions after `dim`; element [.., i.., ..] is table[.., index[i..], ..].
//  - along (torch.gather, take_along_dim): index has the table's rank and
//    the output its shape; element [i] is table[i with i[dim] = index[i]].
enum class IndexSelectMode { Select, Along };
class IndexSelectOp : public Expr {
 public:
  IndexSelectOp(TensorView* out, TensorView* table, TensorView* index, int64_t dim,
                IndexSelectMode mode = IndexSelectMode::Select);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  TensorView* table() const { return input(0)->asTensor(); }
  TensorView* index() const { return input(1)->asTensor(); }
  int64_t dim() const { return dim_; }
  IndexSelectMode mode() const { return mode_; }
  std::string opName() const override {
    return mode_ == IndexSelectMode::Select ? "index_select" : "gather";
  }
  std::string toString() const override;

 private:
  int64_t dim_;
  IndexSelectMode mode_;
};

// How a scatter combines a written value with the element already there.
enum class ScatterCombine { Set, Add, Mul, Max, Min };
const char* toString(ScatterCombine combine);

// torch.scatter: the output starts as a copy of `self` (the runtime copies it
// before the kernel runs); then for every position p of the index's shape,
// out[p with p[dim] = index[p]] = combine(that element, src[p]). src is a
// tensor of the index's shape or a scalar. The kernel loops over the index's
// shape (the output's iteration domain). An index outside [0, size) of self's
// dimension `dim` is an error; with `wrap_negative`, [-size, 0) counts from
// the end first (index_put, index_add). Set with a position written twice
// leaves one of the values (unspecified, as in torch).
class ScatterOp : public Expr {
 public:
  ScatterOp(TensorView* out, TensorView* self, TensorView* index, Val* src, int64_t dim,
            ScatterCombine combine, bool wrap_negative);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  TensorView* self() const { return input(0)->asTensor(); }
  TensorView* index() const { return input(1)->asTensor(); }
  Val* src() const { return input(2); }
  int64_t dim() const { return dim_; }
  ScatterCombine combine() const { return combine_; }
  bool wrapNegative() const { return wrap_negative_; }
  std::string opName() const override { return nameOf(combine_); }
  std::string toString() const override;
  // "scatter", "scatter_add", "scatter_mul", "scatter_max", "scatter_min".
  static std::string nameOf(ScatterCombine combine);

 private:
  int64_t dim_;
  ScatterCombine combine_;
  bool wrap_negative_;
};

// How a scan combines its running value with the next element.
enum class ScanCombine { Add, Mul, Max, Min, LogAddExp };

// torch.cumsum / cumprod / cummax(...).values / cummin(...).values /
// logcumsumexp along `dim`: out[.., i, ..] combines in[.., 0..i, ..] in
// order. The output has the input's shape and dtype; the running value is
// kept in accumulatorType() (half types in float). Max and Min propagate NaN
// (from a NaN on, the rest of the row is NaN), as torch's cummax/cummin.
class ScanOp : public Expr {
 public:
  ScanOp(TensorView* out, TensorView* in, int64_t dim, ScanCombine combine);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  TensorView* in() const { return input(0)->asTensor(); }
  int64_t dim() const { return dim_; }
  ScanCombine combine() const { return combine_; }
  // The combine's identity: 0, 1, the least / greatest value (-inf / +inf;
  // false / true for bool), -inf for log-add-exp.
  double initValue() const;
  DataType accumulatorType() const { return computeType(output()->dtype()); }
  // The position of the scan axis (logical axis `dim` of the output) in the
  // output's loop domain; -1 when a split or merge has consumed it.
  int64_t loopAxis() const;
  std::string opName() const override { return nameOf(combine_); }
  std::string toString() const override;
  // "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp".
  static std::string nameOf(ScanCombine combine);

 private:
  int64_t dim_;
  ScanCombine combine_;
};

class PadOp : public Expr {
 public:
  // widths[d] = {before, after} for each logical dimension d of the input:
  // out[c] = in[c - before] where that is inside the input, else the pad
  // value. Negative widths crop (a slice); a read of a cropped axis never
  // leaves the input.
  PadOp(TensorView* out, TensorView* in, std::vector<std::pair<int64_t, int64_t>> widths,
        Val* pad_value);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  const std::vector<std::pair<int64_t, int64_t>>& widths() const { return widths_; }
  Val* padValue() const { return input(1); }
  // "slice" when it only crops.
  std::string opName() const override;
  std::string toString() const override;

 private:
  std::vector<std::pair<int64_t, int64_t>> widths_;
};

// permute(): the output's logical axis i is the input's axis dims[i].
class PermuteOp : public Expr {
 public:
  PermuteOp(TensorView* out, TensorView* in, std::vector<int64_t> dims);
  const std::vector<int64_t>& dims() const { return dims_; }
  std::string opName() const override { return "permute"; }
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  std::string toString() const override;

 private:
  std::vector<int64_t> dims_;
};

// squeeze(): drops the input's extent-1 axes flagged in isSqueezed (one flag
// per non-reduction logical axis of the input).
class SqueezeOp : public Expr {
 public:
  SqueezeOp(TensorView* out, TensorView* in, std::vector<bool> is_squeezed);
  const std::vector<bool>& isSqueezed() const { return is_squeezed_; }
  std::string opName() const override { return "squeeze"; }
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  std::string toString() const override;

 private:
  std::vector<bool> is_squeezed_;
};

// reshape() as a view: the output's root domain copies the input's axes one
// to one; its logical domain derives from the root by merges and splits.
class ReshapeOp : public Expr {
 public:
  ReshapeOp(TensorView* out, TensorView* in);
  std::string opName() const override { return "reshape"; }
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
};

// tensorCoreMma(): out [M, rK, N] (Float) = a [M, K] @ b [K, N] (Half or BFloat16) on
// tensor cores, warp-level mma.sync m16n8k16 tiled as `params` says. The
// matmul scheduler puts it in place of matmul()'s broadcast-multiply-sum
// when it chooses tensor cores; GpuLower then lowers the fusion with the
// tensor-core lowering (lower/passes.cpp), which reads the tiles from here.
class MmaOp : public Expr {
 public:
  MmaOp(TensorView* out, TensorView* a, TensorView* b, TensorCoreMatmulParams params);
  Expr* cloneWith(Fusion& fusion, const std::vector<Val*>& inputs,
                  const std::vector<Val*>& outputs) const override;
  TensorView* a() const;
  TensorView* b() const;
  const TensorCoreMatmulParams& params() const { return params_; }
  std::string opName() const override { return "mma_m16n8k16"; }
  // "T4 = mma_m16n8k16(T0, T1) {block 64x64x32, ...}": the tiles are part of
  // the math, so the fusion cache key separates configurations.
  std::string toString() const override;

 private:
  TensorCoreMatmulParams params_;
};

}  // namespace smelt
