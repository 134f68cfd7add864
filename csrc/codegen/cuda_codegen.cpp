#include "codegen/cuda_codegen.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/scan_ops.h"
#include "codegen/scan_prelude.h"
#include "codegen/scatter_prelude.h"
#include "codegen/special_math_prelude.h"
#include "codegen/hopper_ops.h"
#include "codegen/tensor_core.h"
#include "codegen/vectorize.h"
#include "fusion/error.h"
#include "fusion/random_bits.h"
#include "fusion/symbols.h"

namespace smelt {
namespace {

// The prelude every kernel starts with, after the `index_t` typedef
// (indexTypedef) and the block's extents (kBlockDim). NVRTC has no <cstdint>, so int64_t is declared here (8
// bytes, like the host's; the Tensor struct layout is what the runtime packs:
// an 8-byte pointer then 2*N index_t values).
constexpr const char* kPrelude = R"(
namespace smelt {

// A tensor kernel parameter: sizes and strides in elements.
template <typename T, int N>
struct Tensor {
  T* data;
  index_t size[N];
  index_t stride[N];
};

template <typename T>
struct Tensor<T, 0> {
  T* data;
};

// Index arithmetic helpers (IntExpr's ceilDiv, min and max). Qualified calls
// avoid CUDA's overloaded ::min/::max, which are ambiguous for int64_t.
__device__ inline index_t ceilDiv(index_t a, index_t b) { return (a + b - 1) / b; }
__device__ inline index_t min(index_t a, index_t b) { return a < b ? a : b; }
__device__ inline index_t max(index_t a, index_t b) { return a > b ? a : b; }

// torch.maximum / torch.minimum / relu: NaN propagates. From sm_80 on, a
// float's is one instruction (max.NaN / min.NaN, where -0 < +0, so the
// operands' order never changes the result); elsewhere a compare and a select.
template <typename T>
__device__ inline T maximum(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T>
__device__ inline T minimum(T a, T b) { return (a != a || a < b) ? a : b; }
#if __CUDA_ARCH__ >= 800
template <>
__device__ inline float maximum<float>(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <>
__device__ inline float minimum<float>(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif
template <typename T>
__device__ inline T relu(T a) { return maximum(a, T(0)); }

// torch.fmod (the dividend's sign) and torch.remainder (the divisor's sign).
// Integers: x % 0 gives 0 (as the simulator), and x % -1 never traps.
template <typename T>
__device__ inline T fmod(T a, T b) { return (b == T(0) || b == T(-1)) ? T(0) : a % b; }
template <>
__device__ inline float fmod<float>(float a, float b) { return ::fmodf(a, b); }
template <>
__device__ inline double fmod<double>(double a, double b) { return ::fmod(a, b); }
template <typename T>
__device__ inline T remainder(T a, T b) {
  const T r = smelt::fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}

// Shifts as torch computes them: a count outside [0, bits) gives 0 (left) or
// the sign (right); the left shift wraps in unsigned arithmetic.
template <typename T>
__device__ inline T shiftLeft(T a, T b) {
  constexpr T bits = static_cast<T>(sizeof(T) * 8);
  return (b < T(0) || b >= bits) ? T(0)
                                 : static_cast<T>(static_cast<unsigned long long>(a) << b);
}
template <typename T>
__device__ inline T shiftRight(T a, T b) {
  constexpr T bits = static_cast<T>(sizeof(T) * 8);
  return (b < T(0) || b >= bits) ? (a < T(0) ? T(-1) : T(0)) : static_cast<T>(a >> b);
}
// torch's gcd/lcm: Euclid on the absolute values (negated in unsigned
// arithmetic, so the most negative value stays itself, as in torch).
template <typename T>
__device__ inline T gcd(T a, T b) {
  a = a < T(0) ? static_cast<T>(0ULL - static_cast<unsigned long long>(a)) : a;
  b = b < T(0) ? static_cast<T>(0ULL - static_cast<unsigned long long>(b)) : b;
  while (b != T(0)) {
    const T c = a;
    a = b;
    b = c % b;
  }
  return a;
}
// lcm: |a / gcd * b|, the product in C++'s promoted type (int for narrower
// types), as torch computes it.
template <typename T>
__device__ inline T lcm(T a, T b) {
  const T g = smelt::gcd(a, b);
  if (g == T(0)) return T(0);
  const auto r = a / g * b;
  return static_cast<T>(r < 0 ? 0ULL - static_cast<unsigned long long>(r) : r);
}

// Integer power as torch computes it: negative exponents give 0 except for
// bases 1 and -1. Squaring in unsigned arithmetic wraps like torch's.
template <typename T>
__device__ inline T ipow(T base, T exp) {
  if (exp < 0) return base == 1 ? T(1) : base == -1 ? ((exp & 1) ? T(-1) : T(1)) : T(0);
  unsigned long long result = 1, b = static_cast<unsigned long long>(base);
  for (; exp != 0; exp >>= 1, b *= b) {
    if (exp & 1) result *= b;
  }
  return static_cast<T>(result);
}

// Integer division truncating toward zero (nvFuser's div on integers, torch's
// rounding_mode='trunc'), made total: x / 0 gives -1 (what the hardware's
// division gives, and torch on the GPU) and MIN / -1 wraps.
template <typename T>
__device__ inline T idiv(T a, T b) {
  if (b == T(0)) return T(-1);
  if (b == T(-1)) return static_cast<T>(0ULL - static_cast<unsigned long long>(a));
  return a / b;
}

__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }

template <typename T>
__device__ inline T infinity();
template <>
__device__ inline float infinity<float>() { return __int_as_float(0x7f800000); }
template <>
__device__ inline double infinity<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <typename T>
__device__ inline T quietNaN();
template <>
__device__ inline float quietNaN<float>() { return __int_as_float(0x7fc00000); }
template <>
__device__ inline double quietNaN<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

// commutes<T>(): op(a, b) and op(b, a) have the same bits, so the partners
// of a shuffle step need not agree on an order (butterfly).
struct Sum {
  template <typename T>
  __device__ static constexpr bool commutes() { return true; }
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  template <typename T>
  __device__ static constexpr bool commutes() { return false; }  // maximum(-0, +0) is +0, maximum(+0, -0) -0
  template <typename T>
  __device__ T operator()(T a, T b) const { return maximum(a, b); }
};
#if __CUDA_ARCH__ >= 800
template <>
__device__ constexpr bool Max::commutes<float>() { return true; }  // max.NaN: -0 < +0, NaN made canonical
#endif
struct Prod {
  template <typename T>
  __device__ static constexpr bool commutes() { return true; }
  template <typename T>
  __device__ T operator()(T a, T b) const { return a * b; }
};

// random_uniform: a value in [0, 1) from the top 24 (float) or 53 (double)
// bits of randomBits(seed, counter), the same function the simulator runs.
)" SMELT_RANDOM_BITS_SOURCE R"(
template <typename T>
__device__ inline T randomUniform(long long seed, long long counter);
template <>
__device__ inline float randomUniform<float>(long long seed, long long counter) {
  return static_cast<float>(randomBits(seed, counter) >> 40) * 5.9604644775390625e-08f;
}
template <>
__device__ inline double randomUniform<double>(long long seed, long long counter) {
  return static_cast<double>(randomBits(seed, counter) >> 11) * 1.1102230246251565e-16;
}

// Threads with equal indices on the axes not flagged (X, Y, Z) form a group;
// `lane` is the position in the group (x fastest), `group` the group's number.
template <bool X, bool Y, bool Z>
__device__ inline unsigned groupSize() {
  return (X ? blockDim.x : 1) * (Y ? blockDim.y : 1) * (Z ? blockDim.z : 1);
}
template <bool X, bool Y, bool Z>
__device__ inline unsigned laneInGroup() {
  return ((Z ? threadIdx.z : 0) * (Y ? blockDim.y : 1) + (Y ? threadIdx.y : 0)) *
             (X ? blockDim.x : 1) +
         (X ? threadIdx.x : 0);
}
template <bool X, bool Y, bool Z>
__device__ inline unsigned groupIndex() {
  return ((Z ? 0 : threadIdx.z) * (Y ? 1 : blockDim.y) + (Y ? 0 : threadIdx.y)) *
             (X ? 1 : blockDim.x) +
         (X ? 0 : threadIdx.x);
}

// Reduces `value` over the flagged thread axes; every thread of the block
// must call it and each gets its group's result. `workspace` holds one
// element per thread. A tree in shared memory, a barrier per level; ends with
// a barrier, so the workspace is free again. For any block shape; the codegen
// takes the shuffle forms below when the block's shape allows.
template <bool X, bool Y, bool Z, typename T, typename Op>
__device__ T blockReduce(T value, T* workspace, Op op) {
  const unsigned size = groupSize<X, Y, Z>();
  const unsigned lane = laneInGroup<X, Y, Z>();
  T* mine = workspace + groupIndex<X, Y, Z>() * size;
  mine[lane] = value;
  __syncthreads();
  unsigned span = 1;
  while (span < size) span *= 2;
  for (unsigned stride = span / 2; stride > 0; stride /= 2) {
    if (lane < stride && lane + stride < size) mine[lane] = op(mine[lane], mine[lane + stride]);
    __syncthreads();
  }
  const T result = mine[0];
  __syncthreads();
  return result;
}

// kBlockDim (before the prelude): the block's extents where the launch fixes
// them, 0 where only blockDim knows; an axis of extent 1 has index 0.
__device__ inline unsigned linearThreadIndex() {
  const unsigned y = kBlockDim[1] == 1 ? 0 : threadIdx.y, z = kBlockDim[2] == 1 ? 0 : threadIdx.z;
  const unsigned x_extent = kBlockDim[0] != 0 ? kBlockDim[0] : blockDim.x;
  const unsigned y_extent = kBlockDim[1] != 0 ? kBlockDim[1] : blockDim.y;
  return (z * y_extent + y) * x_extent + threadIdx.x;
}

// Combines `value` across the lanes whose indices differ only in the bits
// of the xor offsets Top / 2, ..., Low (powers of two): a butterfly of
// shuffles among the lanes of `mask`. All of them end with the same bits:
// unless `op` commutes, both partners of a step apply it with the
// lower lane's value first.
template <unsigned Low, unsigned Top, typename T, typename Op>
__device__ T butterfly(T value, unsigned lane, unsigned mask, Op op) {
  for (unsigned offset = Top / 2; offset >= Low; offset /= 2) {
    const T other = __shfl_xor_sync(mask, value, offset);
    if constexpr (Op::template commutes<T>()) {
      value = op(value, other);
    } else {
      value = (lane & offset) ? op(other, value) : op(value, other);
    }
  }
  return value;
}

// `value` reduced over aligned runs of `Width` consecutive lanes (a power of
// two <= 32) with shuffles; every lane gets its run's result. Every thread of
// the block (`Threads` of them) takes part.
template <unsigned Width, unsigned Threads, typename T, typename Op>
__device__ T warpReduce(T value, Op op) {
  static_assert(Width <= 32 && (Width & (Width - 1)) == 0, "warpReduce: width");
  const unsigned linear = linearThreadIndex();
  unsigned mask = 0xffffffffu;
  if (Threads % 32 != 0) {
    const unsigned present = Threads - (linear & ~31u);
    if (present < 32) mask = (1u << present) - 1u;
  }
  return butterfly<1, Width>(value, linear, mask, op);
}

// blockReduce for groups that are aligned runs of `Size` consecutive threads
// (the codegen checks the block shape): within a warp by shuffles alone; a
// group of whole warps writes one partial per warp to `workspace` and, after
// one barrier, every thread combines its group's partials in the same order:
// with a power of two of them, lane l takes partial l % Warps and the same
// butterfly combines the lanes (one load and log2(Warps) shuffles, not a
// load and an op per partial), else in a loop. Ends with a barrier, as
// blockReduce.
template <unsigned Size, unsigned Threads, typename T, typename Op>
__device__ T groupReduce(T value, T* workspace, Op op) {
  static_assert(Size <= 32 ? (Size & (Size - 1)) == 0 : Size % 32 == 0, "groupReduce: size");
  if constexpr (Size <= 32) {
    const T result = warpReduce<Size, Threads>(value, op);
    __syncthreads();
    return result;
  }
  const unsigned linear = linearThreadIndex();
  const T partial = warpReduce<32, Threads>(value, op);
  if (linear % 32 == 0) workspace[linear / 32] = partial;
  __syncthreads();
  constexpr unsigned Warps = Size / 32;
  const T* partials = workspace + linear / Size * Warps;
  if constexpr (Warps <= 32 && (Warps & (Warps - 1)) == 0) {
    const unsigned lane = linear % 32;
    const T result = butterfly<1, Warps>(partials[lane % Warps], lane, 0xffffffffu, op);
    __syncthreads();
    return result;
  } else {
    T result = partials[0];
#pragma unroll
    for (unsigned w = 1; w < Warps; ++w) result = op(result, partials[w]);
    __syncthreads();
    return result;
  }
}

// blockReduce for groups of `Size` threads `Stride` apart, for each of the
// `N` values a thread holds (independent reductions done in one round): the
// threads of one x index when x (of extent Stride, not reduced) is the
// fastest axis and every other axis is reduced, as in an outer reduction
// whose block puts a few vector lanes along x and the reduced rows along y.
// Lanes Stride apart within a warp combine by shuffles; a group of whole
// warps writes one partial per value, warp and x to `workspace` (one element
// per thread holds them: N * Stride <= 32) and, after one barrier, every
// thread combines its group's partials: when there are a power of two of
// them, lane l combines partials l, l + 32, ... (all of one x) and the same
// shuffles combine the lanes, else in a loop, in the same order for every
// thread. Ends with a barrier, as blockReduce.
template <unsigned Stride, unsigned Size, unsigned N, typename T, typename Op>
__device__ void stridedGroupReduceN(T (&values)[N], T* workspace, Op op) {
  constexpr unsigned Threads = Stride * Size;
  static_assert(Stride >= 2 && Stride <= 16 && (Stride & (Stride - 1)) == 0, "stridedGroupReduce: stride");
  static_assert(Threads <= 32 ? (Threads & (Threads - 1)) == 0 : Threads % 32 == 0,
                "stridedGroupReduce: size");
  static_assert(N >= 1 && N * Stride <= 32, "stridedGroupReduce: the workspace holds N * Stride partials per warp");
  constexpr unsigned Span = Threads < 32 ? Threads : 32;  // lanes a warp holds
  const unsigned linear = linearThreadIndex();
  const unsigned mask = Threads < 32 ? (1u << Threads) - 1u : 0xffffffffu;
#pragma unroll
  for (unsigned k = 0; k < N; ++k) values[k] = butterfly<Stride, Span>(values[k], linear, mask, op);
  if constexpr (Threads <= 32) {
    __syncthreads();
    return;
  }
  constexpr unsigned Partials = Threads / 32 * Stride;
  const unsigned lane = linear % 32;
  if (lane < Stride) {
#pragma unroll
    for (unsigned k = 0; k < N; ++k) workspace[k * Partials + linear / 32 * Stride + lane] = values[k];
  }
  __syncthreads();
#pragma unroll
  for (unsigned k = 0; k < N; ++k) {
    const T* partials = workspace + k * Partials;
    T result;
    if constexpr ((Partials & (Partials - 1)) == 0) {
      // Partial p is of x = p % Stride, like lane p % 32: lanes Stride apart
      // within each run of `Run` lanes combine as above.
      constexpr unsigned Run = Partials < 32 ? Partials : 32;
      result = partials[lane % Run];
#pragma unroll
      for (unsigned j = 1; j < Partials / Run; ++j) result = op(result, partials[j * Run + lane % Run]);
      result = butterfly<Stride, Run>(result, lane, 0xffffffffu, op);
    } else {
      const unsigned x = linear % Stride;
      result = partials[x];
#pragma unroll 4
      for (unsigned w = 1; w < Threads / 32; ++w) result = op(result, partials[w * Stride + x]);
    }
    values[k] = result;
  }
  __syncthreads();
}

// One value: stridedGroupReduceN of N = 1.
template <unsigned Stride, unsigned Size, typename T, typename Op>
__device__ T stridedGroupReduce(T value, T* workspace, Op op) {
  T values[1] = {value};
  stridedGroupReduceN<Stride, Size>(values, workspace, op);
  return values[0];
}

// Every thread gets the value of the thread with index 0 on the flagged axes
// in its group. `workspace` holds one element per group. Ends with a barrier.
template <bool X, bool Y, bool Z, typename T>
__device__ T blockBroadcast(T value, T* workspace) {
  const unsigned group = groupIndex<X, Y, Z>();
  if (laneInGroup<X, Y, Z>() == 0) workspace[group] = value;
  __syncthreads();
  const T result = workspace[group];
  __syncthreads();
  return result;
}

}  // namespace smelt
)";

// Added to the prelude when a loop is vectorized (see vectorize.h).
constexpr const char* kVectorPrelude = R"(
namespace smelt {

// N elements of T as one aligned object: copying it is one vector load and
// one vector store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vector {
  T value[N];
};

}  // namespace smelt
)";

// The typedefs the prelude builds on: int64_t, and index_t, the type of all
// index arithmetic (loop indices, offsets, the Tensor struct's sizes and
// strides).
std::string indexTypedef(DataType index_type) {
  SMELT_CHECK(index_type == DataType::Int || index_type == DataType::Int32,
              "codegen: the index type is Int or Int32, not ", index_type);
  return std::string("typedef long long int64_t;\ntypedef ") +
         (index_type == DataType::Int ? "int64_t" : "int") + " index_t;\n";
}

std::string cudaType(DataType dtype) {
  switch (dtype) {
    case DataType::Float: return "float";
    case DataType::Double: return "double";
    case DataType::Half: return "__half";
    case DataType::BFloat16: return "__nv_bfloat16";
    case DataType::Int: return "int64_t";
    case DataType::Int32: return "int";
    case DataType::Bool: return "bool";
    case DataType::Int16: return "short";
    case DataType::Int8: return "signed char";
    case DataType::UInt8: return "unsigned char";
  }
  SMELT_INTERNAL_CHECK(false, "unknown DataType");
}

// `text` (a value of type `from`) as a value of type `to`.
std::string convert(const std::string& text, DataType from, DataType to) {
  if (from == to) return text;
  std::string value = text;
  if (from == DataType::Half) {
    value = "__half2float(" + value + ")";
    from = DataType::Float;
  } else if (from == DataType::BFloat16) {
    value = "__bfloat162float(" + value + ")";
    from = DataType::Float;
  }
  if (from == to) return value;
  if (to == DataType::Half || to == DataType::BFloat16) {
    if (from != DataType::Float) value = "static_cast<float>(" + value + ")";
    return (to == DataType::Half ? "__float2half(" : "__float2bfloat16(") + value + ")";
  }
  return "static_cast<" + cudaType(to) + ">(" + value + ")";
}

// A constant as a literal of `dtype` (a compute type: never Half/BFloat16).
std::string literal(double value, DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return value != 0 ? "true" : "false";
    case DataType::Int:
    case DataType::Int32:
    case DataType::Int16:
    case DataType::Int8:
    case DataType::UInt8: {
      if (std::isinf(value)) {
        // A max's init (-inf) is the type's minimum, a min's (+inf) its maximum.
        if (value > 0) {
          switch (dtype) {
            case DataType::Int: return "9223372036854775807LL";
            case DataType::Int32: return "2147483647";
            case DataType::Int16: return "32767";
            case DataType::Int8: return "127";
            default: return "255";
          }
        }
        switch (dtype) {
          case DataType::Int: return "(-9223372036854775807LL - 1)";
          case DataType::Int32: return "(-2147483647 - 1)";
          case DataType::Int16: return "(-32767 - 1)";
          case DataType::Int8: return "(-127 - 1)";
          default: return "0";
        }
      }
      std::string text = std::to_string(static_cast<int64_t>(value));
      return dtype == DataType::Int && (value > 2147483647.0 || value < -2147483648.0)
                 ? text + "LL"
                 : text;
    }
    case DataType::Float:
    case DataType::Double: {
      const std::string type = cudaType(dtype);
      if (std::isnan(value)) return "smelt::quietNaN<" + type + ">()";
      if (std::isinf(value)) return std::string(value < 0 ? "-" : "") + "smelt::infinity<" + type + ">()";
      std::ostringstream os;
      os.precision(dtype == DataType::Float ? 9 : 17);
      os << value;
      std::string text = os.str();
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return dtype == DataType::Float ? text + "f" : text;
    }
    case DataType::Half:
    case DataType::BFloat16: break;
  }
  SMELT_INTERNAL_CHECK(false, "literal of ", dtype, ": half types are computed in float");
}

