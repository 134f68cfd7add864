"""nvFuser's Python frontend call forms, in smelt's own API (issue 21): each
form with its expected result against torch. Written here, not copied."""
import pytest
import torch

from smelt import DataType, FusionDefinition, SmeltError


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_define_scalar_with_a_datatype_declares_a_scalar_input():
    # nvFuser: define_scalar(DataType.Double) is an input, never the constant 0/1.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.add(x, s))
    X = torch.randn(2, 3, generator=gen(0))
    torch.testing.assert_close(fd.execute([X, 2.5])[0], X + 2.5)
    assert len(fd.inputs) == 2
    with pytest.raises(SmeltError, match="2 inputs, 1 were given"):
        fd.execute([X])


def test_define_scalar_refuses_what_is_not_a_number():
    with pytest.raises(SmeltError, match="define_scalar: expected a Python number"):
        with FusionDefinition() as fd:
            fd.define_scalar("1.0")


def test_define_tensor_keyword_forms():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float, is_cpu=False)
        b = fd.define_tensor(sizes=[2, 3], strides=[3, 1], dtype=DataType.Float)
        c = fd.define_tensor(sizes=[2, 3], strides=[1, 2], dtype=DataType.Float,
                             static_sizes=True)
        fd.add_output(fd.ops.add(fd.ops.add(a, b), c))
    A, B = torch.randn(2, 3, generator=gen(1)), torch.randn(2, 3, generator=gen(2))
    C = torch.randn(3, 2, generator=gen(3)).t()  # strides (1, 2), as declared
    torch.testing.assert_close(fd.execute([A, B, C])[0], A + B + C)
    assert c.shape == [2, 3] and c.shape() == [2, 3]


def test_is_cpu_true_is_refused_clearly():
    with pytest.raises(SmeltError, match="is_cpu=True"):
        with FusionDefinition() as fd:
            fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)


def test_stride_order_input_reads_a_channels_last_tensor():
    with FusionDefinition() as fd:
        # NHWC in memory: C innermost (order 0), then W, H, N.
        x = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4,
                             dtype=DataType.Float, stride_order=[3, 0, 2, 1])
        fd.add_output(fd.ops.mul(fd.ops.relu(x), 2.0), stride_order=[3, 0, 2, 1])
    X = torch.randn(2, 3, 4, 5, generator=gen(4)).to(memory_format=torch.channels_last)
    out = fd.execute([X])[0]
    expected = torch.relu(X) * 2
    torch.testing.assert_close(out, expected)
    assert out.stride() == expected.stride()


def test_from_pytorch_keeps_a_dense_memory_order():
    X = torch.randn(3, 4, generator=gen(5)).t()  # [4, 3], column-major
    with FusionDefinition() as fd:
        x = fd.from_pytorch(X)
        fd.add_output(fd.ops.exp(x))
    torch.testing.assert_close(fd.execute([X])[0], torch.exp(X))
    # Another tensor of the same memory order reuses the kernel.
    Y = torch.randn(5, 4, generator=gen(6)).t()
    torch.testing.assert_close(fd.execute([Y])[0], torch.exp(Y))


def test_tensor_operators():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(-a + b * 2.0 - abs(b) / (a * a + 1.0))
        fd.add_output(1.0 - a ** 2.0)
        fd.add_output((a > b) | (a < 0.0))
    A, B = torch.randn(3, 4, generator=gen(7)), torch.randn(3, 4, generator=gen(8))
    out = fd.execute([A, B])
    torch.testing.assert_close(out[0], -A + B * 2.0 - B.abs() / (A * A + 1.0))
    torch.testing.assert_close(out[1], 1.0 - A ** 2.0)
    assert torch.equal(out[2], (A > B) | (A < 0.0))


@pytest.mark.parametrize("dims,correction,keepdim", [
    ([1], 1, False), ([0, 1], 0, True), ([2], 1, True), ([-1], 0, False)])
def test_var_mean_and_var(dims, correction, keepdim):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 3, 5], contiguity=[True] * 3, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, dims, correction, keepdim)
        fd.add_output(var)
        fd.add_output(mean)
        fd.add_output(fd.ops.var(x, dims, correction=correction, keepdim=keepdim))
    X = torch.randn(2, 3, 5, generator=gen(9))
    ev, em = torch.var_mean(X, dims, correction=correction, keepdim=keepdim)
    v, m, v2 = fd.execute([X])
    torch.testing.assert_close(v, ev)
    torch.testing.assert_close(m, em)
    torch.testing.assert_close(v2, ev)


