"""ATen ops real models carry, through torch.compile(backend="smelt")
against eager: batch norm (eval and training, running statistics included),
normalization and activation backward ops (decomposed into fused ops),
scalar_tensor and lift_fresh_copy. Each asserts that the op was fused."""
import pytest
import torch
import torch.nn.functional as F

import smelt.backend


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def gen(seed):
    return torch.Generator().manual_seed(seed)


def no_fallbacks_and_fused(min_fraction):
    reports = smelt.backend.reports()
    for r in reports:
        assert r.fallback_runs == 0, str(r)
    fused = sum(r.fused_node_count for r in reports)
    total = sum(r.total_nodes for r in reports)
    assert fused >= min_fraction * total, "\n".join(str(r) for r in reports)


@pytest.mark.parametrize("train", [False, True])
def test_batch_norm_matches_eager_with_running_stats(train):
    torch.manual_seed(0)
    eager = torch.nn.BatchNorm2d(3).train(train)
    with torch.no_grad():
        eager.running_mean.uniform_(-1, 1)
        eager.running_var.uniform_(0.5, 2)
        eager.weight.uniform_(0.5, 1.5)
        eager.bias.uniform_(-1, 1)
    ours = torch.nn.BatchNorm2d(3).train(train)
    ours.load_state_dict(eager.state_dict())
    x = torch.randn(2, 3, 4, 5, generator=gen(1))
    with torch.no_grad():
        expected = eager(x)
        actual = torch.compile(ours, backend="smelt")(x)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
    assert actual.stride() == expected.stride()
    torch.testing.assert_close(ours.running_mean, eager.running_mean)
    torch.testing.assert_close(ours.running_var, eager.running_var)
    assert int(ours.num_batches_tracked) == int(eager.num_batches_tracked)
    no_fallbacks_and_fused(0.9)


@pytest.mark.parametrize("name,fn", [
    ("layer_norm", lambda x, w, b: F.layer_norm(x, [6], w, b)),
    ("softmax", lambda x, w, b: torch.softmax(x * w, -1)),
    ("log_softmax", lambda x, w, b: torch.log_softmax(x + b, -1)),
    ("gelu", lambda x, w, b: F.gelu(x * w)),
    ("gelu_tanh", lambda x, w, b: F.gelu(x + b, approximate="tanh")),
    ("tanh", lambda x, w, b: torch.tanh(x * w)),
    ("relu", lambda x, w, b: torch.relu(x + b)),
    ("sigmoid", lambda x, w, b: torch.sigmoid(x * w)),
    ("silu", lambda x, w, b: F.silu(x + b)),
    ("batch_norm", lambda x, w, b: F.batch_norm(x.view(4, 6, 1), None, None, w, b,
                                                training=True).view(4, 6)),
])
def test_backward_ops_match_eager(name, fn):
    x0 = torch.randn(4, 6, generator=gen(2))
    w0 = torch.rand(6, generator=gen(3)) + 0.5
    b0 = torch.randn(6, generator=gen(4))
    grad_out = torch.randn(4, 6, generator=gen(5))

    def grads(f):
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        f(x, w, b).backward(grad_out)
        return [t.grad for t in (x, w, b)]
    expected = grads(fn)
    actual = grads(torch.compile(fn, backend="smelt"))
    for a, e in zip(actual, expected):
        if e is None:
            assert a is None
            continue
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
    kinds = [r.graph_name.split()[0] for r in smelt.backend.reports()]
    assert kinds.count("backward") == 1, kinds
    no_fallbacks_and_fused(0.75)


def test_scalar_tensor_and_lift_fresh_copy_are_fused():
    def f(x):
        m = torch.tensor(-3.0)
        return torch.where(x > 0, x, torch.scalar_tensor(-1.5)) + m, torch.scalar_tensor(2.0) * 3
    x = torch.randn(3, 4, generator=gen(6))
    actual = torch.compile(f, backend="smelt")(x)
    for a, e in zip(actual, f(x)):
        torch.testing.assert_close(a, e)
        assert a.shape == e.shape and a.stride() == e.stride()
    report = smelt.backend.last_report()
    assert report.fused_ops()["scalar_tensor.default"] == 2, str(report)
    assert report.fused_ops()["lift_fresh_copy.default"] == 1, str(report)
    assert report.fused_node_count == report.total_nodes, str(report)


