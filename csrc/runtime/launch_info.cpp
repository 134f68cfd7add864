#include "runtime/launch_info.h"

#include <vector>

#include "fusion/error.h"
#include "runtime/byte_record.h"

namespace smelt {
namespace {

constexpr uint64_t kDataTypes = static_cast<uint64_t>(DataType::UInt8) + 1;
constexpr uint64_t kIntExprKinds = static_cast<uint64_t>(IntExpr::Kind::Max) + 1;

// Prefix order: the kind, then a constant's value, a symbol's name, or both
// operands. Rebuilt with the operators, which fold constants as lowering's
// did, so the value is the same for every binding.
void writeIntExpr(ByteWriter& out, const IntExpr& e) {
  out.u64(static_cast<uint64_t>(e.kind()));
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return out.i64(*e.constant());
    case IntExpr::Kind::Symbol: return out.bytes(e.symbolName());
    default:
      writeIntExpr(out, e.lhs());
      writeIntExpr(out, e.rhs());
  }
}

IntExpr readIntExpr(ByteReader& in, int depth = 0) {
  SMELT_CHECK(depth < 10000, "an expression nested too deeply");
  const auto kind = static_cast<IntExpr::Kind>(in.below(kIntExprKinds, "expression kind"));
  if (kind == IntExpr::Kind::Constant) return IntExpr(in.i64());
  if (kind == IntExpr::Kind::Symbol) return IntExpr::symbol(in.bytes());
  const IntExpr a = readIntExpr(in, depth + 1);
  const IntExpr b = readIntExpr(in, depth + 1);
  return combine(kind, a, b);
}

void writeTensorParam(ByteWriter& out, const TensorParam& p) {
  out.bytes(p.name);
  out.u64(static_cast<uint64_t>(p.dtype));
  out.u64(p.shape.size());
  for (const IntExpr& e : p.shape) writeIntExpr(out, e);
  out.i64(p.vector_bytes);
  out.u64(p.expanded.size());
  for (bool x : p.expanded) out.u64(x);
}

TensorParam readTensorParam(ByteReader& in) {
  TensorParam p;
  p.name = in.bytes();
  p.dtype = static_cast<DataType>(in.below(kDataTypes, "dtype"));
  p.shape.resize(in.below(1 << 16, "rank"));
  for (IntExpr& e : p.shape) e = readIntExpr(in);
  p.vector_bytes = in.i64();
  p.expanded.resize(in.below(1 << 16, "rank"));
  for (size_t d = 0; d < p.expanded.size(); ++d) p.expanded[d] = in.below(2, "flag") != 0;
  return p;
}

void writeParams(ByteWriter& out, const std::vector<TensorParam>& params) {
  out.u64(params.size());
  for (const TensorParam& p : params) writeTensorParam(out, p);
}

std::vector<TensorParam> readParams(ByteReader& in) {
  std::vector<TensorParam> params(in.below(1 << 20, "parameter count"));
  for (TensorParam& p : params) p = readTensorParam(in);
  return params;
}

}  // namespace

std::string serializeLaunchInfo(const KernelLaunchInfo& info) {
  ByteWriter out;
  out.bytes(info.cuda_source);
  writeParams(out, info.inputs);
  writeParams(out, info.outputs);
  out.u64(info.scalars.size());
  for (const ScalarParam& s : info.scalars) {
    out.bytes(s.symbol);
    out.u64(static_cast<uint64_t>(s.dtype));
  }
  for (const IntExpr& e : info.grid) writeIntExpr(out, e);
  for (const IntExpr& e : info.block) writeIntExpr(out, e);
  writeIntExpr(out, info.shared_memory_bytes);
  out.u64(info.static_shared_memory);
  out.u64(info.vector_conditions.size());
  for (const VectorCondition& c : info.vector_conditions) {
    out.bytes(c.tensor);
    writeIntExpr(out, c.value);
    writeIntExpr(out, c.equals);
    out.i64(c.multiple_of);
  }
  out.bytes(info.smem_report);
  out.u64(info.tensor_maps.size());
  for (const TensorMapParam& m : info.tensor_maps) {
    out.i64(m.tensor);
    out.i64(m.box_rows);
    out.i64(m.box_cols);
    out.u64(m.swizzle128);
  }
  out.u64(info.arch_specific);
  return out.data();
}

KernelLaunchInfo parseLaunchInfo(const std::string& bytes) {
  ByteReader in(bytes);
  KernelLaunchInfo info;
  info.cuda_source = in.bytes();
  info.inputs = readParams(in);
  info.outputs = readParams(in);
  info.scalars.resize(in.below(1 << 20, "scalar count"));
  for (ScalarParam& s : info.scalars) {
    s.symbol = in.bytes();
    s.dtype = static_cast<DataType>(in.below(kDataTypes, "dtype"));
  }
  for (IntExpr& e : info.grid) e = readIntExpr(in);
  for (IntExpr& e : info.block) e = readIntExpr(in);
  info.shared_memory_bytes = readIntExpr(in);
  info.static_shared_memory = in.below(2, "flag") != 0;
  info.vector_conditions.resize(in.below(1 << 20, "condition count"));
  for (VectorCondition& c : info.vector_conditions) {
    c.tensor = in.bytes();
    c.value = readIntExpr(in);
    c.equals = readIntExpr(in);
    c.multiple_of = in.i64();
  }
  info.smem_report = in.bytes();
  info.tensor_maps.resize(in.below(1 << 10, "tensor map count"));
  for (TensorMapParam& m : info.tensor_maps) {
    m.tensor = in.i64();
    m.box_rows = in.i64();
    m.box_cols = in.i64();
    m.swizzle128 = in.below(2, "flag") != 0;
  }
  info.arch_specific = in.below(2, "flag") != 0;
  SMELT_CHECK(in.atEnd(), "bytes after the launch description");
  return info;
}

}  // namespace smelt
