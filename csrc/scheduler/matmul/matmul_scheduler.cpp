#include "scheduler/matmul/matmul_scheduler.h"

#include <algorithm>
#include <unordered_set>

#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/transform_replay.h"
#include "scheduler/utils.h"

namespace smelt {

namespace {

// An operand's chain from the fusion input to the broadcast the product
// reads: input -> [cast] -> broadcast.
struct OperandChain {
  TensorView* input = nullptr;
  Expr* first = nullptr;  // reads `input`
  std::vector<TensorView*> tensors;  // computed ones, cast and broadcast
  bool used_elsewhere = false;
};

// The chain ending in `broadcast_out`, or a reason it is not one.
std::string operandChain(TensorView* broadcast_out, const char* which, OperandChain& chain) {
  chain.tensors.push_back(broadcast_out);
  chain.used_elsewhere = broadcast_out->uses().size() > 1;
  Expr* def = broadcast_out->definition();
  TensorView* x = def->input(0)->asTensor();
  chain.first = def;
  if (x->definition() != nullptr && x->definition()->type() == ExprType::Unary &&
      static_cast<const UnaryOp*>(x->definition())->op() == UnaryOpType::Cast) {
    chain.tensors.insert(chain.tensors.begin(), x);
    chain.used_elsewhere |= x->uses().size() > 1;
    chain.first = x->definition();
    x = x->definition()->input(0)->asTensor();
  }
  if (!x->isFusionInput()) {
    return errorMessage("operand ", which, " (", x->name(),
                        ") is computed in the fusion; the matmul scheduler loads its operands "
                        "from fusion inputs");
  }
  chain.input = x;
  chain.used_elsewhere |= x->uses().size() > 1;
  return "";
}

bool isBroadcastLike(const TensorView* tv, const std::vector<bool>& flags) {
  const Expr* def = tv->definition();
  return def != nullptr && def->type() == ExprType::Broadcast &&
         static_cast<const BroadcastOp*>(def)->isNewAxis() == flags;
}

struct Analysis {
  MatmulPattern pattern;
  OperandChain a;
  OperandChain b;
  TensorView* product = nullptr;
};

// Fills `result` and returns "", or returns why the fusion is not a matmul
// with a pointwise epilogue.
std::string analyze(const Fusion& fusion, Analysis& result) {
  MatmulPattern& p = result.pattern;
  const ReductionOp* reduction = nullptr;
  for (Expr* e : fusion.exprs()) {
    // A reshape regroups M or N: the epilogue's loops follow the output tile
    // and cannot index a split or merged M (the segmenter runs it after).
    if (e->type() == ExprType::Pad || e->type() == ExprType::Reshape ||
        e->type() == ExprType::IndexSelect) {
      return e->toString() + " is not a pointwise epilogue op";
    }
    if (e->type() != ExprType::Reduction) continue;
    if (reduction != nullptr) {
      return errorMessage("the fusion has two reductions (", reduction->output()->name(), " and ",
                          e->output()->name(), "); the matmul scheduler takes one matmul and a "
                          "pointwise epilogue");
    }
    reduction = static_cast<const ReductionOp*>(e);
  }
  const char* pattern_help = " (a sum over K of broadcast operands, as matmul() builds)";
  if (reduction == nullptr) return std::string("the fusion has no matmul") + pattern_help;
  p.sum = reduction->output();
  const Expr* product = reduction->input(0)->definition();
  const size_t rank = p.sum->logicalDomain().size();
  p.batched = rank == 4;
  const size_t batch = p.batched ? 1 : 0;
  bool is_product = reduction->op() == ReductionOpType::Sum && product != nullptr &&
                    product->type() == ExprType::Binary &&
                    static_cast<const BinaryOp*>(product)->op() == BinaryOpType::Mul &&
                    (rank == 3 || rank == 4);
  for (size_t d = 0; is_product && d < rank; ++d) {
    is_product = p.sum->axis(d)->isReduction() == (d == batch + 1);
  }
  if (!is_product) return "reduction " + p.sum->name() + " is not a matmul" + pattern_help;
  TensorView* lhs = product->input(0)->asTensor();
  TensorView* rhs = product->input(1)->asTensor();
  if (!lhs || !rhs) return product->toString() + " multiplies by a scalar";
  // [(B,) M, K, 1] x [(B,) 1, K, N]
  std::vector<bool> a_flags{false, false, true};
  std::vector<bool> b_flags{true, false, false};
  if (p.batched) {
    a_flags.insert(a_flags.begin(), false);
    b_flags.insert(b_flags.begin(), false);
  }
  if (isBroadcastLike(lhs, b_flags)) std::swap(lhs, rhs);
  if (!isBroadcastLike(lhs, a_flags) || !isBroadcastLike(rhs, b_flags)) {
    return product->toString() + " does not multiply an [(B,) M, K, 1] by a [(B,) 1, K, N] " +
           "broadcast" + pattern_help;
  }
  for (auto [side, chain] : {std::pair{lhs, &result.a}, std::pair{rhs, &result.b}}) {
    std::string reason = operandChain(side, chain == &result.a ? "A" : "B", *chain);
    if (!reason.empty()) return reason;
  }
  result.product = product->output();
  p.a = result.a.input;
  p.b = result.b.input;
  p.a_use = result.a.first;
  p.b_use = result.b.first;
  if (result.a.used_elsewhere) p.operand_used_elsewhere = p.a;
  if (result.b.used_elsewhere && p.operand_used_elsewhere == nullptr) p.operand_used_elsewhere = p.b;

  // The epilogue runs in the output tile's loops: a permute that moves the
  // two innermost axes (M and N, or what broadcasts made of them) would read
  // the accumulator across blocks (the segmenter runs it after instead).
  std::unordered_set<const Val*> downstream{p.sum};
  for (Expr* e : fusion.exprs()) {
    const bool reads_tile = std::any_of(e->inputs().begin(), e->inputs().end(),
                                        [&](const Val* v) { return downstream.count(v) > 0; });
    if (!reads_tile) continue;
    for (const Val* out : e->outputs()) downstream.insert(out);
    if (e->type() != ExprType::Permute) continue;
    const std::vector<int64_t>& dims = static_cast<const PermuteOp*>(e)->dims();
    const int64_t rank = static_cast<int64_t>(dims.size());
    if (rank >= 2 && (dims[rank - 2] != rank - 2 || dims[rank - 1] != rank - 1)) {
      return e->toString() + " moves the output tile's rows or columns; the epilogue must keep them";
    }
  }
  if (fusion.outputs().size() != 1 || fusion.outputs()[0]->asTensor() == nullptr) {
    return errorMessage("the fusion has ", fusion.outputs().size(),
                        " outputs; the matmul scheduler writes exactly one tensor");
  }
  p.output = fusion.outputs()[0]->asTensor();
  if (p.output->logicalNoReductions().size() != 2 + batch) {
    return errorMessage("output ", p.output->name(), " has rank ",
                        p.output->logicalNoReductions().size(), ", not the ",
                        p.batched ? "[B, M, N]" : "[M, N]", " of the matmul");
  }
  return "";
}

Analysis analyzeOrThrow(const Fusion& fusion) {
  Analysis result;
  std::string reason = analyze(fusion, result);
  SMELT_CHECK(reason.empty(), "scheduleMatmul: ", reason);
  return result;
}

void checkParams(const MatmulParams& p) {
  auto positive = [](int64_t v) { return v > 0; };
  SMELT_CHECK(positive(p.block_m) && positive(p.block_n) && positive(p.block_k) &&
                  positive(p.thread_m) && positive(p.thread_n) && positive(p.stages),
              "scheduleMatmul: tile sizes and stages must be positive\n", p.toString());
  SMELT_CHECK(p.block_m % p.thread_m == 0 && p.block_n % p.thread_n == 0,
              "scheduleMatmul: the block tile ", p.block_m, " x ", p.block_n,
              " is not a multiple of the thread tile ", p.thread_m, " x ", p.thread_n);
  SMELT_CHECK(p.threads() <= DeviceLimits::sm90().max_threads_per_block, "scheduleMatmul: ",
              p.threads(), " threads per block exceed ", DeviceLimits::sm90().max_threads_per_block,
              "; enlarge the thread tile");
}

// The block and register tiling of an [M, N] tensor, or of the accumulator
// [M, rK, N] with its K loop: [Mo, No, (rKo,) BMt (TIDy), BNt (TIDx), (rKi,)
// TM, TN]. Thread (ty, tx) owns rows ty + i * BM/TM and columns tx + j *
// BN/TN of the block tile, so consecutive threads touch consecutive columns.
//
// A batched tensor keeps its batch axis outermost, on BIDz; every axis
// position below then shifts by `b` = 1.
void scheduleOutputTile(TensorView* tv, const MatmulParams& p, bool batched) {
  const int64_t b = batched ? 1 : 0;
  const bool has_k = tv->nDims() == 3 + b;
  const int64_t n = b + (has_k ? 2 : 1);
  tv->split(n, p.block_n);                           // [M, (rK,) No, BN]
  tv->split(n + 1, p.thread_n, /*inner_split=*/false);  // [M, (rK,) No, TN, BNt]
  tv->split(b, p.block_m);                           // [Mo, BM, (rK,) No, TN, BNt]
  tv->split(b + 1, p.thread_m, /*inner_split=*/false);  // [Mo, TM, BMt, (rK,) No, TN, BNt]
  std::unordered_map<int64_t, int64_t> order;
  if (has_k) {
    tv->split(b + 3, p.block_k);  // [Mo, TM, BMt, rKo, rKi, No, TN, BNt]
    order = {{5, 1}, {3, 2}, {2, 3}, {7, 4}, {4, 5}, {1, 6}, {6, 7}};
  } else {
    order = {{3, 1}, {2, 2}, {5, 3}, {1, 4}, {4, 5}};  // [Mo, No, BMt, BNt, TM, TN]
  }
  std::unordered_map<int64_t, int64_t> shifted;
  for (auto [from, to] : order) shifted[from + b] = to + b;
  tv->reorder(shifted);
  if (batched) tv->axis(0)->parallelize(ParallelType::BIDz);
  tv->axis(b)->parallelize(ParallelType::BIDy);
  tv->axis(b + 1)->parallelize(ParallelType::BIDx);
  tv->axis(b + (has_k ? 3 : 2))->parallelize(ParallelType::TIDy);
  tv->axis(b + (has_k ? 4 : 3))->parallelize(ParallelType::TIDx);
}

// Gives each producer in `chain` (producers first) its consumer's schedule.
void replayBackwards(const std::vector<TensorView*>& chain) {
  for (size_t i = chain.size() - 1; i-- > 0;) {
    replayLike(chain[i], chain[i + 1], invert(pairwiseLogicalMap(chain[i], chain[i + 1])));
  }
}

// An operand tile as replayed from the accumulator, [Outer, Ko, Bt, Ki, T]
// (Outer the block axis, Bt x T the tile's M or N), becomes one axis in the
// storage order of the operand (`k_inner`: K contiguous) spread over threads.
// A batched tile has its batch axis in front ([B, Outer, Ko, Bt, Ki, T]).
void scheduleOperandLoad(TensorView* tile, bool k_inner, const MatmulParams& p, bool batched) {
  const int64_t b = batched ? 1 : 0;
  SMELT_INTERNAL_CHECK(tile->nDims() == 5 + b, "unexpected operand schedule ", tile->toString());
  tile->reorder({{b + 4, b + 2}, {b + 2, b + 3}, {b + 3, b + 4}});  // [Outer, Ko, T, Bt, Ki]
  tile->merge(b + 2);                                             // [Outer, Ko, MN, Ki]
  if (!k_inner) tile->reorder({{b + 2, b + 3}, {b + 3, b + 2}});
  tile->merge(b + 2);  // [Outer, Ko, tile element]
  tile->split(b + 2, p.threads());
  tile->split(b + 3, p.threadsX());  // [Outer, Ko, iterations, TIDy, TIDx]
  tile->axis(b + 3)->parallelize(ParallelType::TIDy);
  tile->axis(b + 4)->parallelize(ParallelType::TIDx);
  // A K-contiguous tile is stored as loaded, in rows of block_k (one per row
  // of M or N), so global loads stay coalesced along K. The K loop's lanes
  // read one k of 16 rows: with rows a multiple of 32 words apart, all in one
  // bank. One word of padding per row puts them in 16 banks.
  if (k_inner && p.pad_k_contiguous_tiles) tile->padRows(p.block_k, operandRowPadding(true, tile->dtype()));
}

// The output tile [Mo, No, BMt, BNt, TM, TN] (scheduleOutputTile) re-tiled
// for the store from C_s: thread (ty, tx) writes rows ty + i * BM/TM and the
// thread_n consecutive columns from tx * thread_n, innermost (one vector per
// row). M and N are not merged, so a broadcast epilogue input (a bias) keeps
// its own indexing.
void scheduleTileStore(TensorView* out, const MatmulParams& p, bool batched) {
  const int64_t b = batched ? 1 : 0;
  out->reorder({{b + 4, b + 2}, {b + 2, b + 3}, {b + 5, b + 4}, {b + 3, b + 5}});
  // [Mo, No, TM, BMt, TN, BNt]
  out->merge(b + 4);              // [Mo, No, TM, BMt, n]
  out->split(b + 4, p.thread_n);  // [Mo, No, TM, BMt, BNt, TN]
  out->axis(b + 3)->parallelize(ParallelType::TIDy);
  out->axis(b + 4)->parallelize(ParallelType::TIDx);
}

// set(tv) read by `use` only (cacheAfter redirects every use).
TensorView* cacheUse(TensorView* tv, Expr* use) {
  TensorView* cache = set(tv);
  use->replaceInput(tv, cache);
  return cache;
}

bool isTensorCoreType(DataType t) { return t == DataType::Half || t == DataType::BFloat16; }

// Why the tensor-core kernel cannot run these inputs on `device`, or "": it
// takes Half/BFloat16 operands of one type on sm_80+, and copies each
// operand with whole 16-byte cp.async chunks along its contiguous axis, so
// that axis' extent and the other axis' stride are multiples of 8 elements
// and the data is 16-byte aligned.
std::string tensorCoreBlocker(const MatmulPattern& pattern, const RuntimeInfo& runtime,
                              MatmulLayout layout, const DeviceLimits& device) {
  const DataType a_type = pattern.a->dtype();
  const DataType b_type = pattern.b->dtype();
  if (!isTensorCoreType(a_type) || !isTensorCoreType(b_type)) {
    return errorMessage("operands are ", a_type, " and ", b_type,
                        "; mma.sync m16n8k16 takes Half or BFloat16");
  }
  if (a_type != b_type) {
    return errorMessage("operands differ in type (", a_type, " and ", b_type, ")");
  }
  if (device.arch < 80) {
    return errorMessage("sm_", device.arch, " has no mma.sync m16n8k16 (sm_80 or newer)");
  }
  // A broadcast M or N (A of shape [1, K] with contiguity None, B [K, 1])
  // makes the result a broadcast row or column, which the tensor-core
  // schedule's [M, N] tiles and epilogue do not map; the CUDA-core schedule
  // handles it.
  {
    const auto dims = pattern.sum->logicalNoReductions();
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d]->isPlainBroadcast()) {
        return errorMessage("the result's ",
                            d + 2 == dims.size() ? "M" : d + 1 == dims.size() ? "N" : "batch",
                            " axis is a broadcast (an operand of extent 1 with contiguity None); "
                            "the tensor-core tiles need a concrete [M, N] result");
      }
    }
  }
  struct Operand {
    const char* which;
    const TensorView* tv;
    const char* axis_names[2];
    int contiguous_axis;
  };
  const Operand operands[] = {
      {"A", pattern.a, {"M", "K"}, aIsKContiguous(layout) ? 1 : 0},
      {"B", pattern.b, {"K", "N"}, bIsNContiguous(layout) ? 1 : 0},
  };
  constexpr int64_t kChunk = 8;  // elements of 16 bytes
  // A batched operand's [rows, cols] follow its batch axis.
  const int b = pattern.batched ? 1 : 0;
  for (const Operand& op : operands) {
    const InputInfo* info = runtime.inputInfo(op.tv);
    SMELT_INTERNAL_CHECK(info != nullptr, "no input info for ", op.tv->name());
    const int c = b + op.contiguous_axis;
    const int other = b + 1 - op.contiguous_axis;
    const std::string operand = errorMessage("operand ", op.which, " (", op.tv->name(), ")");
    if (info->sizes[c] % kChunk != 0) {
      return errorMessage(op.axis_names[c - b], "=", info->sizes[c], " is not a multiple of 8 (",
                          operand, " axis ", c, ", its contiguous one: cp.async copies whole "
                          "16-byte chunks)");
    }
    if (info->sizes[c] > 1 && info->strides[c] != 1) {
      return errorMessage(operand, " has no unit-stride axis (strides ", info->strides[b], ", ",
                          info->strides[b + 1], ")");
    }
    if (info->sizes[other] > 1 && info->strides[other] % kChunk != 0) {
      return errorMessage(operand, " axis ", other, " (", op.axis_names[other - b],
                          ") has stride ", info->strides[other],
                          ", not a multiple of 8 (rows of 16-byte chunks)");
    }
    if (b == 1 && info->sizes[0] > 1 && info->strides[0] % kChunk != 0) {
      return errorMessage(operand, " axis 0 (batch) has stride ", info->strides[0],
                          ", not a multiple of 8 (each batch's rows start 16-byte aligned)");
    }
    if (info->alignment < 16) {
      return errorMessage(operand, " data is ", info->alignment,
                          "-byte aligned; cp.async needs 16");
    }
  }
  return "";
}

