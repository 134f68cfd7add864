#include "lower/kir.h"

#include <functional>
#include <sstream>

#include "fusion/error.h"
#include "lower/kir_families.h"

namespace smelt::kir {

std::string Predicate::toString() const {
  if (terms.empty()) return "true";
  std::ostringstream os;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    const char* op = t.kind == Term::Kind::LessThan ? " < "
                     : t.kind == Term::Kind::Equal  ? " == "
                                                    : " >= ";
    os << (i ? " && " : "") << t.lhs << op << t.rhs;
  }
  return os.str();
}

std::vector<const Buffer*> Kernel::sharedBuffers() const {
  std::vector<const Buffer*> result;
  for (const auto& b : buffers) {
    if (b->memory == MemoryType::Shared) result.push_back(b.get());
  }
  return result;
}

std::vector<const Buffer*> Kernel::localBuffers() const {
  std::vector<const Buffer*> result;
  for (const auto& b : buffers) {
    if (b->memory == MemoryType::Local) result.push_back(b.get());
  }
  return result;
}

ProgramPositions numberPositions(const StmtList& body) {
  ProgramPositions positions;
  int64_t next = 0;
  std::function<void(const StmtList&)> walk = [&](const StmtList& list) {
    for (const auto& stmt : list) {
      positions.start[stmt.get()] = next++;
      if (auto* loop = dynamic_cast<const ForLoop*>(stmt.get())) {
        walk(loop->body);
        if (!loop->trivial) positions.loop_end[loop] = next++;
      } else if (auto* ite = dynamic_cast<const IfThenElse*>(stmt.get())) {
        walk(ite->then_body);
        walk(ite->else_body);
      }
    }
  };
  walk(body);
  positions.count = next;
  return positions;
}

