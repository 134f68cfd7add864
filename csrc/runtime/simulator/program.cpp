#include "runtime/simulator/program.h"

#include <set>

#include "fusion/error.h"
#include "fusion/ir.h"
#include "fusion/symbols.h"
#include "lower/kir_checks.h"
#include "lower/kir_families.h"

namespace smelt::sim {
namespace {

int builtinSlot(ParallelType pt) {
  switch (pt) {
    case ParallelType::TIDx: return kThreadIdx + 0;
    case ParallelType::TIDy: return kThreadIdx + 1;
    case ParallelType::TIDz: return kThreadIdx + 2;
    case ParallelType::BIDx: return kBlockIdx + 0;
    case ParallelType::BIDy: return kBlockIdx + 1;
    case ParallelType::BIDz: return kBlockIdx + 2;
    default: SMELT_INTERNAL_CHECK(false, "not a grid/block parallel type");
  }
  return -1;
}

uint8_t threadAxisMask(const std::vector<ParallelType>& axes, int64_t position) {
  uint8_t mask = 0;
  for (ParallelType pt : axes) {
    SMELT_CHECK(isThreadDim(pt), "simulator: statement ", position,
                " reduces/broadcasts over ", pt, ", which is not a thread axis");
    mask |= static_cast<uint8_t>(1u << (builtinSlot(pt) - kThreadIdx));
  }
  return mask;
}

std::string statementText(const kir::Stmt* stmt) {
  auto exprText = [](const Expr* e) { return e ? " " + e->toString() : std::string(); };
  switch (stmt->kind()) {
    case kir::StmtKind::Compute:
      return "Compute" + exprText(static_cast<const kir::Compute*>(stmt)->expr);
    case kir::StmtKind::ReduceInit:
      return "ReduceInit" + exprText(static_cast<const kir::ReduceInit*>(stmt)->expr);
    case kir::StmtKind::ScanInit:
      return "ScanInit" + exprText(static_cast<const kir::ScanInit*>(stmt)->expr);
    case kir::StmtKind::ReduceStep:
      return "ReduceStep" + exprText(static_cast<const kir::ReduceStep*>(stmt)->expr);
    case kir::StmtKind::BlockReduce:
      return "BlockReduce" + exprText(static_cast<const kir::BlockReduce*>(stmt)->expr);
    case kir::StmtKind::BlockScan:
      return "BlockScan" + exprText(static_cast<const kir::BlockScan*>(stmt)->expr);
    case kir::StmtKind::BlockBroadcast:
      return "BlockBroadcast" + exprText(static_cast<const kir::BlockBroadcast*>(stmt)->expr);
    case kir::StmtKind::BlockSync: {
      const auto* sync = static_cast<const kir::BlockSync*>(stmt);
      return sync->reason.empty() ? "BlockSync" : "BlockSync (" + sync->reason + ")";
    }
    case kir::StmtKind::ForLoop:
      return "for " + static_cast<const kir::ForLoop*>(stmt)->index;
    case kir::StmtKind::IfThenElse: return "if";
    case kir::StmtKind::Allocate:
      return "Allocate " + static_cast<const kir::Allocate*>(stmt)->buffer->name;
    case kir::StmtKind::CpAsync:
      return "cp.async into " + static_cast<const kir::CpAsync*>(stmt)->dst.buffer->name;
    case kir::StmtKind::CpAsyncCommit: return "cp.async.commit_group";
    case kir::StmtKind::CpAsyncWait:
      return "cp.async.wait_group " +
             std::to_string(static_cast<const kir::CpAsyncWait*>(stmt)->pending);
    case kir::StmtKind::LdMatrix:
      return "ldmatrix from " + static_cast<const kir::LdMatrix*>(stmt)->src.buffer->name;
    case kir::StmtKind::Mma:
      return "mma into " + static_cast<const kir::Mma*>(stmt)->c.buffer->name;
    case kir::StmtKind::MbarrierInit:
      return "mbarrier.init " + static_cast<const kir::MbarrierInit*>(stmt)->barrier.buffer->name;
    case kir::StmtKind::MbarrierArrive: {
      const auto* a = static_cast<const kir::MbarrierArrive*>(stmt);
      return (a->transaction_bytes > 0 ? "mbarrier.arrive.expect_tx " : "mbarrier.arrive ") +
             a->barrier.buffer->name;
    }
    case kir::StmtKind::MbarrierWait:
      return "mbarrier.wait " + static_cast<const kir::MbarrierWait*>(stmt)->barrier.buffer->name;
    case kir::StmtKind::TmaLoad:
      return "TMA load into " + static_cast<const kir::TmaLoad*>(stmt)->dst.buffer->name;
    case kir::StmtKind::FenceProxyAsync: return "fence.proxy.async";
    case kir::StmtKind::Wgmma:
      return "wgmma into " + static_cast<const kir::Wgmma*>(stmt)->acc.buffer->name;
    case kir::StmtKind::WgmmaFence: return "wgmma.fence";
    case kir::StmtKind::WgmmaCommit: return "wgmma.commit_group";
    case kir::StmtKind::WgmmaWait:
      return "wgmma.wait_group " + std::to_string(static_cast<const kir::WgmmaWait*>(stmt)->pending);
  }
  return "?";
}

class Compiler {
 public:
  Compiler(Program& program, const std::map<std::string, double>& scalars)
      : p_(program), scalars_(scalars) {
    // The builtins take slots kThreadIdx, kBlockIdx, kBlockDim, kGridDim (+ axis), in order.
    for (auto builtin : {threadIdxSymbol, blockIdxSymbol, blockDimSymbol, gridDimSymbol}) {
      for (int axis = 0; axis < 3; ++axis) p_.symbols.slot(builtin(axis));
    }
  }