def test_truediv_addcmul_reshape_new_shape_define_vector():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 6], contiguity=[True, True], dtype=DataType.Float)
        y = fd.define_tensor(shape=[2, 6], contiguity=[True, True], dtype=DataType.Float)
        q = fd.ops.truediv(x, 4)
        r = fd.ops.addcmul(q, x, y, value=0.5)
        fd.add_output(fd.ops.reshape(r, new_shape=fd.define_vector([3, 4])))
    X, Y = torch.randn(2, 6, generator=gen(10)), torch.randn(2, 6, generator=gen(11))
    torch.testing.assert_close(fd.execute([X, Y])[0],
                               torch.addcmul(X / 4, X, Y, value=0.5).reshape(3, 4))


def test_id_is_equal_for_equal_definitions_and_validate_checks():
    def build():
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            fd.add_output(fd.ops.sigmoid(x))
        return fd
    a, b = build(), build()
    assert a.id() == b.id()
    X = torch.randn(7, generator=gen(12))
    a.validate([X], [torch.sigmoid(X)])
    with pytest.raises(AssertionError, match="output 0"):
        a.validate([X], [torch.sigmoid(X) + 1])


def test_binary_ops_broadcast_lower_rank_tensors_implicitly():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        m = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool)
        fd.add_output(fd.ops.add(x, b))
        fd.add_output(fd.ops.where(m, x, b))
    X, B = torch.randn(2, 3, 4, generator=gen(13)), torch.randn(4, generator=gen(14))
    M = torch.rand(3, 4, generator=gen(15)) > 0.5
    added, chosen = fd.execute([X, B, M])
    torch.testing.assert_close(added, X + B)
    torch.testing.assert_close(chosen, torch.where(M, X, B))


# ---- issue 45: concretization of symbolic extents, the remaining call forms ----
# These mirror the call forms of nvFuser's public frontend tests (tests/python/
# direct/test_python_frontend.py): test_slice (define_vector(3) bounds, T.shape()
# ends), test_dynamic_reshape, test_reshape_dynamic, test_execute_with_tuple_and_list,
# test_tensor_ndim, test_output_stride_order(_with_reduction), test_pad_dynamic,
# test_cat, test_expand_to_zero, test_where_dtypes (its integer and float parts),
# test_cast_scalar, test_prod, test_returning_aliased_outputs (values, not storage
# aliasing), test_broadcast_in_dim_no_redundant_set (expand to t1.shape()),
# test_integer_division (zero divisors). Written here, not copied.

from smelt.fusion_cache import fusion_cache  # noqa: E402


def _same(out, ref):
    """Values, shape, dtype, and the dense row-major strides smelt's outputs
    have (torch's slice is a view; nvFuser's and smelt's outputs are dense)."""
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert out.stride() == torch.empty(ref.shape).stride()


X46 = torch.arange(24.0).reshape(4, 6)


@pytest.mark.parametrize("n", [3, -2, 6, 10, 0, -10])
def test_slice_end_from_a_scalar_input_normalizes_as_python(n):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        end = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.slice(t, [0, 0], [t.size(0), end]))
    _same(fd.execute([X46, n])[0], X46[:, :n])


def test_slice_bounds_from_vectors_and_shape_as_nvfuser_writes_them():
    x = torch.randn(2, 5, 10, generator=gen(40))
    offset = (0, 1, 2)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                             dtype=DataType.Float, stride_order=[2, 1, 0])
        fd.add_output(fd.ops.slice(t, start_indices=offset, end_indices=(2, 5, 10),
                                   strides=(1, 1, 1)))
        fd.add_output(fd.ops.slice(t, list(offset), t.shape()))
        start, end = fd.define_vector(3), fd.define_vector(3)
        fd.add_output(fd.ops.slice(t, start, end))
    for out in fd.execute([x, *offset, *x.shape]):
        _same(out, x[:, 1:, 2:])
    # the vectors may also come as lists
    _same(fd.execute([x, list(offset), tuple(x.shape)])[2], x[:, 1:, 2:])