namespace {

std::string accessString(const Access& a) {
  return a.buffer->name + "[" + a.index.toString() + "]";
}

std::string operandString(const Operand& op) {
  std::string text = op.access  ? accessString(*op.access)
                     : op.index ? "index(" + op.index->toString() + ")"
                                : op.scalar->toString();
  if (!op.in_bounds.alwaysTrue()) {
    text = "(" + op.in_bounds.toString() + " ? " + text + " : " +
           op.out_of_bounds_value->toString() + ")";
  }
  return text;
}

std::string guarded(const Predicate& p, const std::string& text) {
  return p.alwaysTrue() ? text : "if (" + p.toString() + ") " + text;
}

std::string threadAxes(const std::vector<ParallelType>& axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + smelt::toString(axes[i]);
  return s;
}

// The tensor-core pipeline's statements: asynchronous copies and their
// barriers, matrix loads and the mma instructions.
std::string tensorCoreStmtText(const Stmt* stmt) {
  switch (stmt->kind()) {
    case StmtKind::CpAsync: {
      auto* c = static_cast<const CpAsync*>(stmt);
      return "cp.async." + std::to_string(c->bytes) + " " + accessString(c->dst) + " <- " +
             (c->predicate.alwaysTrue() ? "" : "(" + c->predicate.toString() + ") ? ") +
             accessString(c->src) + (c->predicate.alwaysTrue() ? "" : " : 0");
    }
    case StmtKind::CpAsyncCommit: return "cp.async.commit_group";
    case StmtKind::CpAsyncWait:
      return "cp.async.wait_group " + std::to_string(static_cast<const CpAsyncWait*>(stmt)->pending);
    case StmtKind::LdMatrix: {
      auto* l = static_cast<const LdMatrix*>(stmt);
      return accessString(l->dst) + " = ldmatrix.x" + std::to_string(l->matrices) +
             (l->transpose ? ".trans" : "") + "(" + accessString(l->src) + ")";
    }
    case StmtKind::Mma: {
      auto* m = static_cast<const Mma*>(stmt);
      return accessString(m->c) + " += mma.m16n8k16(" + accessString(m->a) + ", " +
             accessString(m->b) + ")";
    }
    case StmtKind::MbarrierInit: {
      auto* i = static_cast<const MbarrierInit*>(stmt);
      return "mbarrier.init " + accessString(i->barrier) + ", " + std::to_string(i->arrivals);
    }
    case StmtKind::MbarrierArrive: {
      auto* a = static_cast<const MbarrierArrive*>(stmt);
      return a->transaction_bytes > 0 ? "mbarrier.arrive.expect_tx " + accessString(a->barrier) +
                                            ", " + std::to_string(a->transaction_bytes)
                                      : "mbarrier.arrive " + accessString(a->barrier);
    }
    case StmtKind::MbarrierWait: {
      auto* w = static_cast<const MbarrierWait*>(stmt);
      return "mbarrier.wait " + accessString(w->barrier) + " parity " + w->parity.toString();
    }
    case StmtKind::TmaLoad: {
      auto* t = static_cast<const TmaLoad*>(stmt);
      return accessString(t->dst) + " <- tma " + t->map->name + "(" + t->row.toString() + ", " +
             t->col.toString() + ") box " + std::to_string(t->map->box_rows) + "x" +
             std::to_string(t->map->box_cols) +
             (t->map->swizzle == TmaSwizzle::Bytes128 ? " swizzle128" : "") + " on " +
             accessString(t->barrier);
    }
    case StmtKind::FenceProxyAsync: return "fence.proxy.async.shared::cta";
    case StmtKind::Wgmma: {
      auto* w = static_cast<const Wgmma*>(stmt);
      return accessString(w->acc) + (w->accumulate ? " += " : " = ") + "wgmma.m64n" +
             std::to_string(w->n) + "k16(" + accessString(w->a) + ", " + accessString(w->b) + ")";
    }
    case StmtKind::WgmmaFence: return "wgmma.fence";
    case StmtKind::WgmmaCommit: return "wgmma.commit_group";
    case StmtKind::WgmmaWait:
      return "wgmma.wait_group " + std::to_string(static_cast<const WgmmaWait*>(stmt)->pending);
    default: break;
  }
  return "?";
}

std::string stmtText(const Stmt* stmt) {
  switch (stmt->kind()) {
    case StmtKind::ForLoop: {
      auto* loop = static_cast<const ForLoop*>(stmt);
      std::string text = "for " + loop->index + " in 0.." + loop->extent.toString();
      if (loop->parallel_type != ParallelType::Serial) {
        text += " (" + smelt::toString(loop->parallel_type) + ")";
      }
      if (loop->trivial) text += " trivial";
      return text;
    }
    case StmtKind::IfThenElse:
      return "if (" + static_cast<const IfThenElse*>(stmt)->predicate.toString() + ")";
    case StmtKind::Allocate: {
      const Buffer* b = static_cast<const Allocate*>(stmt)->buffer;
      std::string text = "alloc " + b->name + " " + smelt::toString(b->memory) + " " +
                         smelt::toString(b->dtype) + "[" + b->elements.toString() + "]";
      if (b->alias_of) text += " alias of " + b->alias_of->name;
      return text;
    }
    case StmtKind::Compute: {
      auto* c = static_cast<const Compute*>(stmt);
      std::string text = accessString(c->out) + " = " + c->expr->opName() + "(";
      for (size_t i = 0; i < c->operands.size(); ++i) {
        text += (i ? ", " : "") + operandString(c->operands[i]);
      }
      return guarded(c->predicate, text + ")");
    }
    case StmtKind::ReduceInit: {
      auto* r = static_cast<const ReduceInit*>(stmt);
      Scalar init(nullptr, r->out.buffer->dtype, r->expr->initValue());
      return guarded(r->predicate, accessString(r->out) + " = " + init.toString());
    }
    case StmtKind::ScanInit: {
      auto* r = static_cast<const ScanInit*>(stmt);
      Scalar init(nullptr, r->carry.buffer->dtype, r->expr->initValue());
      return accessString(r->carry) + " = " + init.toString();
    }
    case StmtKind::BlockScan: {
      auto* b = static_cast<const BlockScan*>(stmt);
      // Its buffers come with the allocation pass, its indices with indexing.
      if (b->workspace == nullptr || b->items_in.buffer == nullptr) return "block_" + b->expr->opName() + "(...)";
      return accessString(b->running) + ", " + accessString(b->carry) + " = block_" + b->expr->opName() +
             "<" + std::to_string(b->warps) + " warps>(" + accessString(b->items_in) + " x " +
             std::to_string(b->items) + " from " + b->first_item.toString() + " below " + b->extent.toString() +
             ", " + b->workspace->name + ")";
    }
    case StmtKind::ReduceStep: {
      auto* r = static_cast<const ReduceStep*>(stmt);
      return guarded(r->predicate, accessString(r->out) + " = " + r->expr->opName() + "(" +
                                       accessString(r->out) + ", " + operandString(r->in) + ")");
    }
    case StmtKind::BlockReduce: {
      auto* r = static_cast<const BlockReduce*>(stmt);
      std::string pred = r->predicate.alwaysTrue() ? "" : ", if " + r->predicate.toString();
      std::string writers = r->write_predicate.alwaysTrue() ? "" : ", stored if " + r->write_predicate.toString();
      const std::string grouped =
          r->grouped > 1 ? ", in one round with the loop's " + std::to_string(r->grouped) : "";
      return accessString(r->out) + " = block_" + r->expr->opName() + "<" +
             threadAxes(r->thread_axes) + ">(" + accessString(r->in) + pred + ")" + writers + grouped;
    }
    case StmtKind::BlockBroadcast: {
      auto* b = static_cast<const BlockBroadcast*>(stmt);
      return accessString(b->out) + " = block_broadcast<" + threadAxes(b->thread_axes) + ">(" +
             accessString(b->in) + ")";
    }
    case StmtKind::BlockSync: {
      auto* s = static_cast<const BlockSync*>(stmt);
      return "__syncthreads()  // " + s->reason;
    }
    SMELT_KIR_TENSOR_CORE_CASES:
    SMELT_KIR_HOPPER_CASES: return tensorCoreStmtText(stmt);
  }
  return "?";
}

}  // namespace

