#include "codegen/cuda_codegen.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/hopper_ops.h"
#include "codegen/op_text.h"
#include "codegen/prelude.h"
#include "codegen/scan_ops.h"
#include "codegen/scan_prelude.h"
#include "codegen/tensor_core.h"
#include "codegen/type_text.h"
#include "codegen/vectorize.h"
#include "fusion/error.h"
#include "fusion/symbols.h"
#include "lower/kir_families.h"

namespace smelt {
namespace {

using codegen::convert;
using codegen::cudaType;
using codegen::literal;

// The CUDA builtin a parallel type binds a loop index to.
std::string builtinIndex(ParallelType pt) {
  std::string builtin = parallelIndexSymbol(pt);
  SMELT_INTERNAL_CHECK(!builtin.empty(), "no CUDA index for parallel type ", pt);
  return builtin;
}

bool mentionsSymbol(const IntExpr& e, const std::string& name) {
  switch (e.kind()) {
    case IntExpr::Kind::Constant: return false;
    case IntExpr::Kind::Symbol: return e.symbolName() == name;
    default: return mentionsSymbol(e.lhs(), name) || mentionsSymbol(e.rhs(), name);
  }
}

// True when a statement under `loop` accesses a register (Local) array at an
// index that depends on the loop's index: unrolling the loop turns those
// indices into constants, so the array stays in registers (a run-time index
// puts it in local memory, a stack frame).
bool indexesRegisterArray(const kir::ForLoop& loop) {
  bool found = false;
  auto check = [&](const kir::Access& a) {
    if (a.buffer != nullptr && a.buffer->memory == MemoryType::Local &&
        mentionsSymbol(a.index, loop.index)) {
      found = true;
    }
  };
  kir::forEachStmt(loop.body, [&](const kir::Stmt* s, int) {
    if (auto* c = dynamic_cast<const kir::Compute*>(s)) {
      check(c->out);
      for (const auto& op : c->operands) {
        if (op.access) check(*op.access);
      }
    } else if (auto* r = dynamic_cast<const kir::ReduceInit*>(s)) {
      check(r->out);
    } else if (auto* r = dynamic_cast<const kir::ReduceStep*>(s)) {
      check(r->out);
      if (r->in.access) check(*r->in.access);
    } else if (auto* r = dynamic_cast<const kir::BlockReduce*>(s)) {
      check(r->out);
      check(r->in);
    } else if (auto* r = dynamic_cast<const kir::BlockBroadcast*>(s)) {
      check(r->out);
      check(r->in);
    }
  });
  return found;
}

const kir::Buffer* aliasTarget(const kir::Buffer* buffer) {
  while (buffer->alias_of != nullptr) buffer = buffer->alias_of;
  return buffer;
}

IntExpr addressOf(const kir::Buffer* buffer) {
  const kir::Buffer* target = aliasTarget(buffer);
  SMELT_CHECK(target->address.has_value(), "codegen: shared buffer ", target->name,
              " has no planned address (run the shared-memory planner first)");
  return *target->address;
}

class Emitter {
 public:
  Emitter(const kir::Kernel& kernel, const std::string& name, const CodegenOptions& options)
      : kernel_(kernel),
        name_(name),
        options_(options),
        narrow_index_(options.index_type == DataType::Int32),
        vector_bytes_(vectorRequirements(kernel).bytes) {
    for (const Scalar* scalar : kernel.scalar_inputs) {
      if (!scalar->isConstant()) scalar_symbols_.insert(scalar->symbol());
    }
    kir::forEachStmt(kernel.body, [&](const kir::Stmt* stmt, int) {
      if (const auto* l = dynamic_cast<const kir::LdMatrix*>(stmt)) {
        fragment_buffers_.insert(l->dst.buffer);
      } else if (const auto* m = dynamic_cast<const kir::Mma*>(stmt)) {
        fragment_buffers_.insert({m->a.buffer, m->b.buffer, m->c.buffer});
      }
    });
  }

  std::string run() {
    SMELT_CHECK(!name_.empty(), "codegen: empty kernel name");
    os_ << "// smelt kernel " << name_ << ", generated from kernel IR.\n";
    os_ << codegen::kernelPrelude(kernel_, options_.index_type, !vector_bytes_.empty(), blockDimConstant());
    os_ << "\n";
    emitSignature();
    ++depth_;
    emitSharedMemory();
    emitList(kernel_.body);
    --depth_;
    os_ << "}\n";
    return os_.str();
  }

 private:
  void line(const std::string& text) { os_ << std::string(2 * depth_, ' ') << text << "\n"; }

