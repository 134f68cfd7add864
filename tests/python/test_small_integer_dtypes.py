"""int8, uint8 and int16 (quantized weights, masks, images) through ops,
casts, promotion and reductions, against torch: values wrap as torch's do,
and sums of small integers accumulate in int64."""
import pytest
import torch

import smelt
import smelt.backend
from smelt import DataType, FusionDefinition
from frontend_helpers import assert_matches

SMALL = [torch.int8, torch.uint8, torch.int16]


def values(dtype, *shape, seed=0):
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, shape, dtype=dtype,
                         generator=torch.Generator().manual_seed(seed))


def run(build, inputs):
    with FusionDefinition() as fd:
        args = [fd.from_pytorch(x) for x in inputs]
        outs = build(fd, *args)
        for out in outs if isinstance(outs, (list, tuple)) else [outs]:
            fd.add_output(out)
    return fd.execute(inputs)


@pytest.mark.parametrize("dtype", SMALL, ids=str)
def test_arithmetic_wraps_as_torch(dtype):
    a, b = values(dtype, 4, 33, seed=1), values(dtype, 4, 33, seed=2)
    got = run(lambda fd, a, b: [fd.ops.add(a, b), fd.ops.mul(a, b), fd.ops.sub(a, b), fd.ops.neg(a),
                                fd.ops.abs(a), fd.ops.maximum(a, b)], [a, b])
    assert_matches(got, [a + b, a * b, a - b, -a, torch.abs(a), torch.maximum(a, b)], "cpu")


@pytest.mark.parametrize("dtype", SMALL, ids=str)
def test_comparisons_where_and_casts(dtype):
    a, b = values(dtype, 5, 7, seed=3), values(dtype, 5, 7, seed=4)
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(5)) * 50
    got = run(lambda fd, a, b, x: [fd.ops.lt(a, b), fd.ops.where(fd.ops.gt(a, 3), a, b),
                                   fd.ops.cast(a, DataType.Float), fd.ops.cast(a, DataType.Int),
                                   fd.ops.cast(fd.ops.cast(x, DataType.Int32), dtype)], [a, b, x])
    assert_matches(got, [a < b, torch.where(a > 3, a, b), a.float(), a.long(), x.int().to(dtype)], "cpu")


def test_promotion_of_uint8_with_int8_is_int16():
    a, b = values(torch.uint8, 3, 5, seed=6), values(torch.int8, 3, 5, seed=7)
    got = run(lambda fd, a, b: fd.ops.add(a, b), [a, b])
    assert_matches(got, a + b, "cpu")
    assert got[0].dtype == torch.int16


@pytest.mark.parametrize("dtype", SMALL, ids=str)
def test_reductions(dtype):
    a = values(dtype, 6, 40, seed=8)
    got = run(lambda fd, a: [fd.ops.sum(a, [1], dtype=DataType.Int), fd.ops.max(a, [1])], [a])
    assert_matches(got, [a.sum(1), a.amax(1)], "cpu")


def test_compiled_int8_weights_and_uint8_mask():
    # A dequantized int8 weight, a uint8 mask, and torch.sum of int8 (in
    # int64, as smelt's sum of integers).
    def fn(w_q, scale, x, mask):
        w = w_q.to(torch.float32) * scale
        y = (x * w).masked_fill(mask.bool(), 0.0)
        return y, w_q.sum(1)

    w_q, mask = values(torch.int8, 8, 16, seed=9), values(torch.uint8, 8, 16, seed=10) % 2
    scale, x = torch.rand(8, 1) + 0.1, torch.randn(8, 16)
    smelt.backend.reset_reports()
    compiled = torch.compile(fn, backend="smelt", fullgraph=True)
    got = compiled(w_q, scale, x, mask)
    torch._dynamo.reset()
    assert_matches(list(got), list(fn(w_q, scale, x, mask)), "cpu")
    (report,) = smelt.backend.reports()
    assert report.torch_launches() == 0 and report.fallback_runs == 0, str(report)