def test_prod_bitwise_and_signbit_are_fused():
    def f(x, m, n):
        masked = (m & n) ^ ~(m | 3)
        return x.prod(1), x.prod(0, keepdim=True), masked, torch.signbit(x) & (m > 0), \
            torch.prod(m, dtype=torch.float64)
    x = 1 + 0.1 * torch.randn(4, 300, generator=gen(7))
    m = torch.randint(-50, 50, (4, 300), generator=gen(8), dtype=torch.int32)
    n = torch.randint(-50, 50, (4, 300), generator=gen(9), dtype=torch.int32)
    m[m == 0] = 1
    m = m.clamp(-2, 2)
    actual = torch.compile(f, backend="smelt")(x, m, n)
    for a, e in zip(actual, f(x, m, n)):
        assert a.dtype == e.dtype and a.shape == e.shape and a.stride() == e.stride()
        torch.testing.assert_close(a, e, rtol=1e-5, atol=0)
    report = smelt.backend.last_report()
    fused = report.fused_ops()
    assert fused["prod.dim_int"] == 2 and fused["prod.default"] == 1, str(report)
    assert fused["bitwise_and.Tensor"] == 2 and fused["signbit.default"] == 1, str(report)
    assert report.fused_node_count == report.total_nodes, str(report)


def fully_fused_like_eager(fn, x):
    """fn compiled gives eager's values (NaN where eager's are), dtypes and
    strides, with nothing left in torch; the graph's report."""
    expected = fn(x)
    actual = torch.compile(fn, backend="smelt")(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, equal_nan=True)
        assert a.dtype == e.dtype and a.stride() == e.stride()
    report = smelt.backend.last_report()
    assert not report.unsupported_ops and report.fallback_runs == 0, str(report)
    return report


NAN = float("nan")
TIES_AND_NANS = torch.tensor([[1., 3., 3., 2.], [NAN, 1., NAN, 5.], [0., -1., -1., 0.]])
INT64_EXTREMES = torch.tensor([[1, 3, 3, 2], [-2**63, 1, 2**63 - 1, -2**63]])


@pytest.mark.parametrize("name,fn,x", [
    # torch's rules: the first index of the extreme; a NaN is the extreme.
    ("argmax_rows", lambda x: torch.argmax(x, 1), TIES_AND_NANS),
    ("argmin_columns_keepdim", lambda x: torch.argmin(x, 0, keepdim=True), TIES_AND_NANS),
    ("argmax_flattened", lambda x: torch.argmax(x), TIES_AND_NANS[2:]),
    ("argmax_flattened_keepdim", lambda x: torch.argmax(x, keepdim=True), TIES_AND_NANS[2:]),
    ("max_dim_int64", lambda x: torch.max(x, 1), INT64_EXTREMES),
    ("min_dim_int64", lambda x: torch.min(x, 1), INT64_EXTREMES),
    ("min_dim_bool", lambda x: torch.min(x, 1), torch.tensor([[True, False], [True, True]])),
    # A row with no true: bool max starts from false (it used to start from true).
    ("amax_bool", lambda x: torch.amax(x, 1), torch.tensor([[True, False], [False, False]])),
    ("any_bool_columns", lambda x: torch.any(x, 0), torch.tensor([[True, False], [False, False]])),
    ("max_bool_all_false", lambda x: x.max(), torch.zeros(3, 4, dtype=torch.bool)),
    ("max_dim_nan", lambda x: torch.max(x, 0), TIES_AND_NANS),
    ("argmax_0dim", lambda x: torch.argmax(x * 2), torch.tensor(3.0)),
    ("argmax_then_add", lambda x: torch.argmax(x, 1) + 1, torch.randn(4, 300, generator=gen(5))),
])
def test_index_returning_reductions_match_eager(name, fn, x):
    fully_fused_like_eager(fn, x)


