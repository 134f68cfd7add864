#include "runtime/aten_evaluator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include <ATen/TensorUtils.h>
#include <c10/util/accumulate.h>

#include "fusion/error.h"
#include "fusion/random_bits.h"
#include "fusion/symbols.h"
#include "runtime/aten_dtype.h"

namespace smelt {

namespace {

// Sizes of the tensor inputs by symbol ("T0.size[1]"), for symbolic extents.
using Sizes = std::map<std::string, int64_t>;

std::vector<int64_t> concreteShape(const std::vector<IterDomain*>& axes, const Sizes& sizes) {
  std::vector<int64_t> shape;
  for (const IterDomain* id : axes) {
    shape.push_back(id->isPlainBroadcast() ? 1 : id->loopExtent().evaluate(sizes));
  }
  return shape;
}

// polygamma of an order tensor (at::polygamma takes one integer order): each
// distinct order's values where the order is it.
at::Tensor polygamma(const at::Tensor& n, const at::Tensor& x) {
  const std::vector<at::Tensor> operands = at::broadcast_tensors({n, x});
  const at::Tensor orders = std::get<0>(at::_unique(operands[0].to(at::kCPU, at::kDouble)));
  at::Tensor out = at::full_like(operands[1], std::numeric_limits<double>::quiet_NaN());
  for (int64_t i = 0; i < orders.numel(); ++i) {
    const double order = orders[i].item<double>();
    if (order < 0 || order != static_cast<double>(static_cast<int64_t>(order))) continue;
    out = at::where(operands[0] == order, at::polygamma(static_cast<int64_t>(order), operands[1]), out);
  }
  return out;
}

// random_uniform elementwise on the host (the function the kernels and the
// simulator run), broadcasting the seed against the counter.
at::Tensor randomUniform(const at::Tensor& seed, const at::Tensor& counter, at::ScalarType out_type) {
  const std::vector<at::Tensor> operands = at::broadcast_tensors({seed, counter});
  const at::Tensor seeds = operands[0].to(at::kCPU, at::kLong).contiguous();
  const at::Tensor counters = operands[1].to(at::kCPU, at::kLong).contiguous();
  at::Tensor out = at::empty(counters.sizes(), at::TensorOptions().dtype(at::kDouble));
  const int64_t* s = seeds.data_ptr<int64_t>();
  const int64_t* c = counters.data_ptr<int64_t>();
  double* o = out.data_ptr<double>();
  const bool is_double = out_type == at::kDouble;
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = randomUniformValue(s[i], c[i], is_double);
  return out.to(counter.device());
}

// torch.scatter's reference: negative indices wrapped where the op allows,
// src cropped to the index's shape and in self's dtype.
at::Tensor scatterWithATen(const ScatterOp* scatter, const at::Tensor& self, const at::Tensor& index_in,
                           const at::Tensor& src_in) {
  const int64_t dim = scatter->dim();
  at::Tensor index = index_in.to(at::kLong);
  if (scatter->wrapNegative()) index = at::where(index < 0, index + self.size(dim), index);
  at::Tensor src = src_in.to(self.scalar_type());
  if (src.dim() == 0) src = src.expand(index.sizes());
  for (int64_t d = 0; d < index.dim(); ++d) src = src.narrow(d, 0, index.size(d));
  switch (scatter->combine()) {
    case ScatterCombine::Set: return at::scatter(self, dim, index, src);
    case ScatterCombine::Add: return at::scatter_add(self, dim, index, src);
    case ScatterCombine::Mul: return at::scatter_reduce(self, dim, index, src, "prod");
    case ScatterCombine::Max: return at::scatter_reduce(self, dim, index, src, "amax");
    case ScatterCombine::Min: return at::scatter_reduce(self, dim, index, src, "amin");
  }
  SMELT_INTERNAL_CHECK(false, "unknown scatter combine");
}

// torch's scan in the output's dtype (half types accumulate in float on
// ATen's side too).
at::Tensor scanWithATen(const ScanOp* scan, const at::Tensor& x, at::ScalarType out_type) {
  const int64_t dim = scan->dim();
  switch (scan->combine()) {
    case ScanCombine::Add: return at::cumsum(x, dim, out_type);
    case ScanCombine::Mul: return at::cumprod(x, dim, out_type);
    case ScanCombine::Max: return std::get<0>(at::cummax(x.to(out_type), dim));
    case ScanCombine::Min: return std::get<0>(at::cummin(x.to(out_type), dim));
    case ScanCombine::LogAddExp: return at::logcumsumexp(x.to(out_type), dim);
  }
  SMELT_INTERNAL_CHECK(false, "unknown scan combine");
}

// Half and bfloat16 special functions compute in `wide` (float), as the
// kernels do (ATen's CPU kernels of several have no half).
at::Tensor unaryWithATen(UnaryOpType op, const at::Tensor& x, at::ScalarType out_type,
                         at::ScalarType wide) {
  switch (op) {
    case UnaryOpType::Neg: return at::neg(x);
    case UnaryOpType::Exp: return at::exp(x.to(out_type));
    case UnaryOpType::Tanh: return at::tanh(x.to(out_type));
    case UnaryOpType::Abs: return at::abs(x);
    case UnaryOpType::Relu: return at::relu(x);
    case UnaryOpType::Cast: return x.to(out_type);
    case UnaryOpType::Sqrt: return at::sqrt(x.to(out_type));
    case UnaryOpType::Rsqrt: return at::rsqrt(x.to(out_type));
    case UnaryOpType::Log: return at::log(x.to(out_type));
    case UnaryOpType::Log2: return at::log2(x.to(out_type));
    case UnaryOpType::Log1p: return at::log1p(x.to(out_type));
    case UnaryOpType::Exp2: return at::exp2(x.to(out_type));
    case UnaryOpType::Expm1: return at::expm1(x.to(out_type));
    case UnaryOpType::Sigmoid: return at::sigmoid(x.to(out_type));
    case UnaryOpType::Erf: return at::erf(x.to(out_type));
    case UnaryOpType::Reciprocal: return at::reciprocal(x.to(out_type));
    case UnaryOpType::Sin: return at::sin(x.to(out_type));
    case UnaryOpType::Cos: return at::cos(x.to(out_type));
    case UnaryOpType::Tan: return at::tan(x.to(out_type));
    case UnaryOpType::Asin: return at::asin(x.to(out_type));
    case UnaryOpType::Acos: return at::acos(x.to(out_type));
    case UnaryOpType::Atan: return at::atan(x.to(out_type));
    case UnaryOpType::Sinh: return at::sinh(x.to(out_type));
    case UnaryOpType::Cosh: return at::cosh(x.to(out_type));
    case UnaryOpType::Asinh: return at::asinh(x.to(out_type));
    case UnaryOpType::Acosh: return at::acosh(x.to(out_type));
    case UnaryOpType::Atanh: return at::atanh(x.to(out_type));
    case UnaryOpType::Log10: return at::log10(x.to(out_type));
    case UnaryOpType::Erfc: return at::erfc(x.to(out_type));
    case UnaryOpType::Lgamma: return at::lgamma(x.to(out_type));
    case UnaryOpType::Floor: return at::floor(x);
    case UnaryOpType::Ceil: return at::ceil(x);
    case UnaryOpType::Round: return at::round(x);
    case UnaryOpType::Trunc: return at::trunc(x);
    case UnaryOpType::LogicalNot: return at::logical_not(x);
    case UnaryOpType::Signbit: return at::signbit(x);
    case UnaryOpType::BitwiseNot: return at::bitwise_not(x);
    case UnaryOpType::I0: return at::i0(x.to(wide)).to(out_type);
    case UnaryOpType::I0e: return at::special_i0e(x.to(wide)).to(out_type);
    case UnaryOpType::I1: return at::special_i1(x.to(wide)).to(out_type);
    case UnaryOpType::I1e: return at::special_i1e(x.to(wide)).to(out_type);
    case UnaryOpType::Digamma: return at::digamma(x.to(wide)).to(out_type);
    case UnaryOpType::Erfinv: return at::erfinv(x.to(wide)).to(out_type);
    case UnaryOpType::Ndtri: return at::special_ndtri(x.to(wide)).to(out_type);
    case UnaryOpType::LogNdtr: return at::special_log_ndtr(x.to(wide)).to(out_type);
    case UnaryOpType::Erfcx: return at::special_erfcx(x.to(wide)).to(out_type);
    case UnaryOpType::AiryAi: return at::special_airy_ai(x.to(wide)).to(out_type);
    case UnaryOpType::BesselJ0: return at::special_bessel_j0(x.to(wide)).to(out_type);
    case UnaryOpType::BesselJ1: return at::special_bessel_j1(x.to(wide)).to(out_type);
    case UnaryOpType::BesselY0: return at::special_bessel_y0(x.to(wide)).to(out_type);
    case UnaryOpType::BesselY1: return at::special_bessel_y1(x.to(wide)).to(out_type);
    case UnaryOpType::ModifiedBesselK0: return at::special_modified_bessel_k0(x.to(wide)).to(out_type);
    case UnaryOpType::ModifiedBesselK1: return at::special_modified_bessel_k1(x.to(wide)).to(out_type);
    case UnaryOpType::ScaledModifiedBesselK0: return at::special_scaled_modified_bessel_k0(x.to(wide)).to(out_type);
    case UnaryOpType::ScaledModifiedBesselK1: return at::special_scaled_modified_bessel_k1(x.to(wide)).to(out_type);
    case UnaryOpType::SphericalBesselJ0: return at::special_spherical_bessel_j0(x.to(wide)).to(out_type);
  }
  SMELT_INTERNAL_CHECK(false, "ATen reference: unhandled unary op");
}

at::Tensor binaryWithATen(const BinaryOp* op, const at::Tensor& a, const at::Tensor& b,
                          at::ScalarType out_type, at::ScalarType wide) {
  at::Tensor r;
  switch (op->op()) {
    case BinaryOpType::Add: r = at::add(a, b); break;
    case BinaryOpType::Sub: r = at::sub(a, b); break;
    case BinaryOpType::Mul: r = at::mul(a, b); break;
    case BinaryOpType::Div:
      // An integral result is nvFuser's div (truncating); else true division.
      r = isIntegralType(op->output()->dtype()) ? at::div(a, b, "trunc") : at::div(a, b);
      break;
    case BinaryOpType::Maximum: r = at::maximum(a, b); break;
    case BinaryOpType::Minimum: r = at::minimum(a, b); break;
    case BinaryOpType::Pow: r = at::pow(a, b); break;
    case BinaryOpType::Remainder: r = at::remainder(a, b); break;
    case BinaryOpType::Fmod: r = at::fmod(a, b); break;
    case BinaryOpType::Atan2: r = at::atan2(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::Hypot: r = at::hypot(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::Copysign: r = at::copysign(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::Nextafter: r = at::nextafter(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::ShiftLeft: r = at::bitwise_left_shift(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::ShiftRight: r = at::bitwise_right_shift(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::Gcd: r = at::gcd(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::Lcm: r = at::lcm(a.to(out_type), b.to(out_type)); break;
    case BinaryOpType::Eq: r = at::eq(a, b); break;
    case BinaryOpType::Ne: r = at::ne(a, b); break;
    case BinaryOpType::Lt: r = at::lt(a, b); break;
    case BinaryOpType::Le: r = at::le(a, b); break;
    case BinaryOpType::Gt: r = at::gt(a, b); break;
    case BinaryOpType::Ge: r = at::ge(a, b); break;
    case BinaryOpType::LogicalAnd: r = at::logical_and(a, b); break;
    case BinaryOpType::LogicalOr: r = at::logical_or(a, b); break;
    case BinaryOpType::BitwiseAnd: r = at::bitwise_and(a, b); break;
    case BinaryOpType::BitwiseOr: r = at::bitwise_or(a, b); break;
    case BinaryOpType::BitwiseXor: r = at::bitwise_xor(a, b); break;
    case BinaryOpType::RandomUniform: r = randomUniform(a, b, out_type); break;
    case BinaryOpType::Igamma: r = at::igamma(a.to(wide), b.to(wide)); break;
    case BinaryOpType::Igammac: r = at::igammac(a.to(wide), b.to(wide)); break;
    case BinaryOpType::Zeta: r = at::special_zeta(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ChebyshevPolynomialT: r = at::special_chebyshev_polynomial_t(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ShiftedChebyshevPolynomialT: r = at::special_shifted_chebyshev_polynomial_t(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ChebyshevPolynomialU: r = at::special_chebyshev_polynomial_u(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ShiftedChebyshevPolynomialU: r = at::special_shifted_chebyshev_polynomial_u(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ChebyshevPolynomialV: r = at::special_chebyshev_polynomial_v(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ShiftedChebyshevPolynomialV: r = at::special_shifted_chebyshev_polynomial_v(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ChebyshevPolynomialW: r = at::special_chebyshev_polynomial_w(a.to(wide), b.to(wide)); break;
    case BinaryOpType::ShiftedChebyshevPolynomialW: r = at::special_shifted_chebyshev_polynomial_w(a.to(wide), b.to(wide)); break;
    case BinaryOpType::HermitePolynomialH: r = at::special_hermite_polynomial_h(a.to(wide), b.to(wide)); break;
    case BinaryOpType::HermitePolynomialHe: r = at::special_hermite_polynomial_he(a.to(wide), b.to(wide)); break;
    case BinaryOpType::LaguerrePolynomialL: r = at::special_laguerre_polynomial_l(a.to(wide), b.to(wide)); break;
    case BinaryOpType::LegendrePolynomialP: r = at::special_legendre_polynomial_p(a.to(wide), b.to(wide)); break;
    case BinaryOpType::Polygamma: r = polygamma(a, b.to(wide)); break;
  }
  return r.to(out_type);
}

// With `as_views`, copies alias their input and reshapes are views (an
// undefined tensor where the strides do not allow one).
at::Tensor evaluate(const Expr* expr, const std::unordered_map<const Val*, at::Tensor>& values,
                    const Sizes& sizes, c10::Device device, bool as_views = false) {
  auto in = [&](size_t i) -> at::Tensor {
    const Val* v = expr->input(i);
    auto it = values.find(v);
    if (it != values.end()) return it->second;
    // A 0-dim tensor of the scalar's dtype promotes like a torch scalar: a
    // tensor of the same category keeps its dtype.
    const auto* scalar = static_cast<const Scalar*>(v);
    return at::scalar_tensor(scalar->value(), at::TensorOptions().dtype(toAtenType(scalar->dtype())));
  };
  const TensorView* out = expr->output();
  at::ScalarType out_type = toAtenType(out->dtype());
  // Special functions compute half and bfloat16 in float (as the kernels do;
  // ATen's CPU kernels of several have no half).
  const at::ScalarType wide =
      out_type == at::kHalf || out_type == at::kBFloat16 ? at::kFloat : out_type;
  switch (expr->type()) {
    case ExprType::Full:
      return at::full(concreteShape(out->logicalNoReductions(), sizes), in(0).item(),
                      at::TensorOptions().dtype(out_type).device(device));
    case ExprType::Iota: {
      const at::TensorOptions options = at::TensorOptions().dtype(out_type).device(device);
      // Row-major positions over the whole shape (a 1-D iota is arange).
      const std::vector<int64_t> shape = concreteShape(out->logicalNoReductions(), sizes);
      const at::Tensor index =
          at::arange(c10::multiply_integers(shape), at::TensorOptions().dtype(at::kLong).device(device))
              .reshape(shape);
      return in(0).to(options) + index.to(options) * in(1).to(options);
    }
    case ExprType::IndexSelect: {
      const auto* select = static_cast<const IndexSelectOp*>(expr);
      if (select->mode() == IndexSelectMode::Along) return at::gather(in(0), select->dim(), in(1).to(at::kLong));
      return at::index_select(in(0), select->dim(), in(1).reshape({-1}).to(at::kLong))
          .reshape(concreteShape(out->logicalNoReductions(), sizes));
    }
    case ExprType::Scatter:
      return scatterWithATen(static_cast<const ScatterOp*>(expr), in(0), in(1), in(2));
    case ExprType::Scan:
      return scanWithATen(static_cast<const ScanOp*>(expr), in(0), out_type);
    case ExprType::Set:
      return as_views ? in(0) : in(0).clone();
    case ExprType::Unary:
      return unaryWithATen(static_cast<const UnaryOp*>(expr)->op(), in(0), out_type, wide);
    case ExprType::Binary:
      return binaryWithATen(static_cast<const BinaryOp*>(expr), in(0), in(1), out_type, wide);
    case ExprType::Where:
      return at::where(in(0), in(1), in(2)).to(out_type);
    case ExprType::Reduction: {
      std::vector<int64_t> dims;
      const auto& axes = out->logicalDomain();
      for (size_t d = 0; d < axes.size(); ++d) {
        if (axes[d]->isReduction()) dims.push_back(static_cast<int64_t>(d));
      }
      at::Tensor x = in(0);
      switch (static_cast<const ReductionOp*>(expr)->op()) {
        case ReductionOpType::Sum: return at::sum(x, dims).to(out_type);
        case ReductionOpType::Prod:
          // at::prod takes one dimension: the last first keeps the others' numbers.
          x = x.to(out_type);
          for (auto d = dims.rbegin(); d != dims.rend(); ++d) x = at::prod(x, *d);
          return x;
        case ReductionOpType::Max: break;
      }
      return at::amax(x, dims).to(out_type);
    }
    case ExprType::Mma:  // fp32 accumulation of the Half/BFloat16 operands
      return at::matmul(in(0).to(at::kFloat), in(1).to(at::kFloat));
    case ExprType::Broadcast: {
      at::Tensor x = in(0);
      const auto& is_new = static_cast<const BroadcastOp*>(expr)->isNewAxis();
      for (size_t d = 0; d < is_new.size(); ++d) {
        if (is_new[d]) x = x.unsqueeze(static_cast<int64_t>(d));
      }
      return x;
    }
    case ExprType::Expand:
      return in(0).expand(concreteShape(out->logicalNoReductions(), sizes));
    case ExprType::Permute:
      return in(0).permute(static_cast<const PermuteOp*>(expr)->dims());
    case ExprType::Squeeze:
    case ExprType::Reshape: {
      const std::vector<int64_t> shape = concreteShape(out->logicalNoReductions(), sizes);
      if (!as_views) return in(0).reshape(shape);
      // Decided without an exception: under torch.compile, ATen calls pass
      // through Python dispatch modes, whose errors are no c10::Error.
      const at::Tensor x = in(0);
      return at::detail::computeStride(x.sizes(), x.strides(), shape) ? x.view(shape) : at::Tensor();
    }
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

Sizes sizesOf(const Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  Sizes sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView* tv = fusion.inputs()[i]->asTensor();
    if (tv == nullptr) {
      // An integer scalar input may be an extent (full() of a scalar's size).
      const auto* s = static_cast<const Scalar*>(fusion.inputs()[i]);
      if (!s->isConstant() && isIntegralType(s->dtype())) {
        sizes[s->symbol()] = inputs[i].item<int64_t>();
      }
      continue;
    }
    for (int64_t d = 0; d < inputs[i].dim(); ++d) {
      sizes[sizeSymbol(tv, d)] = inputs[i].size(d);
    }
  }
  return sizes;
}

std::unordered_map<const Val*, at::Tensor> inputValues(const Fusion& fusion,
                                                       const std::vector<at::Tensor>& inputs) {
  std::unordered_map<const Val*, at::Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[fusion.inputs()[i]] = inputs[i];
  return values;
}

// Copies whose output a view of the input can be: a pad writes elements its input lacks.
bool movesData(ExprType type) { return isCopyLike(type) && type != ExprType::Pad; }

}  // namespace

std::vector<at::Tensor> evaluateWithATen(const Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  SMELT_CHECK(inputs.size() == fusion.inputs().size(), "ATen reference: fusion has ",
              fusion.inputs().size(), " inputs but ", inputs.size(), " were given");
  std::unordered_map<const Val*, at::Tensor> values = inputValues(fusion, inputs);
  const Sizes sizes = sizesOf(fusion, inputs);
  std::optional<c10::Device> tensor_device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (fusion.inputs()[i]->asTensor() != nullptr && !tensor_device) tensor_device = inputs[i].device();
  }
  const c10::Device device = tensor_device.value_or(c10::Device(c10::kCPU));
  for (const Expr* expr : fusion.exprs()) {
    try {
      values[expr->output()] = evaluate(expr, values, sizes, device);
    } catch (const c10::Error& e) {
      SMELT_CHECK(false, expr->toString(), " on these inputs: ", e.what_without_backtrace());
    }
  }
  std::vector<at::Tensor> outputs;
  for (const Val* out : fusion.outputs()) outputs.push_back(values.at(out).contiguous());
  return outputs;
}

bool movesDataOnly(const Fusion& fusion) {
  const std::vector<Expr*> exprs = fusion.exprs();
  return !exprs.empty() &&
         std::all_of(exprs.begin(), exprs.end(), [](const Expr* e) { return movesData(e->type()); });
}

std::optional<std::vector<at::Tensor>> outputsAsViews(const Fusion& fusion,
                                                      const std::vector<at::Tensor>& inputs) {
  if (!movesDataOnly(fusion) || inputs.size() != fusion.inputs().size()) return std::nullopt;
  std::unordered_map<const Val*, at::Tensor> values = inputValues(fusion, inputs);
  const Sizes sizes = sizesOf(fusion, inputs);
  for (const Expr* expr : fusion.exprs()) {
    at::Tensor view = evaluate(expr, values, sizes, c10::Device(c10::kCPU), /*as_views=*/true);
    if (!view.defined()) return std::nullopt;  // a reshape the strides do not allow as a view
    values[expr->output()] = std::move(view);
  }
  std::vector<at::Tensor> outputs;
  for (const Val* out : fusion.outputs()) {
    const at::Tensor& t = values.at(out);
    if (!t.is_contiguous()) return std::nullopt;  // not laid out as the executor allocates
    outputs.push_back(t);
  }
  return outputs;
}

bool hasEmptyInput(const Fusion& fusion, const std::vector<at::Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size() && i < fusion.inputs().size(); ++i) {
    if (fusion.inputs()[i]->asTensor() != nullptr && inputs[i].numel() == 0) return true;
  }
  return false;
}

}  // namespace smelt
