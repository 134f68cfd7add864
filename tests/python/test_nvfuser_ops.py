"""The ops and forms issue 21 added for nvFuser's frontend, against torch:
prod, welford, signbit, bitwise ops, uniform/normal, arithmetic on scalars
alone (host scalars), fd.ops.size as a number, pad with a scalar input, an
input returned as an output, alias_input, static zero extents. CPU tensors
run in the simulator; meta tensors compile each kernel with NVRTC."""
import math

import pytest
import torch

from smelt import DataType, FusionDefinition, SmeltError


def gen(seed):
    return torch.Generator().manual_seed(seed)


def meta_like(*tensors):
    return [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in tensors]


# ---- prod ----
def test_prod_float_rows_and_columns():
    x = 1 + 0.01 * torch.randn(6, 1500, generator=gen(0))
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.prod(t, 1))
        fd.add_output(fd.ops.prod(t, 0, keepdim=True))
    rows, cols = fd.execute([x])
    torch.testing.assert_close(rows, x.prod(1), rtol=1e-5, atol=0)
    torch.testing.assert_close(cols, x.prod(0, keepdim=True), rtol=1e-5, atol=0)
    fd.execute(meta_like(x))  # NVRTC compiles the block-reduction kernels with smelt::Prod


def test_prod_of_integers_is_int64_and_exact():
    x = torch.ones(4, 3000, dtype=torch.int32)
    x[:, ::300] = -3  # (-3)^10 per row, past float's 24 bits
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], dtype=DataType.Int32)
        fd.add_output(fd.ops.prod(t, [1]))
    out = fd.execute([x])[0]
    assert out.dtype == torch.int64
    torch.testing.assert_close(out, x.prod(1))


def test_large_int64_sums_are_exact_through_block_reductions():
    # Regression: block reductions combined integers in float (a sum of
    # 4096 values near 1.2e8 came out rounded by hundreds).
    x = torch.randint(0, 10**6, (4, 8192), generator=gen(1)) + 123456789
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], dtype=DataType.Int)
        fd.add_output(fd.ops.sum(t, [1]))
        fd.add_output(fd.ops.max(t, [1]))
    total, largest = fd.execute([x])
    assert torch.equal(total, x.sum(1)) and torch.equal(largest, x.amax(1))


# ---- welford and var_mean ----
@pytest.mark.parametrize("symbolic", [False, True])
def test_welford_matches_torch(symbolic):
    x = torch.randn(5, 700, generator=gen(2)) * 3 + 1
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1] if symbolic else [5, 700])
        avg, var_sum, n = fd.ops.welford(t, [1])
        fd.add_output(avg)
        fd.add_output(var_sum)
        fd.add_output(n)
    avg, var_sum, n = fd.execute([x])
    var, mean = torch.var_mean(x, 1, correction=0)
    torch.testing.assert_close(avg, mean)
    torch.testing.assert_close(var_sum, var * 700, rtol=1e-5, atol=1e-3)
    assert n.dtype == torch.int64 and torch.equal(n, torch.full((5,), 700))


def test_var_mean_with_symbolic_extents():
    x = torch.randn(3, 4, 50, generator=gen(3))
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1, -1])
        var, mean = fd.ops.var_mean(t, [1, 2], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    var, mean = fd.execute([x])
    ref_var, ref_mean = torch.var_mean(x, [1, 2], correction=1)
    torch.testing.assert_close(var, ref_var)
    torch.testing.assert_close(mean, ref_mean)
    # the count follows the run's sizes
    y = torch.randn(2, 7, 9, generator=gen(4))
    var, mean = fd.execute([y])
    torch.testing.assert_close(var, torch.var(y, [1, 2]))


# ---- elementwise ----
def test_signbit():
    x = torch.tensor([-1.5, -0.0, 0.0, 2.0, float("nan"), -float("nan"), -float("inf")])
    i = torch.tensor([-3, 0, 5, -1, 7, 0, 2], dtype=torch.int32)
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1])
        b = fd.define_tensor([-1], dtype=DataType.Int32)
        fd.add_output(fd.ops.signbit(a))
        fd.add_output(fd.ops.signbit(b))
    sa, sb = fd.execute([x, i])
    assert sa.dtype == torch.bool
    assert torch.equal(sa, torch.signbit(x)) and torch.equal(sb, torch.signbit(i))
    fd.execute(meta_like(x, i))


