"""Regression tests for issue 21's "wrong values": integer pow computed in
integers (exact in int64 above 2^53, wrapping in int32), nvFuser's integer
div (truncating) next to truediv, and torch.compile's div rounding modes.
Values and dtypes are checked against torch in the CPU simulator; each fusion
is also compiled for meta tensors, which runs codegen and NVRTC (the kernel
the GPU would run) without launching it."""
import pytest
import torch

import smelt.backend
from smelt import FusionDefinition
from frontend_helpers import assert_matches


def run_and_compile(build, inputs):
    """Executes build's fusion on `inputs` (CPU: the simulator) and compiles
    it for the same shapes on meta tensors (codegen + NVRTC)."""
    with FusionDefinition() as fd:
        args = [fd.from_pytorch(x) for x in inputs]
        outs = build(fd, *args)
        for out in (outs if isinstance(outs, (list, tuple)) else [outs]):
            fd.add_output(out)
    results = fd.execute(list(inputs))
    metas = fd.execute([x.to("meta") for x in inputs])
    assert all(m.device.type == "meta" for m in metas)
    assert fd.last_kernels() and all(k.ptxas.registers > 0 for k in fd.last_kernels())
    return results


INT64_POW = [(3, 39), (11, 18), (7, 22), (-3, 39), (2, 62), (2, 63), (3, 41), (5, 0), (2, -1),
             (1, -5), (-1, -3), (-1, 7), (0, 0), (10, 18)]
INT32_POW = [(2, 31), (3, 20), (2, 30), (-2, 31), (7, 12), (10, 10), (3, 19), (1, -2), (2, -2)]


@pytest.mark.parametrize("dtype,cases", [(torch.int64, INT64_POW), (torch.int32, INT32_POW)],
                         ids=["int64", "int32"])
def test_integer_pow_tensor_exponent_matches_torch(dtype, cases):
    base = torch.tensor([b for b, _ in cases], dtype=dtype)
    exp = torch.tensor([e for _, e in cases], dtype=dtype)
    (out,) = run_and_compile(lambda fd, b, e: fd.ops.pow(b, e), [base, exp])
    assert_matches([out], torch.pow(base, exp), "cpu")


def test_int64_pow_above_2_pow_53_is_exact():
    base = torch.tensor([3, 11], dtype=torch.int64)
    exp = torch.tensor([39, 18], dtype=torch.int64)
    (out,) = run_and_compile(lambda fd, b, e: fd.ops.pow(b, e), [base, exp])
    assert out.tolist() == [4052555153018976267, 5559917313492231481]


def test_int32_pow_wraps_like_torch():
    base = torch.tensor([2, 3], dtype=torch.int32)
    exp = torch.tensor([31, 20], dtype=torch.int32)
    (out,) = run_and_compile(lambda fd, b, e: fd.ops.pow(b, e), [base, exp])
    assert out.dtype == torch.int32 and out.tolist() == [-2147483648, -808182895]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("exponent", [39, 18, 31, 20, 2, 0])
def test_integer_pow_scalar_exponent_matches_torch(dtype, exponent):
    base = torch.tensor([3, 11, -3, 2, 7, 0, 1], dtype=dtype)
    (out,) = run_and_compile(lambda fd, b: fd.ops.pow(b, exponent), [base])
    assert_matches([out], torch.pow(base, exponent), "cpu")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_pow_scalar_base_matches_torch(dtype):
    exp = torch.tensor([39, 18, 20, 31, 0, 5], dtype=dtype)
    (out,) = run_and_compile(lambda fd, e: fd.ops.pow(3, e), [exp])
    assert_matches([out], torch.pow(3, exp), "cpu")


def test_int64_arithmetic_after_pow_stays_exact():
    """The int64 value of pow feeds further integer ops without passing
    through a double."""
    base = torch.tensor([3, 11], dtype=torch.int64)
    exp = torch.tensor([39, 18], dtype=torch.int64)
    (out,) = run_and_compile(lambda fd, b, e: fd.ops.sub(fd.ops.add(fd.ops.pow(b, e), b), 1),
                             [base, exp])
    assert_matches([out], torch.pow(base, exp) + base - 1, "cpu")