// Replaces the matmul's broadcast-multiply-sum by an MmaOp tiled as
// params.tensor_core; the epilogue reads the MmaOp's accumulator. Nothing
// gets a loop-domain schedule: the tensor-core lowering builds the kernel
// from the MmaOp.
MatmulSchedule scheduleTensorCoreMatmul(Fusion* fusion, const Analysis& analysis,
                                        const MatmulParams& params) {
  const MatmulPattern& pattern = analysis.pattern;
  SMELT_CHECK(params.tensor_core_blocker.empty(), "scheduleMatmul: tensor cores were forced, but ",
              params.tensor_core_blocker);
  TensorView* reduced = pattern.sum->isFusionOutput() ? pattern.sum->cacheBefore() : pattern.sum;
  MatmulSchedule s;
  s.acc = tensorCoreMma(pattern.a, pattern.b, params.tensor_core);
  const std::vector<Expr*> uses = reduced->uses();
  for (Expr* e : uses) e->replaceInput(reduced, s.acc);
  s.output = pattern.output;
  return s;
}

}  // namespace

std::string matmulRejectReason(const Fusion& fusion, MatmulPattern* pattern) {
  Analysis analysis;
  std::string reason = analyze(fusion, analysis);
  if (reason.empty() && pattern != nullptr) *pattern = analysis.pattern;
  return reason;
}