@pytest.mark.parametrize("dtype,torch_dtype", [(DataType.Int, torch.int64),
                                               (DataType.Int32, torch.int32)])
def test_bitwise_ops_and_operators(dtype, torch_dtype):
    a = torch.randint(-2**30, 2**30, (64,), generator=gen(5)).to(torch_dtype)
    b = torch.randint(-2**30, 2**30, (64,), generator=gen(6)).to(torch_dtype)
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], dtype=dtype)
        y = fd.define_tensor([-1], dtype=dtype)
        fd.add_output(fd.ops.bitwise_and(x, y))
        fd.add_output(fd.ops.bitwise_or(x, y))
        fd.add_output(fd.ops.bitwise_xor(x, y))
        fd.add_output(fd.ops.bitwise_not(x))
        fd.add_output((x & y) ^ ~(x | 12))
    outs = fd.execute([a, b])
    refs = [a & b, a | b, a ^ b, ~a, (a & b) ^ ~(a | 12)]
    for out, ref in zip(outs, refs):
        assert out.dtype == ref.dtype and torch.equal(out, ref)
    fd.execute(meta_like(a, b))


def test_bitwise_ops_on_bool_are_logical_and_floats_are_refused():
    p = torch.tensor([True, True, False, False])
    q = torch.tensor([True, False, True, False])
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], dtype=DataType.Bool)
        y = fd.define_tensor([-1], dtype=DataType.Bool)
        fd.add_output(x & y)
        fd.add_output(x | y)
        fd.add_output(x ^ y)
        fd.add_output(~x)
    for out, ref in zip(fd.execute([p, q]), [p & q, p | q, p ^ q, ~p]):
        assert torch.equal(out, ref)
    with pytest.raises(SmeltError, match="bitwise ops need integer or bool"):
        with FusionDefinition() as fd:
            f = fd.define_tensor([-1])
            fd.add_output(fd.ops.bitwise_and(f, f))


# ---- random numbers ----
def _uniform(shape, seed, offset, dtype=DataType.Float, low=-2.0, high=3.0):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.uniform(low, high, shape, rng_seed=seed, rng_offset=offset,
                                     dtype=dtype))
    return fd


def test_uniform_is_a_function_of_seed_offset_and_position():
    a = _uniform([64, 512], 7, 0).execute([])[0]
    assert a.shape == (64, 512) and a.dtype == torch.float32
    assert torch.equal(a, _uniform([64, 512], 7, 0).execute([])[0])
    assert (a >= -2).all() and (a < 3).all()
    assert abs(a.mean().item() - 0.5) < 0.05 and abs(a.var().item() - 25 / 12) < 0.1
    other_seed = _uniform([64, 512], 8, 0).execute([])[0]
    assert (other_seed != a).float().mean() > 0.99
    # element i draws counter offset + i: an offset shifts the row-major stream
    shifted = _uniform([64 * 512 - 100], 7, 100).execute([])[0]
    assert torch.equal(shifted, a.flatten()[100:])


def test_uniform_double_and_half():
    d = _uniform([4096], 3, 0, DataType.Double, 0.0, 1.0).execute([])[0]
    f = _uniform([4096], 3, 0, DataType.Float, 0.0, 1.0).execute([])[0]
    h = _uniform([4096], 3, 0, DataType.Half, 0.0, 1.0).execute([])[0]
    assert d.dtype == torch.float64 and h.dtype == torch.float16
    # the float draw is the double draw's top 24 bits
    assert (d - f.double()).abs().max() < 2**-24
    torch.testing.assert_close(h, f.half())
    fd = _uniform([8, 1000], 3, 0)
    fd.execute([])  # the simulator's draw
    with FusionDefinition() as compiled:
        x = compiled.define_tensor([-1, -1])
        compiled.add_output(fd_add := compiled.ops.add(
            x, compiled.ops.uniform(0.0, 1.0, [x.size(0), x.size(1)], rng_seed=3)))
    compiled.execute(meta_like(torch.empty(8, 1000)))  # NVRTC compiles randomUniform
    out = compiled.execute([torch.zeros(8, 1000)])[0]
    assert torch.equal(out, _uniform([8, 1000], 3, 0, low=0.0, high=1.0).execute([])[0])


