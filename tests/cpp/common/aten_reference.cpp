#include "common/aten_reference.h"

#include <unordered_map>

#include "fusion/error.h"

namespace smelt::testing {

at::ScalarType toScalarType(DataType dtype) {
  switch (dtype) {
    case DataType::Float: return at::kFloat;
    case DataType::Double: return at::kDouble;
    case DataType::Half: return at::kHalf;
    case DataType::BFloat16: return at::kBFloat16;
    case DataType::Int: return at::kLong;
    case DataType::Int32: return at::kInt;
    case DataType::Bool: return at::kBool;
  }
  return at::kFloat;
}

namespace {

std::vector<int64_t> concreteShape(const std::vector<IterDomain*>& axes) {
  std::vector<int64_t> shape;
  for (const IterDomain* id : axes) {
    auto extent = id->loopExtent().constant();
    SMELT_CHECK(extent.has_value(), "ATen reference: symbolic extent ", id->loopExtent(),
                " needs a bound input");
    shape.push_back(id->isBroadcast() && !id->hasExpandedExtent() ? 1 : *extent);
  }
  return shape;
}

at::Tensor evaluate(const Expr* expr, const std::unordered_map<const Val*, at::Tensor>& values) {
  auto in = [&](size_t i) -> at::Tensor {
    const Val* v = expr->input(i);
    auto it = values.find(v);
    if (it != values.end()) return it->second;
    const auto* scalar = static_cast<const Scalar*>(v);
    return at::scalar_tensor(scalar->value(), at::TensorOptions().dtype(at::kDouble));
  };
  const TensorView* out = expr->output();
  at::ScalarType out_type = toScalarType(out->dtype());
  switch (expr->type()) {
    case ExprType::Full:
      return at::full(concreteShape(out->logicalNoReductions()), in(0).item(),
                      at::TensorOptions().dtype(out_type));
    case ExprType::Set:
      return in(0).clone();
    case ExprType::Unary: {
      at::Tensor x = in(0);
      switch (static_cast<const UnaryOp*>(expr)->op()) {
        case UnaryOpType::Neg: return at::neg(x);
        case UnaryOpType::Exp: return at::exp(x.to(out_type));
        case UnaryOpType::Tanh: return at::tanh(x.to(out_type));
        case UnaryOpType::Abs: return at::abs(x);
        case UnaryOpType::Relu: return at::relu(x);
        case UnaryOpType::Cast: return x.to(out_type);
      }
      break;
    }
    case ExprType::Binary: {
      at::Tensor a = in(0), b = in(1);
      at::Tensor r;
      switch (static_cast<const BinaryOp*>(expr)->op()) {
        case BinaryOpType::Add: r = at::add(a, b); break;
        case BinaryOpType::Sub: r = at::sub(a, b); break;
        case BinaryOpType::Mul: r = at::mul(a, b); break;
        case BinaryOpType::Div: r = at::div(a, b); break;
        case BinaryOpType::Maximum: r = at::maximum(a, b); break;
        case BinaryOpType::Minimum: r = at::minimum(a, b); break;
      }
      return r.to(out_type);
    }
    case ExprType::Where:
      return at::where(in(0), in(1), in(2)).to(out_type);
    case ExprType::Reduction: {
      std::vector<int64_t> dims;
      const auto& axes = out->logicalDomain();
      for (size_t d = 0; d < axes.size(); ++d) {
        if (axes[d]->isReduction()) dims.push_back(static_cast<int64_t>(d));
      }
      at::Tensor x = in(0);
      if (static_cast<const ReductionOp*>(expr)->op() == ReductionOpType::Sum) {
        return at::sum(x, dims).to(out_type);
      }
      return at::amax(x, dims).to(out_type);
    }
    case ExprType::Broadcast: {
      at::Tensor x = in(0);
      const auto& is_new = static_cast<const BroadcastOp*>(expr)->isNewAxis();
      for (size_t d = 0; d < is_new.size(); ++d) {
        if (is_new[d]) x = x.unsqueeze(static_cast<int64_t>(d));
      }
      return x;
    }
    case ExprType::Expand:
      return in(0).expand(concreteShape(out->logicalNoReductions()));
    case ExprType::Pad: {
      const auto* pad = static_cast<const PadOp*>(expr);
      std::vector<int64_t> widths;  // torch order: last dimension first
      for (auto it = pad->widths().rbegin(); it != pad->widths().rend(); ++it) {
        widths.push_back(it->first);
        widths.push_back(it->second);
      }
      double value = static_cast<const Scalar*>(pad->padValue())->value();
      return at::constant_pad_nd(in(0), widths, value);
    }
  }
  SMELT_INTERNAL_CHECK(false, "ATen reference: unhandled ", expr->toString());
  return {};
}

}  // namespace

std::vector<at::Tensor> evaluateWithATen(Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  SMELT_CHECK(inputs.size() == fusion.inputs().size(), "ATen reference: fusion has ",
              fusion.inputs().size(), " inputs but ", inputs.size(), " were given");
  std::unordered_map<const Val*, at::Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[fusion.inputs()[i]] = inputs[i];
  for (const Expr* expr : fusion.exprs()) values[expr->output()] = evaluate(expr, values);
  std::vector<at::Tensor> outputs;
  for (const Val* out : fusion.outputs()) outputs.push_back(values.at(out).contiguous());
  return outputs;
}

}  // namespace smelt::testing