@pytest.mark.parametrize("name,fn,x", [
    ("asin", torch.asin, torch.rand(3, 5, generator=gen(6)) * 1.8 - 0.9),
    ("lgamma", torch.lgamma, torch.rand(3, 5, generator=gen(7)) * 4 + 0.1),
    ("atan2_int", lambda x: torch.atan2(x, x.flip(0)), torch.arange(-7, 8).view(3, 5)),
    ("copysign", lambda x: torch.copysign(x, -x.t().t()), torch.tensor([[-0.0, 0.0, 1.5, NAN]])),
    ("isnan_isinf", lambda x: torch.isnan(x) | torch.isinf(x),
     torch.tensor([[NAN, float("inf"), -float("inf"), 1.0]])),
    ("sign_nan", torch.sign, torch.tensor([[NAN, -0.0, 0.0, -2.0, 3.0]])),
    ("fmax_nan", lambda x: torch.fmax(x, x.flip(1)), torch.tensor([[NAN, 1.0, 2.0, NAN]])),
    ("amin_int64", lambda x: torch.amin(x, 1), INT64_EXTREMES),
    ("any_all", lambda x: torch.any(x > 1, 1) & torch.all(x > -1), TIES_AND_NANS),
    ("sum_0dim", lambda x: torch.sum(x * 2), torch.tensor(3, dtype=torch.int32)),
    ("mse_loss", lambda x: F.mse_loss(x, x.flip(1) * 0.5), torch.randn(3, 5, generator=gen(8))),
    ("logsumexp", lambda x: torch.logsumexp(x, 1), torch.randn(3, 5, generator=gen(9)) * 30),
    ("shifts", lambda x: (x << x.flip(1)) ^ (x >> (x.flip(1) - 2)),
     torch.tensor([[5, -5, 1, -1, 70]], dtype=torch.int32)),
    ("gcd_lcm", lambda x: torch.gcd(x, x.flip(1)) + torch.lcm(x, x.flip(1) + 1),
     torch.tensor([[0, -12, 7, 18, 0]])),
    ("nextafter", lambda x: torch.nextafter(x, -x), torch.tensor([[0.0, 1.0, -2.5, NAN]])),
])
def test_decomposed_and_new_elementwise_ops_are_fused(name, fn, x):
    fully_fused_like_eager(fn, x)


POOL_INPUT = torch.randn(2, 3, 9, 8, generator=gen(10))
POOL_INPUT[0, 0, 1, 1] = NAN  # a NaN wins its windows, as in torch's kernel


@pytest.mark.parametrize("name,fn,x", [
    ("max_pool2d_padded", lambda x: F.max_pool2d(x, 3, 2, 1), POOL_INPUT),
    ("max_pool2d_indices_dilated_ceil",
     lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True), POOL_INPUT),
    ("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), POOL_INPUT[0]),
    ("max_pool3d", lambda x: F.max_pool3d(x, 2), POOL_INPUT),
    ("max_pool2d_ties", lambda x: F.max_pool2d(x, 2, 1, return_indices=True),
     torch.tensor([[[[1., 1., 0.], [1., 1., 2.], [-float("inf")] * 3]]])),
    ("avg_pool2d_padded", lambda x: F.avg_pool2d(x, 3, 2, 1), POOL_INPUT.nan_to_num()),
    ("avg_pool2d_ceil_no_pad_count",
     lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     POOL_INPUT.nan_to_num()),
    ("avg_pool2d_divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3), POOL_INPUT),
    ("avg_pool1d_half", lambda x: F.avg_pool1d(x.half(), 3, 1, 1), POOL_INPUT[0]),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (4, 3), return_indices=True),
     POOL_INPUT),
    # Windows of one element: the indices are a broadcast smelt returns
    # expanded; the output is written out in torch's dense layout.
    ("adaptive_max_pool2d_identity", lambda x: F.adaptive_max_pool2d(x, (9, 8), True), POOL_INPUT),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 1), POOL_INPUT[0]),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), POOL_INPUT),
])
def test_pools_are_one_kernel_matching_eager(name, fn, x):
    """Pools as reductions over windows: each window offset one gather of the
    input, the whole pool one kernel (a gather reads its table from memory,
    so a pooled tensor computed first is a kernel of its own)."""
    report = fully_fused_like_eager(fn, x)
    # Two where the pooled tensor is computed first (a cast), or where the
    # indices are a broadcast written out apart from the values.
    assert report.smelt_kernels() == (2 if name.endswith(("_half", "_identity")) else 1), str(report)