  void emitSignature() {
    std::vector<std::string> params;
    auto tensor = [&](const kir::Buffer* buffer) {
      SMELT_CHECK(buffer->memory == MemoryType::Global, "codegen: kernel parameter ",
                  buffer->name, " is a ", buffer->memory, " buffer, not a Global one");
      params.push_back("smelt::Tensor<" + cudaType(buffer->dtype) + ", " +
                       std::to_string(buffer->shape.size()) + "> " + buffer->name);
    };
    for (const kir::Buffer* buffer : kernel_.inputs) tensor(buffer);
    for (const kir::Buffer* buffer : kernel_.outputs) tensor(buffer);
    for (const Scalar* scalar : kernel_.scalar_inputs) {
      SMELT_CHECK(!scalar->isConstant(), "codegen: scalar input ", scalar->toString(),
                  " is a constant");
      params.push_back(cudaType(scalar->dtype()) + " " + scalar->symbol());
    }
    for (std::string& map : codegen::tensorMapParameters(kernel_)) params.push_back(std::move(map));
    os_ << "extern \"C\" __global__ void ";
    if (auto threads = threadsPerBlock()) {
      os_ << "__launch_bounds__(" << *threads;
      if (options_.min_blocks_per_sm > 0) os_ << ", " << options_.min_blocks_per_sm;
      os_ << ") ";
    }
    os_ << name_ << "(";
    for (size_t i = 0; i < params.size(); ++i) {
      os_ << (i ? ",\n    " : "\n    ") << params[i];
    }
    os_ << ") {\n";
  }

  // The launch's block extents for the prelude's thread indexing (0: not
  // constant), so a one-dimensional block's linear index is threadIdx.x.
  std::string blockDimConstant() const {
    std::string extents;
    for (const IntExpr& dim : kernel_.launch.block) {
      extents += (extents.empty() ? "" : ", ") + std::to_string(dim.isConstant() ? *dim.constant() : 0);
    }
    return "\nnamespace smelt {\nconstexpr unsigned kBlockDim[3] = {" + extents + "};\n}  // namespace smelt\n";
  }

  // Lets ptxas budget registers for the block size when it is known.
  std::optional<int64_t> threadsPerBlock() const {
    int64_t threads = 1;
    for (const IntExpr& dim : kernel_.launch.block) {
      if (!dim.isConstant()) return std::nullopt;
      threads *= *dim.constant();
    }
    return threads;
  }

  void emitSharedMemory() {
    std::vector<const kir::Buffer*> shared;
    for (const auto& buffer : kernel_.buffers) {
      if (buffer->memory == MemoryType::Shared) shared.push_back(buffer.get());
    }
    if (shared.empty()) return;
    if (options_.static_shared_memory) {
      const IntExpr total = sharedMemoryBytes(kernel_);
      SMELT_CHECK(total.isConstant() && *total.constant() <= 48 * 1024,
                  "codegen: static shared memory needs a constant size of at most 48 KiB, got ",
                  total);
      line("__shared__ __align__(128) unsigned char smem[" + std::to_string(*total.constant()) +
           "];");
    } else {
      line("extern __shared__ __align__(128) unsigned char smem[];");
    }
    for (const kir::Buffer* buffer : shared) {
      const std::string type = cudaType(buffer->dtype);
      const IntExpr address = addressOf(buffer);
      std::string comment = "  // " + indexText(buffer->bytes(), true) + " bytes";
      if (buffer->alias_of != nullptr) comment += ", alias of " + buffer->alias_of->name;
      line(type + "* " + buffer->name + " = reinterpret_cast<" + type + "*>(smem + " +
           indexText(address, true) + ");" + comment);
    }
  }

  void emitList(const kir::StmtList& list) {
    for (const auto& stmt : list) emitStmt(*stmt);
  }

  void emitStmt(const kir::Stmt& stmt) {
    switch (stmt.kind()) {
      case kir::StmtKind::ForLoop: return emitLoop(static_cast<const kir::ForLoop&>(stmt));
      case kir::StmtKind::IfThenElse: return emitIf(static_cast<const kir::IfThenElse&>(stmt));
      case kir::StmtKind::Allocate: return emitAllocate(static_cast<const kir::Allocate&>(stmt));
      case kir::StmtKind::Compute: return emitCompute(static_cast<const kir::Compute&>(stmt));
      case kir::StmtKind::ReduceInit: return emitReduceInit(static_cast<const kir::ReduceInit&>(stmt));
      case kir::StmtKind::ReduceStep: return emitReduceStep(static_cast<const kir::ReduceStep&>(stmt));
      case kir::StmtKind::ScanInit: return emitScanInit(static_cast<const kir::ScanInit&>(stmt));
      case kir::StmtKind::BlockScan:
        for (const std::string& text : codegen::blockScanCode(static_cast<const kir::BlockScan&>(stmt), spelling())) {
          line(text);
        }
        return;
      case kir::StmtKind::BlockReduce: return emitBlockReduce(static_cast<const kir::BlockReduce&>(stmt));
      case kir::StmtKind::BlockBroadcast:
        return emitBlockBroadcast(static_cast<const kir::BlockBroadcast&>(stmt));
      SMELT_KIR_TENSOR_CORE_CASES:
        kir::checkTensorCoreOperands(stmt);
        line(codegen::tensorCoreCall(
            stmt, [&](const kir::Access& a) { return element(a); },
            [&](const kir::Predicate& p) { return predicateText(p); }));
        return;
      SMELT_KIR_HOPPER_CASES:
        line(codegen::hopperCall(
            stmt, [&](const kir::Access& a) { return element(a); },
            [&](const IntExpr& e) { return indexText(e, true); }));
        return;
      case kir::StmtKind::BlockSync: {
        const auto& sync = static_cast<const kir::BlockSync&>(stmt);
        std::string comment = sync.reason;
        if (sync.inserted_for_reuse) comment += comment.empty() ? "inserted for reuse" : " (inserted for reuse)";
        line("__syncthreads();" + (comment.empty() ? "" : "  // " + comment));
        return;
      }
    }
    SMELT_INTERNAL_CHECK(false, "unknown kernel IR statement");
  }