NUMERATORS = [7, -7, 7, -7, 0, 9, -9, 1, 6, -6, 2**40 + 3]
DENOMINATORS = [2, 2, -2, -2, 3, 3, 4, -4, 3, 3, 7]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_div_on_integers_truncates_and_stays_integral(dtype):
    """nvFuser's div on integers is C's `/`: truncation toward zero."""
    nums = NUMERATORS if dtype == torch.int64 else NUMERATORS[:-1]
    a = torch.tensor(nums, dtype=dtype)
    b = torch.tensor(DENOMINATORS[:len(nums)], dtype=dtype)
    (out,) = run_and_compile(lambda fd, a, b: fd.ops.div(a, b), [a, b])
    assert_matches([out], torch.div(a, b, rounding_mode="trunc"), "cpu")
    (out,) = run_and_compile(lambda fd, a: fd.ops.div(a, 3), [a])
    assert_matches([out], torch.div(a, 3, rounding_mode="trunc"), "cpu")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_truediv_on_integers_is_float_division(dtype):
    a = torch.tensor(NUMERATORS[:-1], dtype=dtype)
    b = torch.tensor(DENOMINATORS[:-1], dtype=dtype)
    (out,) = run_and_compile(lambda fd, a, b: fd.ops.truediv(a, b), [a, b])
    assert_matches([out], torch.true_divide(a, b), "cpu")
    (out,) = run_and_compile(lambda fd, a: fd.ops.truediv(a, 4), [a])
    assert_matches([out], a / 4, "cpu")


def test_div_on_floats_is_unchanged():
    a, b = torch.randn(3, 5), torch.rand(3, 5) + 0.5
    (out,) = run_and_compile(lambda fd, a, b: fd.ops.div(a, b), [a, b])
    assert_matches([out], a / b, "cpu")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_division_by_zero_is_minus_one(dtype):
    """torch raises on the CPU; smelt gives what the GPU's integer division
    gives (-1), the same in the simulator and the generated kernel, and never
    traps on MIN / -1 (it wraps)."""
    lo = torch.iinfo(dtype).min
    a = torch.tensor([5, -5, 0, lo, lo], dtype=dtype)
    b = torch.tensor([0, 0, 0, -1, 1], dtype=dtype)
    (out,) = run_and_compile(lambda fd, a, b: fd.ops.div(a, b), [a, b])
    assert out.dtype == dtype and out.tolist() == [-1, -1, -1, lo, lo]


def all_fused():
    reports = smelt.backend.reports()
    assert reports
    for r in reports:
        assert r.fallback_runs == 0 and r.fused_node_count == r.total_nodes, str(r)


@pytest.fixture
def compiled(fresh_dynamo):
    def compile_(fn):
        return torch.compile(fn, backend="smelt", dynamic=False)
    return compile_


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_torch_compile_div_keeps_torch_semantics(compiled, dtype, mode):
    nums = [7, -7, 7, -7, 0, 9, -9, 1, 6, -6, 5]
    dens = [2, 2, -2, -2, 3, 3, 4, -4, 3, 3, -3]
    a = torch.tensor(nums, dtype=dtype)
    b = torch.tensor(dens, dtype=dtype)

    def f(a, b):
        return torch.div(a, b, rounding_mode=mode) * 1, torch.div(a, 3, rounding_mode=mode) + 0

    expected = f(a, b)
    actual = compiled(f)(a, b)
    for x, e in zip(actual, expected):
        assert x.dtype == e.dtype
        torch.testing.assert_close(x, e)
    all_fused()


def test_torch_compile_floor_divide_operator(compiled):
    a = torch.tensor([7, -7, 7, -7, 0, 9, -9], dtype=torch.int64)
    b = torch.tensor([2, 2, -2, -2, 3, 4, -4], dtype=torch.int64)

    def f(a, b):
        return a // b + 0, (a // -3) * 1

    for x, e in zip(compiled(f)(a, b), f(a, b)):
        assert x.dtype == e.dtype
        assert torch.equal(x, e)
    all_fused()