def test_slice_of_symbolic_extents_with_constant_bounds_and_empty_results():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.slice(t, [1, -4], [3, -1]))
        fd.add_output(fd.ops.slice(t, [2, 0], [1, 6]))  # end before start: empty
    a, b = fd.execute([X46])
    _same(a, X46[1:3, -4:-1])
    assert b.shape == (0, 6) and b.dtype == torch.float32


def test_slice_manual_normalization_takes_bounds_as_given():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.slice(t, [0, s], [4, 5], manual_normalization=True))
    _same(fd.execute([X46, 2])[0], X46[:, 2:5])
    with pytest.raises(SmeltError, match=r"slice: dimension 1 of T0 \(extent 6\) takes \[-1, 5\)"):
        fd.execute([X46, -1])


def test_slice_errors_name_the_tensor_and_dimension():
    with pytest.raises(SmeltError, match="slice: tensor T0 has rank 2 but 1 starts"):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1, -1])
            fd.add_output(fd.ops.slice(t, [fd.define_scalar(DataType.Int)], [3]))
    with pytest.raises(SmeltError, match="slice: dimension 1's end .* is not an integer"):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1, -1])
            fd.add_output(fd.ops.slice(t, [0, 0], [3, fd.define_scalar(DataType.Bool)]))


def test_pad_widths_from_scalars_crop_and_grow():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        lo, hi = fd.define_scalar(DataType.Int), fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.pad(t, [lo, hi], 0.5))
    for lo_, hi_ in [(2, 1), (-1, 3), (-2, -4)]:
        _same(fd.execute([X46, lo_, hi_])[0],
              torch.nn.functional.pad(X46, [lo_, hi_], value=0.5))
    with pytest.raises(SmeltError, match=r"pad: dimension 1 of T0 \(extent 6\) with widths "
                                         r"\(-5, -3\) would have extent -2"):
        fd.execute([X46, -5, -3])


def test_cat_of_symbolic_pieces_and_empty_pieces():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        n = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.cat([a, fd.ops.slice(b, [0, 0], [b.size(0), n])], dim=-1))
    Y = torch.randn(4, 5, generator=gen(41))
    for n in [2, 5, 0]:
        _same(fd.execute([X46, Y, n])[0], torch.cat([X46, Y[:, :n]], -1))


def test_reshape_to_scalar_inputs_and_vector_inputs():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], [True, True])
        d1 = fd.define_scalar(dtype=DataType.Int32)
        d2 = fd.define_scalar(dtype=DataType.Int32)
        fd.add_output(fd.ops.reshape(x, [fd.ops.size(x, 0), d1, d2]))
    _same(fd.execute([X46, 2, 3])[0], X46.reshape(4, 2, 3))
    _same(fd.execute([X46, -1, 2])[0], X46.reshape(4, -1, 2))
    with pytest.raises(SmeltError, match=r"reshape: shape \[4, 5, 5\] is invalid for T0 of 24"):
        fd.execute([X46, 5, 5])

    with FusionDefinition() as fd:
        t = fd.from_pytorch(torch.empty(2, 3, 4))
        fd.add_output(fd.ops.sum(fd.ops.reshape(t, fd.define_vector(2, dtype=DataType.Int)),
                                 dims=[0]))
    X = torch.randn(2, 3, 4, generator=gen(42))
    torch.testing.assert_close(fd.execute([X, [6, 4]])[0], X.reshape(6, 4).sum(0))
    torch.testing.assert_close(fd.execute([X, (4, 6)])[0], X.reshape(4, 6).sum(0))


def test_reshape_split_of_a_symbolic_extent_to_constants():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t, [2, 12]))
    _same(fd.execute([X46])[0], X46.reshape(2, 12))


def test_full_and_iota_of_sizes_from_scalar_arithmetic():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        n = fd.ops.mul(t.size(0), 2)
        fd.add_output(fd.ops.full([n, 2], 1.5, DataType.Float))
        fd.add_output(fd.ops.iota(fd.ops.sub(t.size(0), 1), 0, 1, DataType.Int))
    a, b = fd.execute([torch.ones(3)])
    _same(a, torch.full((6, 2), 1.5))
    _same(b, torch.arange(2))