MatmulPattern findMatmul(const Fusion& fusion) { return analyzeOrThrow(fusion).pattern; }

std::vector<SeedCandidates> matmulSeeds(const Fusion& fusion) {
  auto producerOf = [](const Val* v, ExprType type) -> const Expr* {
    const Expr* def = v->definition();
    return def != nullptr && def->type() == type ? def : nullptr;
  };
  std::vector<SeedCandidates> seeds;
  for (const Expr* sum : fusion.exprs()) {
    if (sum->type() != ExprType::Reduction) continue;
    const Expr* product = producerOf(sum->input(0), ExprType::Binary);
    if (product == nullptr || product->inputs().size() != 2) continue;
    // u * u of one broadcast value is a square, not a product of two operands.
    if (product->input(0) == product->input(1)) continue;
    std::vector<const Expr*> core{sum, product};
    std::vector<const Expr*> casts;
    for (const Val* operand : product->inputs()) {
      const Expr* broadcast = producerOf(operand, ExprType::Broadcast);
      if (broadcast == nullptr) break;
      core.push_back(broadcast);
      // One cast may feed both operands' broadcasts (x.half() @ x.half()).
      const Expr* cast = producerOf(broadcast->input(0), ExprType::Unary);
      if (cast != nullptr && std::find(casts.begin(), casts.end(), cast) == casts.end()) {
        casts.push_back(cast);
      }
    }
    if (core.size() != 4) continue;
    std::vector<const Expr*> with_casts = core;
    with_casts.insert(with_casts.end(), casts.begin(), casts.end());
    seeds.push_back({with_casts, core});
  }
  return seeds;
}