  void compile(const kir::Kernel& kernel) {
    positions_ = kir::numberPositions(kernel.body);
    kir::forEachStmt(kernel.body, [&](const kir::Stmt* s, int) {
      const auto* loop = dynamic_cast<const kir::ForLoop*>(s);
      if (loop != nullptr && !isParallelDim(loop->parallel_type)) serial_indices_.insert(loop->index);
    });
    // Kernel buffers first, so ids follow the kernel's own order.
    for (const auto& b : kernel.buffers) bufferId(b.get());
    for (const kir::Buffer* b : kernel.inputs) bufferId(b);
    for (const kir::Buffer* b : kernel.outputs) bufferId(b);
    compileList(kernel.body);
    Instr end;
    end.op = Op::End;
    end.position = static_cast<int32_t>(positions_.count);
    emit(end, nullptr);
    p_.runtime_slot.assign(p_.symbols.size(), false);
    for (int s = 0; s < kNumBuiltins; ++s) p_.runtime_slot[s] = true;
    for (int s : loop_slots_) p_.runtime_slot[s] = true;
  }

 private:
  int32_t bufferId(const kir::Buffer* b) {
    SMELT_CHECK(b != nullptr, "simulator: an access has no buffer");
    auto it = p_.buffer_ids.find(b);
    if (it != p_.buffer_ids.end()) return it->second;
    if (b->alias_of) bufferId(b->alias_of);
    RtBuffer rb;
    rb.kir = b;
    rb.name = b->name;
    rb.memory = b->memory;
    rb.dtype = b->dtype;
    rb.elem_size = dataTypeSize(b->dtype);
    auto id = static_cast<int32_t>(p_.buffers.size());
    p_.buffers.push_back(rb);
    p_.buffer_ids.emplace(b, id);
    return id;
  }

  int32_t emit(const Instr& instr, const kir::Stmt* stmt) {
    p_.instrs.push_back(instr);
    p_.stmt_text.push_back(stmt ? statementText(stmt) : "end of kernel");
    return static_cast<int32_t>(p_.instrs.size()) - 1;
  }

  int32_t index(const IntExpr& e) {
    checkInScope(e, e);
    return p_.code.add(e, p_.symbols);
  }

