// The parameters a scheduler derives from a fusion and its inputs. Each
// scheduler has one struct deriving from HeuristicParams; its fields are
// public so a user can compute them, change any of them and schedule with the
// result. toString prints every field, so two parameter sets are the same
// exactly when their strings are (the executor cache keys kernels by it).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace smelt {

class Expr;

// LibraryMatmul: a matmul a library computes (cuBLAS through ATen, at run
// time); no kernel is generated for it (scheduler/matmul/library_matmul.h).
enum class SchedulerType { Pointwise, Reduction, Persistent, Matmul, LibraryMatmul, Scatter, Scan };

std::string toString(SchedulerType type);

struct HeuristicParams {
  virtual ~HeuristicParams() = default;
  virtual SchedulerType type() const = 0;
  virtual std::string toString() const = 0;
  virtual std::unique_ptr<HeuristicParams> clone() const = 0;
};

// One segmentation seed (scheduler/registry.h, SchedulerEntry::seeds): the
// expression sets a scheduler would take as a segment of its own, preferred
// first.
using SeedCandidates = std::vector<std::vector<const Expr*>>;

// Called with a segment's heuristics before a grid split is decided from
// them (the executor cache passes its heuristic override).
using ParamsOverride = std::function<void(HeuristicParams&)>;

[[noreturn]] void throwWrongParams(const HeuristicParams& params, SchedulerType expected);

// Casts to a scheduler's own parameters; throws smelt::Error when `params`
// belong to another scheduler.
template <typename ParamsT>
const ParamsT& paramsAs(const HeuristicParams& params) {
  const auto* p = dynamic_cast<const ParamsT*>(&params);
  if (p == nullptr) throwWrongParams(params, ParamsT().type());
  return *p;
}

}  // namespace smelt
