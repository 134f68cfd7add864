"""slice, cat, iota and pad: the ops that place data (window ops) against
torch, through the FusionDefinition and through torch.compile, with values,
bits (-0.0, NaN), strides, kernel counts and the errors a user sees."""
import sys

import pytest
import torch

import smelt
import smelt.backend
from smelt import DataType, FusionDefinition, SmeltError
from frontend_helpers import assert_matches

END = sys.maxsize


def define(build, inputs):
    """Static extents: slice and cat cut and join constant extents."""
    with FusionDefinition() as fd:
        args = [fd.from_pytorch(x, static_sizes=True) for x in inputs]
        fd.add_output(build(fd, *args))
    return fd


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_of_inputs_along_each_dimension_is_one_kernel(dim):
    a, b, c = randn(2, 3, 4, seed=1), randn(2, 3, 4, seed=2), randn(2, 3, 4, seed=3)
    # different extents along the joined dimension
    b = torch.cat([b, b], dim)
    fd = define(lambda fd, a, b, c: fd.ops.cat([a, b, c], dim), [a, b, c])
    (out,) = fd.execute([a, b, c])
    expected = torch.cat([a, b, c], dim)
    assert_matches([out], expected, "cpu")
    assert out.stride() == expected.stride()
    assert len(fd.last_kernels()) == 1


def test_cat_selects_bits_negative_zero_and_nan_stay():
    a = torch.tensor([[-0.0, float("nan")], [1.0, -0.0]])
    b = torch.tensor([[float("-inf"), -0.0]])
    fd = define(lambda fd, a, b: fd.ops.cat([a, b], 0), [a, b])
    (out,) = fd.execute([a, b])
    expected = torch.cat([a, b], 0)
    assert torch.equal(out.view(torch.int32), expected.view(torch.int32))


def test_cat_with_a_size_one_operand_along_the_joined_dimension():
    a, b = randn(4, 1, 3, seed=4), randn(4, 5, 3, seed=5)
    fd = define(lambda fd, a, b: fd.ops.mul(fd.ops.cat([b, a], 1), 2.0), [a, b])
    assert_matches(fd.execute([a, b]), torch.cat([b, a], 1) * 2, "cpu")


def test_cat_of_computed_tensors_matches_torch():
    x, y = randn(3, 8, seed=6), randn(3, 2, seed=7)
    fd = define(lambda fd, x, y: fd.ops.add(
        fd.ops.cat([fd.ops.exp(x), fd.ops.neg(y), x], 1), 1.0), [x, y])
    assert_matches(fd.execute([x, y]), torch.cat([x.exp(), -y, x], 1) + 1, "cpu")
    # The computed inputs run at the cat's positions: no segment boundary.
    assert len(fd.last_kernels()) == 1


def test_rotate_half_as_llama_writes_it():
    # q * cos + rotate_half(q) * sin, rotate_half(q) = cat(-q[..., 4:], q[..., :4])
    q, cos, sin = randn(2, 3, 5, 8, seed=8), randn(5, 8, seed=9), randn(5, 8, seed=10)

    def build(fd, q, cos, sin):
        first = fd.ops.slice(q, [0, 0, 0, 0], [END, END, END, 4])
        second = fd.ops.slice(q, [0, 0, 0, 4], [END, END, END, END])
        rotated = fd.ops.cat([fd.ops.neg(second), first], -1)
        return fd.ops.add(fd.ops.mul(q, cos), fd.ops.mul(rotated, sin))

    fd = define(build, [q, cos, sin])
    rotated = torch.cat([-q[..., 4:], q[..., :4]], -1)
    assert_matches(fd.execute([q, cos, sin]), q * cos + rotated * sin, "cpu")
    assert len(fd.last_kernels()) == 1