std::string toString(const StmtList& body) {
  ProgramPositions positions = numberPositions(body);
  std::ostringstream os;
  std::function<void(const StmtList&, int)> walk = [&](const StmtList& list, int depth) {
    for (const auto& stmt : list) {
      os << positions.start.at(stmt.get()) << ": " << std::string(2 * depth, ' ')
         << stmtText(stmt.get()) << "\n";
      if (auto* loop = dynamic_cast<const ForLoop*>(stmt.get())) {
        walk(loop->body, depth + 1);
        if (!loop->trivial) {
          os << positions.loop_end.at(loop) << ": " << std::string(2 * depth, ' ') << "end for "
             << loop->index << "\n";
        }
      } else if (auto* ite = dynamic_cast<const IfThenElse*>(stmt.get())) {
        walk(ite->then_body, depth + 1);
        if (!ite->else_body.empty()) {
          os << std::string(2 * depth, ' ') << "else\n";
          walk(ite->else_body, depth + 1);
        }
      }
    }
  };
  walk(body, 0);
  return os.str();
}

std::string Kernel::toString() const { return kir::toString(body); }

std::string Kernel::summary() const {
  std::ostringstream os;
  os << "launch: grid(";
  for (int i = 0; i < 3; ++i) os << (i ? ", " : "") << launch.grid[i];
  os << ") block(";
  for (int i = 0; i < 3; ++i) os << (i ? ", " : "") << launch.block[i];
  os << ")\n";
  for (const auto& b : buffers) {
    os << "  " << smelt::toString(b->memory) << " " << b->name << " " << smelt::toString(b->dtype)
       << "[";
    for (size_t i = 0; i < b->shape.size(); ++i) os << (i ? ", " : "") << b->shape[i];
    os << "] " << b->bytes() << " B";
    if (b->memory == MemoryType::Shared) {
      os << " align " << b->alignment;
      if (b->address) os << " @ " << *b->address;
    }
    if (b->alias_of) os << " alias of " << b->alias_of->name;
    os << "\n";
  }
  return os.str();
}

}  // namespace smelt::kir
