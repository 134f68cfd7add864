#include "codegen/hopper_ops.h"

#include <set>
#include <utility>

#include "fusion/error.h"
#include "lower/hopper_layout.h"
#include "lower/kir_checks.h"

namespace smelt::codegen {
namespace {

// The descriptor's constants are those of hopper::wgmmaDescriptor.
constexpr const char* kHopperPrelude = R"(
namespace smelt {

struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned sharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrierInit(void* barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(sharedAddress(barrier)),
               "r"(arrivals) : "memory");
}

__device__ __forceinline__ void mbarrierArrive(void* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sharedAddress(barrier))
               : "memory");
}

__device__ __forceinline__ void mbarrierArriveExpectTx(void* barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               ::"r"(sharedAddress(barrier)), "r"(bytes) : "memory");
}

// Spins on try_wait (which itself suspends the thread for a while) until the
// phase of `parity` has completed.
__device__ __forceinline__ void mbarrierWait(void* barrier, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n}\n"
        : "=r"(done) : "r"(sharedAddress(barrier)), "r"(parity) : "memory");
  } while (done == 0);
}

__device__ __forceinline__ void fenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Coordinates innermost first: (column, row) of the box's first element.
__device__ __forceinline__ void tmaLoad2d(void* dst, const TensorMap* map, int col, int row,
                                          void* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(sharedAddress(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(col),
      "r"(row), "r"(sharedAddress(barrier)) : "memory");
}

// K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long wgmmaDescriptor(const void* tile) {
  const unsigned long long address = sharedAddress(tile);
  return ((address & 0x3ffff) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int Pending>
__device__ __forceinline__ void wgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

// Keeps the compiler from moving uses of accumulator registers across a
// wgmma fence or wait (the wgmma writes them behind its back).
template <int Count>
__device__ __forceinline__ void pinRegisters(float* registers) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+f"(registers[i])::"memory");
}
)";

std::string wgmmaName(int64_t n, DataType dtype) {
  return "wgmma_m64n" + std::to_string(n) + "k16_" + (dtype == DataType::BFloat16 ? "bf16" : "f16");
}

// wgmma.mma_async with n/2 accumulator operands, then the two descriptors
// and the scale-d flag (0: D = A B, ignoring D's old values).
std::string wgmmaFunction(int64_t n, DataType dtype) {
  const int64_t regs = n / 2;
  std::string list;
  std::string outputs;
  for (int64_t i = 0; i < regs; ++i) {
    list += (i ? ", %" : "%") + std::to_string(i);
    outputs += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
  }
  const std::string type = dtype == DataType::BFloat16 ? "bf16" : "f16";
  return "__device__ __forceinline__ void " + wgmmaName(n, dtype) +
         "(float* d, const void* a, const void* b, int accumulate) {\n"
         "  asm volatile(\n"
         "      \"{\\n.reg .pred scale_d;\\nsetp.ne.b32 scale_d, %" + std::to_string(regs + 2) +
         ", 0;\\n\"\n"
         "      \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + type + "." +
         type + " {" + list + "}, %" + std::to_string(regs) + ", %" + std::to_string(regs + 1) +
         ", scale_d, 1, 1, 0, 0;\\n}\\n\"\n"
         "      : " + outputs + "\n"
         "      : \"l\"(wgmmaDescriptor(a)), \"l\"(wgmmaDescriptor(b)), \"r\"(accumulate)\n"
         "      : \"memory\");\n}\n";
}

std::string pins(const std::vector<const kir::Buffer*>& accumulators) {
  std::string text;
  for (const kir::Buffer* b : accumulators) {
    SMELT_CHECK(b->memory == MemoryType::Local && b->dtype == DataType::Float &&
                    b->elements.isConstant(),
                "codegen: wgmma accumulator ", b->name, " must be a Local Float buffer of constant size");
    text += " smelt::pinRegisters<" + std::to_string(*b->elements.constant()) + ">(" + b->name + ");";
  }
  return text;
}

}  // namespace

