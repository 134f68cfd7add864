// Generator of kernel-like shared-memory buffer sets for the planner
// benchmark (bench_alloc_plan) and the planner fuzzer: what a fused kernel
// hands the planner, without building the kernel.
//
// - phased: the kernel is a sequence of phases (prologue, main loop stages,
//   reductions, epilogue) separated by block barriers; each phase allocates
//   1-5 buffers live inside it, and about one buffer in four is carried into
//   the next phase or the one after (an accumulator, an operand tile the
//   epilogue reads again).
// - unphased: first writes anywhere, mostly short lifetimes with a few long
//   ones, barriers at random positions (about one position in six).
// - sizes: aligned ones are multiples of 16 B (tile-like powers of two half
//   the time) up to 32 KiB; unaligned ones are 2 or 4 B elements times any
//   count up to 8192. One buffer in eight asks for 128 B alignment.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lower/alloc_reuse/buffer_set.h"

namespace smelt::bench {

struct KernelLikeSet {
  std::vector<alloc_reuse::Buffer> buffers;
  std::vector<int64_t> barriers;
  int64_t end = 0;
};

inline KernelLikeSet kernelLikeSet(std::mt19937_64& rng, size_t n, bool phased, bool aligned) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto bytes = [&]() -> int64_t {
    if (aligned) {
      if (uniform(0, 1) == 0) return int64_t{16} << uniform(0, 11);  // 16 B .. 32 KiB
      return 16 * uniform(1, 2048);
    }
    return (uniform(0, 1) == 0 ? 2 : 4) * uniform(1, 8192);
  };
  KernelLikeSet set;
  auto add = [&](int64_t first, int64_t last) {
    alloc_reuse::Buffer b;
    b.name = "b" + std::to_string(set.buffers.size());
    b.dtype = "float";
    b.bytes = bytes();
    b.alignment = uniform(0, 7) == 0 ? 128 : 16;
    b.first_write = first;
    b.last_read = last;
    b.creation_order = static_cast<int64_t>(set.buffers.size());
    set.buffers.push_back(std::move(b));
  };
  if (phased) {
    int64_t position = 0;
    while (set.buffers.size() < n) {
      const int64_t length = uniform(4, 12);
      const int64_t start = position;
      const int64_t count = std::min<int64_t>(uniform(1, 5), static_cast<int64_t>(n - set.buffers.size()));
      for (int64_t k = 0; k < count; ++k) {
        const int64_t first = start + uniform(0, length / 2);
        int64_t last = std::min(start + length - 1, first + uniform(0, length - 1));
        if (uniform(0, 3) == 0) last += length * uniform(1, 2);  // carried into a later phase
        add(first, last);
      }
      position += length;
      set.barriers.push_back(position);  // the barrier closing the phase
      position += 1;
    }
    set.end = position;
    for (alloc_reuse::Buffer& b : set.buffers) b.last_read = std::min(b.last_read, set.end);
  } else {
    const int64_t positions = static_cast<int64_t>(3 * n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t first = uniform(0, positions - 1);
      const int64_t life = uniform(0, 9) < 7 ? uniform(0, 6) : uniform(0, positions / 3);
      add(first, std::min(positions - 1, first + life));
    }
    for (int64_t p = 0; p < positions; ++p) {
      if (uniform(0, 5) == 0) set.barriers.push_back(p);
    }
    set.end = positions;
  }
  return set;
}

}  // namespace smelt::bench
