// Op functions that build the fusion graph in the active Fusion (see
// FusionGuard). Shapes and dtypes propagate; mismatches throw smelt::Error
// naming the op, the tensors and the dimension.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "fusion/fusion.h"
#include "fusion/ir.h"

namespace smelt {

// Tensors whose extents are symbolic ("T0.size[1]"), contiguous by default.
TensorView* makeContigTensor(int64_t ndims, DataType dtype = DataType::Float);
// Tensors with fixed extents (all iteration axes).
TensorView* makeConcreteTensor(const std::vector<int64_t>& shape,
                               DataType dtype = DataType::Float);

Scalar* constant(double value, DataType dtype = DataType::Float);
Scalar* symbolicScalar(DataType dtype = DataType::Float);

TensorView* full(const std::vector<IntExpr>& shape, Val* fill_value, DataType dtype);
TensorView* full(const std::vector<IntExpr>& shape, double fill_value,
                 DataType dtype = DataType::Float);
TensorView* set(TensorView* in);

TensorView* neg(TensorView* in);
TensorView* exp(TensorView* in);
TensorView* tanh(TensorView* in);
TensorView* abs(TensorView* in);
TensorView* relu(TensorView* in);
// Any pair of dtypes; float -> integer truncates toward zero, x -> bool is x != 0.
TensorView* castOp(DataType dtype, TensorView* in);

// Floating math: integral and bool inputs compute in and return float (as
// torch does); half and bfloat16 compute in float and round on store.
TensorView* sqrt(TensorView* in);
TensorView* rsqrt(TensorView* in);
TensorView* log(TensorView* in);
TensorView* log2(TensorView* in);
TensorView* log1p(TensorView* in);
TensorView* exp2(TensorView* in);
TensorView* expm1(TensorView* in);
TensorView* sigmoid(TensorView* in);
TensorView* erf(TensorView* in);
TensorView* reciprocal(TensorView* in);
TensorView* sin(TensorView* in);
TensorView* cos(TensorView* in);
TensorView* tan(TensorView* in);
TensorView* asin(TensorView* in);
TensorView* acos(TensorView* in);
TensorView* atan(TensorView* in);
TensorView* sinh(TensorView* in);
TensorView* cosh(TensorView* in);
TensorView* asinh(TensorView* in);
TensorView* acosh(TensorView* in);
TensorView* atanh(TensorView* in);
TensorView* log10(TensorView* in);
TensorView* erfc(TensorView* in);
TensorView* lgamma(TensorView* in);
// Rounding keeps the dtype (integers pass through); round is half-to-even
// like torch.round. Bool inputs are rejected.
TensorView* floor(TensorView* in);
TensorView* ceil(TensorView* in);
TensorView* round(TensorView* in);
TensorView* trunc(TensorView* in);
// Bool result: in == 0.
TensorView* logicalNot(TensorView* in);
// torch.signbit: bool, true where the sign bit is set (-0.0 included).
TensorView* signbit(TensorView* in);
// torch.bitwise_not: integers (bool: logical_not); floats are refused.
TensorView* bitwiseNot(TensorView* in);

// Binary ops broadcast size-1 (broadcast) axes; other extents must agree.
// The result type follows torch's promotion (promoteOperandTypes). div of
// integers stays integral and truncates toward zero (nvFuser's div, C's `/`;
// x / 0 gives -1, as the GPU's integer division); truediv is torch's `/`
// (integers divide as float). Comparisons and logical ops return bool
// (comparisons compare in the promoted type). sub, pow, remainder and fmod
// reject two bool operands. remainder takes the divisor's sign (Python's %),
// fmod the dividend's (C's fmod).
TensorView* binaryOp(BinaryOpType op, Val* lhs, Val* rhs);
TensorView* add(Val* lhs, Val* rhs);
TensorView* sub(Val* lhs, Val* rhs);
TensorView* mul(Val* lhs, Val* rhs);
TensorView* div(Val* lhs, Val* rhs);
TensorView* truediv(Val* lhs, Val* rhs);
TensorView* maximum(Val* lhs, Val* rhs);
TensorView* minimum(Val* lhs, Val* rhs);
TensorView* pow(Val* lhs, Val* rhs);
TensorView* remainder(Val* lhs, Val* rhs);
TensorView* fmod(Val* lhs, Val* rhs);
// Floating results, as torch: integral and bool operands compute in float.
TensorView* atan2(Val* lhs, Val* rhs);
TensorView* hypot(Val* lhs, Val* rhs);
TensorView* copysign(Val* lhs, Val* rhs);
// The next float (or double) after lhs toward rhs; half and bfloat16 are refused.
TensorView* nextafter(Val* lhs, Val* rhs);
// torch's special functions (SMELT_SPECIAL_UNARY_OPS / _BINARY_OPS in
// fusion/ir.h): floating results of the operands' floating type, float for
// integer and bool operands. polygamma's order n is a whole number >= 0.
TensorView* special(UnaryOpType op, TensorView* in);
TensorView* special(BinaryOpType op, Val* lhs, Val* rhs);
// Integers only, as torch: shifts by a count outside [0, bits of the type)
// give 0 (left) or the sign (right); gcd/lcm of the absolute values
// (gcd(0, 0) = 0, lcm with 0 = 0).
TensorView* bitwiseLeftShift(Val* lhs, Val* rhs);
TensorView* bitwiseRightShift(Val* lhs, Val* rhs);
TensorView* gcd(Val* lhs, Val* rhs);
TensorView* lcm(Val* lhs, Val* rhs);
TensorView* eq(Val* lhs, Val* rhs);
TensorView* ne(Val* lhs, Val* rhs);
TensorView* lt(Val* lhs, Val* rhs);
TensorView* le(Val* lhs, Val* rhs);
TensorView* gt(Val* lhs, Val* rhs);
TensorView* ge(Val* lhs, Val* rhs);
TensorView* logicalAnd(Val* lhs, Val* rhs);
TensorView* logicalOr(Val* lhs, Val* rhs);
// torch.bitwise_and/or/xor: integer or bool operands (bool ones are the
// logical ops); floats are refused.
TensorView* bitwiseAnd(Val* lhs, Val* rhs);
TensorView* bitwiseOr(Val* lhs, Val* rhs);
TensorView* bitwiseXor(Val* lhs, Val* rhs);
// With a scalar: a whole number keeps an integral tensor integral, any other
// value is a float scalar.
TensorView* add(TensorView* lhs, double rhs);
TensorView* sub(TensorView* lhs, double rhs);
TensorView* mul(TensorView* lhs, double rhs);
TensorView* div(TensorView* lhs, double rhs);
TensorView* truediv(TensorView* lhs, double rhs);
TensorView* pow(TensorView* lhs, double rhs);
TensorView* remainder(TensorView* lhs, double rhs);
TensorView* fmod(TensorView* lhs, double rhs);
TensorView* eq(TensorView* lhs, double rhs);
TensorView* ne(TensorView* lhs, double rhs);
TensorView* lt(TensorView* lhs, double rhs);
TensorView* le(TensorView* lhs, double rhs);
TensorView* gt(TensorView* lhs, double rhs);
TensorView* ge(TensorView* lhs, double rhs);
TensorView* where(Val* condition, Val* if_true, Val* if_false);

// Reductions over `axes` (of the input's non-reduction logical axes; negative
// counts from the end). The output keeps the reduced axes as reduction axes,
// except for sums and products of Half/BFloat16: those reduce a cast to Float
// and return the cast of that result back to the input's type (torch
// accumulates them in float too).
TensorView* sum(TensorView* in, const std::vector<int64_t>& axes);
TensorView* max(TensorView* in, const std::vector<int64_t>& axes);
// torch.prod: integers and bool multiply in and return int64, as torch does.
TensorView* prod(TensorView* in, const std::vector<int64_t>& axes);

// is_new_axis has one flag per output dimension; false ones take the input's.
TensorView* broadcast(TensorView* in, const std::vector<bool>& is_new_axis);
// Gives broadcast axes an extent (-1 keeps an axis as it is).
TensorView* expand(TensorView* in, const std::vector<IntExpr>& shape);
// widths as torch.nn.functional.pad: {before_last, after_last, before_2nd_last, ...};
// negative widths crop. Cropping needs a constant extent and must leave an
// element.
TensorView* pad(TensorView* in, const std::vector<int64_t>& widths, double value = 0.0);
// The same with one {before, after} pair per logical dimension, in order.
TensorView* padAxes(TensorView* in, const std::vector<std::pair<int64_t, int64_t>>& widths,
                    double value = 0.0);
// The axis a window op (pad, slice) gives a dimension of `extent`: a
// constant 1 is a broadcast, as every static size-1 dimension.
IterDomain* windowAxis(Fusion* fusion, const IntExpr& extent);
// in[starts[d]:stops[d]] along every dimension (step 1), with Python's
// rules: negative positions count from the end and both clamp to the extent
// (INT64_MAX is "to the end"). A symbolic extent can only be kept whole.
TensorView* slice(TensorView* in, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& stops);
// torch.cat: the inputs (of one rank, other dimensions equal, dtypes
// promoted as torch does) joined along `dim`, whose extents must be
// constants. Each input is padded to the whole extent at its place and a
// position selects the input that holds it (iota, lt, where).
TensorView* cat(const std::vector<TensorView*>& inputs, int64_t dim);
// table's dimensions before `dim`, then index's, then table's after `dim`:
// element [.., i.., ..] is table[.., index[i..], ..] (torch.index_select
// with a 1-D index; torch.embedding is dim 0). The index is an integer
// tensor; a value outside [0, extent) fails the kernel at run time.
TensorView* indexSelect(TensorView* table, int64_t dim, TensorView* index);
// torch.gather: index has table's rank; element [i] of the result (index's
// shape) is table[i with i[dim] = index[i]]. The other dimensions of index
// must have table's extents (torch allows smaller ones; smelt does not;
// symbolic ones are compared when the fusion runs).
TensorView* gather(TensorView* table, int64_t dim, TensorView* index);
// torch.scatter / scatter_add / scatter_reduce (ScatterOp in ir.h): self's
// shape and dtype. index has self's rank and extents no larger than self's
// outside `dim`; src is a scalar or a tensor of that rank no smaller than the
// index (only the index's extents of it are read; cast to self's dtype).
TensorView* scatter(TensorView* self, int64_t dim, TensorView* index, Val* src,
                    ScatterCombine combine = ScatterCombine::Set, bool wrap_negative = false);
// torch.cumsum / cumprod / cummax / cummin values / logcumsumexp along `dim`
// (ScanOp in ir.h): the input's shape and dtype (callers promote integer sums
// and products to int64 as torch does). LogAddExp needs a floating dtype.
TensorView* scan(TensorView* in, int64_t dim, ScanCombine combine);
// [length] tensor of start + i * step (torch.arange(start, start + length * step, step)).
TensorView* iota(const IntExpr& length, Val* start, Val* step, DataType dtype = DataType::Int);
// A tensor of `shape` holding start + i * step, i the row-major position.
TensorView* iota(const std::vector<IntExpr>& shape, Val* start, Val* step,
                 DataType dtype = DataType::Int);

// [M, K] x [K, N] -> [M, N] as broadcast, multiply and a sum over K (the
// building block a matmul schedule tiles); [B, M, K] x [B, K, N] -> [B, M, N]
// likewise over [B, M, rK, N] (torch.bmm). Half/bfloat16 operands are cast to
// float first (fp32 accumulation) and the sum is cast back to their type.
TensorView* matmul(TensorView* a, TensorView* b);
// [(B,) M, K] x [(B,) K, N] -> [(B,) M, rK, N] Float on tensor cores (MmaOp): the
// accumulator of matmul(a, b) for Half/BFloat16 operands of one type, tiled
// as `params` says. The matmul scheduler creates it; a fusion holding one is
// lowered by the tensor-core lowering only.
TensorView* tensorCoreMma(TensorView* a, TensorView* b, const TensorCoreMatmulParams& params);

// ---- layout ops ----
// torch.permute: the output's dimension i is the input's dimension dims[i]
// (negative values count from the end).
TensorView* permute(TensorView* in, const std::vector<int64_t>& dims);
// torch.transpose: swaps two dimensions.
TensorView* transpose(TensorView* in, int64_t dim0, int64_t dim1);
// torch.squeeze(dims): drops the listed dimensions of extent 1; like torch,
// a listed dimension of another constant extent is kept. A symbolic extent
// cannot be decided here and is an error.
TensorView* squeeze(TensorView* in, const std::vector<int64_t>& dims);
// torch.unsqueeze: a new broadcast dimension at `dim` (of the output).
TensorView* unsqueeze(TensorView* in, int64_t dim);
// torch.reshape as a view of the logical axes: extent-1 dimensions are
// squeezed, the rest regrouped by merging and splitting consecutive
// dimensions, and new extent-1 entries become broadcasts. One entry may be -1.
// With symbolic extents a dimension may pass through unchanged or be merged
// with its neighbours; splitting a symbolic extent would need a divisibility
// check at run time and is rejected.
TensorView* reshape(TensorView* in, const std::vector<IntExpr>& shape);
// torch.flatten: merges dimensions start_dim..end_dim into one.
TensorView* flatten(TensorView* in, int64_t start_dim = 0, int64_t end_dim = -1);

// ---- random numbers ----
// A pseudo-random value in [0, 1) of `dtype` (Float or Double) per element
// of `counter` (an integer tensor): a hash of (seed, counter), so equal
// inputs draw equal values in a kernel, the simulator and a rerun.
TensorView* randomUniform(Val* seed, TensorView* counter, DataType dtype = DataType::Float);
// Tensors of `shape` drawn from U[low, high) and N(mean, std), element i
// (row-major) from counter offset + i: the same (seed, offset) gives the same
// tensor. dtype is any floating type (half/bfloat16 draw in float).
TensorView* uniform(const std::vector<IntExpr>& shape, Val* low, Val* high, Val* seed,
                    Val* offset, DataType dtype = DataType::Float);
TensorView* normal(const std::vector<IntExpr>& shape, Val* mean, Val* std, Val* seed,
                   Val* offset, DataType dtype = DataType::Float);

// ---- composites ----
// torch.nn.functional.linear: x [..., K], weight [N, K], optional bias [N]
// -> [..., N] = x @ weight^T + bias, as broadcasts, a multiply and a sum
// over K. Half and bfloat16 operands are computed in float (torch
// accumulates in float too) and the result is cast back.
TensorView* linear(TensorView* x, TensorView* weight, TensorView* bias = nullptr);
// torch.nn.functional.gelu: the erf form, or with tanh_approximation the
// form of approximate="tanh",
//   0.5 * (1 + tanh(kSqrtTwoOverPi * (x + kGeluTanhCubeCoefficient * x^3))) * x.
// Half/bfloat16 compute in float.
TensorView* gelu(TensorView* x, bool tanh_approximation = false);
// The tanh form's constants (the library matmul's epilogue matcher reads them).
inline constexpr double kGeluTanhCubeCoefficient = 0.044715;
inline constexpr double kSqrtTwoOverPi = 0.7978845608028654;

}  // namespace smelt
