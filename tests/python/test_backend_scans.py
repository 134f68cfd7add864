"""The scans through torch.compile(backend="smelt") against eager: cumsum,
cumprod, logcumsumexp, cummax and cummin (values and indices) run in smelt's scan
kernels (fx/scans.py: one pass along the scanned dimension, not the masked
n x n reduction of before), in float32, float16, int64 and bool."""
import pytest
import torch

import smelt.backend


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def gen(seed):
    return torch.Generator().manual_seed(seed)


def scan_input(op, dtype, shape):
    """Values whose scans stay in range: products of numbers near 1, small
    integers, and a NaN in the floating rows cummax and cummin carry on."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen(1)) > 0.6
    if not dtype.is_floating_point:
        return torch.randint(-3, 4, shape, generator=gen(2)).to(dtype)
    x = torch.randn(shape, generator=gen(3))
    if op == "cumprod":
        x = 1 + 0.01 * x
    if op in ("cummax", "cummin"):
        x[0, shape[1] // 2] = float("nan")
    return x.to(dtype)


def compiled_like_eager(fn, x, rtol=None, atol=None):
    """fn compiled gives eager's values (NaN where eager's are), dtypes and
    strides, with nothing left in torch; the graph's report."""
    expected = fn(x)
    actual = torch.compile(fn, backend="smelt")(x)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    assert actual.dtype == expected.dtype and actual.stride() == expected.stride()
    report = smelt.backend.last_report()
    assert not report.unsupported_ops and report.fallback_runs == 0, str(report)
    return report


def scan_segments(report):
    """How many of the latest run's segments the scan scheduler took (a
    segment's line: its number, its scheduler, its parameters...)."""
    lines = "\n".join(p.last_run or "" for p in report.partitions).splitlines()
    return sum(line.split()[1:2] == ["scan"] for line in lines)


SCANS = {
    "cumsum": lambda x, d: torch.cumsum(x, d),
    "cumprod": lambda x, d: torch.cumprod(x, d),
    "logcumsumexp": lambda x, d: torch.logcumsumexp(x, d),
    "cummax": lambda x, d: torch.cummax(x, d).values,
    "cummin": lambda x, d: torch.cummin(x, d).values,
}