// The CUDA builtin a parallel type binds a loop index to.
std::string builtinIndex(ParallelType pt) {
  std::string builtin = parallelIndexSymbol(pt);
  SMELT_INTERNAL_CHECK(!builtin.empty(), "no CUDA index for parallel type ", pt);
  return builtin;
}

bool mentionsSymbol(const IntExpr& e, const std::string& name) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return false;
    case IntExpr::Kind::Symbol: return e.symbolName() == name;
    default: return mentionsSymbol(e.lhs(), name) || mentionsSymbol(e.rhs(), name);
  }
}

// True when a statement under `loop` accesses a register (Local) array at an
// index that depends on the loop's index: unrolling the loop turns those
// indices into constants, so the array stays in registers (a run-time index
// puts it in local memory, a stack frame).
bool indexesRegisterArray(const kir::ForLoop& loop) {
  bool found = false;
  auto check = [&](const kir::Access& a) {
    if (a.buffer != nullptr && a.buffer->memory == MemoryType::Local &&
        mentionsSymbol(a.index, loop.index)) {
      found = true;
    }
  };
  kir::forEachStmt(loop.body, [&](const kir::Stmt* s, int) {
    if (auto* c = dynamic_cast<const kir::Compute*>(s)) {
      check(c->out);
      for (const auto& op : c->operands) {
        if (op.access) check(*op.access);
      }
    } else if (auto* r = dynamic_cast<const kir::ReduceInit*>(s)) {
      check(r->out);
    } else if (auto* r = dynamic_cast<const kir::ReduceStep*>(s)) {
      check(r->out);
      if (r->in.access) check(*r->in.access);
    } else if (auto* r = dynamic_cast<const kir::BlockReduce*>(s)) {
      check(r->out);
      check(r->in);
    } else if (auto* r = dynamic_cast<const kir::BlockBroadcast*>(s)) {
      check(r->out);
      check(r->in);
    }
  });
  return found;
}

