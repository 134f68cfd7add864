// Added to a kernel's prelude when it scatters with a combining mode
// (ScatterOp, fusion/ir.h): several index positions may name one element,
// so each contribution is combined atomically.
#pragma once

namespace smelt::codegen {

constexpr const char* kScatterPrelude = R"(
namespace smelt {

// *address = f(*address, value), atomically: a compare-and-swap loop on the
// aligned word holding the element (an element narrower than 4 bytes
// shares its word with neighbours, which the loop writes back unchanged).
template <typename T, typename F>
__device__ void atomicCombine(T* address, T value, F f) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long* word = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      T current;
      memcpy(&current, &assumed, 8);
      const T next = f(current, value);
      unsigned long long desired;
      memcpy(&desired, &next, 8);
      old = atomicCAS(word, assumed, desired);
    } while (old != assumed);
  } else {
    const unsigned long long at = reinterpret_cast<unsigned long long>(address);
    unsigned int* word = reinterpret_cast<unsigned int*>(at & ~3ull);
    const unsigned shift = static_cast<unsigned>(at & 3ull) * 8u;
    const unsigned mask =
        sizeof(T) == 4 ? 0xffffffffu : ((1u << (8u * sizeof(T))) - 1u) << shift;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const unsigned bits = (assumed & mask) >> shift;
      T current;
      memcpy(&current, &bits, sizeof(T));
      const T next = f(current, value);
      unsigned next_bits = 0;
      memcpy(&next_bits, &next, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((next_bits << shift) & mask));
    } while (old != assumed);
  }
}

// Native atomic adds where the hardware has them (half and bfloat16 on
// sm_80+, the targets), the loop above for the other types.
__device__ inline void atomicAccumulate(float* a, float v) { atomicAdd(a, v); }
__device__ inline void atomicAccumulate(double* a, double v) { atomicAdd(a, v); }
__device__ inline void atomicAccumulate(int* a, int v) { atomicAdd(a, v); }
__device__ inline void atomicAccumulate(int64_t* a, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(a), static_cast<unsigned long long>(v));
}
#ifdef __CUDA_FP16_TYPES_EXIST__
__device__ inline void atomicAccumulate(__half* a, __half v) { atomicAdd(a, v); }
#endif
#ifdef __CUDA_BF16_TYPES_EXIST__
__device__ inline void atomicAccumulate(__nv_bfloat16* a, __nv_bfloat16 v) { atomicAdd(a, v); }
#endif
template <typename T>
__device__ void atomicAccumulate(T* a, T v) {
  atomicCombine(a, v, [](T x, T y) { return static_cast<T>(x + y); });
}

}  // namespace smelt
)";

}  // namespace smelt::codegen