  codegen::CodegenSpelling spelling() {
    return {[this](const kir::Access& a) { return element(a); },
            [this](const IntExpr& e) { return indexText(e, true); }, convert, literal, cudaType};
  }

  void open(const std::string& header) {
    line(header);
    ++depth_;
  }
  void close(const std::string& footer = "}") {
    --depth_;
    line(footer);
  }

  void emitLoop(const kir::ForLoop& loop) {
    const std::string extent = indexText(loop.extent, true);
    if (loop.trivial && isParallelDim(loop.parallel_type)) {
      const std::string builtin = builtinIndex(loop.parallel_type);
      open("{  // " + loop.index + " over [0, " + extent + ") bound to " + builtin);
      if (loop.index != builtin) line("const index_t " + loop.index + " = " + builtin + ";");
    } else if (loop.trivial && loop.extent.constant() == std::optional<int64_t>(1)) {
      open("{  // " + loop.index + " over [0, 1)");
      line("const index_t " + loop.index + " = 0;");
    } else {
      SMELT_CHECK(!isParallelDim(loop.parallel_type), "codegen: loop ", loop.index, " bound to ",
                  loop.parallel_type, " is not marked trivial");
      SMELT_CHECK(!loop.trivial || loop.parallel_type == ParallelType::Vectorize, "codegen: loop ",
                  loop.index, " is marked trivial but is neither parallel, vectorized nor of extent 1");
      if (auto vectorized = vectorizeLoop(loop)) return emitVectorized(loop, *vectorized);
      return emitForLoop(loop);
    }
    emitList(loop.body);
    close();
  }

  void emitForLoop(const kir::ForLoop& loop) {
    if (loop.body.size() == 1 && loop.body.front()->kind() == kir::StmtKind::BlockReduce) {
      const auto& reduce = static_cast<const kir::BlockReduce&>(*loop.body.front());
      if (reduce.grouped > 1) return emitGroupedBlockReduce(loop, reduce);
    }
    // A vectorized loop that cannot use vector accesses (vectorize.h) is
    // fully unrolled, so the compiler may still combine adjacent accesses.
    // A loop of constant trip count that indexes register arrays is unrolled
    // too, so those arrays are indexed by constants.
    if (loop.parallel_type == ParallelType::Unroll || loop.parallel_type == ParallelType::Vectorize ||
        (loop.extent.isConstant() && indexesRegisterArray(loop))) {
      line("#pragma unroll");
    }
    open("for (index_t " + loop.index + " = 0; " + loop.index + " < " + indexText(loop.extent, true) +
         "; ++" + loop.index + ") {");
    emitList(loop.body);
    close();
  }

  // One vector load and store per copy (the loop index does not exist), or
  // two of half the width for a 32-byte vector; where a vector straddles a
  // bound, the scalar loop runs lane by lane.
  void emitVectorized(const kir::ForLoop& loop, const VectorizedLoop& vectorized) {
    const std::string width = std::to_string(vectorized.width);
    const int64_t pieces = vectorized.pieces();
    const int64_t piece_width = vectorized.width / pieces;
    open("{  // " + loop.index + " over [0, " + width + ") vectorized: " +
         (pieces > 1 ? std::to_string(pieces) + " x " : "") + std::to_string(vectorized.bytes / pieces) +
         "-byte accesses" + (vectorized.scalar_tail ? ", lane by lane across a bound" : ""));
    auto copyText = [&](const VectorCopy& copy) {
      const kir::Compute& c = *copy.stmt;
      const kir::Buffer* in = c.operands[0].access->buffer;
      const std::string type =
          "smelt::Vector<" + cudaType(c.out.buffer->dtype) + ", " + std::to_string(piece_width) + ">";
      std::string text;
      for (int64_t p = 0; p < pieces; ++p) {
        const IntExpr offset(p * piece_width);
        text += (p ? " " : "") + std::string("*reinterpret_cast<") + type + "*>(&" +
                element({c.out.buffer, copy.out_first + offset}) + ") = *reinterpret_cast<const " + type +
                "*>(&" + element({in, copy.in_first + offset}) + ");";
      }
      return text;
    };
    if (!vectorized.scalar_tail) {
      for (const VectorCopy& copy : vectorized.copies) guarded(copy.predicate, copyText(copy));
    } else {
      const VectorCopy& copy = vectorized.copies.at(0);
      open("if (" + predicateText(copy.predicate) + ") {");
      line(copyText(copy));
      close("} else {");
      ++depth_;
      emitForLoop(loop);
      close();
    }
    close();
  }