def test_uniform_without_a_seed_follows_torch_manual_seed():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        fd.add_output(fd.ops.add(x, fd.ops.uniform(0.0, 1.0, [x.size(0)])))
    assert len(fd.inputs) == 1  # the seed is drawn by execute, not passed
    z = torch.zeros(256)
    torch.manual_seed(11)
    first, second = fd.execute([z])[0], fd.execute([z])[0]
    torch.manual_seed(11)
    again = fd.execute([z])[0]
    assert not torch.equal(first, second) and torch.equal(first, again)


def test_normal_statistics():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.normal(1.5, 2.0, [256, 256], rng_seed=5, rng_offset=0))
    z = fd.execute([])[0]
    assert z.dtype == torch.float32 and torch.isfinite(z).all()
    assert abs(z.mean().item() - 1.5) < 0.03 and abs(z.std().item() - 2.0) < 0.03
    # within one sigma about 68.3%
    inside = ((z - 1.5).abs() < 2.0).float().mean().item()
    assert abs(inside - 0.6827) < 0.01


def test_random_ops_refuse_bad_arguments():
    with pytest.raises(SmeltError, match="seed and the offset must be integers"):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.uniform(0.0, 1.0, [4], rng_seed=1.5, rng_offset=0))
    with pytest.raises(SmeltError, match="draws a floating type"):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.uniform(0, 1, [4], rng_seed=1, dtype=DataType.Int))


# ---- scalars alone, sizes as numbers ----
def test_arithmetic_on_scalar_inputs_is_computed_per_run():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        a = fd.define_scalar(DataType.Double)
        b = fd.define_scalar(DataType.Int)
        scale = fd.ops.mul(a, fd.ops.add(b, 1))  # (a * (b + 1)) on the host
        fd.add_output(fd.ops.mul(x, scale))
        fd.add_output(fd.ops.add(x, fd.ops.div(b, -2)))  # nvFuser's div truncates integers
        fd.add_output(fd.ops.add(x, fd.ops.cast(a, DataType.Int)))
    assert len(fd.inputs) == 3
    X = torch.randn(2, 3, generator=gen(7))
    for av, bv in [(1.5, 3), (-2.25, 7)]:
        scaled, shifted, cast = fd.execute([X, av, bv])
        torch.testing.assert_close(scaled, X * (av * (bv + 1)))
        torch.testing.assert_close(shifted, X + math.trunc(bv / -2))
        torch.testing.assert_close(cast, X + int(av))


def test_arithmetic_on_constants_is_folded():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        s = fd.ops.sub(fd.ops.mul(fd.define_scalar(3), 4), 2.5)
        assert s.is_constant  # folded: no input added
        fd.add_output(fd.ops.add(x, s))
    assert len(fd.inputs) == 1
    X = torch.randn(5, generator=gen(8))
    torch.testing.assert_close(fd.execute([X])[0], X + 9.5)


def test_size_as_a_number():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        n = fd.ops.size(x, 1)
        fd.add_output(fd.ops.div(fd.ops.sum(x, [1]), n))  # a mean over the run's extent
        fd.add_output(fd.ops.full([x.size(0), n], n, DataType.Int))
    for shape in [(3, 10), (2, 33)]:
        X = torch.randn(*shape, generator=gen(9))
        mean, filled = fd.execute([X])
        torch.testing.assert_close(mean, X.mean(1))
        assert torch.equal(filled, torch.full(shape, shape[1]))


# ---- pad, outputs, aliases, empty ----
def test_pad_with_a_scalar_input():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Int32)
        s = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.pad(x, [1, 2, 0, 1], s))
    X = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    out = fd.execute([X, -7])[0]
    assert out.dtype == torch.int32
    assert torch.equal(out, torch.nn.functional.pad(X, [1, 2, 0, 1], value=-7))


def test_an_input_as_an_output_is_a_copy():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        fd.add_output(x)
        fd.add_output(fd.ops.neg(x))
    X = torch.randn(4, generator=gen(10))
    same, neg = fd.execute([X])
    assert torch.equal(same, X) and same.data_ptr() != X.data_ptr()
    torch.testing.assert_close(neg, -X)


def test_alias_input_updates_the_input_in_place():
    # batch norm's running mean update, as nvFuser fusions write it
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        running = fd.define_tensor([-1])
        mean = fd.ops.div(fd.ops.sum(x, [0]), fd.ops.size(x, 0))
        updated = fd.ops.add(fd.ops.mul(running, 0.9), fd.ops.mul(mean, 0.1))
        fd.add_output(updated, alias_input=running)
        fd.add_output(mean)
    X = torch.randn(8, 5, generator=gen(11))
    R = torch.randn(5, generator=gen(12))
    expected = R * 0.9 + X.mean(0) * 0.1
    outs = fd.execute([X, R])
    assert len(outs) == 1  # the aliased output is not returned
    torch.testing.assert_close(outs[0], X.mean(0))
    torch.testing.assert_close(R, expected)
    with pytest.raises(SmeltError, match="alias_input must be a tensor input"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1])
            fd.add_output(fd.ops.neg(x), alias_input=fd.ops.abs(x))