// True when the divisor is one value for many elements of the quotient: a
// scalar, or a tensor broadcast along a dimension. Such a division is a
// multiplication by the divisor's reciprocal (at most one rounding more than
// the quotient; ATen's division by a scalar does the same), so the elements a
// thread computes in an unrolled loop share one division: a float division
// is ten instructions and a call to a slow path, a multiplication one.
bool divisorRepeats(const Val* divisor) {
  const TensorView* tv = divisor->asTensor();
  if (tv == nullptr) return true;
  const std::vector<IterDomain*>& dims = tv->logicalDomain();
  return std::any_of(dims.begin(), dims.end(), [](const IterDomain* id) { return id->isBroadcast(); });
}

const kir::Buffer* aliasTarget(const kir::Buffer* buffer) {
  while (buffer->alias_of != nullptr) buffer = buffer->alias_of;
  return buffer;
}

IntExpr addressOf(const kir::Buffer* buffer) {
  const kir::Buffer* target = aliasTarget(buffer);
  SMELT_CHECK(target->address.has_value(), "codegen: shared buffer ", target->name,
              " has no planned address (run the shared-memory planner first)");
  return *target->address;
}

class Emitter {
 public:
  Emitter(const kir::Kernel& kernel, const std::string& name, const CodegenOptions& options)
      : kernel_(kernel),
        name_(name),
        options_(options),
        narrow_index_(options.index_type == DataType::Int32),
        vector_bytes_(vectorRequirements(kernel).bytes) {
    for (const Scalar* scalar : kernel.scalar_inputs) {
      if (!scalar->isConstant()) scalar_symbols_.insert(scalar->symbol());
    }
    kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
      uses_tensor_cores_ |= codegen::isTensorCoreStmt(stmt->kind());
      uses_hopper_ |= codegen::isHopperStmt(stmt->kind());
      if (const auto* c = dynamic_cast<const kir::Compute*>(stmt)) {
        if (const auto* scatter = dynamic_cast<const ScatterOp*>(c->expr)) {
          combines_atomically_ |= scatter->combine() != ScatterCombine::Set;
        }
        if (const auto* scan = dynamic_cast<const ScanOp*>(c->expr)) {
          adds_log_exps_ |= scan->combine() == ScanCombine::LogAddExp;
        }
        if (const auto* u = dynamic_cast<const UnaryOp*>(c->expr); u != nullptr && isSpecial(u->op())) {
          special_functions_.insert(toString(u->op()));
        } else if (const auto* b = dynamic_cast<const BinaryOp*>(c->expr);
                   b != nullptr && isSpecial(b->op())) {
          special_functions_.insert(toString(b->op()));
        }
      }
      scans_blocks_ |= stmt->kind() == kir::StmtKind::BlockScan;
      if (const auto* l = dynamic_cast<const kir::LdMatrix*>(stmt)) {
        fragment_buffers_.insert(l->dst.buffer);
      } else if (const auto* m = dynamic_cast<const kir::Mma*>(stmt)) {
        fragment_buffers_.insert({m->a.buffer, m->b.buffer, m->c.buffer});
      }
    });
  }

  std::string run() {
    SMELT_CHECK(!name_.empty(), "codegen: empty kernel name");
    os_ << "// smelt kernel " << name_ << ", generated from kernel IR.\n";
    bool half = false;
    bool bfloat = false;
    for (const auto& buffer : kernel_.buffers) {
      half |= buffer->dtype == DataType::Half;
      bfloat |= buffer->dtype == DataType::BFloat16;
    }
    for (const Scalar* scalar : kernel_.scalar_inputs) {
      half |= scalar->dtype() == DataType::Half;
      bfloat |= scalar->dtype() == DataType::BFloat16;
    }
    if (half) os_ << "#include <cuda_fp16.h>\n";
    if (bfloat) os_ << "#include <cuda_bf16.h>\n";
    os_ << (half || bfloat ? "\n" : "") << indexTypedef(options_.index_type) << blockDimConstant() << kPrelude;
    if (!vector_bytes_.empty()) os_ << kVectorPrelude;
    if (uses_tensor_cores_) os_ << codegen::kTensorCorePrelude;
    if (uses_hopper_) os_ << codegen::hopperPrelude(kernel_);
    if (combines_atomically_) os_ << codegen::kScatterPrelude;
    if (adds_log_exps_) os_ << codegen::kLogAddExpPrelude;
    if (scans_blocks_) os_ << codegen::kBlockScanPrelude;
    os_ << codegen::specialMathPrelude(special_functions_);
    os_ << "\n";
    emitSignature();
    ++depth_;
    emitSharedMemory();
    emitList(kernel_.body);
    --depth_;
    os_ << "}\n";
    return os_.str();
  }

 private:
  void line(const std::string& text) { os_ << std::string(2 * depth_, ' ') << text << "\n"; }

  void emitSignature() {
    std::vector<std::string> params;
    auto tensor = [&](const kir::Buffer* buffer) {
      SMELT_CHECK(buffer->memory == MemoryType::Global, "codegen: kernel parameter ",
                  buffer->name, " is a ", buffer->memory, " buffer, not a Global one");
      params.push_back("smelt::Tensor<" + cudaType(buffer->dtype) + ", " +
                       std::to_string(buffer->shape.size()) + "> " + buffer->name);
    };
    for (const kir::Buffer* buffer : kernel_.inputs) tensor(buffer);
    for (const kir::Buffer* buffer : kernel_.outputs) tensor(buffer);
    for (const Scalar* scalar : kernel_.scalar_inputs) {
      SMELT_CHECK(!scalar->isConstant(), "codegen: scalar input ", scalar->toString(),
                  " is a constant");
      params.push_back(cudaType(scalar->dtype()) + " " + scalar->symbol());
    }
    for (std::string& map : codegen::tensorMapParameters(kernel_)) params.push_back(std::move(map));
    os_ << "extern \"C\" __global__ void ";
    if (auto threads = threadsPerBlock()) {
      os_ << "__launch_bounds__(" << *threads;
      if (options_.min_blocks_per_sm > 0) os_ << ", " << options_.min_blocks_per_sm;
      os_ << ") ";
    }
    os_ << name_ << "(";
    for (size_t i = 0; i < params.size(); ++i) {
      os_ << (i ? ",\n    " : "\n    ") << params[i];
    }
    os_ << ") {\n";
  }

  // The launch's block extents for the prelude's thread indexing (0: not
  // constant), so a one-dimensional block's linear index is threadIdx.x.
  std::string blockDimConstant() const {
    std::string extents;
    for (const IntExpr& dim : kernel_.launch.block) {
      extents += (extents.empty() ? "" : ", ") + std::to_string(dim.isConstant() ? *dim.constant() : 0);
    }
    return "\nnamespace smelt {\nconstexpr unsigned kBlockDim[3] = {" + extents + "};\n}  // namespace smelt\n";
  }

  // Lets ptxas budget registers for the block size when it is known.
  std::optional<int64_t> threadsPerBlock() const {
    int64_t threads = 1;
    for (const IntExpr& dim : kernel_.launch.block) {
      if (!dim.isConstant()) return std::nullopt;
      threads *= *dim.constant();
    }
    return threads;
  }

  void emitSharedMemory() {
    std::vector<const kir::Buffer*> shared;
    for (const auto& buffer : kernel_.buffers) {
      if (buffer->memory == MemoryType::Shared) shared.push_back(buffer.get());
    }
    if (shared.empty()) return;
    if (options_.static_shared_memory) {
      const IntExpr total = sharedMemoryBytes(kernel_);
      SMELT_CHECK(total.isConstant() && *total.constant() <= 48 * 1024,
                  "codegen: static shared memory needs a constant size of at most 48 KiB, got ",
                  total);
      line("__shared__ __align__(128) unsigned char smem[" + std::to_string(*total.constant()) +
           "];");
    } else {
      line("extern __shared__ __align__(128) unsigned char smem[];");
    }
    for (const kir::Buffer* buffer : shared) {
      const std::string type = cudaType(buffer->dtype);
      const IntExpr address = addressOf(buffer);
      std::string comment = "  // " + indexText(buffer->bytes(), true) + " bytes";
      if (buffer->alias_of != nullptr) comment += ", alias of " + buffer->alias_of->name;
      line(type + "* " + buffer->name + " = reinterpret_cast<" + type + "*>(smem + " +
           indexText(address, true) + ");" + comment);
    }
  }

  void emitList(const kir::StmtList& list) {
    for (const auto& stmt : list) emitStmt(*stmt);
  }

  void emitStmt(const kir::Stmt& stmt) {
    switch (stmt.kind()) {
      case kir::StmtKind::ForLoop: return emitLoop(static_cast<const kir::ForLoop&>(stmt));
      case kir::StmtKind::IfThenElse: return emitIf(static_cast<const kir::IfThenElse&>(stmt));
      case kir::StmtKind::Allocate: return emitAllocate(static_cast<const kir::Allocate&>(stmt));
      case kir::StmtKind::Compute: return emitCompute(static_cast<const kir::Compute&>(stmt));
      case kir::StmtKind::ReduceInit: return emitReduceInit(static_cast<const kir::ReduceInit&>(stmt));
      case kir::StmtKind::ReduceStep: return emitReduceStep(static_cast<const kir::ReduceStep&>(stmt));
      case kir::StmtKind::ScanInit: return emitScanInit(static_cast<const kir::ScanInit&>(stmt));
      case kir::StmtKind::BlockScan:
        for (const std::string& text : codegen::blockScanCode(static_cast<const kir::BlockScan&>(stmt), spelling())) {
          line(text);
        }
        return;
      case kir::StmtKind::BlockReduce: return emitBlockReduce(static_cast<const kir::BlockReduce&>(stmt));
      case kir::StmtKind::BlockBroadcast:
        return emitBlockBroadcast(static_cast<const kir::BlockBroadcast&>(stmt));
      case kir::StmtKind::CpAsync:
      case kir::StmtKind::CpAsyncCommit:
      case kir::StmtKind::CpAsyncWait:
      case kir::StmtKind::LdMatrix:
      case kir::StmtKind::Mma:
        kir::checkTensorCoreOperands(stmt);
        line(codegen::tensorCoreCall(
            stmt, [&](const kir::Access& a) { return element(a); },
            [&](const kir::Predicate& p) { return predicateText(p); }));
        return;
      case kir::StmtKind::MbarrierInit:
      case kir::StmtKind::MbarrierArrive:
      case kir::StmtKind::MbarrierWait:
      case kir::StmtKind::TmaLoad:
      case kir::StmtKind::FenceProxyAsync:
      case kir::StmtKind::Wgmma:
      case kir::StmtKind::WgmmaFence:
      case kir::StmtKind::WgmmaCommit:
      case kir::StmtKind::WgmmaWait:
        line(codegen::hopperCall(
            stmt, [&](const kir::Access& a) { return element(a); },
            [&](const IntExpr& e) { return indexText(e, true); }));
        return;
      case kir::StmtKind::BlockSync: {
        const auto& sync = static_cast<const kir::BlockSync&>(stmt);
        std::string comment = sync.reason;
        if (sync.inserted_for_reuse) comment += comment.empty() ? "inserted for reuse" : " (inserted for reuse)";
        line("__syncthreads();" + (comment.empty() ? "" : "  // " + comment));
        return;
      }
    }
    SMELT_INTERNAL_CHECK(false, "unknown kernel IR statement");
  }

  codegen::CodegenSpelling spelling() {
    return {[this](const kir::Access& a) { return element(a); },
            [this](const IntExpr& e) { return indexText(e, true); }, convert, literal, cudaType};
  }

  void open(const std::string& header) {
    line(header);
    ++depth_;
  }
  void close(const std::string& footer = "}") {
    --depth_;
    line(footer);
  }

  void emitLoop(const kir::ForLoop& loop) {
    const std::string extent = indexText(loop.extent, true);
    if (loop.trivial && isParallelDim(loop.parallel_type)) {
      const std::string builtin = builtinIndex(loop.parallel_type);
      open("{  // " + loop.index + " over [0, " + extent + ") bound to " + builtin);
      if (loop.index != builtin) line("const index_t " + loop.index + " = " + builtin + ";");
    } else if (loop.trivial && loop.extent.constant() == std::optional<int64_t>(1)) {
      open("{  // " + loop.index + " over [0, 1)");
      line("const index_t " + loop.index + " = 0;");
    } else {
      SMELT_CHECK(!isParallelDim(loop.parallel_type), "codegen: loop ", loop.index, " bound to ",
                  loop.parallel_type, " is not marked trivial");
      SMELT_CHECK(!loop.trivial || loop.parallel_type == ParallelType::Vectorize, "codegen: loop ",
                  loop.index, " is marked trivial but is neither parallel, vectorized nor of extent 1");
      if (auto vectorized = vectorizeLoop(loop)) return emitVectorized(loop, *vectorized);
      return emitForLoop(loop);
    }
    emitList(loop.body);
    close();
  }

  void emitForLoop(const kir::ForLoop& loop) {
    if (loop.body.size() == 1 && loop.body.front()->kind() == kir::StmtKind::BlockReduce) {
      const auto& reduce = static_cast<const kir::BlockReduce&>(*loop.body.front());
      if (reduce.grouped > 1) return emitGroupedBlockReduce(loop, reduce);
    }
    // A vectorized loop that cannot use vector accesses (vectorize.h) is
    // fully unrolled, so the compiler may still combine adjacent accesses.
    // A loop of constant trip count that indexes register arrays is unrolled
    // too, so those arrays are indexed by constants.
    if (loop.parallel_type == ParallelType::Unroll || loop.parallel_type == ParallelType::Vectorize ||
        (loop.extent.isConstant() && indexesRegisterArray(loop))) {
      line("#pragma unroll");
    }
    open("for (index_t " + loop.index + " = 0; " + loop.index + " < " + indexText(loop.extent, true) +
         "; ++" + loop.index + ") {");
    emitList(loop.body);
    close();
  }

  // One vector load and store per copy (the loop index does not exist), or
  // two of half the width for a 32-byte vector; where a vector straddles a
  // bound, the scalar loop runs lane by lane.
  void emitVectorized(const kir::ForLoop& loop, const VectorizedLoop& vectorized) {
    const std::string width = std::to_string(vectorized.width);
    const int64_t pieces = vectorized.pieces();
    const int64_t piece_width = vectorized.width / pieces;
    open("{  // " + loop.index + " over [0, " + width + ") vectorized: " +
         (pieces > 1 ? std::to_string(pieces) + " x " : "") + std::to_string(vectorized.bytes / pieces) +
         "-byte accesses" + (vectorized.scalar_tail ? ", lane by lane across a bound" : ""));
    auto copyText = [&](const VectorCopy& copy) {
      const kir::Compute& c = *copy.stmt;
      const kir::Buffer* in = c.operands[0].access->buffer;
      const std::string type =
          "smelt::Vector<" + cudaType(c.out.buffer->dtype) + ", " + std::to_string(piece_width) + ">";
      std::string text;
      for (int64_t p = 0; p < pieces; ++p) {
        const IntExpr offset(p * piece_width);
        text += (p ? " " : "") + std::string("*reinterpret_cast<") + type + "*>(&" +
                element({c.out.buffer, copy.out_first + offset}) + ") = *reinterpret_cast<const " + type +
                "*>(&" + element({in, copy.in_first + offset}) + ");";
      }
      return text;
    };
    if (!vectorized.scalar_tail) {
      for (const VectorCopy& copy : vectorized.copies) guarded(copy.predicate, copyText(copy));
    } else {
      const VectorCopy& copy = vectorized.copies.at(0);
      open("if (" + predicateText(copy.predicate) + ") {");
      line(copyText(copy));
      close("} else {");
      ++depth_;
      emitForLoop(loop);
      close();
    }
    close();
  }

  void emitIf(const kir::IfThenElse& ite) {
    open("if (" + predicateText(ite.predicate) + ") {");
    emitList(ite.then_body);
    if (!ite.else_body.empty()) {
      close("} else {");
      ++depth_;
      emitList(ite.else_body);
    }
    close();
  }

  void emitAllocate(const kir::Allocate& alloc) {
    const kir::Buffer* buffer = alloc.buffer;
    if (buffer->memory != MemoryType::Local) return;  // Shared: at the top; Global: a parameter
    SMELT_CHECK(buffer->elements.isConstant(), "codegen: local buffer ", buffer->name,
                " has symbolic size ", buffer->elements, "; registers need a constant size");
    // Registers accessed as vectors need the vector's alignment.
    auto vector = vector_bytes_.find(buffer);
    // Fragments are read and written as 32-bit registers by the inline PTX.
    const std::string align =
        fragment_buffers_.count(buffer) ? "__align__(16) "
        : vector == vector_bytes_.end() ? ""
                                        : "__align__(" + std::to_string(vector->second) + ") ";
    line(align + cudaType(buffer->dtype) + " " + buffer->name + "[" +
         std::to_string(*buffer->elements.constant()) + "];");
  }

  // Index arithmetic in signed index_t. CUDA's builtins are unsigned 32-bit,
  // so `threadIdx.x - 2` would wrap: they are converted where they occur. With
  // 32-bit indices, an int64_t scalar input in an extent is converted too (the
  // launch's choice of index type covers its value), and a constant must fit.
  // `top` drops the outermost parentheses (subscripts, conditions).
  std::string indexText(const IntExpr& e, bool top = false) const {
    using K = IntExpr::Kind;
    switch (e.kind()) {
      case K::Constant: {
        const int64_t value = *e.constant();
        SMELT_CHECK(!narrow_index_ || (value >= INT32_MIN && value <= INT32_MAX), "codegen: index constant ",
                    value, " does not fit the 32-bit index type (this launch needs 64-bit indices)");
        return std::to_string(value);
      }
      case K::Symbol: {
        const std::string& name = e.symbolName();
        const bool convert = isBuiltinSymbol(name) || (narrow_index_ && scalar_symbols_.count(name));
        return convert ? "index_t(" + name + ")" : name;
      }
      case K::CeilDiv:
      case K::Min:
      case K::Max: {
        const char* fn = e.kind() == K::CeilDiv ? "smelt::ceilDiv(" : e.kind() == K::Min ? "smelt::min(" : "smelt::max(";
        return fn + indexText(e.lhs(), true) + ", " + indexText(e.rhs(), true) + ")";
      }
      case K::Add:
      case K::Sub:
      case K::Mul:
      case K::Div:
      case K::Mod: {
        // A non-negative value by a power of two: a shift or a mask. The
        // signed division rounds toward zero, which costs ptxas a fix-up
        // of 2-3 instructions per quotient or remainder; the swizzled
        // operand tiles of a tensor-core matmul take hundreds of them.
        const std::optional<int64_t> divisor = e.rhs().constant();
        if ((e.kind() == K::Div || e.kind() == K::Mod) && divisor && *divisor > 1 &&
            (*divisor & (*divisor - 1)) == 0 && nonNegative(e.lhs())) {
          const std::string lhs = indexText(e.lhs());
          return "(" + lhs +
                 (e.kind() == K::Div ? " >> " + std::to_string(__builtin_ctzll(static_cast<uint64_t>(*divisor)))
                                     : " & " + std::to_string(*divisor - 1)) +
                 ")";
        }
        const char* op = e.kind() == K::Add   ? " + "
                         : e.kind() == K::Sub ? " - "
                         : e.kind() == K::Mul ? " * "
                         : e.kind() == K::Div ? " / "
                                              : " % ";
        std::string text = indexText(e.lhs()) + op + indexText(e.rhs());
        return top ? text : "(" + text + ")";
      }
    }
    SMELT_INTERNAL_CHECK(false, "unknown IntExpr kind");
  }

  std::string predicateText(const kir::Predicate& predicate) const {
    if (predicate.alwaysTrue()) return "true";
    std::string text;
    for (const auto& term : predicate.terms) {
      const char* op = term.kind == kir::Predicate::Term::Kind::LessThan ? " < "
                       : term.kind == kir::Predicate::Term::Kind::Equal  ? " == "
                                                                         : " >= ";
      if (!text.empty()) text += " && ";
      text += indexText(term.lhs, true) + op + indexText(term.rhs, true);
    }
    return text;
  }

  // The element an access names, as an lvalue.
  std::string element(const kir::Access& access) {
    SMELT_INTERNAL_CHECK(access.buffer != nullptr, "access without buffer");
    const std::string index = indexText(access.index, true);
    if (access.buffer->memory == MemoryType::Global) return access.buffer->name + ".data[" + index + "]";
    return access.buffer->name + "[" + index + "]";
  }

  std::string scalarValue(const Val* val, DataType to) {
    const auto* scalar = dynamic_cast<const Scalar*>(val);
    SMELT_CHECK(scalar != nullptr, "codegen: operand ", val->toString(), " is not a scalar");
    if (scalar->isConstant()) return literal(scalar->value(), to);
    return convert(scalar->symbol(), scalar->dtype(), to);
  }

  // An operand's value converted to `to`.
  std::string operandValue(const kir::Operand& operand, DataType to) {
    if (operand.index) return convert("(" + indexText(*operand.index, true) + ")", DataType::Int, to);
    if (!operand.access) {
      SMELT_CHECK(operand.scalar != nullptr, "codegen: operand has neither an access nor a scalar");
      return scalarValue(operand.scalar, to);
    }
    const std::string value = convert(element(*operand.access), operand.access->buffer->dtype, to);
    if (operand.in_bounds.alwaysTrue()) return value;
    SMELT_CHECK(operand.out_of_bounds_value != nullptr, "codegen: a read of ",
                operand.access->buffer->name, " has a bounds predicate but no out-of-bounds value");
    return "(" + predicateText(operand.in_bounds) + " ? " + value + " : " +
           scalarValue(operand.out_of_bounds_value, to) + ")";
  }

  const kir::Operand& operandAt(const kir::Compute& c, size_t i) {
    SMELT_CHECK(i < c.operands.size(), "codegen: ", c.expr->opName(), " writing ",
                c.out.buffer->name, " needs operand ", i, " but has ", c.operands.size());
    return c.operands[i];
  }

  // Writes `text`, guarded by `predicate`.
  void guarded(const kir::Predicate& predicate, const std::string& text) {
    if (predicate.alwaysTrue()) return line(text);
    open("if (" + predicateText(predicate) + ") {");
    line(text);
    close();
  }

  void assign(const kir::Predicate& predicate, const kir::Access& out, const std::string& value,
              DataType value_type) {
    guarded(predicate, element(out) + " = " + convert(value, value_type, out.buffer->dtype) + ";");
  }

  static std::string negate(const std::string& x) { return x[0] == '-' ? "-(" + x + ")" : "-" + x; }

  std::string mathCall(const char* float_fn, const char* double_fn, DataType ct, const std::string& x,
                       const Expr* expr) {
    SMELT_CHECK(ct == DataType::Float || ct == DataType::Double, "codegen: ", expr->opName(),
                " on ", ct, " is not supported (cast to a floating type first)");
    return std::string(ct == DataType::Float ? float_fn : double_fn) + "(" + x + ")";
  }

  // Rounding functions leave integers as they are.
  std::string roundingCall(const char* float_fn, const char* double_fn, DataType ct,
                           const std::string& x, const Expr* expr) {
    if (isIntegralType(ct)) return x;
    return mathCall(float_fn, double_fn, ct, x, expr);
  }

  // A special function (special_math.h): a unary one evaluates in double (a
  // float result is the double's, rounded), a binary one is a template on
  // the compute type.
  std::string specialCall(const Expr* expr, const std::string& name, DataType ct,
                          const std::vector<std::string>& args) {
    SMELT_CHECK(ct == DataType::Float || ct == DataType::Double, "codegen: ", expr->opName(),
                " on ", ct, " is not supported (cast to a floating type first)");
    if (args.size() == 2) {
      return "smelt::special::" + name + "<" + cudaType(ct) + ">(" + args[0] + ", " + args[1] + ")";
    }
    const std::string call = "smelt::special::" + name + "(" + args[0] + ")";
    return ct == DataType::Float ? "static_cast<float>(" + call + ")" : call;
  }

  std::string unary(const UnaryOp* op, const kir::Compute& c, DataType ct) {
    const std::string x = operandValue(operandAt(c, 0), ct);
    switch (op->op()) {
      case UnaryOpType::Cast: return x;
      case UnaryOpType::Neg: return negate(x);
      case UnaryOpType::Exp: return mathCall("expf", "exp", ct, x, op);
      case UnaryOpType::Tanh: return mathCall("tanhf", "tanh", ct, x, op);
      case UnaryOpType::Relu: return "smelt::relu(" + x + ")";
      case UnaryOpType::Abs:
        switch (ct) {
          case DataType::Float: return "fabsf(" + x + ")";
          case DataType::Double: return "fabs(" + x + ")";
          case DataType::Int: return "llabs(" + x + ")";
          case DataType::Int32:
          case DataType::Int16:
          case DataType::Int8: return "abs(" + x + ")";
          default: return x;  // bool, uint8
        }
      case UnaryOpType::Sqrt: return mathCall("sqrtf", "sqrt", ct, x, op);
      case UnaryOpType::Rsqrt: return mathCall("rsqrtf", "rsqrt", ct, x, op);
      case UnaryOpType::Log: return mathCall("logf", "log", ct, x, op);
      case UnaryOpType::Log2: return mathCall("log2f", "log2", ct, x, op);
      case UnaryOpType::Log1p: return mathCall("log1pf", "log1p", ct, x, op);
      case UnaryOpType::Exp2: return mathCall("exp2f", "exp2", ct, x, op);
      case UnaryOpType::Expm1: return mathCall("expm1f", "expm1", ct, x, op);
      case UnaryOpType::Sigmoid: return mathCall("smelt::sigmoid", "smelt::sigmoid", ct, x, op);
      case UnaryOpType::Erf: return mathCall("erff", "erf", ct, x, op);
      case UnaryOpType::Reciprocal:
        return mathCall("1.0f / ", "1.0 / ", ct, x, op);
      case UnaryOpType::Sin: return mathCall("sinf", "sin", ct, x, op);
      case UnaryOpType::Cos: return mathCall("cosf", "cos", ct, x, op);
      case UnaryOpType::Tan: return mathCall("tanf", "tan", ct, x, op);
      case UnaryOpType::Asin: return mathCall("asinf", "asin", ct, x, op);
      case UnaryOpType::Acos: return mathCall("acosf", "acos", ct, x, op);
      case UnaryOpType::Atan: return mathCall("atanf", "atan", ct, x, op);
      case UnaryOpType::Sinh: return mathCall("sinhf", "sinh", ct, x, op);
      case UnaryOpType::Cosh: return mathCall("coshf", "cosh", ct, x, op);
      case UnaryOpType::Asinh: return mathCall("asinhf", "asinh", ct, x, op);
      case UnaryOpType::Acosh: return mathCall("acoshf", "acosh", ct, x, op);
      case UnaryOpType::Atanh: return mathCall("atanhf", "atanh", ct, x, op);
      case UnaryOpType::Log10: return mathCall("log10f", "log10", ct, x, op);
      case UnaryOpType::Erfc: return mathCall("erfcf", "erfc", ct, x, op);
      case UnaryOpType::Lgamma: return mathCall("lgammaf", "lgamma", ct, x, op);
      case UnaryOpType::Floor: return roundingCall("floorf", "floor", ct, x, op);
      case UnaryOpType::Ceil: return roundingCall("ceilf", "ceil", ct, x, op);
      // rint rounds half to even, as torch.round does (round() would not).
      case UnaryOpType::Round: return roundingCall("rintf", "rint", ct, x, op);
      case UnaryOpType::Trunc: return roundingCall("truncf", "trunc", ct, x, op);
      case UnaryOpType::LogicalNot: return "!" + x;
      case UnaryOpType::BitwiseNot: return "~" + x;
#define SMELT_SPECIAL_CASE(Enum, name) case UnaryOpType::Enum:
      SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_CASE)
#undef SMELT_SPECIAL_CASE
        return specialCall(op, toString(op->op()), ct, {x});
      case UnaryOpType::Signbit: {
        const DataType in_ct = computeType(op->input(0)->dtype());
        const std::string v = operandValue(operandAt(c, 0), in_ct);
        if (isFloatingType(in_ct)) return "signbit(" + v + ")";
        return in_ct == DataType::Bool || in_ct == DataType::UInt8 ? "false" : v + " < 0";
      }
    }
    SMELT_INTERNAL_CHECK(false, "unknown unary op");
  }

  // The type a binary op computes in: comparisons in their operands' promoted
  // type, logical ops in bool, the rest in their result's type.
  static DataType binaryComputeType(const BinaryOp* op, DataType result_ct) {
    if (isLogical(op->op())) return DataType::Bool;
    if (isComparison(op->op())) return computeType(op->operandDtype());
    return result_ct;
  }

  std::string binary(const BinaryOp* op, const kir::Compute& c, DataType ct) {
    const std::string a = operandValue(operandAt(c, 0), ct);
    const std::string b = operandValue(operandAt(c, 1), ct);
    switch (op->op()) {
      case BinaryOpType::Add: return a + " + " + b;
      case BinaryOpType::Sub: return a + " - " + b;
      case BinaryOpType::Mul: return a + " * " + b;
      case BinaryOpType::Div:
        if (isIntegralType(ct)) return "smelt::idiv<" + cudaType(ct) + ">(" + a + ", " + b + ")";
        if (divisorRepeats(op->input(1))) return a + " * (" + literal(1.0, ct) + " / " + b + ")";
        return a + " / " + b;
      // Explicit template types: a literal operand (`3`) would not deduce as int64_t.
      case BinaryOpType::Maximum: return "smelt::maximum<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Minimum: return "smelt::minimum<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Pow:
        // The explicit type: a literal exponent (`39`) would not deduce as int64_t.
        if (isIntegralType(ct)) return "smelt::ipow<" + cudaType(ct) + ">(" + a + ", " + b + ")";
        return mathCall("powf", "pow", ct, a + ", " + b, op);
      case BinaryOpType::Remainder:
        return "smelt::remainder<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Fmod: return "smelt::fmod<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Atan2: return mathCall("atan2f", "atan2", ct, a + ", " + b, op);
      case BinaryOpType::Hypot: return mathCall("hypotf", "hypot", ct, a + ", " + b, op);
      case BinaryOpType::Copysign: return mathCall("copysignf", "copysign", ct, a + ", " + b, op);
      case BinaryOpType::Nextafter: return mathCall("nextafterf", "nextafter", ct, a + ", " + b, op);
      case BinaryOpType::ShiftLeft: return "smelt::shiftLeft<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::ShiftRight: return "smelt::shiftRight<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Gcd: return "smelt::gcd<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Lcm: return "smelt::lcm<" + cudaType(ct) + ">(" + a + ", " + b + ")";
      case BinaryOpType::Eq: return a + " == " + b;
      case BinaryOpType::Ne: return a + " != " + b;
      case BinaryOpType::Lt: return a + " < " + b;
      case BinaryOpType::Le: return a + " <= " + b;
      case BinaryOpType::Gt: return a + " > " + b;
      case BinaryOpType::Ge: return a + " >= " + b;
      case BinaryOpType::LogicalAnd: return a + " && " + b;
      case BinaryOpType::LogicalOr: return a + " || " + b;
      case BinaryOpType::BitwiseAnd: return a + " & " + b;
      case BinaryOpType::BitwiseOr: return a + " | " + b;
      case BinaryOpType::BitwiseXor: return a + " ^ " + b;
#define SMELT_SPECIAL_CASE(Enum, name) case BinaryOpType::Enum:
      SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_CASE)
#undef SMELT_SPECIAL_CASE
        return specialCall(op, toString(op->op()), ct, {a, b});
      case BinaryOpType::RandomUniform:
        return "smelt::randomUniform<" + cudaType(ct) + ">(" +
               operandValue(operandAt(c, 0), DataType::Int) + ", " +
               operandValue(operandAt(c, 1), DataType::Int) + ")";
    }
    SMELT_INTERNAL_CHECK(false, "unknown binary op");
  }

  // gathered_index = index[..] (checked against the table's extent, as
  // torch checks: out of range traps), then out = table[.., gathered_index, ..].
  void emitIndexSelect(const kir::Compute& c) {
    const auto* select = static_cast<const IndexSelectOp*>(c.expr);
    const IntExpr extent = select->table()->logicalNoReductions().at(select->dim())->loopExtent();
    const std::string index = kir::kGatheredIndexSymbol;
    open(c.predicate.alwaysTrue() ? "{" : "if (" + predicateText(c.predicate) + ") {");
    line("const int64_t " + index + "_value = " + operandValue(operandAt(c, 1), DataType::Int) + ";");
    line("if (" + index + "_value < 0 || " + index + "_value >= " + indexText(extent, true) +
         ") __trap();");
    line("const index_t " + index + " = static_cast<index_t>(" + index + "_value);");
    const DataType ct = computeType(c.out.buffer->dtype);
    line(element(c.out) + " = " + convert(operandValue(operandAt(c, 0), ct), ct, c.out.buffer->dtype) + ";");
    close();
  }

  // gathered_index = index[p] (negative ones wrapped where the op allows;
  // outside [0, size) traps, as torch's device assert, before any write),
  // then out[p with dim at gathered_index] combined with src[p]: stored for
  // Set, atomically otherwise (duplicate indices all contribute).
  void emitScatter(const kir::Compute& c) {
    const auto* scatter = static_cast<const ScatterOp*>(c.expr);
    const IntExpr extent = scatter->output()->logicalDomain().at(scatter->dim())->extent();
    const std::string index = kir::kGatheredIndexSymbol;
    const std::string size = indexText(extent, true);
    open(c.predicate.alwaysTrue() ? "{" : "if (" + predicateText(c.predicate) + ") {");
    line("int64_t " + index + "_value = " + operandValue(operandAt(c, 0), DataType::Int) + ";");
    if (scatter->wrapNegative()) line("if (" + index + "_value < 0) " + index + "_value += " + size + ";");
    line("if (" + index + "_value < 0 || " + index + "_value >= " + size + ") __trap();");
    line("const index_t " + index + " = static_cast<index_t>(" + index + "_value);");
    const DataType dtype = c.out.buffer->dtype;
    const DataType ct = computeType(dtype);
    const std::string type = cudaType(dtype);
    const std::string value = convert(operandValue(operandAt(c, 1), ct), ct, dtype);
    const std::string target = "&" + element(c.out);
    switch (scatter->combine()) {
      case ScatterCombine::Set: line(element(c.out) + " = " + value + ";"); break;
      case ScatterCombine::Add: line("smelt::atomicAccumulate(" + target + ", " + value + ");"); break;
      case ScatterCombine::Mul: case ScatterCombine::Max: case ScatterCombine::Min: {
        const std::string a = convert("a", dtype, ct), b = convert("b", dtype, ct);
        const std::string combined =
            scatter->combine() == ScatterCombine::Mul
                ? a + " * " + b
                : std::string(scatter->combine() == ScatterCombine::Max ? "smelt::maximum<" : "smelt::minimum<") +
                      cudaType(ct) + ">(" + a + ", " + b + ")";
        line("smelt::atomicCombine(" + target + ", " + value + ", [](" + type + " a, " + type +
             " b) { return " + convert(combined, ct, dtype) + "; });");
        break;
      }
    }
    close();
  }

  // One step of a scan (kir::ScanInit): operand 1, the running value,
  // combines operand 0; the output element takes it.
  void emitScanStep(const kir::Compute& c) {
    const auto* scan = static_cast<const ScanOp*>(c.expr);
    SMELT_CHECK(c.operands.size() == 2 && c.operands[1].access, "codegen: scan step of ",
                c.out.buffer->name, " needs its input and running value as operands");
    const kir::Access& carry = *c.operands[1].access;
    const DataType at = carry.buffer->dtype;
    const std::string running = element(carry);
    open(c.predicate.alwaysTrue() ? "{" : "if (" + predicateText(c.predicate) + ") {");
    line(running + " = " +
         codegen::scanCombine(scan->combine(), running, operandValue(c.operands[0], at), cudaType(at)) + ";");
    line(element(c.out) + " = " + convert(running, at, c.out.buffer->dtype) + ";");
    close();
  }

  void emitScanInit(const kir::ScanInit& s) {
    SMELT_CHECK(s.expr != nullptr, "codegen: scan init of ", s.carry.buffer->name, " has no expression");
    line(element(s.carry) + " = " + literal(s.expr->initValue(), s.carry.buffer->dtype) + ";");
  }

  void emitCompute(const kir::Compute& c) {
    SMELT_CHECK(c.expr != nullptr, "codegen: compute statement writing ", c.out.buffer->name,
                " has no fusion expression");
    if (c.expr->type() == ExprType::IndexSelect) return emitIndexSelect(c);
    if (c.expr->type() == ExprType::Scatter) return emitScatter(c);
    if (c.expr->type() == ExprType::Scan) return emitScanStep(c);
    DataType ct = computeType(c.out.buffer->dtype);
    std::string value;
    switch (c.expr->type()) {
      case ExprType::Full:
        // The fill value is the expression's unless lowering passed it as an operand.
        value = c.operands.empty() ? scalarValue(static_cast<const FullOp*>(c.expr)->fillValue(), ct)
                                   : operandValue(c.operands[0], ct);
        break;
      case ExprType::Iota:  // start + index * step
        value = operandValue(operandAt(c, 1), ct) + " + " + operandValue(operandAt(c, 0), ct) + " * " +
                operandValue(operandAt(c, 2), ct);
        break;
      case ExprType::Unary: value = unary(static_cast<const UnaryOp*>(c.expr), c, ct); break;
      case ExprType::Binary: {
        // A comparison's value is bool whatever it compares in.
        const auto* op = static_cast<const BinaryOp*>(c.expr);
        value = binary(op, c, binaryComputeType(op, ct));
        if (isComparison(op->op())) ct = DataType::Bool;
        break;
      }
      case ExprType::Where:
        value = operandValue(operandAt(c, 0), DataType::Bool) + " ? " +
                operandValue(operandAt(c, 1), ct) + " : " + operandValue(operandAt(c, 2), ct);
        break;
      case ExprType::Reduction:
        SMELT_CHECK(false, "codegen: reduction ", c.expr->toString(),
                    " must be lowered to ReduceInit/ReduceStep/BlockReduce, not Compute");
        break;
      case ExprType::IndexSelect:  // emitIndexSelect
      case ExprType::Scatter:      // emitScatter
      case ExprType::Scan:         // emitScanStep
      case ExprType::Mma:
        SMELT_CHECK(false, "codegen: ", c.expr->toString(),
                    " must be lowered to the tensor-core statements, not Compute");
        break;
      default:
        SMELT_INTERNAL_CHECK(isCopyLike(c.expr->type()), "codegen: no statement for ", c.expr->toString());
        value = operandValue(operandAt(c, 0), ct);
        break;
    }
    assign(c.predicate, c.out, value, ct);
  }

  std::string combine(const ReductionOp* op, const std::string& acc, const std::string& x) {
    switch (op->op()) {
      case ReductionOpType::Sum: return acc + " + " + x;
      case ReductionOpType::Prod: return acc + " * " + x;
      case ReductionOpType::Max: break;
    }
    return "smelt::maximum(" + acc + ", " + x + ")";
  }

  void emitReduceInit(const kir::ReduceInit& r) {
    SMELT_CHECK(r.expr != nullptr, "codegen: reduction init of ", r.out.buffer->name, " has no expression");
    const DataType ct = computeType(r.out.buffer->dtype);
    assign(r.predicate, r.out, literal(r.expr->initValue(), ct), ct);
  }

  void emitReduceStep(const kir::ReduceStep& r) {
    SMELT_CHECK(r.expr != nullptr, "codegen: reduction step into ", r.out.buffer->name, " has no expression");
    const DataType ct = computeType(r.out.buffer->dtype);
    const std::string acc = convert(element(r.out), r.out.buffer->dtype, ct);
    assign(r.predicate, r.out, combine(r.expr, acc, operandValue(r.in, ct)), ct);
  }

  // "<true, false, false>" for the axes among TIDx/y/z that are listed.
  static std::string functorName(ReductionOpType op) {
    switch (op) {
      case ReductionOpType::Sum: return "Sum";
      case ReductionOpType::Prod: return "Prod";
      case ReductionOpType::Max: break;
    }
    return "Max";
  }

  static std::string axisFlags(const std::vector<ParallelType>& axes, const char* what) {
    bool flags[3] = {false, false, false};
    for (ParallelType pt : axes) {
      SMELT_CHECK(isThreadDim(pt), "codegen: ", what, " over ", pt, ", not a thread axis");
      flags[static_cast<int>(pt) - static_cast<int>(ParallelType::TIDx)] = true;
    }
    SMELT_CHECK(!axes.empty(), "codegen: ", what, " over no thread axis");
    return std::string("<") + (flags[0] ? "true" : "false") + ", " + (flags[1] ? "true" : "false") +
           ", " + (flags[2] ? "true" : "false") + ">";
  }

  const kir::Buffer* workspace(const kir::Buffer* ws, const kir::Access& out, const char* what) {
    SMELT_CHECK(ws != nullptr && ws->memory == MemoryType::Shared, "codegen: ", what, " into ",
                out.buffer->name, " needs a Shared workspace buffer");
    return ws;
  }

  // What a thread contributes to a block reduction, in the type it combines
  // in: its element, or the identity where the predicate fails.
  std::string blockReduceValue(const kir::BlockReduce& r) {
    SMELT_CHECK(r.expr != nullptr, "codegen: block reduction into ", r.out.buffer->name, " has no expression");
    const DataType wt = blockReduceType(r.expr->output()->dtype());
    std::string value = convert(element(r.in), r.in.buffer->dtype, wt);
    if (!r.predicate.alwaysTrue()) {
      value = "(" + predicateText(r.predicate) + " ? " + value + " : " +
              convert(literal(r.expr->initValue(), computeType(wt)), computeType(wt), wt) + ")";
    }
    return value;
  }

  std::string blockReduceWorkspace(const kir::BlockReduce& r) {
    const bool in_warps = r.shuffle_group > 0 && r.shuffle_group * r.shuffle_stride <= 32;
    if (!in_warps) return workspace(r.workspace, r.out, "block reduction")->name;
    return "static_cast<" + cudaType(blockReduceType(r.expr->output()->dtype())) + "*>(nullptr)";
  }

  // Every thread takes part (the reduction synchronizes the block); only
  // those passing the write predicate store, as their output index is in
  // bounds, and of those one per element of a Shared or Global output.
  void storeReduced(const kir::BlockReduce& r, const std::string& reduced) {
    const std::string value = convert(reduced, blockReduceType(r.expr->output()->dtype()), r.out.buffer->dtype);
    const kir::Predicate& stores = r.write_predicate;
    if (stores.alwaysTrue()) {
      line(element(r.out) + " = " + value + ";");
      return;
    }
    line("if (" + predicateText(stores) + ") " + element(r.out) + " = " + value + ";");
  }

  void emitBlockReduce(const kir::BlockReduce& r) {
    const std::string value = blockReduceValue(r);
    const std::string op = "smelt::" + functorName(r.expr->op()) + "()";
    std::string call = "smelt::blockReduce" + axisFlags(r.thread_axes, "block reduction") + "(";
    if (r.shuffle_group > 0 && r.shuffle_stride > 1) {
      call = "smelt::stridedGroupReduce<" + std::to_string(r.shuffle_stride) + ", " +
             std::to_string(r.shuffle_group) + ">(";
    } else if (r.shuffle_group > 0) {
      call = "smelt::groupReduce<" + std::to_string(r.shuffle_group) + ", " +
             std::to_string(*threadsPerBlock()) + ">(";
    }
    const std::string reduced = call + value + ", " + blockReduceWorkspace(r) + ", " + op + ")";
    if (r.write_predicate.alwaysTrue()) return storeReduced(r, reduced);
    open("{");
    line("const auto reduced = " + reduced + ";");
    storeReduced(r, "reduced");
    close();
  }

  // The loop's independent block reductions (BlockReduce::grouped) in one
  // round: the values gathered in the loop, reduced together, stored in the
  // loop again.
  void emitGroupedBlockReduce(const kir::ForLoop& loop, const kir::BlockReduce& r) {
    const std::string value = blockReduceValue(r);
    SMELT_CHECK(r.shuffle_group > 0 && r.shuffle_stride > 1 && loop.extent.constant() == r.grouped,
                "codegen: block reductions into ", r.out.buffer->name, " are grouped over a loop of ",
                loop.extent.toString(), " trips without the strided shuffle form");
    const std::string n = std::to_string(r.grouped);
    const std::string values = r.out.buffer->name + "_grouped";
    const std::string header = "for (index_t " + loop.index + " = 0; " + loop.index + " < " + n + "; ++" +
                               loop.index + ") {";
    open("{  // " + n + " block reductions of " + loop.index + " in one round");
    line(cudaType(blockReduceType(r.expr->output()->dtype())) + " " + values + "[" + n + "];");
    line("#pragma unroll");
    open(header);
    line(values + "[" + loop.index + "] = " + value + ";");
    close();
    line("smelt::stridedGroupReduceN<" + std::to_string(r.shuffle_stride) + ", " + std::to_string(r.shuffle_group) +
         ">(" + values + ", " + blockReduceWorkspace(r) + ", smelt::" + functorName(r.expr->op()) + "());");
    line("#pragma unroll");
    open(header);
    storeReduced(r, values + "[" + loop.index + "]");
    close();
    close();
  }

  void emitBlockBroadcast(const kir::BlockBroadcast& b) {
    const kir::Buffer* ws = workspace(b.workspace, b.out, "block broadcast");
    const std::string value = convert(element(b.in), b.in.buffer->dtype, ws->dtype);
    line(element(b.out) + " = " +
         convert("smelt::blockBroadcast" + axisFlags(b.thread_axes, "block broadcast") + "(" + value +
                     ", " + ws->name + ")",
                 ws->dtype, b.out.buffer->dtype) +
         ";");
  }

  const kir::Kernel& kernel_;
  const std::string& name_;
  const CodegenOptions& options_;
  const bool narrow_index_;                       // index_t is int
  std::unordered_set<std::string> scalar_symbols_;  // symbolic scalar inputs
  const std::unordered_map<const kir::Buffer*, int64_t> vector_bytes_;
  std::unordered_set<const kir::Buffer*> fragment_buffers_;  // LdMatrix/Mma operands
  bool uses_tensor_cores_ = false;
  bool uses_hopper_ = false;  // mbarrier, TMA or wgmma statements
  bool combines_atomically_ = false;  // a scatter that is not Set: the atomics prelude
  bool adds_log_exps_ = false;  // a logcumsumexp: the logAddExp prelude
  bool scans_blocks_ = false;   // a kir::BlockScan: the blockScan prelude
  std::set<std::string> special_functions_;  // the special functions the kernel calls
  std::ostringstream os_;
  int depth_ = 0;
};

}  // namespace

const char* cudaPrelude() { return kPrelude; }

std::string generateCuda(const kir::Kernel& kernel, const std::string& kernel_name,
                         const CodegenOptions& options) {
  return Emitter(kernel, kernel_name, options).run();
}

IntExpr sharedMemoryBytes(const kir::Kernel& kernel) {
  IntExpr total = 0;
  for (const auto& buffer : kernel.buffers) {
    if (buffer->memory != MemoryType::Shared) continue;
    total = max(total, addressOf(buffer.get()) + buffer->bytes());
  }
  return total;
}

}  // namespace smelt