MatmulLayout matmulLayout(const Fusion& fusion, const RuntimeInfo& runtime) {
  const MatmulPattern pattern = findMatmul(fusion);
  // An operand whose inner stride is 1 is stored row-major.
  const size_t inner = pattern.batched ? 2 : 1;
  auto row_major = [&](const TensorView* tv) {
    const InputInfo* info = runtime.inputInfo(tv);
    return info == nullptr || info->sizes.at(inner) == 1 || info->strides.at(inner) == 1;
  };
  const bool a_t = row_major(pattern.a);
  const bool b_t = row_major(pattern.b);
  return a_t ? (b_t ? MatmulLayout::TT : MatmulLayout::TN)
             : (b_t ? MatmulLayout::NT : MatmulLayout::NN);
}

MatmulParams matmulHeuristics(const Fusion& fusion, const RuntimeInfo& runtime,
                              const DeviceLimits& device) {
  const MatmulPattern pattern = findMatmul(fusion);
  const size_t batch = pattern.batched ? 1 : 0;
  const int64_t m = runtime.extent(pattern.a->logicalNoReductions().at(batch));
  const int64_t k = runtime.extent(pattern.a->logicalNoReductions().at(batch + 1));
  const int64_t n = runtime.extent(pattern.b->logicalNoReductions().at(batch + 1));
  MatmulParams p;
  p.layout = matmulLayout(fusion, runtime);
  // 16 x 16 threads, each with a register tile of up to 8 x 8.
  auto tile = [](int64_t e) { return std::clamp<int64_t>(scheduler_utils::nextPowerOfTwo(e), 16, 128); };
  p.block_m = tile(m);
  p.block_n = tile(n);
  // A small problem gets smaller tiles, down to 16 x 16, until its grid has a
  // block for every SM: halve the longer side (N on a tie).
  // (A batch broadcast in one operand has the other's extent.)
  const int64_t batches =
      pattern.batched ? std::max(runtime.extent(pattern.a->logicalNoReductions().at(0)),
                                 runtime.extent(pattern.b->logicalNoReductions().at(0)))
                      : 1;
  auto blocks = [&] {
    return scheduler_utils::ceilDiv(m, p.block_m) * scheduler_utils::ceilDiv(n, p.block_n) * batches;
  };
  while (blocks() < device.sm_count && std::max(p.block_m, p.block_n) > 16) {
    (p.block_n >= p.block_m ? p.block_n : p.block_m) /= 2;
  }
  p.thread_m = p.block_m / 16;
  p.thread_n = p.block_n / 16;
  // Every thread loads at least one element of each operand tile.
  const int64_t min_k = p.threads() / std::min(p.block_m, p.block_n);
  p.block_k = std::max(min_k, std::clamp<int64_t>(scheduler_utils::nextPowerOfTwo(k), 8, 32));
  const int64_t k_tiles = scheduler_utils::ceilDiv(k, p.block_k);
  p.stages = std::clamp<int64_t>(k_tiles, 1, 3);
  const DataType a_type = pattern.a->dtype();
  const DataType b_type = pattern.b->dtype();
  const bool used_elsewhere = pattern.operand_used_elsewhere != nullptr;
  // The shared epilogue tile when it costs nothing: its bytes fit in the
  // operand tiles' and may take them over.
  MatmulSmemEstimate smem = estimateSmem(p, a_type, b_type);
  p.smem_epilogue = !used_elsewhere &&
                    p.block_m * p.block_n * dataTypeSize(DataType::Float) <= smem.operand_bytes;
  OperandReuseDecision reuse = decideOperandReuse(p, a_type, b_type, used_elsewhere, device);
  auto planned = [&] { return reuse.promote ? reuse.smem.reuse_bytes : reuse.smem.no_reuse_bytes; };
  while (planned() > device.max_shared_memory_per_block && p.stages > 1) {
    --p.stages;
    reuse = decideOperandReuse(p, a_type, b_type, used_elsewhere, device);
  }
  p.promote_operand_reuse = reuse.promote;
  p.promotion_reason = reuse.reason;
  if (isTensorCoreType(a_type) && a_type == b_type && device.arch >= 80) {
    p.tensor_core = tensorCoreHeuristics(m, n, k, aIsKContiguous(p.layout),
                                         !bIsNContiguous(p.layout), device);
    // The kernel's N: vectors along the output's rows need it static.
    chooseTensorCoreEpilogue(p.tensor_core, pattern.b->logicalNoReductions().at(batch + 1)->extent().constant(),
                             pattern.output->dtype());
  }
  p.tensor_core_blocker = tensorCoreBlocker(pattern, runtime, p.layout, device);
  p.use_tensor_cores = p.tensor_core_blocker.empty();
  return p;
}