def test_static_zero_extent():
    with FusionDefinition() as fd:
        x = fd.define_tensor([0, 3])
        fd.add_output(fd.ops.sum(x, [0]))
        fd.add_output(fd.ops.relu(x))
    total, relu = fd.execute([torch.randn(0, 3)])
    assert torch.equal(total, torch.zeros(3)) and relu.shape == (0, 3)
    with pytest.raises(SmeltError, match="dimension 0 was defined with extent 0 but has 2"):
        fd.execute([torch.randn(2, 3)])


def test_scalar_inputs_as_shape_entries():
    # nvFuser's tests size full/expand/broadcast_in_dim with defined scalars.
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 1])
        n = fd.define_scalar(DataType.Int)
        fill = fd.ops.full([fd.ops.size(x, 0), n], 2.0, DataType.Float)
        wide = fd.ops.expand(x, [fd.ops.size(x, 0), n])
        fd.add_output(fd.ops.add(wide, fill))
    X = torch.randn(3, 1, generator=gen(21))
    for cols in (4, 7):
        (out,) = fd.execute([X, cols])
        assert out.shape == (3, cols)
        torch.testing.assert_close(out, X.expand(3, cols) + 2.0)
    # A reshape into a free scalar is concretized for each run (issue 45).
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        s = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.reshape(x, [s, -1]))
    X = torch.randn(4, 6, generator=gen(22))
    torch.testing.assert_close(fd.execute([X, 8])[0], X.reshape(8, -1))
    with pytest.raises(SmeltError, match=r"reshape: shape \[5, -1\] is invalid for T0 of 24"):
        fd.execute([X, 5])


def test_dtype_conversion_takes_python_scalar_types():
    from smelt.dtypes import to_data_type, torch_dtype_to_nvfuser_dtype
    assert torch_dtype_to_nvfuser_dtype is to_data_type
    assert [to_data_type(t) for t in (float, int, bool, torch.float16)] == [
        DataType.Double, DataType.Int, DataType.Bool, DataType.Half]
    with pytest.raises(SmeltError, match="expected a smelt DataType"):
        to_data_type(complex)


# ---- segmentation entry point ----
def test_segment_returns_runnable_segment_definitions():
    from smelt.segmentation import value_name
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        w = fd.define_tensor([-1])
        scaled = fd.ops.mul(x, fd.ops.broadcast_in_dim(w, [x.size(0), x.size(1)], [1]))
        colsum = fd.ops.sum(scaled, [0])
        z = fd.ops.add(fd.ops.exp(x), fd.ops.broadcast_in_dim(colsum, [x.size(0), x.size(1)], [1]))
        fd.add_output(z)
        fd.add_output(fd.ops.max(z, [1]))
    X, W = torch.randn(6, 5, generator=gen(31)), torch.randn(5, generator=gen(32))
    segments = fd.segment([X, W])
    assert [s.scheduler for s in segments] == ["persistent", "reduction"]
    assert segments[1].input_names == segments[0].output_names
    # Chained by their names, the segments compute what the whole fusion does.
    values = {value_name(v.ir): a for v, a in zip(fd.inputs, [X, W])}
    for s in segments:
        values.update(zip(s.output_names, s.execute([values[n] for n in s.input_names])))
    z_ref = X.exp() + (X * W).sum(0)
    torch.testing.assert_close(values[value_name(fd.outputs[0].ir)], z_ref)
    torch.testing.assert_close(values[value_name(fd.outputs[1].ir)], z_ref.amax(1))
    for got, whole in zip([values[value_name(o.ir)] for o in fd.outputs], fd.execute([X, W])):
        assert torch.equal(got, whole)
    # One kernel: no segments (nvFuser's convention).
    with FusionDefinition() as one:
        a = one.define_tensor([-1, -1])
        one.add_output(one.ops.sum(one.ops.exp(a), [1]))
    assert one.segment([X]) == []
    with pytest.raises(SmeltError, match="cannot be extended"):
        with segments[0]:
            pass