HALF_TYPES = {torch.float16: "Half", torch.bfloat16: "BFloat16"}


@pytest.mark.parametrize("torch_dtype", list(HALF_TYPES))
@pytest.mark.parametrize("broadcast_operand", ["A", "B"])
def test_half_matmul_with_a_broadcast_row_declines_tensor_cores(torch_dtype, broadcast_operand):
    """A of shape [1, K] (B of [K, 1]) with contiguity None: the result's M
    (N) axis is a broadcast, which the tensor-core schedule cannot tile. The
    scheduler declines tensor cores up front, with the reason in its params,
    and the CUDA-core kernel runs; forcing tensor cores is an error."""
    from smelt import DataType, SmeltError
    dtype = getattr(DataType, HALF_TYPES[torch_dtype])
    g = torch.Generator().manual_seed(0)
    k = 32
    a_shape, b_shape = ([1, k], [k, 24]) if broadcast_operand == "A" else ([40, k], [k, 1])
    a = torch.randn(*a_shape, generator=g).to(torch_dtype)
    b = torch.randn(*b_shape, generator=g).to(torch_dtype)
    with FusionDefinition() as fd:
        ta = fd.define_tensor(shape=[1 if s == 1 else -1 for s in a_shape],
                              contiguity=[None if s == 1 else True for s in a_shape], dtype=dtype)
        tb = fd.define_tensor(shape=[1 if s == 1 else -1 for s in b_shape],
                              contiguity=[None if s == 1 else True for s in b_shape], dtype=dtype)
        fd.add_output(fd.ops.relu(fd.ops.matmul(ta, tb)))
    expected = torch.relu(a.float() @ b.float()).to(torch_dtype)
    (out,) = fd.execute([a, b])
    assert out.dtype == torch_dtype and out.shape == expected.shape
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    axis = "M" if broadcast_operand == "A" else "N"
    report = fd.last_run_report()
    assert f"tensor cores: no — the result's {axis} axis is a broadcast" in report, report
    (out,) = fd.execute([a, b], tensor_cores=False)
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    with pytest.raises(SmeltError, match=f"tensor cores were forced, but the result's {axis} axis"):
        fd.execute([a, b], tensor_cores=True)
    metas = fd.execute([a.to("meta"), b.to("meta")])  # the CUDA-core kernel compiles (NVRTC)
    assert metas[0].shape == expected.shape
    assert fd.last_kernels()[0].ptxas.registers > 0


@pytest.mark.parametrize("torch_dtype", list(HALF_TYPES))
def test_half_matmul_from_pytorch_row_vector(torch_dtype):
    """The issue's form: from_pytorch of a [1, K] tensor."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(1, 64, generator=g).to(torch_dtype)
    b = torch.randn(64, 16, generator=g).to(torch_dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.matmul(fd.from_pytorch(a), fd.from_pytorch(b)))
    (out,) = fd.execute([a, b])
    assert out.dtype == torch_dtype and out.shape == (1, 16)
    torch.testing.assert_close(out, (a.float() @ b.float()).to(torch_dtype), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_remainder_and_fmod_match_torch(dtype):
    a = torch.tensor([7, -7, 7, -7, 0, 2**30 + 5], dtype=dtype)
    b = torch.tensor([3, 3, -3, -3, 5, -7], dtype=dtype)
    (r, f) = run_and_compile(lambda fd, a, b: [fd.ops.remainder(a, b), fd.ops.fmod(a, b)], [a, b])
    assert_matches([r, f], [torch.remainder(a, b), torch.fmod(a, b)], "cpu")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_pow_with_a_scalar_input_exponent(dtype):
    from smelt import DataType
    base = torch.tensor([3, 11, 2, -3], dtype=dtype)
    with FusionDefinition() as fd:
        b = fd.from_pytorch(base)
        e = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.pow(b, e))
    for exponent in (39, 18, 31, 20):
        (out,) = fd.execute([base, exponent])
        assert_matches([out], torch.pow(base, exponent), "cpu")
    fd.execute([base.to("meta"), exponent])  # codegen + NVRTC
    assert fd.last_kernels()[0].ptxas.registers > 0
