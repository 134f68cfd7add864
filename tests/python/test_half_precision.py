"""Half and bfloat16 results that torch's CUDA kernels compute in float and
round once (issue 44's sweep in bfloat16 and bool): sums, products, and
a + alpha * b. Inputs are chosen so that the float computation is exact
where they can be: the result is then the one correctly rounded value,
and smelt must give it bit for bit (a 16-bit rounding of an intermediate
shows as a different value, which a tolerance would hide). The expected
values are computed in float and rounded, as CUDA does: torch's CPU
kernels differ in two places, noted where they do. Fusions run in the CPU
simulator; dtypes and strides are checked too."""
import pytest
import torch

import smelt.backend
from smelt import FusionDefinition
from smelt.dtypes import to_data_type

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

HALF_TYPES = [torch.bfloat16, torch.float16]


def exact_sums(dtype, shape, seed=0):
    """Numbers below 4 in magnitude with all the type's significant bits (8
    in bfloat16, 11 in half): any sum of a few hundred is exact in float,
    but not in the 16-bit type."""
    bits = {torch.bfloat16: 8, torch.float16: 11}[dtype]
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(1 - 2 ** bits, 2 ** bits, shape, generator=g) / 2 ** (bits - 2)).to(dtype)


def exact_products(dtype, shape, seed=0):
    """Numbers of 3 significant bits: a product of 8 has at most 24, exact
    in float but not in 8 (bfloat16) or 11 (half) bits."""
    g = torch.Generator().manual_seed(seed)
    choices = torch.tensor([0.75, 1.25, 1.5, 1.75, -0.75, -1.25, -1.5, -1.75])
    return choices[torch.randint(0, len(choices), shape, generator=g)].to(dtype)


def assert_same(actual, expected):
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    assert torch.equal(actual, expected), (actual - expected).abs().max()


def test_bfloat16_sum_of_four_rounds_once():
    """The case the sweep found (cosine_similarity's last sum): summed in
    bfloat16 steps, 0.0481 + 0.0923 + 0.0410 - 0.0248 gave 0.1572, not
    eager's 0.15625 (the float sum 0.15662 rounded)."""
    x = torch.tensor([0.048095703125, 0.09228515625, 0.041015625, -0.0247802734375],
                     dtype=torch.bfloat16)
    actual = torch.compile(lambda x: x.sum(), backend="smelt")(x)
    assert actual.item() == x.sum().item() == 0.15625


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [((64, 64), 1), ((8, 96), 1), ((96, 8), 0), ((5, 7), -1)])
def test_compiled_sum_accumulates_in_float(dtype, shape, dim):
    x = exact_sums(dtype, shape)
    actual = torch.compile(lambda x: x.sum(dim), backend="smelt")(x)
    assert_same(actual, x.sum(dim))
    assert sum(r.smelt_kernels() for r in smelt.backend.reports()) == 1


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=str)
def test_compiled_prod_accumulates_in_float(dtype):
    """As CUDA's prod (float accumulator); torch's CPU prod multiplies in
    the 16-bit type, rounding at every step."""
    x = exact_products(dtype, (16, 8))
    actual = torch.compile(lambda x: x.prod(1), backend="smelt")(x)
    assert_same(actual, x.float().prod(1).to(dtype))


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=str)
def test_frontend_sum_and_prod_accumulate_in_float(dtype):
    """fd.ops.sum / fd.ops.prod of a 16-bit tensor: float accumulation, the
    input's dtype out (as torch.sum)."""
    sums, prods = exact_sums(dtype, (32, 48)), exact_products(dtype, (32, 8))
    with FusionDefinition() as fd:
        a = fd.define_tensor([32, 48], dtype=to_data_type(dtype))
        b = fd.define_tensor([32, 8], dtype=to_data_type(dtype))
        fd.add_output(fd.ops.sum(a, [1]))
        fd.add_output(fd.ops.prod(b, [1]))
    total, product = fd.execute([sums, prods])
    assert_same(total, sums.sum(1))
    assert_same(product, prods.float().prod(1).to(dtype))


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=str)
@pytest.mark.parametrize("name,fn", [
    ("add", lambda x, y: torch.add(x, y, alpha=0.37)),
    ("sub", lambda x, y: torch.sub(x, y, alpha=0.37)),
    ("rsub", lambda x, y: torch.rsub(x, y, alpha=0.37)),
    ("add_scalar_other", lambda x, y: torch.add(x, 3, alpha=0.37)),
])
def test_alpha_scales_in_float(dtype, name, fn):
    """x + alpha * y in float with alpha a float, rounded once, as CUDA's
    add (torch's CPU add rounds alpha to the 16-bit type first): alpha * y
    rounded to 16 bits before the sum gave 134 of 4096 bfloat16 values off
    eager's by more than 2 ulps (up to 0.023 on results that cancel)."""
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(64, 64, generator=g) * 4).to(dtype)
    y = (torch.randn(64, 64, generator=g) * 4).to(dtype)
    actual = torch.compile(fn, backend="smelt")(x, y)
    expected = fn(x.float(), y.float()).to(dtype)
    assert actual.dtype == expected.dtype and actual.stride() == expected.stride()
    # One ulp: where the sum cancels, float's rounding of the product (or a
    # fused multiply-add, as CUDA's compiler makes of it) can tip the last bit.
    torch.testing.assert_close(actual, expected, rtol=torch.finfo(dtype).eps, atol=0)
    assert sum(r.smelt_kernels() for r in smelt.backend.reports()) == 1