  void emitIf(const kir::IfThenElse& ite) {
    open("if (" + predicateText(ite.predicate) + ") {");
    emitList(ite.then_body);
    if (!ite.else_body.empty()) {
      close("} else {");
      ++depth_;
      emitList(ite.else_body);
    }
    close();
  }

  void emitAllocate(const kir::Allocate& alloc) {
    const kir::Buffer* buffer = alloc.buffer;
    if (buffer->memory != MemoryType::Local) return;  // Shared: at the top; Global: a parameter
    SMELT_CHECK(buffer->elements.isConstant(), "codegen: local buffer ", buffer->name,
                " has symbolic size ", buffer->elements, "; registers need a constant size");
    // Registers accessed as vectors need the vector's alignment.
    auto vector = vector_bytes_.find(buffer);
    // Fragments are read and written as 32-bit registers by the inline PTX.
    const std::string align =
        fragment_buffers_.count(buffer) ? "__align__(16) "
        : vector == vector_bytes_.end() ? ""
                                        : "__align__(" + std::to_string(vector->second) + ") ";
    line(align + cudaType(buffer->dtype) + " " + buffer->name + "[" +
         std::to_string(*buffer->elements.constant()) + "];");
  }

  // Index arithmetic in signed index_t. CUDA's builtins are unsigned 32-bit,
  // so `threadIdx.x - 2` would wrap: they are converted where they occur. With
  // 32-bit indices, an int64_t scalar input in an extent is converted too (the
  // launch's choice of index type covers its value), and a constant must fit.
  // `top` drops the outermost parentheses (subscripts, conditions).
  std::string indexText(const IntExpr& e, bool top = false) const {
    using K = IntExpr::Kind;
    switch (e.kind()) {
      case K::Constant: {
        const int64_t value = *e.constant();
        SMELT_CHECK(!narrow_index_ || (value >= INT32_MIN && value <= INT32_MAX), "codegen: index constant ",
                    value, " does not fit the 32-bit index type (this launch needs 64-bit indices)");
        return std::to_string(value);
      }
      case K::Symbol: {
        const std::string& name = e.symbolName();
        const bool convert = isBuiltinSymbol(name) || (narrow_index_ && scalar_symbols_.count(name));
        return convert ? "index_t(" + name + ")" : name;
      }
      case K::CeilDiv:
      case K::Min:
      case K::Max: {
        const char* fn = e.kind() == K::CeilDiv ? "smelt::ceilDiv(" : e.kind() == K::Min ? "smelt::min(" : "smelt::max(";
        return fn + indexText(e.lhs(), true) + ", " + indexText(e.rhs(), true) + ")";
      }
      case K::Add:
      case K::Sub:
      case K::Mul:
      case K::Div:
      case K::Mod: {
        // A non-negative value by a power of two: a shift or a mask. The
        // signed division rounds toward zero, which costs ptxas a fix-up
        // of 2-3 instructions per quotient or remainder; the swizzled
        // operand tiles of a tensor-core matmul take hundreds of them.
        const std::optional<int64_t> divisor = e.rhs().constant();
        if ((e.kind() == K::Div || e.kind() == K::Mod) && divisor && *divisor > 1 &&
            (*divisor & (*divisor - 1)) == 0 && nonNegative(e.lhs())) {
          const std::string lhs = indexText(e.lhs());
          return "(" + lhs +
                 (e.kind() == K::Div ? " >> " + std::to_string(__builtin_ctzll(static_cast<uint64_t>(*divisor)))
                                     : " & " + std::to_string(*divisor - 1)) +
                 ")";
        }
        const char* op = e.kind() == K::Add   ? " + "
                         : e.kind() == K::Sub ? " - "
                         : e.kind() == K::Mul ? " * "
                         : e.kind() == K::Div ? " / "
                                              : " % ";
        std::string text = indexText(e.lhs()) + op + indexText(e.rhs());
        return top ? text : "(" + text + ")";
      }
    }
    SMELT_INTERNAL_CHECK(false, "unknown IntExpr kind");
  }

