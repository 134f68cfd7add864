#include "fusion/mma_params.h"

#include <sstream>
#include <utility>

#include "fusion/device_limits.h"
#include "fusion/error.h"
#include "fusion/mma_fragment.h"

namespace smelt {

std::string TensorCoreMatmulParams::toString() const {
  std::ostringstream os;
  os << "block " << block_m << "x" << block_n << "x" << block_k << ", warp " << warp_m << "x"
     << warp_n << " (" << warps() << " warps), stages " << stages << ", A "
     << (a_k_contiguous ? "K" : "M") << "-contiguous, B " << (b_k_contiguous ? "K" : "N")
     << "-contiguous, swizzle " << (swizzle ? "on" : "off") << ", smem epilogue "
     << (smem_epilogue ? "on" : "off") << ", promote reuse " << (promote_reuse ? "on" : "off");
  return os.str();
}

namespace {
bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
}  // namespace

int64_t operandTileBytes(const TensorCoreMatmulParams& p) {
  return p.stages * (p.block_m + p.block_n) * p.block_k * 2;
}

int64_t epilogueTileBytes(const TensorCoreMatmulParams& p) {
  return p.smem_epilogue ? p.block_m * p.block_n * 4 : 0;
}

int64_t sharedEpilogueVector(const TensorCoreMatmulParams& p, std::optional<int64_t> n, DataType output) {
  const int64_t vector = 16 / dataTypeSize(output);
  const int64_t per_thread = p.block_m * p.block_n / p.threads();
  const bool fits = vector >= 2 && n && *n % vector == 0 && p.block_n % vector == 0 && per_thread % vector == 0;
  return fits ? vector : 0;
}

void checkTensorCoreParams(const TensorCoreMatmulParams& p) {
  for (auto [value, name] : {std::pair{p.block_m, "block_m"}, {p.block_n, "block_n"},
                             {p.block_k, "block_k"}, {p.warp_m, "warp_m"}, {p.warp_n, "warp_n"}}) {
    SMELT_CHECK(isPowerOfTwo(value), "tensor-core matmul: ", name, " = ", value,
                " is not a power of two (", p.toString(), ")");
  }
  SMELT_CHECK(p.warp_m % mma::kM == 0 && p.warp_n % mma::kN == 0 && p.block_k % mma::kK == 0,
              "tensor-core matmul: the warp tile ", p.warp_m, "x", p.warp_n, " and block_k ",
              p.block_k, " must be multiples of the m16n8k16 instruction");
  SMELT_CHECK(p.block_m % p.warp_m == 0 && p.block_n % p.warp_n == 0,
              "tensor-core matmul: the block tile ", p.block_m, "x", p.block_n,
              " is not a multiple of the warp tile ", p.warp_m, "x", p.warp_n);
  SMELT_CHECK(p.stages >= 2, "tensor-core matmul: stages = ", p.stages,
              "; the cp.async pipeline needs at least 2");
  const int64_t max_threads = DeviceLimits::sm90().max_threads_per_block;  // the same on every arch
  SMELT_CHECK(p.threads() <= max_threads, "tensor-core matmul: ", p.threads(),
              " threads per block exceed ", max_threads);
  const int64_t chunks_a = p.block_m * p.block_k / 8;
  const int64_t chunks_b = p.block_n * p.block_k / 8;
  SMELT_CHECK(chunks_a % p.threads() == 0 && chunks_b % p.threads() == 0,
              "tensor-core matmul: the A and B tiles have ", chunks_a, " and ", chunks_b,
              " 16-byte chunks, not multiples of the ", p.threads(), " threads that copy them");
  SMELT_CHECK(!p.smem_epilogue || p.block_m * p.block_n % p.threads() == 0,
              "tensor-core matmul: the C_s tile is not a multiple of the thread count");
  SMELT_CHECK(!p.promote_reuse || p.smem_epilogue,
              "tensor-core matmul: promote_reuse needs the shared-memory epilogue");
}

}  // namespace smelt
