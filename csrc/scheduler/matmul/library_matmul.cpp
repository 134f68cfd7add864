#include "scheduler/matmul/library_matmul.h"

#include <algorithm>
#include <sstream>

#include "fusion/error.h"
#include "fusion/ops.h"
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

// The only use of `tv`, or null when it has others or is a fusion output
// (then its value is needed beside what the use makes of it).
const Expr* soleUse(const TensorView* tv) {
  return tv->uses().size() == 1 && !tv->isFusionOutput() ? tv->uses()[0] : nullptr;
}

bool isConstant(const Val* v, double value) {
  const auto* scalar = dynamic_cast<const Scalar*>(v);
  return scalar != nullptr && scalar->isConstant() && scalar->value() == value;
}

// `e` is lhs `op` rhs, in that order; a null rhs stands for the constant `value`.
bool isBinary(const Expr* e, BinaryOpType op, const Val* lhs, const Val* rhs, double value = 0) {
  return e != nullptr && e->type() == ExprType::Binary && static_cast<const BinaryOp*>(e)->op() == op &&
         e->input(0) == lhs && (rhs != nullptr ? e->input(1) == rhs : isConstant(e->input(1), value));
}

struct Activation {
  MatmulActivation kind = MatmulActivation::None;
  std::vector<const Expr*> exprs;
  const TensorView* output = nullptr;
};

// gelu(x, tanh_approximation=true) as ops.cpp builds it (through x's cast to
// Float and back for a 16-bit x), reading x and nothing else reading x.
std::optional<Activation> matchTanhGelu(const TensorView* x) {
  Activation gelu{MatmulActivation::GeluTanh, {}, nullptr};
  const TensorView* v = x;
  if (x->dtype() != DataType::Float) {
    const Expr* widen = soleUse(x);
    if (!isCastTo(widen, DataType::Float)) return std::nullopt;
    gelu.exprs.push_back(widen);
    v = widen->output();
  }
  // 0.5 * (1 + tanh(sqrt(2/pi) * (v + c * v^3))) * v, each step the sole
  // use of the one before; v itself feeds the square, the cube, the inner
  // sum and the final product, and nothing else.
  if (v->isFusionOutput() || v->uses().size() != 4) return std::nullopt;
  const auto square_it = std::find_if(v->uses().begin(), v->uses().end(),
                                      [&](const Expr* e) { return isBinary(e, BinaryOpType::Mul, v, v); });
  if (square_it == v->uses().end()) return std::nullopt;
  const Expr* square = *square_it;
  const Expr* cube = soleUse(square->output());
  if (!isBinary(cube, BinaryOpType::Mul, square->output(), v)) return std::nullopt;
  const Expr* scaled_cube = soleUse(cube->output());
  if (!isBinary(scaled_cube, BinaryOpType::Mul, cube->output(), nullptr, kGeluTanhCubeCoefficient)) {
    return std::nullopt;
  }
  const Expr* inner_sum = soleUse(scaled_cube->output());
  if (!isBinary(inner_sum, BinaryOpType::Add, v, scaled_cube->output())) return std::nullopt;
  const Expr* inner = soleUse(inner_sum->output());
  if (!isBinary(inner, BinaryOpType::Mul, inner_sum->output(), nullptr, kSqrtTwoOverPi)) {
    return std::nullopt;
  }
  const Expr* tanh = soleUse(inner->output());
  if (tanh == nullptr || tanh->type() != ExprType::Unary ||
      static_cast<const UnaryOp*>(tanh)->op() != UnaryOpType::Tanh) {
    return std::nullopt;
  }
  const Expr* plus_one = soleUse(tanh->output());
  if (!isBinary(plus_one, BinaryOpType::Add, tanh->output(), nullptr, 1.0)) return std::nullopt;
  const Expr* cdf = soleUse(plus_one->output());
  if (!isBinary(cdf, BinaryOpType::Mul, plus_one->output(), nullptr, 0.5)) return std::nullopt;
  const Expr* product = soleUse(cdf->output());
  if (!isBinary(product, BinaryOpType::Mul, v, cdf->output())) return std::nullopt;
  gelu.exprs.insert(gelu.exprs.end(),
                    {square, cube, scaled_cube, inner_sum, inner, tanh, plus_one, cdf, product});
  gelu.output = product->output();
  if (x->dtype() != DataType::Float) {
    const Expr* narrow = soleUse(gelu.output);
    if (!isCastTo(narrow, x->dtype())) return std::nullopt;
    gelu.exprs.push_back(narrow);
    gelu.output = narrow->output();
  }
  return gelu;
}

// A ReLU or tanh-GELU that is the only reader of x, or nullopt.
std::optional<Activation> matchActivation(const TensorView* x) {
  const Expr* use = soleUse(x);
  if (use != nullptr && use->type() == ExprType::Unary &&
      static_cast<const UnaryOp*>(use)->op() == UnaryOpType::Relu) {
    return Activation{MatmulActivation::Relu, {use}, use->output()};
  }
  return matchTanhGelu(x);  // reads a Float x four times
}