  // A loop index used outside its loop reads whatever the slot last held
  // (in CUDA it does not compile): a lowering bug, reported by name.
  void checkInScope(const IntExpr& part, const IntExpr& whole) const {
    switch (part.kind()) {
      case IntExpr::Kind::Constant: return;
      case IntExpr::Kind::Symbol:
        SMELT_INTERNAL_CHECK(!serial_indices_.count(part.symbolName()) ||
                                 in_scope_.count(part.symbolName()),
                             "simulator: index ", whole, " uses loop index ", part.symbolName(),
                             " outside its loop");
        return;
      default:
        checkInScope(part.lhs(), whole);
        checkInScope(part.rhs(), whole);
    }
  }

  RtAccess access(const kir::Access& a) { return {bufferId(a.buffer), index(a.index)}; }

  RtPredicate predicate(const kir::Predicate& pred) {
    RtPredicate r;
    r.begin = static_cast<uint32_t>(p_.terms.size());
    for (const auto& t : pred.terms) p_.terms.push_back({index(t.lhs), index(t.rhs), t.kind});
    r.end = static_cast<uint32_t>(p_.terms.size());
    return r;
  }

  double scalarValue(const Val* v, int64_t position) {
    const auto* s = dynamic_cast<const Scalar*>(v);
    SMELT_CHECK(s != nullptr, "simulator: statement ", position,
                " uses a tensor where a scalar is expected");
    if (s->isConstant()) return s->value();
    auto it = scalars_.find(s->symbol());
    SMELT_CHECK(it != scalars_.end(), "simulator: scalar '", s->symbol(), "' used by statement ",
                position, " has no value; pass it in `scalars`");
    return it->second;
  }

  RtOperand operand(const kir::Operand& op, int64_t position) {
    RtOperand r;
    if (op.access) {
      r.access = access(*op.access);
    } else if (op.index) {
      r.index_value = index(*op.index);
    } else {
      SMELT_CHECK(op.scalar != nullptr, "simulator: statement ", position,
                  " has an operand that is neither an access nor a scalar");
      r.constant = scalarValue(op.scalar, position);
    }
    r.in_bounds = predicate(op.in_bounds);
    if (!op.in_bounds.alwaysTrue()) {
      SMELT_CHECK(op.out_of_bounds_value != nullptr, "simulator: statement ", position,
                  " has an operand bound predicate but no out-of-bounds value");
      r.out_of_bounds_value = scalarValue(op.out_of_bounds_value, position);
    }
    return r;
  }

