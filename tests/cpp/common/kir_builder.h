// Builders for hand-written kernel IR, shared by the codegen, runtime,
// simulator and planning tests. A hand-built kernel is what lowering produces
// (or will produce) for a schedule, written out statement by statement: the
// codegen and simulator tests then do not depend on the lowering passes, a
// test can build kernels that are deliberately wrong (a barrier left out, a
// predicate dropped), and the planner can be run on shapes the case builders
// do not schedule (pipelined loops, phases).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fusion/fusion.h"
#include "fusion/ops.h"
#include "lower/kir.h"

namespace smelt::kir_testing {

using Term = kir::Predicate::Term;

inline IntExpr sym(const std::string& name) { return IntExpr::symbol(name); }
inline IntExpr tx() { return sym("threadIdx.x"); }
inline IntExpr ty() { return sym("threadIdx.y"); }
inline IntExpr bx() { return sym("blockIdx.x"); }
inline IntExpr by() { return sym("blockIdx.y"); }
inline IntExpr size(const kir::Buffer* b, int d) {
  return sym(b->name + ".size[" + std::to_string(d) + "]");
}
inline IntExpr stride(const kir::Buffer* b, int d) {
  return sym(b->name + ".stride[" + std::to_string(d) + "]");
}

inline Term lt(IntExpr a, IntExpr b) { return {std::move(a), Term::Kind::LessThan, std::move(b)}; }
inline Term eq(IntExpr a, IntExpr b) { return {std::move(a), Term::Kind::Equal, std::move(b)}; }
inline Term ge(IntExpr a, IntExpr b) {
  return {std::move(a), Term::Kind::GreaterEqual, std::move(b)};
}
inline kir::Predicate all(std::vector<Term> terms) { return kir::Predicate{std::move(terms)}; }

// A kernel and the fusion owning the tensors and expressions its statements
// refer to. Build the fusion's tensors with a FusionGuard on `fusion`.
struct TestKernel {
  std::string name = "kernel";
  std::unique_ptr<Fusion> fusion = std::make_unique<Fusion>();
  kir::Kernel kernel;
  // Statements a test wants to find again (a barrier to check, a race side).
  std::map<std::string, const kir::Stmt*> marks;