def test_slice_of_a_reshape_read_beside_it_is_a_segment_boundary_not_a_refusal():
    # llama's q: view of a matmul output, sliced for rotate_half and read
    # whole beside it. A reshape cannot run at shifted positions, so the
    # slice reads it from memory: the scheduler declines the whole (before,
    # the whole was scheduled and its lowering refused, once per candidate).
    x = randn(16, 32, seed=20)

    def build(fd, x):
        q = fd.ops.permute(fd.ops.reshape(fd.ops.exp(x), [2, 8, 4, 8]), [0, 2, 1, 3])
        half = fd.ops.slice(q, [0, 0, 0, 4], [END, END, END, END])
        return fd.ops.add(fd.ops.mul(q, 2.0), fd.ops.cat([half, half], -1))

    fd = define(build, [x])
    q = x.exp().view(2, 8, 4, 8).permute(0, 2, 1, 3)
    assert_matches(fd.execute([x]), q * 2 + torch.cat([q[..., 4:], q[..., 4:]], -1), "cpu")
    assert "refused" not in fd.last_run_report(), fd.last_run_report()
    assert len(fd.last_kernels()) == 2


@pytest.mark.parametrize("starts,stops", [([1, 2], [3, END]), ([-2, 0], [END, -1]), ([0, 5], [4, 6])])
def test_slice_of_a_computed_tensor(starts, stops):
    x = randn(4, 6, seed=11)
    fd = define(lambda fd, x: fd.ops.mul(fd.ops.slice(fd.ops.exp(x), starts, stops), 3.0), [x])
    (out,) = fd.execute([x])
    index = tuple(slice(a, None if b == END else b) for a, b in zip(starts, stops))
    expected = x.exp()[index] * 3
    assert_matches([out], expected, "cpu")
    assert out.stride() == expected.contiguous().stride()
    assert len(fd.last_kernels()) == 1


def test_pad_of_a_size_one_dimension():
    x = randn(4, 1, seed=12)
    fd = define(lambda fd, x: fd.ops.pad(x, [1, 2], 7.0), [x])
    assert_matches(fd.execute([x]), torch.nn.functional.pad(x, [1, 2], value=7.0), "cpu")


@pytest.mark.parametrize("dtype", [DataType.Int, DataType.Int32, DataType.Float, DataType.Double])
def test_iota_matches_arange(dtype):
    torch_dtype = {DataType.Int: torch.int64, DataType.Int32: torch.int32,
                   DataType.Float: torch.float32, DataType.Double: torch.float64}[dtype]
    x = torch.zeros(6, dtype=torch_dtype)
    fd = define(lambda fd, x: fd.ops.add(x, fd.ops.iota(6, 3, -2, dtype)), [x])
    assert_matches(fd.execute([x]), torch.arange(3, -9, -2, dtype=torch_dtype), "cpu")


def test_window_op_errors_name_the_tensor_and_dimension():
    with FusionDefinition() as fd:
        a = fd.define_tensor([2, 3])
        b = fd.define_tensor([3, 3])
        with pytest.raises(SmeltError, match=r"cat: dimension 1 of T1 .*extent 3.*T0 has extent 3|"
                                             r"cat: dimension 0 of T0 \(extent 2\) does not match"):
            fd.ops.cat([a, b], 1)
        with pytest.raises(SmeltError, match="steps"):
            fd.ops.slice(a, [0, 0], [2, 3], [1, 2])
        s = fd.define_tensor([-1, 4])
        fd.add_output(fd.ops.cat([s, s], 1))


def test_cat_along_a_dimension_of_symbolic_neighbours():
    a, b = randn(3, 4, seed=13), randn(3, 2, seed=14)
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4], [True, True])
        y = fd.define_tensor([-1, 2], [True, True])
        fd.add_output(fd.ops.cat([x, y], 1))
    assert_matches(fd.execute([a, b]), torch.cat([a, b], 1), "cpu")
    a5, b5 = randn(5, 4, seed=15), randn(5, 2, seed=16)
    assert_matches(fd.execute([a5, b5]), torch.cat([a5, b5], 1), "cpu")


