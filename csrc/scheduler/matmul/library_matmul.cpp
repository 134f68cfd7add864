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

// Fills `call` and returns "", or returns why the fusion is not exactly a
// matmul (and the cast of its result) that the library computes.
std::string analyzeCall(const Fusion& fusion, LibraryMatmulCall& call) {
  std::string reason = matmulRejectReason(fusion);
  if (!reason.empty()) return reason;
  const MatmulPattern p = findMatmul(fusion);
  reason = coreReason(p);
  if (!reason.empty()) return reason;
  const DataType type = p.a->dtype();
  // The core: per operand its cast (if any) and broadcast, the product and
  // the sum; plus at most the output cast.
  const auto is_cast = [](const Expr* use) { return use->type() == ExprType::Unary ? 1 : 0; };
  const size_t core = 4 + is_cast(p.a_use) + is_cast(p.b_use);
  const bool output_cast = p.output != p.sum;
  if (output_cast && !(isCastTo(p.output->definition(), type) &&
                       p.output->definition()->input(0) == p.sum)) {
    return errorMessage("the epilogue ", p.output->definition()->toString(),
                        " is not the cast of the matmul's result to ", type,
                        "; it runs in a kernel of its own next to the library's matmul");
  }
  const size_t expected = core + (output_cast ? 1 : 0);
  if (fusion.exprs().size() != expected || p.operand_used_elsewhere != nullptr) {
    return "the fusion computes more than the matmul (and the cast of its result); the epilogue "
           "runs in a kernel of its own next to the library's matmul";
  }
  call.a_input = inputPosition(fusion, p.a);
  call.b_input = inputPosition(fusion, p.b);
  call.batched = p.batched;
  call.operand_type = type;
  call.output_type = p.output->dtype();
  return "";
}

}  // namespace

std::string LibraryMatmulParams::toString() const {
  std::ostringstream os;
  os << "LibraryMatmul{aten::" << (call.batched ? "bmm" : "mm") << " " << call.operand_type
     << " -> " << call.output_type << "; " << reason << "}";
  return os.str();
}

std::string libraryMatmulRejectReason(const Fusion& fusion, const RuntimeInfo& runtime) {
  LibraryMatmulCall call;
  std::string reason = analyzeCall(fusion, call);
  if (!reason.empty()) return reason;
  const MatmulChoice choice = chooseMatmul(fusion, runtime);
  if (choice.implementation != MatmulImplementation::Library) return choice.reason;
  return "";
}

bool libraryTakesMatmulOf(const Fusion& fusion, const RuntimeInfo& runtime) {
  return coreReason(findMatmul(fusion)).empty() &&
         chooseMatmul(fusion, runtime).implementation == MatmulImplementation::Library;
}

LibraryMatmulCall libraryMatmulCall(const Fusion& fusion) {
  LibraryMatmulCall call;
  const std::string reason = analyzeCall(fusion, call);
  SMELT_CHECK(reason.empty(), "library matmul: ", reason);
  return call;
}

LibraryMatmulParams libraryMatmulHeuristics(const Fusion& fusion, const RuntimeInfo& runtime) {
  const std::string reason = libraryMatmulRejectReason(fusion, runtime);
  SMELT_CHECK(reason.empty(), "library matmul: ", reason);
  LibraryMatmulParams params;
  params.call = libraryMatmulCall(fusion);
  params.reason = chooseMatmul(fusion, runtime).reason;
  return params;
}

void scheduleLibraryMatmul(Fusion&, const LibraryMatmulParams& params) {
  SMELT_CHECK(false, "a library matmul is not scheduled: the runtime calls the library (",
              params.toString(), ")");
}

}  // namespace smelt
