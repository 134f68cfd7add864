#include "scheduler/matmul/matmul_params.h"

#include <algorithm>
#include <sstream>

#include "fusion/error.h"
#include "fusion/mma_fragment.h"

namespace smelt {

std::string toString(MatmulLayout layout) {
  switch (layout) {
    case MatmulLayout::TT: return "TT";
    case MatmulLayout::TN: return "TN";
    case MatmulLayout::NT: return "NT";
    case MatmulLayout::NN: return "NN";
  }
  SMELT_INTERNAL_CHECK(false, "unknown MatmulLayout");
}

bool aIsKContiguous(MatmulLayout layout) {
  return layout == MatmulLayout::TT || layout == MatmulLayout::TN;
}

bool bIsNContiguous(MatmulLayout layout) {
  return layout == MatmulLayout::TT || layout == MatmulLayout::NT;
}

std::string MatmulParams::toString() const {
  std::ostringstream os;
  os << "MatmulParams\n"
     << "  block tile (m, n, k): " << block_m << " x " << block_n << " x " << block_k << "\n"
     << "  thread tile (m, n): " << thread_m << " x " << thread_n << " (" << threadsX() << " x "
     << threadsY() << " threads)\n"
     << "  stages: " << stages << "\n"
     << "  smem epilogue: " << (smem_epilogue ? "yes" : "no") << "\n"
     << "  promote operand reuse: " << (promote_operand_reuse ? "yes" : "no");
  if (!promotion_reason.empty()) os << " (" << promotion_reason << ")";
  os << "\n  layout: " << smelt::toString(layout) << "\n  tensor cores: ";
  if (use_tensor_cores) {
    os << "yes (" << tensor_core.toString() << ")";
  } else {
    os << "no" << (tensor_core_blocker.empty() ? "" : " — " + tensor_core_blocker);
  }
  os << "\n";
  return os.str();
}

int64_t operandRowPadding(bool k_contiguous, DataType dtype) {
  return k_contiguous ? std::max<int64_t>(1, 4 / dataTypeSize(dtype)) : 0;
}

MatmulSmemEstimate estimateSmem(const MatmulParams& params, DataType a_type, DataType b_type) {
  MatmulSmemEstimate e;
  const bool pad = params.pad_k_contiguous_tiles;
  const int64_t a_row = params.block_k + operandRowPadding(pad && aIsKContiguous(params.layout), a_type);
  const int64_t b_row = params.block_k + operandRowPadding(pad && !bIsNContiguous(params.layout), b_type);
  const int64_t a_tile = params.block_m * a_row * dataTypeSize(a_type);
  const int64_t b_tile = b_row * params.block_n * dataTypeSize(b_type);
  e.operand_bytes = params.stages * (a_tile + b_tile);
  e.epilogue_bytes =
      params.smem_epilogue ? params.block_m * params.block_n * dataTypeSize(DataType::Float) : 0;
  e.no_reuse_bytes = e.operand_bytes + e.epilogue_bytes;
  e.reuse_bytes = std::max(e.operand_bytes, e.epilogue_bytes);
  return e;
}

int64_t blocksPerSm(int64_t threads, int64_t smem_bytes, const DeviceLimits& device) {
  int64_t blocks = std::min(device.max_blocks_per_sm, device.max_threads_per_sm / threads);
  if (smem_bytes > device.max_shared_memory_per_block) return 0;
  if (smem_bytes > 0) {
    blocks = std::min(blocks, device.shared_memory_per_sm /
                                  (smem_bytes + device.reserved_shared_memory_per_block));
  }
  return blocks;
}

OperandReuseDecision decideOperandReuse(const MatmulParams& params, DataType a_type,
                                        DataType b_type, bool operand_used_after_main_loop,
                                        const DeviceLimits& device) {
  OperandReuseDecision d;
  d.smem = estimateSmem(params, a_type, b_type);
  d.blocks_per_sm_without = blocksPerSm(params.threads(), d.smem.no_reuse_bytes, device);
  d.blocks_per_sm_with = blocksPerSm(params.threads(), d.smem.reuse_bytes, device);
  auto bytes = [](int64_t b) { return std::to_string(b) + " B"; };
  if (!params.smem_epilogue) {
    d.reason = "no shared epilogue tile to reuse the operand tiles' bytes";
    return d;
  }
  if (operand_used_after_main_loop) {
    d.reason = "an operand is used after the main loop";
    return d;
  }
  const bool over_limit = d.smem.no_reuse_bytes > device.max_shared_memory_per_block;
  if (over_limit && d.smem.reuse_bytes <= device.max_shared_memory_per_block) {
    d.promote = true;
    d.reason = "required to fit: " + bytes(d.smem.no_reuse_bytes) + " without reuse exceeds the " +
               bytes(device.max_shared_memory_per_block) + " per-block limit, " +
               bytes(d.smem.reuse_bytes) + " with";
  } else if (d.blocks_per_sm_with > d.blocks_per_sm_without) {
    d.promote = true;
    d.reason = "raises blocks per SM from " + std::to_string(d.blocks_per_sm_without) + " to " +
               std::to_string(d.blocks_per_sm_with) + " (" + bytes(d.smem.no_reuse_bytes) +
               " -> " + bytes(d.smem.reuse_bytes) + ")";
  } else if (over_limit) {
    d.reason = "does not fit even with reuse (" + bytes(d.smem.reuse_bytes) + ")";
  } else {
    d.reason = "does not raise blocks per SM (" + std::to_string(d.blocks_per_sm_without) + ")";
  }
  return d;
}

TensorCoreMatmulParams tensorCoreHeuristics(std::optional<int64_t> m, std::optional<int64_t> n,
                                            std::optional<int64_t> k, bool a_k_contiguous,
                                            bool b_k_contiguous, const DeviceLimits& device) {
  SMELT_CHECK(device.arch >= 80, "tensor-core matmul: sm_", device.arch,
              " has no mma.sync m16n8k16 with ldmatrix and cp.async (sm_80 or newer)");
  auto tile = [](std::optional<int64_t> e) {
    int64_t t = 16;
    while (e && t < *e && t < 128) t *= 2;
    return e ? t : int64_t{128};
  };
  TensorCoreMatmulParams p;
  p.a_k_contiguous = a_k_contiguous;
  p.b_k_contiguous = b_k_contiguous;
  p.block_m = tile(m);
  p.block_n = tile(n);
  // Warp tiles up to 64 x 32: 64 fp32 accumulators per thread, so a
  // 128 x 128 block runs 8 warps at 128 registers (two blocks per SM)
  // rather than 4 warps at 240 (one).
  const bool two_rows = p.block_m >= 64 && p.block_n >= 64;
  p.warp_m = two_rows ? p.block_m / 2 : std::min<int64_t>(p.block_m, 32);
  p.warp_n = std::min<int64_t>(two_rows ? p.block_n / 2 : p.block_n, 32);
  p.block_k = k && *k <= mma::kK ? mma::kK : 32;
  auto chunks_divide = [&] {
    return (p.block_m * p.block_k / 8) % p.threads() == 0 &&
           (p.block_n * p.block_k / 8) % p.threads() == 0;
  };
  while (!chunks_divide()) p.block_k *= 2;
  const int64_t k_tiles = k ? (*k + p.block_k - 1) / p.block_k : 4;
  p.stages = std::clamp<int64_t>(k_tiles, 2, 4);
  const int64_t budget = std::min(device.max_shared_memory_per_block,
                                  std::max(device.shared_memory_per_sm / 2 - device.reserved_shared_memory_per_block,
                                           operandTileBytes([&] {
                                             TensorCoreMatmulParams two = p;
                                             two.stages = 2;
                                             return two;
                                           }())));
  while (p.stages > 2 && operandTileBytes(p) > budget) --p.stages;
  checkTensorCoreParams(p);
  return p;
}

void chooseTensorCoreEpilogue(TensorCoreMatmulParams& p, std::optional<int64_t> n, DataType output) {
  TensorCoreMatmulParams shared = p;
  shared.smem_epilogue = true;
  p.smem_epilogue = sharedEpilogueVector(p, n, output) > 0 && epilogueTileBytes(shared) <= operandTileBytes(p);
  p.promote_reuse = p.smem_epilogue;
}


}  // namespace smelt
