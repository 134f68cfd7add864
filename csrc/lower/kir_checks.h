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

inline void expectBarrier(const Access& a, const char* stmt) {
  expectBuffer(a, MemoryType::Shared, stmt, "barrier");
  SMELT_CHECK(a.buffer->dtype == DataType::Int, stmt, ": barrier buffer ", a.buffer->name, " is ",
              a.buffer->dtype, "; an mbarrier is one 8-byte Int element");
}

// Throws smelt::Error, naming the statement and buffer, when a Hopper
// statement's operands are malformed: an mbarrier not an Int element of a
// Shared buffer, an arrival count outside 1..2^20-1, a TMA map that is not a
// 2-D Global tensor's, with a box outside 1..256 per side, not 16-byte rows,
// or 128-byte swizzle with rows other than 128 bytes, or a wgmma whose n is
// not a multiple of 8 in 8..256 or whose operands are not Shared Half/BFloat16
// (one type) into a Local Float accumulator.
inline void checkHopperOperands(const Stmt& stmt) {
  switch (stmt.kind()) {
    case StmtKind::MbarrierInit: {
      const auto& i = static_cast<const MbarrierInit&>(stmt);
      expectBarrier(i.barrier, "mbarrier.init");
      SMELT_CHECK(i.arrivals >= 1 && i.arrivals < (int64_t{1} << 20), "mbarrier.init of ",
                  i.barrier.buffer->name, ": arrival count ", i.arrivals, " outside 1..2^20-1");
      return;
    }
    case StmtKind::MbarrierArrive: {
      const auto& a = static_cast<const MbarrierArrive&>(stmt);
      expectBarrier(a.barrier, "mbarrier.arrive");
      SMELT_CHECK(a.transaction_bytes >= 0 && a.transaction_bytes < (int64_t{1} << 20),
                  "mbarrier.arrive.expect_tx on ", a.barrier.buffer->name, ": ",
                  a.transaction_bytes, " transaction bytes outside 0..2^20-1");
      return;
    }
    case StmtKind::MbarrierWait:
      expectBarrier(static_cast<const MbarrierWait&>(stmt).barrier, "mbarrier.try_wait");
      return;
    case StmtKind::TmaLoad: {
      const auto& t = static_cast<const TmaLoad&>(stmt);
      expectBarrier(t.barrier, "TMA load");
      expectBuffer(t.dst, MemoryType::Shared, "TMA load", "destination");
      SMELT_CHECK(t.map != nullptr && t.map->tensor != nullptr, "TMA load into ",
                  t.dst.buffer->name, " has no tensor map");
      const TensorMap& m = *t.map;
      expectBuffer({m.tensor, 0}, MemoryType::Global, "TMA load", "source tensor");
      SMELT_CHECK(m.tensor->shape.size() == 2, "tensor map ", m.name, ": ", m.tensor->name,
                  " has rank ", m.tensor->shape.size(), "; TMA loads here are 2-D");
      SMELT_CHECK(m.tensor->dtype == t.dst.buffer->dtype, "TMA load copies ", m.tensor->name, " (",
                  m.tensor->dtype, ") into ", t.dst.buffer->name, " (", t.dst.buffer->dtype,
                  "); it cannot convert");
      const int64_t row_bytes = m.box_cols * dataTypeSize(m.tensor->dtype);
      SMELT_CHECK(m.box_rows >= 1 && m.box_rows <= 256 && m.box_cols >= 1 && m.box_cols <= 256 &&
                      row_bytes % 16 == 0,
                  "tensor map ", m.name, ": box ", m.box_rows, "x", m.box_cols,
                  " needs 1..256 elements per side and rows of a multiple of 16 bytes");
      SMELT_CHECK(m.swizzle == TmaSwizzle::None || row_bytes == 128, "tensor map ", m.name,
                  ": 128-byte swizzle needs rows of 128 bytes, the box has ", row_bytes);
      return;
    }
    case StmtKind::Wgmma: {
      const auto& w = static_cast<const Wgmma&>(stmt);
      expectBuffer(w.a, MemoryType::Shared, "wgmma", "A tile");
      expectBuffer(w.b, MemoryType::Shared, "wgmma", "B tile");
      expectBuffer(w.acc, MemoryType::Local, "wgmma", "accumulator");
      SMELT_CHECK(w.n >= 8 && w.n <= 256 && w.n % 8 == 0, "wgmma into ", w.acc.buffer->name,
                  ": n = ", w.n, "; m64nNk16 takes n a multiple of 8 in 8..256");
      SMELT_CHECK(isMmaOperandType(w.a.buffer->dtype) && w.a.buffer->dtype == w.b.buffer->dtype,
                  "wgmma: operands ", w.a.buffer->name, " (", w.a.buffer->dtype, ") and ",
                  w.b.buffer->name, " (", w.b.buffer->dtype, ") must both be Half or both BFloat16");
      SMELT_CHECK(w.acc.buffer->dtype == DataType::Float, "wgmma: accumulator ",
                  w.acc.buffer->name, " is ", w.acc.buffer->dtype, "; it accumulates in Float");
      return;
    }
    default: return;
  }
}

}  // namespace smelt::kir
