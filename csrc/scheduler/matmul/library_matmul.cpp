#include "scheduler/matmul/library_matmul.h"

#include <algorithm>
#include <sstream>

#include "fusion/error.h"
#include "scheduler/matmul/matmul_choice.h"
#include "scheduler/matmul/matmul_scheduler.h"

namespace smelt {

namespace {

bool isCastTo(const Expr* e, DataType type) {
  return e != nullptr && e->type() == ExprType::Unary &&
         static_cast<const UnaryOp*>(e)->op() == UnaryOpType::Cast && e->output()->dtype() == type;
}

size_t inputPosition(const Fusion& fusion, const TensorView* tv) {
  const auto& inputs = fusion.inputs();
  return static_cast<size_t>(std::find(inputs.begin(), inputs.end(), tv) - inputs.begin());
}

// Why the library cannot compute the matmul `p` as the fusion states it
// (operand types, how the operands are read, the accumulator), or "".
std::string coreReason(const MatmulPattern& p) {
  const DataType type = p.a->dtype();
  if (p.b->dtype() != type) {
    return errorMessage("the operands differ in type (", type, " and ", p.b->dtype(), ")");
  }
  if (!libraryTakesOperandType(type)) {
    return errorMessage("no library matmul takes ", type, " operands");
  }
  // Low-precision operands accumulate in Float as matmul() casts them; the
  // library accumulates in Float too. Others multiply in their own type.
  const bool low_precision = type == DataType::Half || type == DataType::BFloat16;
  const DataType accumulator = low_precision ? DataType::Float : type;
  // An operand is read through a cast to the accumulator's type (matmul()'s
  // for Half/BFloat16; for others a cast to their own type changes nothing).
  for (const Expr* use : {p.a_use, p.b_use}) {
    const bool cast = isCastTo(use, accumulator);
    const bool direct = use->type() == ExprType::Broadcast && !low_precision;
    if (!cast && !direct) {
      return errorMessage(use->toString(), " is not how matmul() reads a ", type,
                          " operand (a cast to float for half/bfloat16, else the operand itself)");
    }
  }
  if (p.sum->dtype() != accumulator) {
    return errorMessage("the matmul accumulates in ", p.sum->dtype(), ", the library in ", accumulator);
  }
  return "";
}

// addmm's bias add after `result` (a matmul's sum): add(result,
// broadcast(bias')) with bias' a [N] row of the operands' type, or its cast
// to the accumulator's type; nullopt when `result` is not so used.
struct BiasAdd {
  const Expr* add = nullptr;
  const Expr* broadcast = nullptr;
  const Expr* cast = nullptr;  // of the bias, or null
  const TensorView* bias = nullptr;
};

std::optional<BiasAdd> matchBiasAdd(const TensorView* result, DataType type) {
  if (result->uses().size() != 1) return std::nullopt;
  BiasAdd match;
  match.add = result->uses()[0];
  if (match.add->type() != ExprType::Binary ||
      static_cast<const BinaryOp*>(match.add)->op() != BinaryOpType::Add) {
    return std::nullopt;
  }
  const Val* other = match.add->input(0) == result ? match.add->input(1) : match.add->input(0);
  const TensorView* row = other->asTensor();
  if (row == nullptr || row->definition() == nullptr ||
      row->definition()->type() != ExprType::Broadcast ||
      static_cast<const BroadcastOp*>(row->definition())->isNewAxis() != std::vector<bool>{true, false}) {
    return std::nullopt;
  }
  match.broadcast = row->definition();
  match.bias = match.broadcast->input(0)->asTensor();
  if (match.bias->definition() != nullptr && isCastTo(match.bias->definition(), result->dtype())) {
    match.cast = match.bias->definition();
    match.bias = match.cast->input(0)->asTensor();
  }
  if (match.bias->dtype() != type) return std::nullopt;
  return match;
}

// The cast of `result` to `type`, its only use, or null.
const Expr* castBack(const TensorView* result, DataType type) {
  return result->uses().size() == 1 && isCastTo(result->uses()[0], type) ? result->uses()[0] : nullptr;
}

// Fills `call` and returns "", or returns why the fusion is not exactly a
// matmul (with addmm's bias add, for a 2-D one) and the cast of its result
// that the library computes.
std::string analyzeCall(const Fusion& fusion, LibraryMatmulCall& call, MatmulPattern& p) {
  std::string reason = matmulRejectReason(fusion, &p);
  if (!reason.empty()) return reason;
  reason = coreReason(p);
  if (!reason.empty()) return reason;
  const DataType type = p.a->dtype();
  // The core: per operand its cast (if any) and broadcast, the product and
  // the sum; then at most the bias add and the cast back to the operands' type.
  const auto is_cast = [](const Expr* use) { return use->type() == ExprType::Unary ? 1 : 0; };
  size_t exprs = 4 + is_cast(p.a_use) + is_cast(p.b_use);
  const TensorView* result = p.sum;
  if (result != p.output && !p.batched) {
    if (std::optional<BiasAdd> bias = matchBiasAdd(result, type); bias && bias->bias->isFusionInput()) {
      call.bias_input = inputPosition(fusion, bias->bias);
      exprs += bias->cast != nullptr ? 3 : 2;
      result = bias->add->output();
    }
  }
  if (result != p.output) {
    if (!(isCastTo(p.output->definition(), type) && p.output->definition()->input(0) == result)) {
      return errorMessage("the epilogue ", p.output->definition()->toString(),
                          " is not addmm's bias add or the cast of the matmul's result to ", type,
                          "; it runs in a kernel of its own next to the library's matmul");
    }
    ++exprs;
  }
  if (call.bias_input && p.output->dtype() != type) {
    return errorMessage("the biased result is ", p.output->dtype(), ", not the operands' ", type,
                        " that addmm writes");
  }
  if (fusion.exprs().size() != exprs || p.operand_used_elsewhere != nullptr) {
    return "the fusion computes more than the matmul (its bias add and the cast of its result); the "
           "epilogue runs in a kernel of its own next to the library's matmul";
  }
  call.a_input = inputPosition(fusion, p.a);
  call.b_input = inputPosition(fusion, p.b);
  call.batched = p.batched;
  call.operand_type = type;
  call.output_type = p.output->dtype();
  return "";
}

// Fills `params` (the call and the choice's reason) and returns "", or
// returns why the library does not compute this fusion for these inputs.
std::string decide(const Fusion& fusion, const RuntimeInfo& runtime, LibraryMatmulParams& params) {
  MatmulPattern pattern;
  std::string reason = analyzeCall(fusion, params.call, pattern);
  if (!reason.empty()) return reason;
  const MatmulChoice choice = chooseMatmul(pattern, runtime);
  params.reason = choice.reason;
  return choice.implementation == MatmulImplementation::Library ? "" : choice.reason;
}

}  // namespace

std::string LibraryMatmulParams::toString() const {
  std::ostringstream os;
  const char* op = call.batched ? "bmm" : call.bias_input ? "addmm" : "mm";
  os << "LibraryMatmul{aten::" << op << " " << call.operand_type
     << " -> " << call.output_type << "; " << reason << "}";
  return os.str();
}

std::string libraryMatmulRejectReason(const Fusion& fusion, const RuntimeInfo& runtime) {
  LibraryMatmulParams unused;
  return decide(fusion, runtime, unused);
}

std::string libraryTakesMatmul(const MatmulPattern& pattern, const RuntimeInfo& runtime) {
  if (!coreReason(pattern).empty()) return "";
  const MatmulChoice choice = chooseMatmul(pattern, runtime);
  return choice.implementation == MatmulImplementation::Library ? choice.reason : "";
}

std::vector<std::vector<const Expr*>> libraryMatmulEpilogues(const TensorView* sum) {
  // The operands' type: of the first operand before its cast, as matmul() reads it.
  const TensorView* operand = sum->definition()->input(0)->definition()->input(0)->asTensor();
  operand = operand->definition()->input(0)->asTensor();  // before the broadcast
  if (operand->definition() != nullptr && operand->definition()->type() == ExprType::Unary &&
      static_cast<const UnaryOp*>(operand->definition())->op() == UnaryOpType::Cast) {
    operand = operand->definition()->input(0)->asTensor();
  }
  const DataType type = operand->dtype();
  std::vector<std::vector<const Expr*>> epilogues;
  if (std::optional<BiasAdd> bias = matchBiasAdd(sum, type)) {
    std::vector<const Expr*> exprs = {bias->add, bias->broadcast};
    if (bias->cast != nullptr) exprs.push_back(bias->cast);
    if (const Expr* cast = castBack(bias->add->output(), type)) {
      epilogues.push_back(exprs);
      epilogues.back().push_back(cast);
    }
    epilogues.push_back(exprs);
  }
  if (const Expr* cast = castBack(sum, type)) epilogues.push_back({cast});
  return epilogues;
}

SeedCandidates libraryMatmulSeedGrowth(const std::vector<const Expr*>& seed) {
  auto sum = std::find_if(seed.begin(), seed.end(),
                          [](const Expr* e) { return e->type() == ExprType::Reduction; });
  SMELT_INTERNAL_CHECK(sum != seed.end(), "a matmul seed without its sum");
  SeedCandidates grown;
  for (const std::vector<const Expr*>& epilogue : libraryMatmulEpilogues((*sum)->output())) {
    grown.push_back(seed);
    grown.back().insert(grown.back().end(), epilogue.begin(), epilogue.end());
  }
  return grown;
}

LibraryMatmulParams libraryMatmulHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  LibraryMatmulParams params;
  const std::string reason = decide(fusion, runtime, params);
  SMELT_CHECK(reason.empty(), "library matmul: ", reason);
  return params;
}

void scheduleLibraryMatmul(Fusion&, const LibraryMatmulParams& params) {
  SMELT_CHECK(false, "a library matmul is not scheduled: the runtime calls the library (",
              params.toString(), ")");
}

}  // namespace smelt
