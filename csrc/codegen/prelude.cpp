#include "codegen/prelude.h"

#include <set>

#include "codegen/cuda_codegen.h"
#include "codegen/hopper_ops.h"
#include "codegen/scan_prelude.h"
#include "codegen/scatter_prelude.h"
#include "codegen/special_math_prelude.h"
#include "codegen/tensor_core.h"
#include "fusion/error.h"
#include "fusion/random_bits.h"
#include "lower/kir_families.h"

namespace smelt {
namespace codegen {
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

// The optional parts of the prelude a kernel's statements use.
struct PreludeParts {
  bool half = false;    // a Half buffer or scalar: cuda_fp16.h
  bool bfloat = false;  // a BFloat16 one: cuda_bf16.h
  bool tensor_cores = false;
  bool hopper = false;             // mbarrier, TMA or wgmma statements
  bool atomic_combines = false;    // a scatter that is not Set
  bool log_add_exps = false;       // a logcumsumexp
  bool block_scans = false;        // a kir::BlockScan
  std::set<std::string> special_functions;
};

PreludeParts preludeParts(const kir::Kernel& kernel) {
  PreludeParts parts;
  for (const auto& buffer : kernel.buffers) {
    parts.half |= buffer->dtype == DataType::Half;
    parts.bfloat |= buffer->dtype == DataType::BFloat16;
  }
  for (const Scalar* scalar : kernel.scalar_inputs) {
    parts.half |= scalar->dtype() == DataType::Half;
    parts.bfloat |= scalar->dtype() == DataType::BFloat16;
  }
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
    parts.tensor_cores |= kir::isTensorCoreStmt(stmt->kind());
    parts.hopper |= kir::isHopperStmt(stmt->kind());
    parts.block_scans |= stmt->kind() == kir::StmtKind::BlockScan;
    const auto* c = dynamic_cast<const kir::Compute*>(stmt);
    if (c == nullptr) return;
    if (const auto* scatter = dynamic_cast<const ScatterOp*>(c->expr)) {
      parts.atomic_combines |= scatter->combine() != ScatterCombine::Set;
    }
    if (const auto* scan = dynamic_cast<const ScanOp*>(c->expr)) {
      parts.log_add_exps |= scan->combine() == ScanCombine::LogAddExp;
    }
    if (const auto* u = dynamic_cast<const UnaryOp*>(c->expr); u != nullptr && isSpecial(u->op())) {
      parts.special_functions.insert(toString(u->op()));
    } else if (const auto* b = dynamic_cast<const BinaryOp*>(c->expr); b != nullptr && isSpecial(b->op())) {
      parts.special_functions.insert(toString(b->op()));
    }
  });
  return parts;
}

}  // namespace

std::string kernelPrelude(const kir::Kernel& kernel, DataType index_type, bool vectorized,
                          const std::string& block_constants) {
  const PreludeParts parts = preludeParts(kernel);
  std::string text;
  if (parts.half) text += "#include <cuda_fp16.h>\n";
  if (parts.bfloat) text += "#include <cuda_bf16.h>\n";
  if (parts.half || parts.bfloat) text += "\n";
  text += indexTypedef(index_type) + block_constants + kPrelude;
  if (vectorized) text += kVectorPrelude;
  if (parts.tensor_cores) text += kTensorCorePrelude;
  if (parts.hopper) text += hopperPrelude(kernel);
  if (parts.atomic_combines) text += kScatterPrelude;
  if (parts.log_add_exps) text += kLogAddExpPrelude;
  if (parts.block_scans) text += kBlockScanPrelude;
  return text + specialMathPrelude(parts.special_functions);
}

}  // namespace codegen

const char* cudaPrelude() { return codegen::kPrelude; }

}  // namespace smelt