  // The function and operand count of an element-wise statement's expression.
  static std::pair<Fn, size_t> computeFn(const Expr* expr, int64_t position) {
    SMELT_CHECK(expr != nullptr, "simulator: Compute statement ", position, " has no expr");
    switch (expr->type()) {
      case ExprType::Unary:
        switch (static_cast<const UnaryOp*>(expr)->op()) {
          case UnaryOpType::Neg: return {Fn::Neg, 1};
          case UnaryOpType::Exp: return {Fn::Exp, 1};
          case UnaryOpType::Tanh: return {Fn::Tanh, 1};
          case UnaryOpType::Abs: return {Fn::Abs, 1};
          case UnaryOpType::Relu: return {Fn::Relu, 1};
          case UnaryOpType::Cast: return {Fn::Copy, 1};
          case UnaryOpType::Sqrt: return {Fn::Sqrt, 1};
          case UnaryOpType::Rsqrt: return {Fn::Rsqrt, 1};
          case UnaryOpType::Log: return {Fn::Log, 1};
          case UnaryOpType::Log2: return {Fn::Log2, 1};
          case UnaryOpType::Log1p: return {Fn::Log1p, 1};
          case UnaryOpType::Exp2: return {Fn::Exp2, 1};
          case UnaryOpType::Expm1: return {Fn::Expm1, 1};
          case UnaryOpType::Sigmoid: return {Fn::Sigmoid, 1};
          case UnaryOpType::Erf: return {Fn::Erf, 1};
          case UnaryOpType::Reciprocal: return {Fn::Reciprocal, 1};
          case UnaryOpType::Sin: return {Fn::Sin, 1};
          case UnaryOpType::Cos: return {Fn::Cos, 1};
          case UnaryOpType::Tan: return {Fn::Tan, 1};
          case UnaryOpType::Asin: return {Fn::Asin, 1};
          case UnaryOpType::Acos: return {Fn::Acos, 1};
          case UnaryOpType::Atan: return {Fn::Atan, 1};
          case UnaryOpType::Sinh: return {Fn::Sinh, 1};
          case UnaryOpType::Cosh: return {Fn::Cosh, 1};
          case UnaryOpType::Asinh: return {Fn::Asinh, 1};
          case UnaryOpType::Acosh: return {Fn::Acosh, 1};
          case UnaryOpType::Atanh: return {Fn::Atanh, 1};
          case UnaryOpType::Log10: return {Fn::Log10, 1};
          case UnaryOpType::Erfc: return {Fn::Erfc, 1};
          case UnaryOpType::Lgamma: return {Fn::Lgamma, 1};
          case UnaryOpType::Floor: return {Fn::Floor, 1};
          case UnaryOpType::Ceil: return {Fn::Ceil, 1};
          case UnaryOpType::Round: return {Fn::Round, 1};
          case UnaryOpType::Trunc: return {Fn::Trunc, 1};
          case UnaryOpType::LogicalNot: return {Fn::LogicalNot, 1};
          case UnaryOpType::Signbit: return {Fn::Signbit, 1};
          case UnaryOpType::BitwiseNot: return {Fn::BitwiseNot, 1};
#define SMELT_SPECIAL_FN_OF(Enum, name) \
  case UnaryOpType::Enum: return {Fn::Enum, 1};
            SMELT_SPECIAL_UNARY_OPS(SMELT_SPECIAL_FN_OF)
#undef SMELT_SPECIAL_FN_OF
        }
        break;
      case ExprType::Binary:
        switch (static_cast<const BinaryOp*>(expr)->op()) {
          case BinaryOpType::Add: return {Fn::Add, 2};
          case BinaryOpType::Sub: return {Fn::Sub, 2};
          case BinaryOpType::Mul: return {Fn::Mul, 2};
          case BinaryOpType::Div:
            return {isIntegralType(expr->output()->dtype()) ? Fn::IntDiv : Fn::Div, 2};
          case BinaryOpType::Maximum: return {Fn::Maximum, 2};
          case BinaryOpType::Minimum: return {Fn::Minimum, 2};
          case BinaryOpType::Pow:
            return {isIntegralType(expr->output()->dtype()) ? Fn::IntPow : Fn::Pow, 2};
          case BinaryOpType::Remainder: return {Fn::Remainder, 2};
          case BinaryOpType::Fmod: return {Fn::Fmod, 2};
          case BinaryOpType::Atan2: return {Fn::Atan2, 2};
          case BinaryOpType::Hypot: return {Fn::Hypot, 2};
          case BinaryOpType::Copysign: return {Fn::Copysign, 2};
          case BinaryOpType::Nextafter: return {Fn::Nextafter, 2};
          case BinaryOpType::ShiftLeft: return {Fn::ShiftLeft, 2};
          case BinaryOpType::ShiftRight: return {Fn::ShiftRight, 2};
          case BinaryOpType::Gcd: return {Fn::Gcd, 2};
          case BinaryOpType::Lcm: return {Fn::Lcm, 2};
          case BinaryOpType::Eq: return {Fn::Eq, 2};
          case BinaryOpType::Ne: return {Fn::Ne, 2};
          case BinaryOpType::Lt: return {Fn::Lt, 2};
          case BinaryOpType::Le: return {Fn::Le, 2};
          case BinaryOpType::Gt: return {Fn::Gt, 2};
          case BinaryOpType::Ge: return {Fn::Ge, 2};
          case BinaryOpType::LogicalAnd: return {Fn::LogicalAnd, 2};
          case BinaryOpType::LogicalOr: return {Fn::LogicalOr, 2};
          case BinaryOpType::BitwiseAnd: return {Fn::BitwiseAnd, 2};
          case BinaryOpType::BitwiseOr: return {Fn::BitwiseOr, 2};
          case BinaryOpType::BitwiseXor: return {Fn::BitwiseXor, 2};
          case BinaryOpType::RandomUniform: return {Fn::RandomUniform, 2};
#define SMELT_SPECIAL_FN_OF(Enum, name) \
  case BinaryOpType::Enum: return {Fn::Enum, 2};
            SMELT_SPECIAL_BINARY_OPS(SMELT_SPECIAL_FN_OF)
#undef SMELT_SPECIAL_FN_OF
        }
        break;
      case ExprType::Where: return {Fn::Where, 3};
      case ExprType::Iota: return {Fn::Iota, 3};
      case ExprType::IndexSelect: return {Fn::Gather, 2};
      case ExprType::Scatter: return {Fn::Scatter, 2};
      case ExprType::Scan: return {Fn::Scan, 2};
      case ExprType::Full: return {Fn::Copy, 1};  // the fill value comes as the operand
      default:
        if (isCopyLike(expr->type())) return {Fn::Copy, 1};
        break;  // a reduction or an mma
    }
    SMELT_CHECK(false, "simulator: statement ", position, " computes ", expr->toString(),
                ", which is not an element-wise op");
    return {Fn::Copy, 0};
  }

