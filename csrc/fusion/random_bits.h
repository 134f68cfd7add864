// The counter-based random bits behind random_uniform, defined once for the
// host (the simulator) and the device (the kernel prelude takes the same
// text as a string), so both draw identical values for a (seed, counter).
// The mixing is splitmix64's finalizer: a seed picks a key, and the counter
// steps through the key's stream by the golden-ratio increment.
#pragma once

#define SMELT_RANDOM_BITS(QUALIFIERS)                                                      \
  QUALIFIERS unsigned long long randomMix(unsigned long long z) {                          \
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;                                           \
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;                                           \
    return z ^ (z >> 31);                                                                  \
  }                                                                                        \
  QUALIFIERS unsigned long long randomBits(long long seed, long long counter) {            \
    const unsigned long long key =                                                         \
        randomMix(static_cast<unsigned long long>(seed) * 0x9e3779b97f4a7c15ULL + 1ULL);   \
    return randomMix(key + static_cast<unsigned long long>(counter) * 0x9e3779b97f4a7c15ULL); \
  }

#define SMELT_STRINGIFY_TOKENS(...) #__VA_ARGS__
#define SMELT_STRINGIFY(...) SMELT_STRINGIFY_TOKENS(__VA_ARGS__)
// The device definition, as source text for the kernel prelude.
#define SMELT_RANDOM_BITS_SOURCE SMELT_STRINGIFY(SMELT_RANDOM_BITS(__device__ inline))

namespace smelt {
SMELT_RANDOM_BITS(inline)

// random_uniform's value for a Float (24 bits) or a Double (53 bits) result.
inline double randomUniformValue(long long seed, long long counter, bool is_double) {
  const unsigned long long bits = randomBits(seed, counter);
  return is_double ? static_cast<double>(bits >> 11) * 0x1p-53
                   : static_cast<double>(bits >> 40) * 0x1p-24;
}
}  // namespace smelt
