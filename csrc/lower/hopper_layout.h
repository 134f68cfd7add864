// The sm_90 data layouts the Hopper statements of the kernel IR (kir.h:
// TmaLoad, Wgmma) rely on, shared by codegen (which builds the descriptors
// in CUDA with the same constants) and the simulator (which decodes them).
// Facts from the PTX ISA: the wgmma shared-memory matrix descriptor and the
// m64nNk16 accumulator fragment; the 128-byte swizzle of TMA and wgmma.
#pragma once

#include <cstdint>

namespace smelt::hopper {

constexpr int64_t kWarpgroupThreads = 128;
constexpr int64_t kWgmmaM = 64;
constexpr int64_t kWgmmaK = 16;
// A 128-byte-swizzled tile: rows of 128 bytes, 8-row atoms of 1024 bytes.
constexpr int64_t kSwizzleRowBytes = 128;
constexpr int64_t kSwizzleAtomBytes = 1024;

// The shared byte where logical byte `address` of a 128-byte-swizzled tile
// is stored: its 16-byte chunk index (bits 4-6) XOR its row within the
// 8-row atom (bits 7-9). The hardware applies it to the absolute address,
// which is why such tiles are 1024-byte aligned.
inline int64_t swizzle128(int64_t address) { return address ^ (((address >> 7) & 7) << 4); }

// The wgmma matrix descriptor: bits 0-13 start address >> 4, 16-29 leading
// byte offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset, 62-63
// swizzle mode (1: 128-byte). For K-major tiles with 128-byte swizzle the
// leading offset is unused (1 by convention) and the stride offset is the
// distance between 8-row groups (1024 bytes).
constexpr uint64_t kDescriptorSwizzle128 = 1;
inline uint64_t wgmmaDescriptor(uint32_t shared_address) {
  return ((static_cast<uint64_t>(shared_address) & 0x3ffff) >> 4) | (uint64_t{1} << 16) |
         (static_cast<uint64_t>(kSwizzleAtomBytes >> 4) << 32) | (kDescriptorSwizzle128 << 62);
}

struct Descriptor {
  int64_t start = 0;          // bytes
  int64_t stride_bytes = 0;   // between 8-row groups
  int64_t swizzle_mode = 0;
};
inline Descriptor decodeDescriptor(uint64_t d) {
  return {static_cast<int64_t>((d & 0x3fff) << 4), static_cast<int64_t>(((d >> 32) & 0x3fff) << 4),
          static_cast<int64_t>(d >> 62)};
}

// The shared byte holding byte `k_byte` (0..31) of row `row` of the k16
// slice a K-major, 128-byte-swizzled descriptor describes.
inline int64_t descriptorByte(const Descriptor& d, int64_t row, int64_t k_byte) {
  return swizzle128(d.start + (row / 8) * d.stride_bytes + (row % 8) * kSwizzleRowBytes + k_byte);
}

struct RowCol {
  int64_t row = 0;
  int64_t col = 0;
};

// Accumulator i (0 .. n/2 - 1) of thread t (0..127) of the warpgroup in the
// m64nNk16 D fragment: warp t/32 owns rows 16 (t/32) .. + 15; lane l holds
// in each 8-column group j the pairs (l/4, 2 (l%4) + {0,1}) and (l/4 + 8, ..),
// registers 4j .. 4j+3.
inline RowCol wgmmaAccumulatorElement(int64_t thread, int64_t i) {
  const int64_t lane = thread % 32;
  return {16 * (thread / 32) + lane / 4 + 8 * ((i % 4) / 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2};
}

}  // namespace smelt::hopper