  std::string predicateText(const kir::Predicate& predicate) const {
    if (predicate.alwaysTrue()) return "true";
    std::string text;
    for (const auto& term : predicate.terms) {
      const char* op = term.kind == kir::Predicate::Term::Kind::LessThan ? " < "
                       : term.kind == kir::Predicate::Term::Kind::Equal  ? " == "
                                                                         : " >= ";
      if (!text.empty()) text += " && ";
      text += indexText(term.lhs, true) + op + indexText(term.rhs, true);
    }
    return text;
  }

  // The element an access names, as an lvalue.
  std::string element(const kir::Access& access) {
    SMELT_INTERNAL_CHECK(access.buffer != nullptr, "access without buffer");
    const std::string index = indexText(access.index, true);
    if (access.buffer->memory == MemoryType::Global) return access.buffer->name + ".data[" + index + "]";
    return access.buffer->name + "[" + index + "]";
  }

  std::string scalarValue(const Val* val, DataType to) {
    const auto* scalar = dynamic_cast<const Scalar*>(val);
    SMELT_CHECK(scalar != nullptr, "codegen: operand ", val->toString(), " is not a scalar");
    if (scalar->isConstant()) return literal(scalar->value(), to);
    return convert(scalar->symbol(), scalar->dtype(), to);
  }

  // An operand's value converted to `to`.
  std::string operandValue(const kir::Operand& operand, DataType to) {
    if (operand.index) return convert("(" + indexText(*operand.index, true) + ")", DataType::Int, to);
    if (!operand.access) {
      SMELT_CHECK(operand.scalar != nullptr, "codegen: operand has neither an access nor a scalar");
      return scalarValue(operand.scalar, to);
    }
    const std::string value = convert(element(*operand.access), operand.access->buffer->dtype, to);
    if (operand.in_bounds.alwaysTrue()) return value;
    SMELT_CHECK(operand.out_of_bounds_value != nullptr, "codegen: a read of ",
                operand.access->buffer->name, " has a bounds predicate but no out-of-bounds value");
    return "(" + predicateText(operand.in_bounds) + " ? " + value + " : " +
           scalarValue(operand.out_of_bounds_value, to) + ")";
  }

  const kir::Operand& operandAt(const kir::Compute& c, size_t i) {
    SMELT_CHECK(i < c.operands.size(), "codegen: ", c.expr->opName(), " writing ",
                c.out.buffer->name, " needs operand ", i, " but has ", c.operands.size());
    return c.operands[i];
  }

  // Writes `text`, guarded by `predicate`.
  void guarded(const kir::Predicate& predicate, const std::string& text) {
    if (predicate.alwaysTrue()) return line(text);
    open("if (" + predicateText(predicate) + ") {");
    line(text);
    close();
  }

  void assign(const kir::Predicate& predicate, const kir::Access& out, const std::string& value,
              DataType value_type) {
    guarded(predicate, element(out) + " = " + convert(value, value_type, out.buffer->dtype) + ";");
  }

  std::string unary(const UnaryOp* op, const kir::Compute& c, DataType ct) {
    return codegen::unaryText(op, ct, operandText(c));
  }

  std::string binary(const BinaryOp* op, const kir::Compute& c, DataType ct) {
    return codegen::binaryText(op, ct, operandText(c));
  }

  codegen::OperandText operandText(const kir::Compute& c) {
    return [this, &c](size_t i, DataType type) { return operandValue(operandAt(c, i), type); };
  }

  // gathered_index = index[..] (checked against the table's extent, as
  // torch checks: out of range traps), then out = table[.., gathered_index, ..].
  void emitIndexSelect(const kir::Compute& c) {
    const auto* select = static_cast<const IndexSelectOp*>(c.expr);
    const IntExpr extent = select->table()->logicalNoReductions().at(select->dim())->loopExtent();
    const std::string index = kir::kGatheredIndexSymbol;
    open(c.predicate.alwaysTrue() ? "{" : "if (" + predicateText(c.predicate) + ") {");
    line("const int64_t " + index + "_value = " + operandValue(operandAt(c, 1), DataType::Int) + ";");
    line("if (" + index + "_value < 0 || " + index + "_value >= " + indexText(extent, true) +
         ") __trap();");
    line("const index_t " + index + " = static_cast<index_t>(" + index + "_value);");
    const DataType ct = computeType(c.out.buffer->dtype);
    line(element(c.out) + " = " + convert(operandValue(operandAt(c, 0), ct), ct, c.out.buffer->dtype) + ";");
    close();
  }

