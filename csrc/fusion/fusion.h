// Fusion: owns every node of one fusion graph and knows its inputs and
// outputs. FusionGuard makes a fusion the active one, so op functions like
// add(a, b) know where to create their results (as in nvFuser).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/ir.h"

namespace smelt {

struct CloneMap;  // fusion/clone.h

class Fusion {
 public:
  Fusion() = default;
  Fusion(const Fusion&) = delete;
  Fusion& operator=(const Fusion&) = delete;

  void addInput(Val* val);
  void addOutput(Val* val);
  const std::vector<Val*>& inputs() const { return inputs_; }
  const std::vector<Val*>& outputs() const { return outputs_; }
  bool isInput(const Val* val) const;
  bool isOutput(const Val* val) const;

  // A deep copy: every value, axis, transform and expression, with the same
  // numbers, names, schedules, inputs and outputs (fusion/clone.h). `map`, if
  // given, receives the original -> copy correspondence.
  std::unique_ptr<Fusion> clone(CloneMap* map = nullptr) const;

  // Expressions that outputs depend on, producers before consumers. The
  // order is kept until the graph changes (schedulers and passes ask per
  // tensor: recomputing it each time made them quadratic in the fusion).
  std::vector<Expr*> exprs() const;
  // Tensors reachable from the outputs (inputs included), in topological order.
  std::vector<TensorView*> allTensors() const;
  // Direct consumers of a tensor among exprs() (each once, in topological order).
  std::vector<TensorView*> consumersOf(const TensorView* tv) const;

  // The math, one line per expression; then each tensor's schedule.
  std::string mathString() const;
  std::string transformsString() const;
  std::string toString() const;  // both

  // ---- node creation (used by the op functions and schedule primitives) ----
  TensorView* newTensor(DataType dtype, std::vector<IterDomain*> logical,
                        MemoryType mtype = MemoryType::Local);
  IterDomain* newIterDomain(IntExpr extent, IterType type);
  IdTransform* newTransform(IdTransform transform);
  Scalar* newConstant(double value, DataType dtype);
  Scalar* newSymbolicScalar(DataType dtype);
  // Deletes `expr`: its inputs lose the use, its outputs their definition
  // (a rewrite then defines them anew).
  void removeExpr(Expr* expr);
  template <typename ExprT, typename... Args>
  ExprT* newExpr(Args&&... args) {
    auto expr = std::make_unique<ExprT>(std::forward<Args>(args)...);
    ExprT* raw = expr.get();
    exprs_.push_back(std::move(expr));
    graphChanged();
    return raw;
  }

  // The fusion made active by the innermost FusionGuard; throws if none.
  static Fusion* current();

 private:
  friend class FusionGuard;
  friend class GraphCopier;
  friend class Expr;  // replaceInput / replaceOutput change the graph

  // exprs() and each expression's place in it.
  struct ExprOrder {
    std::vector<Expr*> exprs;
    std::unordered_map<const Expr*, size_t> position;
  };
  std::shared_ptr<const ExprOrder> exprOrder() const;
  // Drops the kept order: called by every change of an expression's inputs
  // or outputs and of the fusion's outputs.
  void graphChanged();

  std::vector<std::unique_ptr<Val>> vals_;
  std::vector<std::unique_ptr<Expr>> exprs_;
  std::vector<std::unique_ptr<IterDomain>> iter_domains_;
  std::vector<std::unique_ptr<IdTransform>> transforms_;
  std::vector<Val*> inputs_;
  std::vector<Val*> outputs_;
  int64_t next_tensor_number_ = 0;
  int64_t next_scalar_number_ = 0;
  int64_t next_iter_domain_id_ = 0;
  // Fusions compiled on several threads are read concurrently (const).
  mutable std::mutex order_mutex_;
  mutable std::shared_ptr<const ExprOrder> order_;
};

class FusionGuard {
 public:
  explicit FusionGuard(Fusion* fusion);
  ~FusionGuard();
  FusionGuard(const FusionGuard&) = delete;
  FusionGuard& operator=(const FusionGuard&) = delete;

 private:
  Fusion* previous_;
};

}  // namespace smelt