def test_kernels_are_cached_per_binding_class_not_per_scalar():
    fusion_cache().clear()
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        end = fd.define_scalar(DataType.Int)
        scale = fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.mul(fd.ops.slice(t, [0, 0], [t.size(0), end]), scale))
    _same(fd.execute([X46, 3, 2.0])[0], X46[:, :3] * 2.0)
    entries = fusion_cache().stats().entries
    _same(fd.execute([X46, 3, -1.0])[0], X46[:, :3] * -1.0)  # another scale: same kernel
    X8 = torch.arange(48.0).reshape(8, 6)
    _same(fd.execute([X8, 3, 1.0])[0], X8[:, :3])  # rows are not cropped: same kernel
    assert fusion_cache().stats().entries == entries
    _same(fd.execute([X46, 4, 1.0])[0], X46[:, :4])  # another extent: another kernel
    assert fusion_cache().stats().entries == entries + 1
    _same(fd.execute([X46, 10, 1.0])[0], X46[:, :10])  # clamps to 6: a new class
    _same(fd.execute([X46, 6, 1.0])[0], X46[:, :6])  # ... the same one as 6
    assert fusion_cache().stats().entries == entries + 2


def test_definition_with_run_time_extents_is_not_built_without_values():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.slice(t, [0, 0], [2, fd.define_scalar(DataType.Int)]))
    with pytest.raises(SmeltError, match="concretized by execute"):
        fd.build_fusion()


def test_fusion_definition_id_keyword():
    with FusionDefinition(id=7) as fd:
        t = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.add(t, 1.0))
    assert fd.id() == 7
    _same(fd.execute([torch.ones(3)])[0], torch.full((3,), 2.0))


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 0, 2], [2, 0, 1]])
def test_ops_stride_order_lays_out_the_output(order):
    x = torch.arange(24.0).reshape(2, 3, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.stride_order(fd.ops.add(t, fd.define_scalar(3.0)), order))
    out = fd.execute([x])[0]
    torch.testing.assert_close(out, x + 3.0)
    strides = out.stride()
    # dimension i has the order[i]-th smallest stride
    assert sorted(range(3), key=lambda d: strides[d]) == sorted(range(3), key=lambda d: order[d])
    with pytest.raises(SmeltError, match="stride_order .* must be a permutation of 0..2"):
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)
            fd.add_output(fd.ops.stride_order(t, [0, 0, 1]))


def test_expand_to_and_from_zero_size_dimensions():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.expand(t, [0, -1]))
        fd.add_output(fd.ops.expand(t, [4, -1]))  # size-1 axis declared as 1 in shape=
    one = torch.ones(1, 3)
    a, b = fd.execute([one])
    assert a.shape == (0, 3) and a.dtype == torch.float32
    torch.testing.assert_close(b, one.expand(4, 3))
    assert b.stride() == one.expand(4, 3).stride()  # (0, 1): a broadcast, as torch's
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, 1], dtype=DataType.Float)
        fd.add_output(fd.ops.expand(t, [-1, 5]))
    assert fd.execute([torch.ones(0, 1)])[0].shape == (0, 5)


def test_complex_scalars_are_refused_clearly():
    with pytest.raises(SmeltError, match=r"complex scalars \(\(1\+2j\)\) are not supported"):
        with FusionDefinition() as fd:
            fd.define_scalar(1 + 2j)


def test_integer_division_of_scalars_by_zero_gives_the_kernels_result():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        a, b = fd.define_scalar(7), fd.define_scalar(0)
        n = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.add(t, fd.ops.div(a, b)))           # folded now: -1
        fd.add_output(fd.ops.add(t, fd.ops.div(a, n)))           # at run time: -1
        fd.add_output(fd.ops.add(t, fd.ops.remainder(a, n)))     # 0
        fd.add_output(fd.ops.div(t, n))                          # in the kernel: -1
    zeros = torch.zeros(2, dtype=torch.long)
    outs = fd.execute([zeros, 0])
    for out, v in zip(outs, [-1, -1, 0, -1]):
        _same(out, torch.full((2,), v, dtype=torch.long))