  // gathered_index = index[p] (negative ones wrapped where the op allows;
  // outside [0, size) traps, as torch's device assert, before any write),
  // then out[p with dim at gathered_index] combined with src[p]: stored for
  // Set, atomically otherwise (duplicate indices all contribute).
  void emitScatter(const kir::Compute& c) {
    const auto* scatter = static_cast<const ScatterOp*>(c.expr);
    const IntExpr extent = scatter->output()->logicalDomain().at(scatter->dim())->extent();
    const std::string index = kir::kGatheredIndexSymbol;
    const std::string size = indexText(extent, true);
    open(c.predicate.alwaysTrue() ? "{" : "if (" + predicateText(c.predicate) + ") {");
    line("int64_t " + index + "_value = " + operandValue(operandAt(c, 0), DataType::Int) + ";");
    if (scatter->wrapNegative()) line("if (" + index + "_value < 0) " + index + "_value += " + size + ";");
    line("if (" + index + "_value < 0 || " + index + "_value >= " + size + ") __trap();");
    line("const index_t " + index + " = static_cast<index_t>(" + index + "_value);");
    const DataType dtype = c.out.buffer->dtype;
    const DataType ct = computeType(dtype);
    const std::string type = cudaType(dtype);
    const std::string value = convert(operandValue(operandAt(c, 1), ct), ct, dtype);
    const std::string target = "&" + element(c.out);
    switch (scatter->combine()) {
      case ScatterCombine::Set: line(element(c.out) + " = " + value + ";"); break;
      case ScatterCombine::Add: line("smelt::atomicAccumulate(" + target + ", " + value + ");"); break;
      case ScatterCombine::Mul: case ScatterCombine::Max: case ScatterCombine::Min: {
        const std::string a = convert("a", dtype, ct), b = convert("b", dtype, ct);
        const std::string combined =
            scatter->combine() == ScatterCombine::Mul
                ? a + " * " + b
                : std::string(scatter->combine() == ScatterCombine::Max ? "smelt::maximum<" : "smelt::minimum<") +
                      cudaType(ct) + ">(" + a + ", " + b + ")";
        line("smelt::atomicCombine(" + target + ", " + value + ", [](" + type + " a, " + type +
             " b) { return " + convert(combined, ct, dtype) + "; });");
        break;
      }
    }
    close();
  }

  // One step of a scan (kir::ScanInit): operand 1, the running value,
  // combines operand 0; the output element takes it.
  void emitScanStep(const kir::Compute& c) {
    const auto* scan = static_cast<const ScanOp*>(c.expr);
    SMELT_CHECK(c.operands.size() == 2 && c.operands[1].access, "codegen: scan step of ",
                c.out.buffer->name, " needs its input and running value as operands");
    const kir::Access& carry = *c.operands[1].access;
    const DataType at = carry.buffer->dtype;
    const std::string running = element(carry);
    open(c.predicate.alwaysTrue() ? "{" : "if (" + predicateText(c.predicate) + ") {");
    line(running + " = " +
         codegen::scanCombine(scan->combine(), running, operandValue(c.operands[0], at), cudaType(at)) + ";");
    line(element(c.out) + " = " + convert(running, at, c.out.buffer->dtype) + ";");
    close();
  }

  void emitScanInit(const kir::ScanInit& s) {
    SMELT_CHECK(s.expr != nullptr, "codegen: scan init of ", s.carry.buffer->name, " has no expression");
    line(element(s.carry) + " = " + literal(s.expr->initValue(), s.carry.buffer->dtype) + ";");
  }

  void emitCompute(const kir::Compute& c) {
    SMELT_CHECK(c.expr != nullptr, "codegen: compute statement writing ", c.out.buffer->name,
                " has no fusion expression");
    if (c.expr->type() == ExprType::IndexSelect) return emitIndexSelect(c);
    if (c.expr->type() == ExprType::Scatter) return emitScatter(c);
    if (c.expr->type() == ExprType::Scan) return emitScanStep(c);
    DataType ct = computeType(c.out.buffer->dtype);
    std::string value;
    switch (c.expr->type()) {
      case ExprType::Full:
        // The fill value is the expression's unless lowering passed it as an operand.
        value = c.operands.empty() ? scalarValue(static_cast<const FullOp*>(c.expr)->fillValue(), ct)
                                   : operandValue(c.operands[0], ct);
        break;
      case ExprType::Iota:  // start + index * step
        value = operandValue(operandAt(c, 1), ct) + " + " + operandValue(operandAt(c, 0), ct) + " * " +
                operandValue(operandAt(c, 2), ct);
        break;
      case ExprType::Unary: value = unary(static_cast<const UnaryOp*>(c.expr), c, ct); break;
      case ExprType::Binary: {
        // A comparison's value is bool whatever it compares in.
        const auto* op = static_cast<const BinaryOp*>(c.expr);
        value = binary(op, c, codegen::binaryComputeType(op, ct));
        if (isComparison(op->op())) ct = DataType::Bool;
        break;
      }
      case ExprType::Where:
        value = operandValue(operandAt(c, 0), DataType::Bool) + " ? " +
                operandValue(operandAt(c, 1), ct) + " : " + operandValue(operandAt(c, 2), ct);
        break;
      case ExprType::Reduction:
        SMELT_CHECK(false, "codegen: reduction ", c.expr->toString(),
                    " must be lowered to ReduceInit/ReduceStep/BlockReduce, not Compute");
        break;
      case ExprType::IndexSelect:  // emitIndexSelect
      case ExprType::Scatter:      // emitScatter
      case ExprType::Scan:         // emitScanStep
      case ExprType::Mma:
        SMELT_CHECK(false, "codegen: ", c.expr->toString(),
                    " must be lowered to the tensor-core statements, not Compute");
        break;
      default:
        SMELT_INTERNAL_CHECK(isCopyLike(c.expr->type()), "codegen: no statement for ", c.expr->toString());
        value = operandValue(operandAt(c, 0), ct);
        break;
    }
    assign(c.predicate, c.out, value, ct);
  }

