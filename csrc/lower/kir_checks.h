// Operand checks of the tensor-core statements of the kernel IR, shared by
// codegen and the simulator. Header-only, like kir.h, so that codegen needs
// no lowering library.
#pragma once

#include "fusion/error.h"
#include "lower/kir.h"

namespace smelt::kir {

inline void expectBuffer(const Access& a, MemoryType memory, const char* stmt, const char* role) {
  SMELT_CHECK(a.buffer != nullptr, stmt, ": ", role, " has no buffer");
  SMELT_CHECK(a.buffer->memory == memory, stmt, ": ", role, " ", a.buffer->name, " is a ",
              a.buffer->memory, " buffer, expected ", memory);
}

inline bool isMmaOperandType(DataType t) { return t == DataType::Half || t == DataType::BFloat16; }

// Throws smelt::Error, naming the statement and buffer, when a tensor-core
// statement's operands have the wrong memory type, dtype or size (cp.async of
// other than 4/8/16 bytes, ldmatrix of other than 1/2/4 matrices or from a
// non-16-bit buffer, mma operands of mixed types). Other statements pass.
inline void checkTensorCoreOperands(const Stmt& stmt) {
  switch (stmt.kind()) {
    case StmtKind::CpAsync: {
      const auto& c = static_cast<const CpAsync&>(stmt);
      expectBuffer(c.dst, MemoryType::Shared, "cp.async", "destination");
      expectBuffer(c.src, MemoryType::Global, "cp.async", "source");
      SMELT_CHECK(c.bytes == 4 || c.bytes == 8 || c.bytes == 16, "cp.async into ",
                  c.dst.buffer->name, " copies ", c.bytes, " bytes; cp.async copies 4, 8 or 16");
      SMELT_CHECK(c.dst.buffer->dtype == c.src.buffer->dtype, "cp.async copies ",
                  c.src.buffer->name, " (", c.src.buffer->dtype, ") into ", c.dst.buffer->name,
                  " (", c.dst.buffer->dtype, "); it cannot convert");
      SMELT_CHECK(c.bytes % dataTypeSize(c.dst.buffer->dtype) == 0, "cp.async into ",
                  c.dst.buffer->name, ": ", c.bytes, " bytes is not a whole number of ",
                  c.dst.buffer->dtype, " elements");
      return;
    }
    case StmtKind::LdMatrix: {
      const auto& l = static_cast<const LdMatrix&>(stmt);
      expectBuffer(l.src, MemoryType::Shared, "ldmatrix", "source");
      expectBuffer(l.dst, MemoryType::Local, "ldmatrix", "destination");
      SMELT_CHECK(l.matrices == 1 || l.matrices == 2 || l.matrices == 4, "ldmatrix from ",
                  l.src.buffer->name, " loads ", l.matrices, " matrices; ldmatrix loads 1, 2 or 4");
      SMELT_CHECK(dataTypeSize(l.src.buffer->dtype) == 2 && l.dst.buffer->dtype == l.src.buffer->dtype,
                  "ldmatrix from ", l.src.buffer->name, " (", l.src.buffer->dtype, ") into ",
                  l.dst.buffer->name, " (", l.dst.buffer->dtype,
                  "): both must be the same 16-bit type");
      return;
    }
    case StmtKind::Mma: {
      const auto& m = static_cast<const Mma&>(stmt);
      expectBuffer(m.a, MemoryType::Local, "mma", "A fragment");
      expectBuffer(m.b, MemoryType::Local, "mma", "B fragment");
      expectBuffer(m.c, MemoryType::Local, "mma", "accumulator");
      SMELT_CHECK(isMmaOperandType(m.a.buffer->dtype) && m.a.buffer->dtype == m.b.buffer->dtype,
                  "mma: operands ", m.a.buffer->name, " (", m.a.buffer->dtype, ") and ",
                  m.b.buffer->name, " (", m.b.buffer->dtype,
                  ") must both be Half or both BFloat16");
      SMELT_CHECK(m.c.buffer->dtype == DataType::Float, "mma: accumulator ", m.c.buffer->name,
                  " is ", m.c.buffer->dtype, "; m16n8k16 accumulates in Float");
      return;
    }
    default: return;
  }
}

}  // namespace smelt::kir