def test_where_of_typed_scalars_keeps_their_dtype():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=DataType.Bool)
        fd.add_output(fd.ops.where(t, fd.define_scalar(3, DataType.Int32),
                                   fd.define_scalar(5, DataType.Int32)))
        fd.add_output(fd.ops.where(t, fd.define_scalar(3), fd.define_scalar(5)))
        fd.add_output(fd.ops.where(t, fd.define_scalar(3.0, DataType.Float),
                                   fd.define_scalar(5.0, DataType.Float)))
    c = torch.tensor([True, False])
    i32, i64, f32 = fd.execute([c])
    _same(i32, torch.tensor([3, 5], dtype=torch.int32))
    _same(i64, torch.tensor([3, 5]))
    _same(f32, torch.tensor([3.0, 5.0]))


def test_reduction_dtype_keeps_int32_and_may_take_the_dims_place():
    # nvFuser's test_cast_scalar and test_prod forms
    ones = torch.ones(2, 4, 8, dtype=torch.int32)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(ones), fd.from_pytorch(ones)
        c1 = fd.ops.cast(fd.define_scalar(3.0), DataType.Int32)
        fd.add_output(fd.ops.sum(fd.ops.mul(fd.ops.add(t0, t1), c1), [-1], False, DataType.Int32))
        fd.add_output(fd.ops.prod(t0, DataType.Float))
        fd.add_output(fd.ops.max(t0, dims=[1], keepdim=False, dtype=DataType.Null))
    s, p, m = fd.execute([ones, ones])
    _same(s, torch.sum((ones + ones) * 3, dim=-1, dtype=torch.int32))
    _same(p, torch.prod(ones, dtype=torch.float32))
    _same(m, ones.amax(1))


def test_reshape_to_a_shape_computed_from_scalars_as_nvfuser_prints_it():
    # nvFuser's test_reshape_dynamic: the -1 inferred by scalar arithmetic that
    # goes through a float reciprocal (a float extent is truncated, as nvFuser does).
    x = torch.randn(192).as_strided((4, 8, 6), (48, 6, 1))
    with FusionDefinition() as fd:
        s0 = fd.define_scalar(None, dtype=DataType.Int)
        t1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                              dtype=DataType.Float, stride_order=[2, 1, 0])
        s3 = fd.ops.mul(fd.define_scalar(1, dtype=DataType.Int), s0)
        s15 = fd.ops.mul(fd.define_scalar(192, dtype=DataType.Int), fd.ops.reciprocal(s3))
        t19 = fd.ops.reshape(t1, new_shape=[s0, s15])
        fd.add_output(fd.ops.sum(t19, dims=[1], keepdim=False, dtype=DataType.Null))
    torch.testing.assert_close(fd.execute([32, x])[0], x.reshape(32, 6).sum(1))


def test_expand_to_another_tensors_run_time_shape_is_checked_at_execute():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        fd.add_output(fd.ops.add(fd.ops.expand(t0, t1.shape()), t1))
    a, b = torch.randn(1, 5, generator=gen(43)), torch.randn(3, 5, generator=gen(44))
    _same(fd.execute([a, b])[0], a + b)
    with pytest.raises(SmeltError, match=r"expand: dimension 1 of T0 has extent 4 and is not a "
                                         r"broadcast, so it cannot expand to 5"):
        fd.execute([torch.randn(1, 4), b])


def test_broadcast_in_dim_to_empty_extents():
    # nvFuser's test_expand_to_zero
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(torch.zeros(1, 0))
        t1 = fd.from_pytorch(torch.zeros(1, 1))
        fd.add_output(fd.ops.broadcast_in_dim(t0, shape=[0, 0], broadcast_dims=[0, 1]))
        fd.add_output(fd.ops.broadcast_in_dim(t1, shape=[0, 0], broadcast_dims=[0, 1]))
    a, b = fd.execute([torch.zeros(1, 0), torch.zeros(1, 1)])
    assert a.shape == (0, 0) and b.shape == (0, 0)


def test_add_output_alias_input_positionally_and_an_output_twice():
    # nvFuser's test_returning_aliased_outputs: add_output(out, alias_input)
    x = torch.randn(2, 3, generator=gen(45))
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        t4 = fd.ops.where(fd.ops.gt(t0, 0.0), t0, 0.0)
        fd.add_output(t4)
        fd.add_output(t4, t0)
        fd.add_output(t4)
    inp = x.clone()
    outs = fd.execute([inp])
    assert len(outs) == 2
    for out in outs:
        _same(out, x.relu())
    _same(inp, x.relu())  # written in place
