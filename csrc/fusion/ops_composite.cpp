// Ops built from other ops: matmul (broadcast, multiply, sum over K), its
// tensor-core form (an MmaOp), linear and gelu.
#include "fusion/error.h"
#include "fusion/ops.h"
#include "fusion/ops_axes.h"

namespace smelt {

using op_axes::elementwiseAxis;
using op_axes::viewExtent;

namespace {

// a [M, K] and b [K, N] (K equal where both are constants), for `op`.
void checkMatmulOperands(const char* op, const TensorView* a, const TensorView* b,
                         bool batch_allowed) {
  SMELT_CHECK(a != nullptr && b != nullptr, op, ": an operand is null");
  auto a_axes = a->logicalNoReductions();
  auto b_axes = b->logicalNoReductions();
  const size_t max_rank = batch_allowed ? 3 : 2;
  SMELT_CHECK(a_axes.size() == b_axes.size() && a_axes.size() >= 2 && a_axes.size() <= max_rank,
              op, ": expects [M, K] x [K, N]", max_rank == 3 ? " or [B, M, K] x [B, K, N]" : "",
              "; ", a->name(), " has rank ", a_axes.size(), " and ", b->name(), " has rank ",
              b_axes.size());
  const size_t batch = a_axes.size() - 2;
  auto ka = a_axes[batch + 1]->extent().constant();
  auto kb = b_axes[batch]->extent().constant();
  SMELT_CHECK(!ka || !kb || *ka == *kb, op, ": K of ", a->name(), " (", *ka,
              ") does not match K of ", b->name(), " (", *kb, ")");
  if (batch == 1) {
    // Batches pair one to one (torch.bmm); a broadcast batch is expanded
    // by the caller first.
    SMELT_CHECK(!a_axes[0]->isPlainBroadcast() && !b_axes[0]->isPlainBroadcast(), op,
                ": the batch axis of ", a_axes[0]->isPlainBroadcast() ? a->name() : b->name(),
                " is a broadcast; expand it to the other operand's batch first");
    auto ba = a_axes[0]->extent().constant();
    auto bb = b_axes[0]->extent().constant();
    SMELT_CHECK(!ba || !bb || *ba == *bb, op, ": batch of ", a->name(), " (", *ba,
                ") does not match batch of ", b->name(), " (", *bb, ")");
  }
}

}  // namespace

TensorView* matmul(TensorView* a, TensorView* b) {
  checkMatmulOperands("matmul", a, b, /*batch_allowed=*/true);
  // Half and bfloat16 operands multiply and accumulate in float (as
  // torch.matmul does); the result is rounded back to the operands' type.
  DataType out_type = promoteTypes(a->dtype(), b->dtype());
  bool low_precision = out_type == DataType::Half || out_type == DataType::BFloat16;
  if (low_precision) {
    a = castOp(DataType::Float, a);
    b = castOp(DataType::Float, b);
  }
  TensorView* c = nullptr;
  if (a->logicalNoReductions().size() == 2) {
    TensorView* a3 = broadcast(a, {false, false, true});  // [M, K, 1]
    TensorView* b3 = broadcast(b, {true, false, false});  // [1, K, N]
    c = sum(mul(a3, b3), {1});                            // [M, rK, N]
  } else {
    TensorView* a4 = broadcast(a, {false, false, false, true});  // [B, M, K, 1]
    TensorView* b4 = broadcast(b, {false, true, false, false});  // [B, 1, K, N]
    c = sum(mul(a4, b4), {2});                                   // [B, M, rK, N]
  }
  return low_precision ? castOp(out_type, c) : c;
}

TensorView* tensorCoreMma(TensorView* a, TensorView* b, const TensorCoreMatmulParams& params) {
  checkMatmulOperands("mma", a, b, /*batch_allowed=*/true);
  for (const TensorView* operand : {a, b}) {
    SMELT_CHECK(operand->dtype() == DataType::Half || operand->dtype() == DataType::BFloat16,
                "mma: operand ", operand->name(), " is ", operand->dtype(),
                "; mma.sync m16n8k16 takes Half or BFloat16");
  }
  SMELT_CHECK(a->dtype() == b->dtype(), "mma: operands ", a->name(), " (", a->dtype(), ") and ",
              b->name(), " (", b->dtype(), ") differ in type");
  checkTensorCoreParams(params);
  Fusion* f = Fusion::current();
  const auto a_axes = a->logicalNoReductions();
  const size_t batch = a_axes.size() - 2;
  std::vector<IterDomain*> axes;
  if (batch == 1) axes.push_back(elementwiseAxis(f, a_axes[0]));
  axes.push_back(elementwiseAxis(f, a_axes[batch]));
  axes.push_back(f->newIterDomain(a_axes[batch + 1]->loopExtent(), IterType::Reduction));
  axes.push_back(elementwiseAxis(f, b->logicalNoReductions()[batch + 1]));
  TensorView* out = f->newTensor(DataType::Float, std::move(axes));
  f->newExpr<MmaOp>(out, a, b, params);
  return out;
}

namespace {
TensorView* inFloat(TensorView* tv) {
  return isReducedPrecision(tv->dtype()) ? castOp(DataType::Float, tv) : tv;
}
}  // namespace

TensorView* linear(TensorView* x, TensorView* weight, TensorView* bias) {
  SMELT_CHECK(x != nullptr && weight != nullptr, "linear: an operand is null");
  std::vector<IterDomain*> x_axes = x->logicalNoReductions();
  std::vector<IterDomain*> w_axes = weight->logicalNoReductions();
  SMELT_CHECK(!x_axes.empty() && w_axes.size() == 2, "linear: expects x [..., K] and weight [N, K]; ",
              x->name(), " has rank ", x_axes.size(), " and ", weight->name(), " has rank ",
              w_axes.size());
  SMELT_CHECK(isFloatingType(x->dtype()) && x->dtype() == weight->dtype(), "linear: ", x->name(),
              " (", x->dtype(), ") and ", weight->name(), " (", weight->dtype(),
              ") must have the same floating dtype");
  auto kx = viewExtent(x_axes.back()).constant();
  auto kw = viewExtent(w_axes[1]).constant();
  SMELT_CHECK(!kx || !kw || *kx == *kw, "linear: K of ", x->name(), " (", *kx,
              ") does not match K of ", weight->name(), " (", *kw, ")");
  size_t batch = x_axes.size() - 1;
  std::vector<bool> x_new(batch, false), w_new(batch, true), bias_new(batch, true);
  x_new.insert(x_new.end(), {true, false});   // [..., 1, K]
  w_new.insert(w_new.end(), {false, false});  // [1..., N, K]
  bias_new.push_back(false);                  // [1..., N]
  TensorView* product = mul(broadcast(inFloat(x), x_new), broadcast(inFloat(weight), w_new));
  TensorView* out = sum(product, {-1});
  if (bias != nullptr) {
    std::vector<IterDomain*> b_axes = bias->logicalNoReductions();
    SMELT_CHECK(b_axes.size() == 1 && bias->dtype() == x->dtype(), "linear: bias ", bias->name(),
                " must be a vector of dtype ", x->dtype(), "; it has rank ", b_axes.size(),
                " and dtype ", bias->dtype());
    auto nb = viewExtent(b_axes[0]).constant();
    auto nw = viewExtent(w_axes[0]).constant();
    SMELT_CHECK(!nb || !nw || *nb == *nw, "linear: bias ", bias->name(), " has ", *nb,
                " elements but ", weight->name(), " has N = ", *nw);
    out = add(out, broadcast(inFloat(bias), bias_new));
  }
  return isReducedPrecision(x->dtype()) ? castOp(x->dtype(), out) : out;
}

TensorView* gelu(TensorView* x, bool tanh_approximation) {
  SMELT_CHECK(x != nullptr, "gelu: input is null");
  SMELT_CHECK(isFloatingType(x->dtype()), "gelu: tensor ", x->name(), " is ", x->dtype(),
              "; gelu needs a floating dtype");
  TensorView* v = inFloat(x);
  TensorView* cdf = nullptr;
  if (tanh_approximation) {
    // 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    TensorView* cube = mul(mul(v, v), v);
    TensorView* inner = mul(add(v, mul(cube, kGeluTanhCubeCoefficient)), kSqrtTwoOverPi);
    cdf = mul(add(tanh(inner), 1.0), 0.5);
  } else {
    // 0.5 * (1 + erf(x / sqrt(2)))
    cdf = mul(add(erf(mul(v, 0.7071067811865476)), 1.0), 0.5);
  }
  TensorView* out = mul(v, cdf);
  return isReducedPrecision(x->dtype()) ? castOp(x->dtype(), out) : out;
}

}  // namespace smelt