  // The type an element-wise statement computes in (see codegen).
  static DataType computeDtype(const Expr* expr) {
    if (const auto* b = dynamic_cast<const BinaryOp*>(expr)) {
      if (isLogical(b->op())) return DataType::Bool;
      if (isComparison(b->op())) return computeType(b->operandDtype());
      if (b->op() == BinaryOpType::RandomUniform) return DataType::Int;  // seed and counter
    }
    return computeType(expr->output()->dtype());
  }

  static const ReductionOp* reduction(const Expr* expr, int64_t position) {
    const auto* r = dynamic_cast<const ReductionOp*>(expr);
    SMELT_CHECK(r != nullptr, "simulator: reduction statement ", position,
                " has no ReductionOp expr");
    return r;
  }

  static Fn reductionFn(const ReductionOp* r) {
    switch (r->op()) {
      case ReductionOpType::Sum: return Fn::Sum;
      case ReductionOpType::Prod: return Fn::Prod;
      case ReductionOpType::Max: break;
    }
    return Fn::Max;
  }

  void compileList(const kir::StmtList& list) {
    for (const auto& stmt : list) compileStmt(stmt.get());
  }

  void compileStmt(const kir::Stmt* stmt) {
    Instr in;
    in.position = static_cast<int32_t>(positions_.start.at(stmt));
    switch (stmt->kind()) {
      case kir::StmtKind::ForLoop: return compileLoop(static_cast<const kir::ForLoop*>(stmt), in);
      case kir::StmtKind::IfThenElse: return compileIf(static_cast<const kir::IfThenElse*>(stmt), in);
      case kir::StmtKind::Allocate:
        bufferId(static_cast<const kir::Allocate*>(stmt)->buffer);
        return;
      case kir::StmtKind::Compute: compileCompute(static_cast<const kir::Compute*>(stmt), in); break;
      case kir::StmtKind::ReduceInit:
      case kir::StmtKind::ScanInit:
      case kir::StmtKind::ReduceStep:
      case kir::StmtKind::BlockReduce:
      case kir::StmtKind::BlockScan:
      case kir::StmtKind::BlockBroadcast: compileReduction(stmt, in); break;
      case kir::StmtKind::BlockSync: in.op = Op::Sync; break;
      SMELT_KIR_TENSOR_CORE_CASES: compileTensorCore(stmt, in); break;
      SMELT_KIR_HOPPER_CASES: compileHopper(stmt, in, in.position); break;
    }
    emit(in, stmt);
  }

  // A loop bound to a thread or block index binds its index; the others iterate.
  void compileLoop(const kir::ForLoop* loop, Instr& in) {
    const kir::Stmt* stmt = loop;
    const int32_t position = in.position;
    int idx = p_.symbols.slot(loop->index);
    loop_slots_.push_back(idx);
    if (isParallelDim(loop->parallel_type)) {
      // Bound to a thread/block index: no iteration, the index is the
      // hardware one (predicates in the body guard extents below the dim).
      int src = builtinSlot(loop->parallel_type);
      if (src != idx) {
        in.op = Op::Bind;
        in.slot = idx;
        in.extent_slot = src;
        emit(in, stmt);
      }
      compileList(loop->body);
    } else {
      // Serial, unrolled and vectorized loops iterate; the extent is kept
      // in a hidden slot so LoopEnd need not re-evaluate it.
      in.op = Op::LoopBegin;
      in.slot = idx;
      in.extent_slot = p_.symbols.slot("$extent" + std::to_string(position));
      loop_slots_.push_back(in.extent_slot);
      in.extent = index(loop->extent);
      int32_t begin = emit(in, stmt);
      const auto scope = in_scope_.insert(loop->index);
      compileList(loop->body);
      in_scope_.erase(scope);
      Instr end = in;
      end.op = Op::LoopEnd;
      end.target = begin + 1;
      int32_t end_pc = emit(end, stmt);
      p_.instrs[begin].target = end_pc + 1;
    }
  }

