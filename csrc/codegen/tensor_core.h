// CUDA text for the tensor-core statements of the kernel IR (kir::CpAsync,
// CpAsyncCommit, CpAsyncWait, LdMatrix, Mma): a prelude of inline-PTX helpers
// in namespace smelt, added when a kernel uses any of them, and the call each
// statement becomes. Fragment registers are Local arrays declared 16-byte
// aligned and passed by the address of their first element; after unrolling
// the indices are constants, so the arrays stay in registers.
#pragma once

#include <string>

#include "lower/kir.h"
#include "lower/kir_checks.h"

namespace smelt::codegen {

// Needs cuda_fp16.h / cuda_bf16.h only for the element types of the arrays.
constexpr const char* kTensorCorePrelude = R"(
namespace smelt {

__device__ __forceinline__ unsigned smemAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies Bytes from global to shared memory asynchronously; src_bytes = 0
// (a failed predicate) reads nothing and zero-fills the destination.
template <int Bytes>
__device__ __forceinline__ void cpAsync(void* dst, const void* src, bool predicate) {
  const int src_bytes = predicate ? Bytes : 0;
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddress(dst)),
                 "l"(src), "r"(src_bytes) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smemAddress(dst)),
                 "l"(src), "n"(Bytes), "r"(src_bytes) : "memory");
  }
}

__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int Pending>
__device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

template <int Matrices, bool Transpose>
__device__ __forceinline__ void ldmatrix(void* dst, const void* src) {
  unsigned* d = reinterpret_cast<unsigned*>(dst);
  const unsigned a = smemAddress(src);
  if constexpr (Matrices == 1 && !Transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(a));
  } else if constexpr (Matrices == 1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(d[0]) : "r"(a));
  } else if constexpr (Matrices == 2 && !Transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(d[0]), "=r"(d[1]) : "r"(a));
  } else if constexpr (Matrices == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(d[0]), "=r"(d[1]) : "r"(a));
  } else if constexpr (!Transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a));
  }
}

// D = A B + C in place on c (m16n8k16, fp32 accumulation).
template <bool BFloat16>
__device__ __forceinline__ void mma16816(float* c, const void* a, const void* b) {
  const unsigned* A = reinterpret_cast<const unsigned*>(a);
  const unsigned* B = reinterpret_cast<const unsigned*>(b);
  if constexpr (BFloat16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]));
  }
}

}  // namespace smelt
)";

// The statement's CUDA call; `element` spells an access as an lvalue and
// `predicate` a predicate as a C++ condition.
template <typename ElementFn, typename PredicateFn>
std::string tensorCoreCall(const kir::Stmt& stmt, ElementFn&& element, PredicateFn&& predicate) {
  auto address = [&](const kir::Access& a) { return "&" + element(a); };
  switch (stmt.kind()) {
    case kir::StmtKind::CpAsync: {
      const auto& c = static_cast<const kir::CpAsync&>(stmt);
      return "smelt::cpAsync<" + std::to_string(c.bytes) + ">(" + address(c.dst) + ", " +
             address(c.src) + ", " + (c.predicate.alwaysTrue() ? "true" : predicate(c.predicate)) +
             ");";
    }
    case kir::StmtKind::CpAsyncCommit: return "smelt::cpAsyncCommit();";
    case kir::StmtKind::CpAsyncWait:
      return "smelt::cpAsyncWait<" +
             std::to_string(static_cast<const kir::CpAsyncWait&>(stmt).pending) + ">();";
    case kir::StmtKind::LdMatrix: {
      const auto& l = static_cast<const kir::LdMatrix&>(stmt);
      return "smelt::ldmatrix<" + std::to_string(l.matrices) + ", " +
             (l.transpose ? "true" : "false") + ">(" + address(l.dst) + ", " + address(l.src) +
             ");";
    }
    case kir::StmtKind::Mma: {
      const auto& m = static_cast<const kir::Mma&>(stmt);
      const bool bf16 = m.a.buffer->dtype == DataType::BFloat16;
      return std::string("smelt::mma16816<") + (bf16 ? "true" : "false") + ">(" + address(m.c) +
             ", " + address(m.a) + ", " + address(m.b) + ");";
    }
    default: return "";
  }
}

}  // namespace smelt::codegen