@pytest.mark.parametrize("dim", [1, 0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
@pytest.mark.parametrize("op", list(SCANS))
def test_scans_run_in_smelt_scan_kernels(op, dtype, dim):
    if op == "logcumsumexp" and not dtype.is_floating_point:
        pytest.skip("torch has no logcumsumexp of integers or bool")
    x = scan_input(op, dtype, (5, 300))
    # CPU eager sums float32 in double, the kernel in float: 300 terms differ
    # in the last bits.
    tolerance = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else {}
    report = compiled_like_eager(lambda x: SCANS[op](x, dim), x, **tolerance)
    assert scan_segments(report) >= 1, str(report)


def test_cumsum_with_a_dtype_casts_first():
    x = torch.randint(0, 100, (4, 50), generator=gen(4)).to(torch.int32)
    compiled_like_eager(lambda x: torch.cumsum(x, 1, dtype=torch.float64), x)
    compiled_like_eager(lambda x: torch.cumprod(x.to(torch.int8), 0, dtype=torch.int16), x)


def test_a_long_scan_runs_in_one_kernel_with_its_pointwise_neighbours():
    def fn(x):
        return torch.cumsum(torch.exp(x) * 0.5, dim=1).sigmoid()
    report = compiled_like_eager(fn, torch.randn(3, 4096, generator=gen(5)), rtol=1e-5, atol=1e-5)
    (part,) = report.partitions
    assert part.ops["cumsum.default"] == 1 and not any(op.startswith("sum") for op in part.ops), str(report)
    assert len(part.kernels) == 1, part.last_run


NAN = float("nan")


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
@pytest.mark.parametrize("x", [
    torch.tensor([[1., 3., 3., 2., 5., 5.], [NAN, 1., NAN, 5., 0., 7.], [0., -1., -1., 0., -0., 0.]]),
    torch.randint(-2, 3, (4, 9), generator=gen(6)),
    torch.rand(3, 5, generator=gen(7)) > 0.5,
], ids=["ties_nans_zeros", "int64", "bool"])
@pytest.mark.parametrize("dim", [1, 0])
def test_cummax_and_cummin_indices_are_torchs(op, x, dim):
    """The last position of the running extreme (ties take the later one);
    from a NaN on, the latest NaN's position. Two scans: values, then a
    running maximum of the positions that took over."""
    def fn(x):
        values, indices = op(x, dim)
        return values, indices
    expected = fn(x)
    actual = torch.compile(fn, backend="smelt")(x)
    torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
    assert torch.equal(actual[1], expected[1]), (actual[1], expected[1])
    assert actual[1].stride() == expected[1].stride()
    report = smelt.backend.last_report()
    assert not report.unsupported_ops and report.fallback_runs == 0, str(report)
    assert scan_segments(report) == 2, str(report)


def test_scan_of_a_0_dim_tensor_and_of_a_transposed_input():
    compiled_like_eager(lambda x: torch.cumsum(x, 0), torch.tensor(2.5))
    x = torch.tensor(-1.5)
    values, indices = torch.compile(lambda x: torch.cummin(x, 0), backend="smelt")(x)
    assert values.item() == -1.5 and indices.item() == 0 and indices.dtype == torch.int64
    assert indices.shape == torch.cummin(x, 0).indices.shape
    compiled_like_eager(lambda x: torch.cumsum(x.t(), 1), torch.randn(6, 4, generator=gen(7)))


@pytest.mark.parametrize("shape", [(1000, 3000), (2, 20000)], ids=["1000x3000", "2x20000"])
@pytest.mark.parametrize("op", ["cumsum", "cummax", "logcumsumexp"])
def test_long_rows_take_the_block_scan(op, shape):
    """Long rows, as many as SMs or too short to chunk: one block per row
    walks it in tiles (the scan scheduler's block scan) rather than one
    thread per row."""
    x = torch.randn(shape, generator=gen(8))
    tolerance = dict(rtol=1e-4, atol=1e-3) if op == "cumsum" else {}
    report = compiled_like_eager(lambda x: SCANS[op](x, -1), x, **tolerance)
    runs = "\n".join(p.last_run or "" for p in report.partitions)
    assert scan_segments(report) == 1 and "block_scan" in runs, runs


def block_scan_grids(report):
    """The blocks of each block scan kernel's launch in the latest run."""
    return [k.grid[0] * k.grid[1] * k.grid[2]
            for p in report.partitions for k in p.kernels if "smelt::blockScan<" in k.cuda]


@pytest.mark.parametrize("shape", [(1_000_000,), (2, 500_000)], ids=["1d_1000000", "2x500000"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "logcumsumexp"])
def test_few_long_rows_run_as_chunked_scans(op, shape):
    """Fewer rows than SMs (scheduler/chunked_scan.h): each row in chunks, a
    reduction of each chunk, the exclusive scan of those totals, then a block
    scan per chunk from its prefix, whose grid has a block per SM."""
    x = torch.randn(shape, generator=gen(8))
    if op == "cumprod":
        x = 1 + 1e-3 * x  # a product of 10^6 factors stays in range; a chunk's is off 1 by ~7%
    if op == "cummax":
        x[..., shape[-1] // 3] = NAN  # carried into every later chunk
    # float32 sums and products of 10^6 terms in another order than eager's
    # (which accumulates in double): float32 products near 1 drift by about
    # -6e-9 per factor in this tree order (numpy's float32 emulation of it
    # alike), 0.6% over the row, where one chunk's prefix lost would be 7%.
    tolerance = {"cumsum": dict(rtol=1e-4, atol=2e-2), "cumprod": dict(rtol=1.5e-2, atol=1e-5),
                 "logcumsumexp": dict(rtol=1e-5, atol=1e-4)}.get(op, {})
    report = compiled_like_eager(lambda x: SCANS[op](x, -1), x, **tolerance)
    runs = "\n".join(p.last_run or "" for p in report.partitions)
    assert scan_segments(report) == 2 and "block_scan" in runs, runs
    assert max(block_scan_grids(report)) >= 132, runs


def test_a_block_scan_of_a_transposed_input_keeps_eagers_strides():
    x = torch.randn(3000, 3, generator=gen(9))
    compiled_like_eager(lambda x: torch.cumsum(x.t(), 1), x, rtol=1e-4, atol=1e-3)
    compiled_like_eager(lambda x: torch.cumsum(x * 2, 0).t(), x, rtol=1e-4, atol=1e-3)