  void compileIf(const kir::IfThenElse* ite, Instr& in) {
    const kir::Stmt* stmt = ite;
    const int32_t position = in.position;
    in.op = Op::If;
    in.pred = predicate(ite->predicate);
    int32_t if_pc = emit(in, stmt);
    compileList(ite->then_body);
    if (!ite->else_body.empty()) {
      Instr jump;
      jump.op = Op::Jump;
      jump.position = position;
      int32_t jump_pc = emit(jump, stmt);
      p_.instrs[if_pc].target = jump_pc + 1;
      compileList(ite->else_body);
      p_.instrs[jump_pc].target = static_cast<int32_t>(p_.instrs.size());
    } else {
      p_.instrs[if_pc].target = static_cast<int32_t>(p_.instrs.size());
    }
  }

  void compileCompute(const kir::Compute* c, Instr& in) {
    const int32_t position = in.position;
    auto [fn, arity] = computeFn(c->expr, position);
    in.op = Op::Compute;
    in.fn = fn;
    if (fn == Fn::Gather) {
      const auto* select = static_cast<const IndexSelectOp*>(c->expr);
      in.slot = p_.symbols.slot(kir::kGatheredIndexSymbol);
      loop_slots_.push_back(in.slot);  // set by the program, as loop indices
      in.extent = index(select->table()->logicalNoReductions().at(select->dim())->loopExtent());
    } else if (fn == Fn::Scatter) {
      const auto* scatter = static_cast<const ScatterOp*>(c->expr);
      in.slot = p_.symbols.slot(kir::kGatheredIndexSymbol);
      loop_slots_.push_back(in.slot);
      in.extent = index(scatter->output()->logicalDomain().at(scatter->dim())->extent());
      in.combine = scatter->combine();
      in.scatter_dim = static_cast<int32_t>(scatter->dim());
      in.wrap_negative = scatter->wrapNegative();
    } else if (fn == Fn::Scan) {
      in.scan = static_cast<const ScanOp*>(c->expr)->combine();
    }
    in.out = access(c->out);
    in.pred = predicate(c->predicate);
    in.operand_begin = static_cast<uint32_t>(p_.operands.size());
    if (c->operands.empty() && c->expr->type() == ExprType::Full) {
      // full() may carry its fill value only in the fusion expression.
      RtOperand fill;
      fill.constant = scalarValue(static_cast<const FullOp*>(c->expr)->fillValue(), position);
      p_.operands.push_back(fill);
    } else {
      SMELT_CHECK(c->operands.size() == arity, "simulator: statement ", position, " (",
                  c->expr->toString(), ") has ", c->operands.size(), " operands, expected ",
                  arity);
      // Constants take the compute type, as the CUDA literal does (a
      // comparison with 0.1 on floats compares with 0.1f).
      const bool float_constants = computeDtype(c->expr) == DataType::Float;
      for (const auto& op : c->operands) {
        RtOperand r = operand(op, position);
        if (float_constants && r.access.buffer < 0) r.constant = static_cast<float>(r.constant);
        p_.operands.push_back(r);
      }
    }
    in.operand_end = static_cast<uint32_t>(p_.operands.size());
  }