def test_max_pool_values_alone_scan_like_torch_without_indices():
    """An eval max pool reads only the values: the fusion leaves the indices
    out (one output), and the values are still torch's first maximum in scan
    order, signed zeros and NaN included (ties of -0.0 and 0.0 keep the first;
    a window wholly in the padding's -inf stays -inf)."""
    x = torch.tensor([[[[-0.0, 0.0, 0.0, -0.0, -float("inf")],
                        [1.0, -0.0, NAN, 2.0, -float("inf")],
                        [3.0, 3.0, -2.0, -1.0, 4.0]]]])
    fn = lambda x: (F.max_pool2d(x, 2, 1, 1), F.max_pool2d(x, (1, 2), 2))
    actual, expected = torch.compile(fn, backend="smelt")(x), fn(x)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, equal_nan=True)
        assert torch.equal(a.signbit(), e.signbit()) and a.stride() == e.stride()
    report = smelt.backend.last_report()
    # A kernel per pool (their outputs' shapes differ).
    assert report.smelt_kernels() == 2 and report.fallback_runs == 0, str(report)
    (fd, _, _), = report.traced_calls
    assert len(fd.outputs) == 2
    records = repr(fd)
    assert ", -1)" not in records  # no index scan: where(inside, position, -1)
    assert "DataType.Int32" in records and "DataType.Int:" not in records  # int32 positions

SPECIAL_X = torch.tensor([[-2.5, -1.0, -0.0, 0.0, 0.3, 1.0, 2.0, 7.5],
                          [30.0, -30.0, 1e-20, NAN, float("inf"), -float("inf"), 0.999, -12.0]])
UNIT_X = torch.tensor([[-1.0, -0.999, -0.5, 0.0, 0.25, 0.9999, 1.0, 1.5, NAN]])
DEGREES = torch.tensor([[-2, 0, 1, 2, 3, 7, 9, 11, 12]])
S = torch.special


# torch's special functions (csrc/codegen/special_math.h) on their special
# values: poles, domain ends, infinities, NaN; integers promote to float,
# half computes in float.
@pytest.mark.parametrize("name,fn,x", [
    *[(f.__name__, f, SPECIAL_X) for f in (
        torch.i0, S.i0e, S.i1, S.i1e, torch.digamma, S.log_ndtr, S.erfcx, S.airy_ai,
        S.bessel_j0, S.bessel_j1, S.bessel_y0, S.bessel_y1, S.modified_bessel_i0,
        S.modified_bessel_i1, S.modified_bessel_k0, S.modified_bessel_k1,
        S.scaled_modified_bessel_k0, S.scaled_modified_bessel_k1, S.spherical_bessel_j0)],
    ("erfinv", torch.erfinv, UNIT_X),
    ("ndtri", S.ndtri, UNIT_X),
    *[(f"polygamma_{n}", (lambda n: lambda x: torch.polygamma(n, x))(n), SPECIAL_X) for n in range(5)],
    ("igamma_igammac", lambda x: (torch.igamma(x, x.flip(1)), torch.igammac(x.abs(), x.flip(0).abs())),
     SPECIAL_X),
    ("zeta", lambda x: (S.zeta(x, x.flip(0)), S.zeta(3.0, x), S.zeta(x, 2.0)), SPECIAL_X),
    ("i0e_int", S.i0e, torch.arange(-4, 4).view(2, 4)),
    ("i0_half", torch.i0, (torch.randn(3, 5, generator=gen(11)) * 3).half()),
    ("digamma_fused_with_exp", lambda x: torch.exp(torch.digamma(x.abs() + 1)) * 2, SPECIAL_X),
])
def test_special_functions_are_fused(name, fn, x):
    fully_fused_like_eager(fn, x)