  kir::Buffer* buffer(const TensorView* tv, const std::string& buffer_name, MemoryType memory,
                      DataType dtype, std::vector<IntExpr> shape) {
    return kernel.addBuffer(tv, buffer_name, memory, dtype, std::move(shape));
  }
  // A fusion input/output: "T<n>" over the tensor's logical extents, as the
  // allocation pass builds it, appended to the kernel's inputs or outputs.
  kir::Buffer* global(const TensorView* tv, bool is_input) {
    std::vector<IntExpr> shape;
    for (const IterDomain* id : tv->logicalNoReductions()) {
      shape.push_back(id->isBroadcast() && !id->hasExpandedExtent() ? IntExpr(1)
                                                                   : id->loopExtent());
    }
    kir::Buffer* b = buffer(tv, "T" + std::to_string(tv->number()), MemoryType::Global,
                            tv->dtype(), std::move(shape));
    (is_input ? kernel.inputs : kernel.outputs).push_back(b);
    return b;
  }
  // A 1-D shared buffer, at `address` when given (otherwise the planner's to
  // place). `tv` is the fusion tensor it holds; the planner treats a shared
  // buffer without one as a block-op workspace.
  kir::Buffer* shared(const std::string& buffer_name, DataType dtype, int64_t elements,
                      std::optional<int64_t> address = std::nullopt,
                      const TensorView* tv = nullptr) {
    kir::Buffer* b = buffer(tv, buffer_name, MemoryType::Shared, dtype, {elements});
    if (address) b->address = IntExpr(*address);
    return b;
  }
  // A shared buffer backed by a new 1-D fusion tensor of its own, so the
  // planner plans it as a tensor (and promoteReuse can be asked for).
  kir::Buffer* sharedTensor(const std::string& buffer_name, DataType dtype, int64_t elements,
                            bool promote_reuse = false) {
    FusionGuard guard(fusion.get());
    TensorView* tv = makeConcreteTensor({elements}, dtype);
    tv->setMemoryType(MemoryType::Shared);
    if (promote_reuse) tv->promoteReuse();
    return shared(buffer_name, dtype, elements, std::nullopt, tv);
  }
  kir::Buffer* local(const std::string& buffer_name, DataType dtype, int64_t elements,
                     const TensorView* tv = nullptr) {
    return buffer(tv, buffer_name, MemoryType::Local, dtype, {elements});
  }
  void launch(IntExpr gx, IntExpr gy, IntExpr bdx, IntExpr bdy) {
    kernel.launch.grid[0] = std::move(gx);
    kernel.launch.grid[1] = std::move(gy);
    kernel.launch.block[0] = std::move(bdx);
    kernel.launch.block[1] = std::move(bdy);
  }
  int64_t position(const std::string& mark) const {
    return kir::numberPositions(kernel.body).start.at(marks.at(mark));
  }
};

template <typename T>
T* append(kir::StmtList& list, std::unique_ptr<T> stmt) {
  T* raw = stmt.get();
  list.push_back(std::move(stmt));
  return raw;
}

// A loop; trivial (not emitted as a `for`) when bound to a grid/block index,
// vectorized, or of one iteration, as the loop-nest pass marks it.
inline kir::ForLoop* loop(kir::StmtList& list, const std::string& index, IntExpr extent,
                          ParallelType pt = ParallelType::Serial) {
  auto l = std::make_unique<kir::ForLoop>();
  l->index = index;
  l->trivial = isParallelDim(pt) || pt == ParallelType::Vectorize ||
               extent.constant() == std::optional<int64_t>(1);
  l->extent = std::move(extent);
  l->parallel_type = pt;
  return append(list, std::move(l));
}

// The two thread loops of a 2-D block, returning the innermost body.
inline kir::StmtList& threadLoops2d(kir::StmtList& list, IntExpr bdx, IntExpr bdy) {
  kir::ForLoop* y = loop(list, "threadIdx.y", std::move(bdy), ParallelType::TIDy);
  return loop(y->body, "threadIdx.x", std::move(bdx), ParallelType::TIDx)->body;
}

inline kir::IfThenElse* ifThen(kir::StmtList& list, kir::Predicate pred) {
  auto s = std::make_unique<kir::IfThenElse>();
  s->predicate = std::move(pred);
  return append(list, std::move(s));
}

inline void allocate(kir::StmtList& list, kir::Buffer* b) {
  append(list, std::make_unique<kir::Allocate>(b));
}

inline kir::Access at(const kir::Buffer* b, IntExpr index) { return {b, std::move(index)}; }

inline kir::Operand read(const kir::Buffer* b, IntExpr index) {
  kir::Operand op;
  op.access = at(b, std::move(index));
  return op;
}

inline kir::Operand scalar(const Val* v) {
  kir::Operand op;
  op.scalar = v;
  return op;
}

inline kir::Compute* compute(kir::StmtList& list, const Expr* expr, kir::Access out,
                             std::vector<kir::Operand> operands, kir::Predicate pred = {}) {
  auto s = std::make_unique<kir::Compute>();
  s->expr = expr;
  s->out = std::move(out);
  s->operands = std::move(operands);
  s->predicate = std::move(pred);
  return append(list, std::move(s));
}

inline kir::BlockSync* sync(kir::StmtList& list, const std::string& reason) {
  auto s = std::make_unique<kir::BlockSync>();
  s->reason = reason;
  return append(list, std::move(s));
}

inline const ReductionOp* reductionOf(const TensorView* tv) {
  return static_cast<const ReductionOp*>(tv->definition());
}

inline kir::ReduceInit* reduceInit(kir::StmtList& list, const ReductionOp* expr, kir::Access out,
                                   kir::Predicate pred = {}) {
  auto s = std::make_unique<kir::ReduceInit>();
  s->expr = expr;
  s->out = std::move(out);
  s->predicate = std::move(pred);
  return append(list, std::move(s));
}

inline kir::ReduceStep* reduceStep(kir::StmtList& list, const ReductionOp* expr, kir::Access out,
                                   kir::Operand in, kir::Predicate pred = {}) {
  auto s = std::make_unique<kir::ReduceStep>();
  s->expr = expr;
  s->out = std::move(out);
  s->in = std::move(in);
  s->predicate = std::move(pred);
  return append(list, std::move(s));
}

inline kir::BlockReduce* blockReduce(kir::StmtList& list, const ReductionOp* expr,
                                     kir::Access out, kir::Access in,
                                     std::vector<ParallelType> axes, const kir::Buffer* workspace,
                                     kir::Predicate pred = {}) {
  auto s = std::make_unique<kir::BlockReduce>();
  s->expr = expr;
  s->out = std::move(out);
  s->in = std::move(in);
  s->thread_axes = std::move(axes);
  s->workspace = workspace;
  s->predicate = std::move(pred);
  return append(list, std::move(s));
}

inline kir::BlockBroadcast* blockBroadcast(kir::StmtList& list, const Expr* expr,
                                           kir::Access out, kir::Access in,
                                           std::vector<ParallelType> axes,
                                           const kir::Buffer* workspace) {
  auto s = std::make_unique<kir::BlockBroadcast>();
  s->expr = expr;
  s->out = std::move(out);
  s->in = std::move(in);
  s->thread_axes = std::move(axes);
  s->workspace = workspace;
  return append(list, std::move(s));
}

// The first expression of the fusion with this type (tests build tiny fusions).
inline const Expr* exprOf(const Fusion& fusion, ExprType type) {
  for (const Expr* e : fusion.exprs()) {
    if (e->type() == type) return e;
  }
  return nullptr;
}

}  // namespace smelt::kir_testing