// One step of the epilogue after a matmul's sum that the library computes.
struct EpilogueStage {
  std::vector<const Expr*> exprs;
  const TensorView* output = nullptr;
  const TensorView* bias = nullptr;  // addmm's bias add: the [N] row it adds
  MatmulActivation activation = MatmulActivation::None;
};

// The chain the library may compute after `sum`: addmm's bias add, then its
// activation and the cast back to `type`, in the fusion's order, each at
// most once (an activation only after the bias add: cuBLASLt's epilogue
// applies it to the biased fp32 result); without a bias, the cast alone.
std::vector<EpilogueStage> epilogueChain(const TensorView* sum, DataType type) {
  std::vector<EpilogueStage> chain;
  const TensorView* result = sum;
  const std::optional<BiasAdd> bias = matchBiasAdd(sum, type);
  if (bias) {
    EpilogueStage stage{{bias->add, bias->broadcast}, bias->add->output(), bias->bias};
    if (bias->cast != nullptr) stage.exprs.push_back(bias->cast);
    chain.push_back(stage);
    result = stage.output;
  }
  bool cast_back = false;
  bool activated = !bias;
  while (true) {
    if (const Expr* cast = cast_back ? nullptr : castBack(result, type)) {
      chain.push_back({{cast}, cast->output()});
      cast_back = true;
    } else if (std::optional<Activation> activation = activated ? std::nullopt : matchActivation(result)) {
      chain.push_back({activation->exprs, activation->output, nullptr, activation->kind});
      activated = true;
    } else {
      break;
    }
    result = chain.back().output;
  }
  return chain;
}

// Fills `call` and returns "", or returns why the fusion is not exactly a
// matmul (with addmm's bias add and its activation, for a 2-D one) and the
// cast of its result that the library computes.
std::string analyzeCall(const Fusion& fusion, LibraryMatmulCall& call, MatmulPattern& p) {
  std::string reason = matmulRejectReason(fusion, &p);
  if (!reason.empty()) return reason;
  reason = coreReason(p);
  if (!reason.empty()) return reason;
  const DataType type = p.a->dtype();
  // The core: per operand its cast (if any) and broadcast, the product and
  // the sum; then the epilogue chain up to the fusion's output.
  const auto is_cast = [](const Expr* use) { return use->type() == ExprType::Unary ? 1 : 0; };
  size_t exprs = 4 + is_cast(p.a_use) + is_cast(p.b_use);
  const TensorView* result = p.sum;
  for (const EpilogueStage& stage : epilogueChain(p.sum, type)) {
    if (result == p.output) break;
    if (stage.bias != nullptr) {
      if (p.batched || !stage.bias->isFusionInput()) break;
      call.bias_input = inputPosition(fusion, stage.bias);
    }
    if (stage.activation != MatmulActivation::None) call.activation = stage.activation;
    exprs += stage.exprs.size();
    result = stage.output;
  }
  if (result != p.output) {
    return errorMessage("the epilogue ", p.output->definition()->toString(),
                        " is not addmm's bias add, its ReLU or tanh-GELU, or the cast of the "
                        "matmul's result to ", type,
                        "; it runs in a kernel of its own next to the library's matmul");
  }
  if (call.bias_input && p.output->dtype() != type) {
    return errorMessage("the biased result is ", p.output->dtype(), ", not the operands' ", type,
                        " that addmm writes");
  }
  if (fusion.exprs().size() != exprs || p.operand_used_elsewhere != nullptr) {
    return "the fusion computes more than the matmul (its bias add, activation and the cast of "
           "its result); the epilogue runs in a kernel of its own next to the library's matmul";
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

std::string toString(MatmulActivation activation) {
  switch (activation) {
    case MatmulActivation::None: return "none";
    case MatmulActivation::Relu: return "relu";
    case MatmulActivation::GeluTanh: return "gelu_tanh";
  }
  return "?";
}

std::string LibraryMatmulParams::toString() const {
  std::ostringstream os;
  os << "LibraryMatmul{aten::";
  if (call.activation != MatmulActivation::None) {
    os << "_addmm_activation(" << smelt::toString(call.activation) << ")";
  } else {
    os << (call.batched ? "bmm" : call.bias_input ? "addmm" : "mm");
  }
  os << " " << call.operand_type
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
  std::vector<std::vector<const Expr*>> epilogues;
  const std::vector<EpilogueStage> chain = epilogueChain(sum, operand->dtype());
  for (size_t length = chain.size(); length > 0; --length) {
    std::vector<const Expr*> exprs;
    for (size_t i = 0; i < length; ++i) {
      exprs.insert(exprs.end(), chain[i].exprs.begin(), chain[i].exprs.end());
    }
    epilogues.push_back(std::move(exprs));
  }
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