  // Reduction and scan statements: inits, serial steps, block-wide reduce,
  // scan and broadcast.
  void compileReduction(const kir::Stmt* stmt, Instr& in) {
    const int32_t position = in.position;
    switch (stmt->kind()) {
      case kir::StmtKind::ReduceInit: {
        const auto* r = static_cast<const kir::ReduceInit*>(stmt);
        in.op = Op::ReduceInit;
        in.init = reduction(r->expr, position)->initValue();
        in.out = access(r->out);
        in.pred = predicate(r->predicate);
        return;
      }
      case kir::StmtKind::ScanInit: {
        const auto* r = static_cast<const kir::ScanInit*>(stmt);
        in.op = Op::ReduceInit;
        in.init = r->expr->initValue();
        in.out = access(r->carry);
        return;
      }
      case kir::StmtKind::ReduceStep: {
        const auto* r = static_cast<const kir::ReduceStep*>(stmt);
        in.op = Op::ReduceStep;
        in.fn = reductionFn(reduction(r->expr, position));
        in.out = access(r->out);
        in.pred = predicate(r->predicate);
        in.operand_begin = static_cast<uint32_t>(p_.operands.size());
        p_.operands.push_back(operand(r->in, position));
        in.operand_end = in.operand_begin + 1;
        return;
      }
      case kir::StmtKind::BlockReduce: {
        const auto* r = static_cast<const kir::BlockReduce*>(stmt);
        const ReductionOp* red = reduction(r->expr, position);
        in.op = Op::BlockReduce;
        in.fn = reductionFn(red);
        in.init = red->initValue();
        in.out = access(r->out);
        in.in = access(r->in);
        in.pred = predicate(r->predicate);
        in.write_pred = predicate(r->write_predicate);
        in.thread_axes = threadAxisMask(r->thread_axes, position);
        if (r->workspace) in.workspace = bufferId(r->workspace);
        return;
      }
      case kir::StmtKind::BlockScan: {
        const auto* b = static_cast<const kir::BlockScan*>(stmt);
        in.op = Op::BlockScan;
        in.scan = b->expr->combine();
        in.init = b->expr->initValue();
        in.out = access(b->running);
        in.in = access(b->items_in);
        in.in2 = access(b->carry);
        in.count = static_cast<int32_t>(b->items);
        in.extent = index(b->extent);
        in.extent2 = index(b->first_item);
        in.workspace = bufferId(b->workspace);
        return;
      }
      case kir::StmtKind::BlockBroadcast: {
        const auto* b = static_cast<const kir::BlockBroadcast*>(stmt);
        in.op = Op::BlockBroadcast;
        in.out = access(b->out);
        in.in = access(b->in);
        in.thread_axes = threadAxisMask(b->thread_axes, position);
        if (b->workspace) in.workspace = bufferId(b->workspace);
        return;
      }
      default:
        SMELT_INTERNAL_CHECK(false, "not a reduction statement");
    }
  }

  // The sm_80 tensor-core statements: cp.async, its groups, ldmatrix, mma.sync.
  void compileTensorCore(const kir::Stmt* stmt, Instr& in) {
    const int32_t position = in.position;
    switch (stmt->kind()) {
      case kir::StmtKind::CpAsync: {
        const auto* c = static_cast<const kir::CpAsync*>(stmt);
        kir::checkTensorCoreOperands(*c);
        in.op = Op::CpAsync;
        in.out = access(c->dst);
        in.in = access(c->src);
        in.count = static_cast<int32_t>(c->bytes);
        in.pred = predicate(c->predicate);
        return;
      }
      case kir::StmtKind::CpAsyncCommit:
        in.op = Op::CpAsyncCommit;
        return;
      case kir::StmtKind::CpAsyncWait:
        in.op = Op::CpAsyncWait;
        in.count = static_cast<int32_t>(static_cast<const kir::CpAsyncWait*>(stmt)->pending);
        SMELT_CHECK(in.count >= 0, "simulator: cp.async.wait_group at position ", position,
                    " waits for ", in.count, " groups");
        return;
      case kir::StmtKind::LdMatrix: {
        const auto* l = static_cast<const kir::LdMatrix*>(stmt);
        kir::checkTensorCoreOperands(*l);
        in.op = Op::LdMatrix;
        in.out = access(l->dst);
        in.in = access(l->src);
        in.count = static_cast<int32_t>(l->matrices);
        in.transpose = l->transpose;
        return;
      }
      case kir::StmtKind::Mma: {
        const auto* m = static_cast<const kir::Mma*>(stmt);
        kir::checkTensorCoreOperands(*m);
        in.op = Op::Mma;
        in.out = access(m->c);
        in.in = access(m->a);
        in.in2 = access(m->b);
        return;
      }
      default:
        SMELT_INTERNAL_CHECK(false, "not a tensor-core statement");
    }
  }