  std::string combine(const ReductionOp* op, const std::string& acc, const std::string& x) {
    switch (op->op()) {
      case ReductionOpType::Sum: return acc + " + " + x;
      case ReductionOpType::Prod: return acc + " * " + x;
      case ReductionOpType::Max: break;
    }
    return "smelt::maximum(" + acc + ", " + x + ")";
  }

  void emitReduceInit(const kir::ReduceInit& r) {
    SMELT_CHECK(r.expr != nullptr, "codegen: reduction init of ", r.out.buffer->name, " has no expression");
    const DataType ct = computeType(r.out.buffer->dtype);
    assign(r.predicate, r.out, literal(r.expr->initValue(), ct), ct);
  }

  void emitReduceStep(const kir::ReduceStep& r) {
    SMELT_CHECK(r.expr != nullptr, "codegen: reduction step into ", r.out.buffer->name, " has no expression");
    const DataType ct = computeType(r.out.buffer->dtype);
    const std::string acc = convert(element(r.out), r.out.buffer->dtype, ct);
    assign(r.predicate, r.out, combine(r.expr, acc, operandValue(r.in, ct)), ct);
  }

  // "<true, false, false>" for the axes among TIDx/y/z that are listed.
  static std::string functorName(ReductionOpType op) {
    switch (op) {
      case ReductionOpType::Sum: return "Sum";
      case ReductionOpType::Prod: return "Prod";
      case ReductionOpType::Max: break;
    }
    return "Max";
  }

  static std::string axisFlags(const std::vector<ParallelType>& axes, const char* what) {
    bool flags[3] = {false, false, false};
    for (ParallelType pt : axes) {
      SMELT_CHECK(isThreadDim(pt), "codegen: ", what, " over ", pt, ", not a thread axis");
      flags[static_cast<int>(pt) - static_cast<int>(ParallelType::TIDx)] = true;
    }
    SMELT_CHECK(!axes.empty(), "codegen: ", what, " over no thread axis");
    return std::string("<") + (flags[0] ? "true" : "false") + ", " + (flags[1] ? "true" : "false") +
           ", " + (flags[2] ? "true" : "false") + ">";
  }

  const kir::Buffer* workspace(const kir::Buffer* ws, const kir::Access& out, const char* what) {
    SMELT_CHECK(ws != nullptr && ws->memory == MemoryType::Shared, "codegen: ", what, " into ",
                out.buffer->name, " needs a Shared workspace buffer");
    return ws;
  }

  // What a thread contributes to a block reduction, in the type it combines
  // in: its element, or the identity where the predicate fails.
  std::string blockReduceValue(const kir::BlockReduce& r) {
    SMELT_CHECK(r.expr != nullptr, "codegen: block reduction into ", r.out.buffer->name, " has no expression");
    const DataType wt = blockReduceType(r.expr->output()->dtype());
    std::string value = convert(element(r.in), r.in.buffer->dtype, wt);
    if (!r.predicate.alwaysTrue()) {
      value = "(" + predicateText(r.predicate) + " ? " + value + " : " +
              convert(literal(r.expr->initValue(), computeType(wt)), computeType(wt), wt) + ")";
    }
    return value;
  }

  std::string blockReduceWorkspace(const kir::BlockReduce& r) {
    const bool in_warps = r.shuffle_group > 0 && r.shuffle_group * r.shuffle_stride <= 32;
    if (!in_warps) return workspace(r.workspace, r.out, "block reduction")->name;
    return "static_cast<" + cudaType(blockReduceType(r.expr->output()->dtype())) + "*>(nullptr)";
  }