# The polynomials, x a tensor and the degree n an integer tensor: torch's
# 0 for negative n, its values at +-1 (and 0, 1 for the shifted ones). No
# NaN x: torch's value there depends on the element's position (0 or NaN:
# its vectorized and scalar loops differ); smelt's is NaN. Degrees up to 12:
# higher ones' float recurrences amplify rounding near roots, and torch's
# CPU build fuses their multiply-adds (FMA), the simulator does not.
@pytest.mark.parametrize("poly", [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"])
def test_special_polynomials_are_fused(poly):
    f = getattr(S, poly)
    x = torch.tensor([[-1.0], [-0.6], [0.0], [0.3], [1.0], [1.7]])
    fully_fused_like_eager(lambda x: (f(x, DEGREES), f(x, 3)), x)
    fully_fused_like_eager(lambda n: f(0.5, n), DEGREES)


# Composites smelt decomposes itself (backend/composites.py) and torch's
# decomposition of _unsafe_masked_index.
MATRIX = torch.randn(4, 5, generator=gen(21))
FREXP_X = torch.cat([torch.randn(12, generator=gen(22)) * 1e3, torch.tensor(
    [0.0, -0.0, float("inf"), -float("inf"), NAN, 1e-40, 0.5, 1.0, -2.0, 0.75])])


@pytest.mark.parametrize("name,fn,x", [
    ("addbmm", lambda x: torch.addbmm(x[0, :2], x[1:, :2, :3], x[1:, :3], beta=0.5, alpha=2),
     torch.randn(3, 5, 5, generator=gen(23))),
    ("addbmm_int", lambda x: torch.addbmm(x[0], x, x), torch.arange(-9, 9).view(2, 3, 3)),
    ("diagonal_scatter", lambda x: torch.diagonal_scatter(x, x[0, :4] * 2), MATRIX),
    ("diagonal_scatter_offset_dims", lambda x: torch.diagonal_scatter(
        x, x[1, :, :3] * 2, -2, 2, 0), torch.randn(4, 3, 5, generator=gen(24))),
    ("take_negative", lambda x: torch.take(x, torch.tensor([[0, -1], [7, -20]])), MATRIX),
    ("index_two_dims", lambda x: x[torch.tensor([3, -1, 0]), torch.tensor([[1], [4]])], MATRIX),
    ("unsafe_masked_index", lambda x: torch.ops.aten._unsafe_masked_index(
        x, torch.tensor([[True], [False], [True]]), [torch.tensor([0, 9, 3])], -1.0), MATRIX),
    ("cdist", lambda x: tuple(torch.cdist(x, x[:3] + 1, p) for p in (0, 1, 2, 3, float("inf"))), MATRIX),
    ("pdist", lambda x: tuple(F.pdist(x, p) for p in (1, 2, 0.5)), MATRIX),
    ("trace", torch.trace, MATRIX),
    ("trace_int", torch.trace, torch.arange(12).view(4, 3)),
    ("unfold_copy", lambda x: torch.ops.aten.unfold_copy(x, 1, 2, 2), MATRIX),
    ("unfold_copy_first_dim", lambda x: torch.ops.aten.unfold_copy(x, 0, 3, 1), MATRIX),
    ("frexp", torch.frexp, FREXP_X),
    ("frexp_half", torch.frexp, FREXP_X.half()),
])
def test_composites_are_fused(name, fn, x):
    fully_fused_like_eager(fn, x)


# The scatter family: one smelt scatter kernel each (fx/scatter.py), against
# eager. Set-like ops use indices without duplicates (torch leaves which
# duplicate wins unspecified; the simulator reports two writers as a race).
SELF = torch.randn(5, 4, generator=gen(30))
ROWS_DUP = torch.tensor([[0, 4, 2, 2], [4, 1, 2, 0], [0, 3, 3, 3]])
ROWS_UNIQUE = torch.tensor([[0, 4, 2, 1], [4, 1, 3, 0], [2, 3, 0, 3]])
SRC = torch.randn(3, 4, generator=gen(31))
IDS = torch.tensor([4, 0, -1, 2, 0])  # index_put: negatives count from the end
POSITIVE = torch.rand(5, 4, generator=gen(34)) + 1


def scatter_kernel_ran(report):
    """A scatter or index_put node ran in a smelt fusion."""
    assert any(k in str(op) for op in report.fused_ops() for k in ("scatter", "index_put")), str(report)


@pytest.mark.parametrize("name,fn,x", [
    ("scatter_src", lambda x: torch.scatter(x, 0, ROWS_UNIQUE, SRC), SELF),
    ("scatter_value_dim1", lambda x: torch.scatter(x, 1, torch.tensor([[3, 0], [1, 2], [0, 3]]), 2.5), SELF),
    ("scatter_reduce_add_arg", lambda x: torch.scatter(x, 0, ROWS_DUP, SRC, reduce="add"), SELF),
    ("scatter_reduce_multiply", lambda x: torch.scatter(x, 0, ROWS_DUP, SRC, reduce="multiply"), SELF),
    ("scatter_add", lambda x: torch.scatter_add(x, 0, ROWS_DUP, SRC * 2), SELF),
    ("scatter_add_int", lambda x: torch.scatter_add(x, 0, ROWS_DUP, ROWS_DUP), torch.arange(20).view(5, 4)),
    ("scatter_add_half", lambda x: torch.scatter_add(x, 0, ROWS_DUP, SRC.half()), SELF.half()),
    ("scatter_src_larger_than_index", lambda x: torch.scatter(
        x, 0, ROWS_UNIQUE[:2, :3], torch.randn(4, 4, generator=gen(32))), SELF),
    *[(f"scatter_reduce_{r}_{s}", lambda x, r=r, s=s: torch.scatter_reduce(
        x, 0, ROWS_DUP, SRC, r, include_self=s), SELF)
      for r in ("sum", "prod", "amax", "amin", "mean") for s in (True, False)],
    ("scatter_reduce_mean_int", lambda x: torch.scatter_reduce(
        x, 0, ROWS_DUP, ROWS_DUP * 7, "mean", include_self=False), torch.arange(20).view(5, 4)),
    ("index_add", lambda x: torch.index_add(x, 0, IDS % 5, torch.ones(5, 4) * 3, alpha=2), SELF),
    ("index_copy", lambda x: torch.index_copy(x, 0, torch.tensor([3, 0, 1]), SRC), SELF),
    ("index_add_dim1_int", lambda x: torch.index_add(x, 1, torch.tensor([3, 3, 0]), x[:, :3] * 5),
     torch.arange(20).view(5, 4)),
    ("index_put_accumulate", lambda x: torch.index_put(x, (IDS,), torch.ones(5, 4), accumulate=True), SELF),
    ("index_put_broadcast_value", lambda x: torch.index_put(x, (torch.tensor([1, -2]),), torch.tensor(7.0)), SELF),
    ("index_reduce_prod", lambda x: torch.index_reduce(x, 0, IDS % 5, POSITIVE, "prod"), SELF),
    ("index_reduce_amax_no_self", lambda x: torch.index_reduce(
        x, 0, IDS % 5, POSITIVE - 1.5, "amax", include_self=False), SELF),
    ("put_accumulate", lambda x: x.put(torch.tensor([0, 7, -1, 7]), torch.ones(4), accumulate=True), SELF),
    ("max_pool2d_backward", lambda x: torch.ops.aten.max_pool2d_with_indices_backward(
        torch.ones(2, 3, 2, 2), x, [2, 2], [2, 2], [0, 0], [1, 1], False,
        F.max_pool2d_with_indices(x, 2)[1]), torch.randn(2, 3, 4, 4, generator=gen(33))),
    # One image: the batch dimension is squeezed in a segment of its own.
    ("max_pool2d_backward_one_image", lambda x: torch.ops.aten.max_pool2d_with_indices_backward(
        torch.ones(1, 2, 2, 2), x, [2, 2], [2, 2], [0, 0], [1, 1], False,
        F.max_pool2d_with_indices(x, 2)[1]), torch.randn(1, 2, 4, 4, generator=gen(35))),
    # max_unpool through torch's decomposition (an index_put into zeros);
    # windows that do not overlap give indices without duplicates.
    ("max_unpool2d", lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2),
     torch.randn(2, 3, 4, 6, generator=gen(36))),
    ("max_unpool3d", lambda x: F.max_unpool3d(*F.max_pool3d(x, 2, return_indices=True), 2),
     torch.randn(1, 2, 4, 4, 2, generator=gen(37))),
    ("masked_index_put_accumulate", lambda x: torch.ops.aten._unsafe_masked_index_put_accumulate(
        x, torch.tensor([[True], [False], [True]]), (torch.tensor([0, 3, 3]),), torch.ones(3, 4)),
     SELF),
    # A 0-dim self: index_put on it unsqueezed, its result squeezed after the scatter.
    ("index_add_0d", lambda x: torch.index_add(x, 0, torch.tensor([0]), torch.tensor(1.5)),
     torch.tensor(2.0)),
])
def test_scatter_family_runs_in_smelt_scatter_kernels(name, fn, x):
    scatter_kernel_ran(fully_fused_like_eager(fn, x))


def test_scatter_index_out_of_bounds_is_torchs_error():
    bad = torch.tensor([[0, 5, 1, 2]])
    with pytest.raises(Exception, match="index 5 is out of bounds for dimension 0 with size 5"):
        torch.compile(lambda x: torch.scatter_add(x, 0, bad, SRC[:1]), backend="smelt")(SELF)
    # index_add rejects negative indices, as eager does (index_put accepts them).
    with pytest.raises(Exception, match="index -1 is out of bounds for dimension 0 with size 5"):
        torch.compile(lambda x: torch.index_add(x, 0, IDS, torch.ones(5, 4)), backend="smelt")(SELF)


def test_embedding_training_step_weight_gradient_matches_eager():
    """nn.Embedding's weight gradient (embedding_dense_backward, padding_idx
    honoured) computed by a smelt scatter-add, as eager computes it."""
    torch.manual_seed(0)
    eager = torch.nn.Sequential(torch.nn.Embedding(11, 6, padding_idx=3), torch.nn.Linear(6, 2))
    ours = torch.nn.Sequential(torch.nn.Embedding(11, 6, padding_idx=3), torch.nn.Linear(6, 2))
    ours.load_state_dict(eager.state_dict())
    ids = torch.tensor([[1, 3, 5, 1], [10, 0, 3, 5]])
    eager(ids).square().sum().backward()
    torch.compile(ours, backend="smelt")(ids).square().sum().backward()
    for e, o in zip(eager.parameters(), ours.parameters()):
        torch.testing.assert_close(o.grad, e.grad, rtol=1e-5, atol=1e-6)
        assert o.grad.stride() == e.grad.stride()
    assert ours[0].weight.grad[3].abs().sum() == 0  # the padding row gets no gradient
    backward = smelt.backend.reports()[-1]  # the gradient: an index_put with accumulate, fused
    assert not backward.unsupported_ops and backward.fallback_runs == 0, str(backward)
    assert backward.fused_ops()["_unsafe_index_put.default"] == 1, str(backward)