bool needsArchSpecificTarget(const kir::Kernel& kernel) {
  bool wgmma = false;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
    wgmma |= stmt->kind() == kir::StmtKind::Wgmma;
  });
  return wgmma;
}

std::string hopperPrelude(const kir::Kernel& kernel) {
  std::set<std::pair<int64_t, DataType>> shapes;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
    if (const auto* w = dynamic_cast<const kir::Wgmma*>(stmt)) {
      shapes.insert({w->n, w->a.buffer->dtype});
    }
  });
  std::string text = kHopperPrelude;
  for (const auto& [n, dtype] : shapes) text += "\n" + wgmmaFunction(n, dtype);
  return text + "\n}  // namespace smelt\n";
}

std::vector<std::string> tensorMapParameters(const kir::Kernel& kernel) {
  std::vector<std::string> params;
  for (const auto& map : kernel.tensor_maps) {
    params.push_back("const __grid_constant__ smelt::TensorMap " + map->name);
  }
  return params;
}

std::string hopperCall(const kir::Stmt& stmt,
                       const std::function<std::string(const kir::Access&)>& element,
                       const std::function<std::string(const IntExpr&)>& index) {
  kir::checkHopperOperands(stmt);
  auto address = [&](const kir::Access& a) { return "&" + element(a); };
  switch (stmt.kind()) {
    case kir::StmtKind::MbarrierInit: {
      const auto& i = static_cast<const kir::MbarrierInit&>(stmt);
      return "smelt::mbarrierInit(" + address(i.barrier) + ", " + std::to_string(i.arrivals) + ");";
    }
    case kir::StmtKind::MbarrierArrive: {
      const auto& a = static_cast<const kir::MbarrierArrive&>(stmt);
      if (a.transaction_bytes == 0) return "smelt::mbarrierArrive(" + address(a.barrier) + ");";
      return "smelt::mbarrierArriveExpectTx(" + address(a.barrier) + ", " +
             std::to_string(a.transaction_bytes) + ");";
    }
    case kir::StmtKind::MbarrierWait: {
      const auto& w = static_cast<const kir::MbarrierWait&>(stmt);
      return "smelt::mbarrierWait(" + address(w.barrier) + ", static_cast<unsigned>(" +
             index(w.parity) + "));";
    }
    case kir::StmtKind::TmaLoad: {
      const auto& t = static_cast<const kir::TmaLoad&>(stmt);
      return "smelt::tmaLoad2d(" + address(t.dst) + ", &" + t.map->name + ", static_cast<int>(" +
             index(t.col) + "), static_cast<int>(" + index(t.row) + "), " + address(t.barrier) +
             ");";
    }
    case kir::StmtKind::FenceProxyAsync: return "smelt::fenceProxyAsync();";
    case kir::StmtKind::Wgmma: {
      const auto& w = static_cast<const kir::Wgmma&>(stmt);
      return "smelt::" + wgmmaName(w.n, w.a.buffer->dtype) + "(" + address(w.acc) + ", " +
             address(w.a) + ", " + address(w.b) + ", " + (w.accumulate ? "1" : "0") + ");";
    }
    case kir::StmtKind::WgmmaFence: {
      const std::string text =
          pins(static_cast<const kir::WgmmaFence&>(stmt).accumulators) + " smelt::wgmmaFence();";
      return text.substr(1);
    }
    case kir::StmtKind::WgmmaCommit: return "smelt::wgmmaCommit();";
    case kir::StmtKind::WgmmaWait: {
      const auto& w = static_cast<const kir::WgmmaWait&>(stmt);
      return "smelt::wgmmaWait<" + std::to_string(w.pending) + ">();" + pins(w.accumulators);
    }
    default: SMELT_INTERNAL_CHECK(false, "not a Hopper statement");
  }
  return "";
}

}  // namespace smelt::codegen