  // Every thread takes part (the reduction synchronizes the block); only
  // those passing the write predicate store, as their output index is in
  // bounds, and of those one per element of a Shared or Global output.
  void storeReduced(const kir::BlockReduce& r, const std::string& reduced) {
    const std::string value = convert(reduced, blockReduceType(r.expr->output()->dtype()), r.out.buffer->dtype);
    const kir::Predicate& stores = r.write_predicate;
    if (stores.alwaysTrue()) {
      line(element(r.out) + " = " + value + ";");
      return;
    }
    line("if (" + predicateText(stores) + ") " + element(r.out) + " = " + value + ";");
  }

  void emitBlockReduce(const kir::BlockReduce& r) {
    const std::string value = blockReduceValue(r);
    const std::string op = "smelt::" + functorName(r.expr->op()) + "()";
    std::string call = "smelt::blockReduce" + axisFlags(r.thread_axes, "block reduction") + "(";
    if (r.shuffle_group > 0 && r.shuffle_stride > 1) {
      call = "smelt::stridedGroupReduce<" + std::to_string(r.shuffle_stride) + ", " +
             std::to_string(r.shuffle_group) + ">(";
    } else if (r.shuffle_group > 0) {
      call = "smelt::groupReduce<" + std::to_string(r.shuffle_group) + ", " +
             std::to_string(*threadsPerBlock()) + ">(";
    }
    const std::string reduced = call + value + ", " + blockReduceWorkspace(r) + ", " + op + ")";
    if (r.write_predicate.alwaysTrue()) return storeReduced(r, reduced);
    open("{");
    line("const auto reduced = " + reduced + ";");
    storeReduced(r, "reduced");
    close();
  }

  // The loop's independent block reductions (BlockReduce::grouped) in one
  // round: the values gathered in the loop, reduced together, stored in the
  // loop again.
  void emitGroupedBlockReduce(const kir::ForLoop& loop, const kir::BlockReduce& r) {
    const std::string value = blockReduceValue(r);
    SMELT_CHECK(r.shuffle_group > 0 && r.shuffle_stride > 1 && loop.extent.constant() == r.grouped,
                "codegen: block reductions into ", r.out.buffer->name, " are grouped over a loop of ",
                loop.extent.toString(), " trips without the strided shuffle form");
    const std::string n = std::to_string(r.grouped);
    const std::string values = r.out.buffer->name + "_grouped";
    const std::string header = "for (index_t " + loop.index + " = 0; " + loop.index + " < " + n + "; ++" +
                               loop.index + ") {";
    open("{  // " + n + " block reductions of " + loop.index + " in one round");
    line(cudaType(blockReduceType(r.expr->output()->dtype())) + " " + values + "[" + n + "];");
    line("#pragma unroll");
    open(header);
    line(values + "[" + loop.index + "] = " + value + ";");
    close();
    line("smelt::stridedGroupReduceN<" + std::to_string(r.shuffle_stride) + ", " + std::to_string(r.shuffle_group) +
         ">(" + values + ", " + blockReduceWorkspace(r) + ", smelt::" + functorName(r.expr->op()) + "());");
    line("#pragma unroll");
    open(header);
    storeReduced(r, values + "[" + loop.index + "]");
    close();
    close();
  }

  void emitBlockBroadcast(const kir::BlockBroadcast& b) {
    const kir::Buffer* ws = workspace(b.workspace, b.out, "block broadcast");
    const std::string value = convert(element(b.in), b.in.buffer->dtype, ws->dtype);
    line(element(b.out) + " = " +
         convert("smelt::blockBroadcast" + axisFlags(b.thread_axes, "block broadcast") + "(" + value +
                     ", " + ws->name + ")",
                 ws->dtype, b.out.buffer->dtype) +
         ";");
  }

  const kir::Kernel& kernel_;
  const std::string& name_;
  const CodegenOptions& options_;
  const bool narrow_index_;                       // index_t is int
  std::unordered_set<std::string> scalar_symbols_;  // symbolic scalar inputs
  const std::unordered_map<const kir::Buffer*, int64_t> vector_bytes_;
  std::unordered_set<const kir::Buffer*> fragment_buffers_;  // LdMatrix/Mma operands
  std::ostringstream os_;
  int depth_ = 0;
};

}  // namespace

std::string generateCuda(const kir::Kernel& kernel, const std::string& kernel_name,
                         const CodegenOptions& options) {
  return Emitter(kernel, kernel_name, options).run();
}

IntExpr sharedMemoryBytes(const kir::Kernel& kernel) {
  IntExpr total = 0;
  for (const auto& buffer : kernel.buffers) {
    if (buffer->memory != MemoryType::Shared) continue;
    total = max(total, addressOf(buffer.get()) + buffer->bytes());
  }
  return total;
}

}  // namespace smelt
