// Loading and storing one element of any smelt DataType as a double. The
// simulator computes in double and rounds on store, the way the generated
// CUDA computes in float/double registers and converts when it writes a
// half/bfloat16 buffer. Half and bfloat16 are converted here (round to nearest
// even, as c10::Half and c10::BFloat16 do) so the interpreter core stays free
// of torch headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fusion/types.h"

namespace smelt::sim {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return sign | (mag > 0x7f800000u ? 0x7e00 : 0x7c00);  // NaN / inf
  if (mag >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to inf
  if (mag < 0x38800000u) {
    // Subnormal half: adding 0.5f puts the value's 2^-24 units in the low
    // mantissa bits, and the FPU rounds to nearest even for us.
    float shifted = bitsToFloat(mag) + 0.5f;
    return sign | static_cast<uint16_t>(floatBits(shifted) - floatBits(0.5f));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to
  // nearest even (the carry may bump the exponent, which is still correct).
  uint32_t odd = (mag >> 13) & 1u;
  mag += 0xc8000fffu + odd;
  return sign | static_cast<uint16_t>(mag >> 13);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t floatToBFloat16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float bfloat16ToFloat(uint16_t b) { return bitsToFloat(static_cast<uint32_t>(b) << 16); }

// Float -> integer as a C cast, made total: NaN gives 0 and out-of-range
// values saturate instead of being undefined behaviour.
template <typename Int>
Int saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<Int>::min())) {
    return std::numeric_limits<Int>::min();
  }
  if (v >= static_cast<double>(std::numeric_limits<Int>::max())) {
    return std::numeric_limits<Int>::max();
  }
  return static_cast<Int>(v);
}

inline double loadValue(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::Float: { float v; std::memcpy(&v, p, 4); return v; }
    case DataType::Double: { double v; std::memcpy(&v, p, 8); return v; }
    case DataType::Half: { uint16_t v; std::memcpy(&v, p, 2); return halfToFloat(v); }
    case DataType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); return bfloat16ToFloat(v); }
    case DataType::Int: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DataType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DataType::Bool: return *p != 0 ? 1.0 : 0.0;
    case DataType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DataType::Int8: return static_cast<int8_t>(*p);
    case DataType::UInt8: return *p;
  }
  return 0;
}

inline void storeValue(DataType dtype, uint8_t* p, double v) {
  switch (dtype) {
    case DataType::Float: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DataType::Double: std::memcpy(p, &v, 8); return;
    // Through float first, as ATen's half/bfloat16 kernels round their float results.
    case DataType::Half: {
      uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DataType::BFloat16: {
      uint16_t b = floatToBFloat16(static_cast<float>(v));
      std::memcpy(p, &b, 2);
      return;
    }
    case DataType::Int: { int64_t i = saturatingCast<int64_t>(v); std::memcpy(p, &i, 8); return; }
    case DataType::Int32: { int32_t i = saturatingCast<int32_t>(v); std::memcpy(p, &i, 4); return; }
    case DataType::Bool: *p = v != 0 ? 1 : 0; return;
    case DataType::Int16: { int16_t i = saturatingCast<int16_t>(v); std::memcpy(p, &i, 2); return; }
    case DataType::Int8: { int8_t i = saturatingCast<int8_t>(v); std::memcpy(p, &i, 1); return; }
    case DataType::UInt8: *p = saturatingCast<uint8_t>(v); return;
  }
}

// The exact integer path: integers (up to 64 bits) do not survive a double
// above 2^53, so integer arithmetic loads, computes and stores int64_t.
inline bool isIntegerStorage(DataType dtype) {
  return isIntegralType(dtype) || dtype == DataType::Bool;
}

inline int64_t loadInt(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::Int: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case DataType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DataType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DataType::Int8: return static_cast<int8_t>(*p);
    case DataType::UInt8: return *p;
    case DataType::Bool: return *p != 0 ? 1 : 0;
    default: return saturatingCast<int64_t>(loadValue(dtype, p));
  }
}

// Stores wrap to the buffer's width (two's complement), as a C cast on the GPU
// and torch's integer arithmetic do.
inline void storeInt(DataType dtype, uint8_t* p, int64_t v) {
  switch (dtype) {
    case DataType::Int: std::memcpy(p, &v, 8); return;
    case DataType::Int32: {
      int32_t i = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
      std::memcpy(p, &i, 4);
      return;
    }
    case DataType::Int16: {
      int16_t i = static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint64_t>(v)));
      std::memcpy(p, &i, 2);
      return;
    }
    case DataType::Int8:
    case DataType::UInt8: *p = static_cast<uint8_t>(static_cast<uint64_t>(v)); return;
    case DataType::Bool: *p = v != 0 ? 1 : 0; return;
    default: storeValue(dtype, p, static_cast<double>(v)); return;
  }
}

}  // namespace smelt::sim