# ---- through torch.compile ----
def _compiled_report(fn, *args):
    smelt.backend.reset_reports()
    compiled = torch.compile(fn, backend="smelt", fullgraph=True)
    out = compiled(*args)
    torch._dynamo.reset()
    return out, smelt.backend.reports()


def test_compiled_slices_cat_narrow_select_and_arange_fuse():
    def fn(q, cos):
        half = q.shape[-1] // 2
        rotated = torch.cat([-q[..., half:], q[..., :half]], dim=-1)
        pos = torch.arange(q.shape[-2]).unsqueeze(-1).to(q.dtype)
        first_row = q.select(1, 0).unsqueeze(1)
        return q * cos + rotated + pos + q.narrow(2, 1, 3).sum(2, keepdim=True) + first_row

    q, cos = randn(2, 3, 6, 8, seed=17), randn(6, 8, seed=18)
    out, reports = _compiled_report(fn, q, cos)
    expected = fn(q, cos)
    assert_matches([out], expected, "cpu")
    assert out.stride() == expected.stride()
    (report,) = reports
    fused = report.fused_ops()  # narrow is traced as a slice
    assert (fused["cat.default"], fused["slice.Tensor"], fused["arange.default"],
            fused["select.int"]) == (1, 3, 1, 1), str(report)
    assert report.torch_launches() == 0 and report.fallback_runs == 0, str(report)
    # the sum over the narrowed range, then everything else
    assert report.smelt_kernels() == 2, report.partitions[0].last_run


def test_compiled_cat_with_an_empty_cache_entry_drops_it():
    empty = torch.zeros(2, 4, 0, 8)

    def fn(k):
        return torch.cat([empty, k.transpose(1, 2)], dim=-2) * 2

    k = randn(2, 5, 4, 8, seed=19)
    out, reports = _compiled_report(fn, k)
    expected = fn(k)
    assert_matches([out], expected, "cpu")
    assert out.stride() == expected.stride()
    (report,) = reports
    assert report.torch_launches() == 0, str(report)
    assert report.fused_ops()["cat.default"] == 1, str(report)


def test_a_slice_beside_its_source_through_a_shared_broadcast_input():
    # Fuzz seed 8000363: v4 = (x.sum(-1) + b - x.sum(-1))[1:] beside
    # v2 = x.sum(-1) + b. The recomputed slice and v2 both read the size-1 b,
    # whose broadcast joins their leading axes (3 and 4) in the dimension
    # map; the joint schedule is refused at lowering and segmentation splits
    # them (an extra kernel, values right).
    def fn(x0, x1):
        v1 = x0.sum(dim=(-1,))
        v2 = v1 + x1
        return (v2 - v1)[1:], v2

    x0, x1 = randn(4, 1, 2, 2, seed=21), randn(1, seed=22)
    out, reports = _compiled_report(fn, x0, x1)
    for a, e in zip(out, fn(x0, x1)):
        assert_matches([a], e, "cpu")
        assert a.stride() == e.stride()
    (report,) = reports
    assert report.fallback_runs == 0, str(report)


def test_window_ops_of_symbolic_extents_and_empty_slices_are_concretized_at_execute():
    # Issue 45: crops of run-time extents and empty results, as nvFuser's slice
    # and cat take them (concretized for the inputs of each run).
    with FusionDefinition() as fd:
        a = fd.define_tensor([2, 3])
        s = fd.define_tensor([-1, 4])
        fd.add_output(fd.ops.slice(a, [0, 2], [2, 2]))
        fd.add_output(fd.ops.slice(s, [1, 0], [END, END]))
        fd.add_output(fd.ops.cat([s, s], 0))
    A, S = torch.randn(2, 3), torch.randn(5, 4)
    empty, sliced, joined = fd.execute([A, S])
    assert empty.shape == (2, 0)
    torch.testing.assert_close(sliced, S[1:])
    torch.testing.assert_close(joined, torch.cat([S, S], 0))