  void compileHopper(const kir::Stmt* stmt, Instr& in, int64_t position) {
    kir::checkHopperOperands(*stmt);
    p_.uses_hopper = true;
    switch (stmt->kind()) {
      case kir::StmtKind::MbarrierInit: {
        const auto* i = static_cast<const kir::MbarrierInit*>(stmt);
        in.op = Op::MbarrierInit;
        in.out = access(i->barrier);
        in.count = static_cast<int32_t>(i->arrivals);
        return;
      }
      case kir::StmtKind::MbarrierArrive: {
        const auto* a = static_cast<const kir::MbarrierArrive*>(stmt);
        in.op = Op::MbarrierArrive;
        in.out = access(a->barrier);
        in.count = static_cast<int32_t>(a->transaction_bytes);
        return;
      }
      case kir::StmtKind::MbarrierWait: {
        const auto* w = static_cast<const kir::MbarrierWait*>(stmt);
        in.op = Op::MbarrierWait;
        in.out = access(w->barrier);
        in.extent = index(w->parity);
        return;
      }
      case kir::StmtKind::TmaLoad: {
        const auto* t = static_cast<const kir::TmaLoad*>(stmt);
        in.op = Op::TmaLoad;
        in.out = access(t->dst);
        in.in = access(t->barrier);
        in.extent = index(t->row);
        in.extent2 = index(t->col);
        in.tensor_map = tensorMapId(t->map);
        return;
      }
      case kir::StmtKind::FenceProxyAsync: in.op = Op::FenceProxyAsync; return;
      case kir::StmtKind::Wgmma: {
        const auto* w = static_cast<const kir::Wgmma*>(stmt);
        in.op = Op::Wgmma;
        in.out = access(w->acc);
        in.in = access(w->a);
        in.in2 = access(w->b);
        in.count = static_cast<int32_t>(w->n);
        in.accumulate = w->accumulate;
        return;
      }
      case kir::StmtKind::WgmmaFence: in.op = Op::WgmmaFence; return;
      case kir::StmtKind::WgmmaCommit: in.op = Op::WgmmaCommit; return;
      case kir::StmtKind::WgmmaWait:
        in.op = Op::WgmmaWait;
        in.count = static_cast<int32_t>(static_cast<const kir::WgmmaWait*>(stmt)->pending);
        SMELT_CHECK(in.count >= 0, "simulator: wgmma.wait_group at position ", position,
                    " waits for ", in.count, " groups");
        return;
      default: SMELT_INTERNAL_CHECK(false, "not a Hopper statement");
    }
  }

  int32_t tensorMapId(const kir::TensorMap* map) {
    for (size_t i = 0; i < p_.tensor_maps.size(); ++i) {
      if (p_.tensor_maps[i].name == map->name) return static_cast<int32_t>(i);
    }
    p_.tensor_maps.push_back({bufferId(map->tensor), map->box_rows, map->box_cols,
                              map->swizzle == kir::TmaSwizzle::Bytes128, map->name});
    return static_cast<int32_t>(p_.tensor_maps.size() - 1);
  }

  Program& p_;
  const std::map<std::string, double>& scalars_;
  kir::ProgramPositions positions_;
  std::vector<int> loop_slots_;
  std::set<std::string> serial_indices_;  // indices of loops that iterate
  std::multiset<std::string> in_scope_;   // of those, the loops around the statement
};

}  // namespace

Program compileKernel(const kir::Kernel& kernel, const std::map<std::string, double>& scalars,
                      DataType index_type) {
  Program program;
  SMELT_CHECK(index_type == DataType::Int || index_type == DataType::Int32,
              "simulator: the index type is Int or Int32, not ", index_type);
  if (index_type == DataType::Int32) program.code.requireInt32();
  Compiler(program, scalars).compile(kernel);
  return program;
}

}  // namespace smelt::sim