MatmulSchedule scheduleMatmul(Fusion* fusion, const MatmulParams& params) {
  SMELT_CHECK(fusion != nullptr, "scheduleMatmul: fusion is null");
  checkParams(params);
  FusionGuard guard(fusion);
  Analysis analysis = analyzeOrThrow(*fusion);
  if (params.use_tensor_cores) return scheduleTensorCoreMatmul(fusion, analysis, params);
  const MatmulPattern& pattern = analysis.pattern;
  SMELT_CHECK(!params.promote_operand_reuse || pattern.operand_used_elsewhere == nullptr,
              "scheduleMatmul: cannot promote reuse of the operand tiles: operand ",
              pattern.operand_used_elsewhere ? pattern.operand_used_elsewhere->name() : "",
              " is also used after the main loop");

  MatmulSchedule s;
  s.output = pattern.output;
  // Only the matmul reads the shared tiles; other uses of an operand read it
  // from global memory.
  s.a_smem = cacheUse(pattern.a, pattern.a_use)->setMemoryType(MemoryType::Shared)->setName("A_s");
  s.b_smem = cacheUse(pattern.b, pattern.b_use)->setMemoryType(MemoryType::Shared)->setName("B_s");
  s.acc = pattern.sum;
  if (s.acc->isFusionOutput()) s.acc = s.acc->cacheBefore();
  if (params.smem_epilogue) {
    s.c_smem = s.acc->cacheAfter()->setMemoryType(MemoryType::Shared)->setName("C_s");
  }

  // Register fragments: per K step each thread reads its thread_m values of
  // A_s and thread_n values of B_s once, for thread_m x thread_n products.
  TensorView* a_frag = s.a_smem->cacheAfter();
  TensorView* b_frag = s.b_smem->cacheAfter();

  // The K loop: the accumulator's schedule, replayed up the operand chains.
  const bool batched = pattern.batched;
  scheduleOutputTile(s.acc, params, batched);
  for (const OperandChain* chain : {&analysis.a, &analysis.b}) {
    const bool is_a = chain == &analysis.a;
    std::vector<TensorView*> tensors{is_a ? s.a_smem : s.b_smem, is_a ? a_frag : b_frag};
    tensors.insert(tensors.end(), chain->tensors.begin(), chain->tensors.end());
    tensors.push_back(analysis.product);
    tensors.push_back(s.acc);
    replayBackwards(tensors);
  }
  scheduleOperandLoad(s.a_smem, aIsKContiguous(params.layout), params, batched);
  scheduleOperandLoad(s.b_smem, !bIsNContiguous(params.layout), params, batched);

  // The epilogue: the output tile, and every other op in its loops.
  std::unordered_set<const TensorView*> scheduled{s.a_smem, s.b_smem, a_frag, b_frag,
                                                   analysis.product, s.acc, s.output};
  for (const OperandChain* chain : {&analysis.a, &analysis.b}) {
    scheduled.insert(chain->tensors.begin(), chain->tensors.end());
  }
  scheduleOutputTile(s.output, params, batched);
  if (s.c_smem != nullptr) {
    replayLike(s.c_smem, s.acc, pairwiseLogicalMap(s.acc, s.c_smem));
    scheduled.insert(s.c_smem);
    scheduleTileStore(s.output, params, batched);
  }
  for (TensorView* tv : fusion->allTensors()) {
    if (!tv->isFusionInput() && !scheduled.count(tv)) tv->computeAt(s.output, -1);
  }
  inlineMost(fusion);
  // [(B,) Outer, Ko, Bt, Ki | T]: a fragment per K step, T registers.
  a_frag->inlineAt(batched ? 5 : 4);
  b_frag->inlineAt(batched ? 5 : 4);
  if (params.stages > 1) {
    s.a_smem->circularBuffer(params.stages);
    s.b_smem->circularBuffer(params.stages);
  }
  if (params.promote_operand_reuse) {
    s.a_smem->promoteReuse();
    s.b_smem->promoteReuse();
  }
  return s;
}

}  // namespace smelt
