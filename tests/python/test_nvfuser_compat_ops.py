"""nvFuser's index, scan and bit ops and its layout helpers in smelt's
frontend (issue 45), in nvFuser's spelling: values, dtypes and strides
against torch. They mirror the public nvFuser direct-API tests
test_select, test_index_select_scalar_indices, test_take_along_axis,
test_gather, test_embedding, test_cumsum/cumprod/cummin/cummax, test_triu,
test_segment_set, test_nextafter, test_right_shift_logical(_sizeof_dtype),
test_inplace_update_on_non_contiguous_inputs,
test_broadcast_in_dim_no_redundant_set, test_compute_tensor_descriptor,
test_scatter_output_intermediate and test_scatter_scalar_src.
Written here, not copied."""
import math

import pytest
import torch

from smelt import DataType, FusionDefinition, SmeltError, compute_tensor_descriptor


def gen(seed):
    return torch.Generator().manual_seed(seed)


def run(define, inputs):
    with FusionDefinition() as fd:
        define(fd)
    return fd.execute(inputs), fd


def same(out, ref, exact=True):
    """Values, shape and dtype as torch's, with dense row-major strides."""
    if exact:
        torch.testing.assert_close(out, ref, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(out, ref, equal_nan=True)
    assert out.stride() == torch.empty(ref.shape).stride()


X = torch.randn(5, 7, generator=gen(0))


# ---- indexing ----
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index", [2, -1, 0])
def test_select_with_a_scalar_input_and_a_constant(dim, index):
    def define(fd):
        x = fd.from_pytorch(X)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.select(x, s, dim))
        fd.add_output(fd.ops.select(x, index, dim))
    (a, b), _ = run(define, [X, index])
    same(a, torch.select(X, dim, index))
    same(b, torch.select(X, dim, index))


def test_select_errors_name_the_tensor_and_dimension():
    with pytest.raises(SmeltError, match=r"select: index 7 is out of range for dimension 1 of T0"):
        with FusionDefinition() as fd:
            fd.ops.select(fd.define_tensor(shape=[5, 7]), 7, 1)
    with pytest.raises(SmeltError, match="select: the index into T0 must be an int"):
        with FusionDefinition() as fd:
            fd.ops.select(fd.define_tensor(shape=[5, 7]), 1.5, 1)


@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_with_a_0_dim_index_keeps_the_dimension(dim):
    index = torch.tensor(3)

    def define(fd):
        fd.add_output(fd.ops.index_select(fd.from_pytorch(X), fd.from_pytorch(index), dim))
    (out,), _ = run(define, [X, index])
    same(out, torch.index_select(X, dim, index))


@pytest.mark.parametrize("op", ["gather", "take_along_axis"])
@pytest.mark.parametrize("dim", [0, 1])
def test_gather_and_take_along_axis(op, dim):
    table = torch.randn(6, 9, generator=gen(1))
    full_index = torch.randint(0, 5, (6, 9), generator=gen(3))

    def define(fd):
        t, i = fd.from_pytorch(table), fd.from_pytorch(full_index)
        fd.add_output(getattr(fd.ops, op)(fd.ops.mul(t, 2.0), i, dim))
    (out,), fd = run(define, [table, full_index])
    same(out, torch.gather(table * 2, dim, full_index))
    if op == "gather":  # the same definition with an index smaller than the table
        index = torch.randint(0, 5, (3, 4), generator=gen(2))
        same(fd.execute([table, index])[0], torch.gather(table * 2, dim, index))


def test_gather_with_a_larger_index_is_an_error():
    with pytest.raises(SmeltError, match="gather: index T1 has extent 8 in dimension 1, larger "
                                         "than 4 of T0"):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[3, 4])
            fd.ops.gather(t, fd.define_tensor(shape=[2, 8], dtype=DataType.Int), 0)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.gather(t, fd.define_tensor(shape=[-1, -1], dtype=DataType.Int), 0))
    with pytest.raises(SmeltError, match="dimension 1"):
        fd.execute([torch.randn(3, 4), torch.zeros(2, 8, dtype=torch.long)])


def topk_rows(x, k):
    return torch.topk(x, k, dim=0)[1]  # distinct rows per column: no duplicate writes


# Mirrors nvFuser's test_scatter_output_intermediate: a consumer of the
# scatter (its own kernel after the scatter's).
def test_scatter_output_feeds_a_consumer():
    x = torch.randn(16, 6, generator=gen(40))
    index, src = topk_rows(x, 5), torch.randn(5, 6, generator=gen(41))

    def define(fd):
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        t2 = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.sigmoid(fd.ops.scatter(t0, t1, t2, 0)))
    (out,), fd = run(define, [x, index, src])
    same(out, torch.sigmoid(torch.scatter(x, 0, index, src)), exact=False)
    assert [s.split()[1] for s in fd.last_run_report().splitlines() if s.split()[:1] == ["0"]] == ["scatter"]


# Mirrors nvFuser's test_scatter_scalar_src: a scalar input as src.
def test_scatter_scalar_src():
    x = torch.randn(16, 6, generator=gen(42))
    index = topk_rows(x, 4)

    def define(fd):
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        fd.add_output(fd.ops.scatter(t0, t1, fd.define_scalar(None, dtype=DataType.Double), 0))
    (out,), _ = run(define, [x, index, 1.5])
    same(out, torch.scatter(x, 0, index, 1.5))


@pytest.mark.parametrize("reduce,torch_reduce", [("add", "sum"), ("prod", "prod"), ("amax", "amax"),
                                                 ("amin", "amin")])
def test_scatter_reduce_combines_duplicates(reduce, torch_reduce):
    x = torch.randn(4, 6, generator=gen(43))
    index = torch.randint(0, 4, (7, 6), generator=gen(44))
    src = torch.randn(7, 6, generator=gen(45))

    def define(fd):
        t0, t1, t2 = fd.from_pytorch(x), fd.from_pytorch(index), fd.from_pytorch(src)
        fd.add_output(fd.ops.scatter(t0, t1, fd.ops.mul(t2, 2.0), 0, reduce=reduce))
    (out,), _ = run(define, [x, index, src])
    same(out, torch.scatter_reduce(x, 0, index, src * 2, torch_reduce), exact=False)


def test_scatter_errors_name_the_tensor_and_index():
    with pytest.raises(SmeltError, match="scatter: index T1 has rank 1 but T0 has rank 2"):
        with FusionDefinition() as fd:
            fd.ops.scatter(fd.define_tensor(shape=[3, 4]),
                           fd.define_tensor(shape=[2], dtype=DataType.Int), 1.0, 0)
    with pytest.raises(SmeltError, match="scatter: unknown reduce 'mean'"):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[3, 4])
            fd.ops.scatter(t, fd.define_tensor(shape=[3, 4], dtype=DataType.Int), t, 0, reduce="mean")
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.scatter(t, fd.define_tensor(shape=[-1, -1], dtype=DataType.Int), 1.0, 1))
    with pytest.raises(SmeltError, match="scatter: index 4 is out of bounds for dimension 1 with size 4"):
        fd.execute([torch.randn(3, 4), torch.tensor([[0], [4], [1]])])
    with pytest.raises(SmeltError, match="dimension 0 of index T1 has extent 4 but dimension 0 of T0 "
                                         "has extent 3"):
        fd.execute([torch.randn(3, 4), torch.zeros(4, 1, dtype=torch.long)])


def test_take_along_axis_of_a_run_time_mismatch_is_an_error():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.take_along_axis(
            t, fd.define_tensor(shape=[-1, -1], dtype=DataType.Int), 0))
    with pytest.raises(SmeltError, match="dimension 1"):
        fd.execute([torch.randn(3, 4), torch.zeros(2, 3, dtype=torch.long)])


@pytest.mark.parametrize("max_norm", [None, 0.5, 1e-5])
@pytest.mark.parametrize("norm_type", [None, 1.0, 3.0, math.inf, 0.0])
@pytest.mark.parametrize("as_inputs", [False, True])
def test_embedding_fwd_renormalizes_the_rows_it_returns(max_norm, norm_type, as_inputs):
    weight = torch.randn(10, 4, generator=gen(4))
    weight[3] = 0.0
    index = torch.tensor([[1, 3, 3], [9, 0, 1]])
    extra = [v for v in (max_norm, norm_type) if v is not None] if as_inputs else []

    def define(fd):
        i, w = fd.from_pytorch(index), fd.from_pytorch(weight)
        m, p = max_norm, norm_type
        if as_inputs:
            m = None if m is None else fd.define_scalar(dtype=DataType.Float)
            p = None if p is None else fd.define_scalar(dtype=DataType.Float)
        fd.add_output(fd.ops.embedding_fwd(i, w, None, m, p, None, None))
    (out,), _ = run(define, [index, weight] + extra)
    reference = weight.clone()  # torch renormalizes the rows in place
    ref = torch.nn.functional.embedding(index, reference, None, max_norm,
                                        2.0 if norm_type is None else norm_type)
    same(out, ref, exact=max_norm is None)
    if max_norm is not None:
        assert not torch.equal(reference, weight)  # torch's, not smelt's, modified weight


def test_embedding_fwd_of_bfloat16_with_padding_idx():
    weight = torch.randn(10, 3, generator=gen(5)).to(torch.bfloat16)
    index = torch.tensor([4, 0, 4, 2])

    def define(fd):
        i, w = fd.from_pytorch(index), fd.from_pytorch(weight)
        pad = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.embedding_fwd(i, w, pad, 0.1))
    (out,), _ = run(define, [index, weight, -2])
    same(out, torch.nn.functional.embedding(index, weight.clone(), -2, 0.1), exact=False)


# ---- scans and reductions ----
SCANNED = torch.tensor([[1.5, -2.0, float("nan"), 0.25, 3.0],
                        [-0.0, 4.0, -1.0, 2.0, -3.0],
                        [2.0, 0.5, -0.5, float("inf"), 1.0]])


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_cumulative_ops(op, dim, dtype):
    x = SCANNED.to(dtype) if dtype.is_floating_point else \
        torch.randint(-5, 5, (3, 5), generator=gen(6)).to(dtype)

    def define(fd):
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), dim))
    (out,), _ = run(define, [x])
    ref = getattr(torch, op)(x, dim)
    ref = ref.values if op in ("cummax", "cummin") else ref
    same(out, ref, exact=dtype != torch.float16 or op in ("cummax", "cummin"))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cumulative_extremes_of_bool_with_leading_false(op):
    """A row starting (or staying) false: bool max starts from false."""
    x = torch.tensor([[False, False, True, False], [True, False, False, False],
                      [False] * 4, [True] * 4])

    def define(fd):
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), 1))
    (out,), _ = run(define, [x])
    same(out, getattr(torch, op)(x, 1).values, exact=True)


@pytest.mark.parametrize("x", [torch.tensor(3, dtype=torch.int32), torch.tensor(-2.5),
                               torch.tensor(True)])
def test_cumulative_ops_of_a_0_dim_tensor(x):
    def define(fd):
        t = fd.from_pytorch(x)
        for op in ("cumsum", "cumprod", "cummax", "cummin"):
            fd.add_output(getattr(fd.ops, op)(t, 0))
    outs, _ = run(define, [x])
    same(outs[0], torch.cumsum(x, 0))
    same(outs[1], torch.cumprod(x, 0))
    same(outs[2], torch.cummax(x, 0).values)
    same(outs[3], torch.cummin(x, 0).values)


def test_cumulative_ops_of_run_time_extents_are_not_concretized():
    def define(fd):
        fd.add_output(fd.ops.cumsum(fd.define_tensor(shape=[-1, -1]), 1))
    with FusionDefinition() as fd:
        define(fd)
    for n in (3, 8):
        x = torch.randn(2, n, generator=gen(n))
        same(fd.execute([x])[0], torch.cumsum(x, 1), exact=False)
    assert fd.state.concretization is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_min_reduces_as_torch_amin(dtype):
    x = torch.randint(-4, 4, (3, 6), generator=gen(7)).to(dtype)

    def define(fd):
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.min(t, [1]))
        fd.add_output(fd.ops.min(t, [0], keepdim=True))
        fd.add_output(fd.ops.max(t, [1]))
    (a, b, c), _ = run(define, [x])
    same(a, torch.amin(x, 1))
    same(b, torch.amin(x, 0, keepdim=True))
    same(c, torch.amax(x, 1))  # bool: a row of False stays False


@pytest.mark.parametrize("diagonal", [0, -1, 2])
@pytest.mark.parametrize("dtype", [torch.float16, torch.int32, torch.bool])
def test_triu(diagonal, dtype):
    x = torch.randint(1, 5, (2, 4, 6), generator=gen(8)).to(dtype)

    def define(fd):
        fd.add_output(fd.ops.triu(fd.from_pytorch(x), diagonal))
    (out,), _ = run(define, [x])
    same(out, torch.triu(x, diagonal))


# ---- bits and other elementwise forms ----
SHIFTED = [-1, -2**31, 2**30, -64463884, 4042311, 5, 0, 7]


@pytest.mark.parametrize("dtype, bits", [(torch.int32, 32), (torch.int64, 64),
                                         (torch.int8, 8), (torch.uint8, 8)])
def test_logical_right_shift_fills_with_zeros(dtype, bits):
    x = torch.tensor(SHIFTED).to(dtype)
    shifts = [0, 1, 3, bits - 1, bits, bits + 5, -1]
    unsigned = x.to(torch.int64) & ((1 << bits) - 1) if bits < 64 else x

    def expected(s):
        if not 0 <= s < bits:
            return torch.zeros_like(x)
        if bits == 64:
            return torch.tensor([(v % 2**64) >> s for v in x.tolist()], dtype=torch.uint64).view(
                torch.int64) if hasattr(torch, "uint64") else None
        return (unsigned >> s).to(dtype)

    def define(fd):
        t = fd.from_pytorch(x)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.logical_right_shift(t, s))
        for c in shifts:
            fd.add_output(fd.ops.logical_right_shift(t, c))
    with FusionDefinition() as fd:
        define(fd)
    for s in shifts:
        out = fd.execute([x, s])
        ref = expected(s)
        if ref is None:
            continue
        same(out[0], ref)
        same(out[1 + shifts.index(s)], ref)


def test_nextafter_of_tensors_and_scalars_and_is_tensor():
    a = torch.tensor([1.0, -2.0, 0.0, 3.5])
    b = a.double() * 2

    def define(fd):
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        s = fd.define_scalar(1.0, dtype=DataType.Float)
        assert ta.is_tensor() and not s.is_tensor()
        fd.add_output(fd.ops.nextafter(ta, tb))
        fd.add_output(fd.ops.nextafter(ta, s))
        fd.add_output(fd.ops.nextafter(s, tb))
    (ab, a1, b1), _ = run(define, [a, b])
    same(ab, torch.nextafter(a.double(), b))
    same(a1, torch.nextafter(a, torch.tensor(1.0)))
    same(b1, torch.nextafter(torch.tensor(1.0, dtype=torch.float32), b))


def test_segment_set_is_a_copy():
    x = torch.randn(3, 4, generator=gen(9))

    def define(fd):
        fd.add_output(fd.ops.relu(fd.ops.segment_set(fd.ops.neg(fd.from_pytorch(x)))))
    (out,), _ = run(define, [x])
    same(out, x.neg().relu())


# ---- layouts, aliases, records ----
def test_alias_input_defined_in_another_stride_order():
    base = torch.randn(9, generator=gen(10))
    x = base.as_strided((2, 3), (1, 3))  # column-major, not dense in row-major order

    def define(fd):
        t = fd.define_tensor(shape=[2, 3], contiguity=[True, True], stride_order=[0, 1])
        out = fd.ops.set(fd.ops.relu(t))
        fd.add_output(out, t)
        fd.add_output(out)
    expected = x.relu()
    (out,), _ = run(define, [x])
    same(out, expected)
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_broadcast_in_dim_without_new_dimensions_records_an_expand():
    def define(fd, use_expand):
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        t2 = fd.ops.expand(t0, t1.shape()) if use_expand else \
            fd.ops.broadcast_in_dim(t0, t1.shape(), [0, 1])
        fd.add_output(fd.ops.add(t2, t1))
    fds = []
    for use_expand in (False, True):
        with FusionDefinition() as fd:
            define(fd, use_expand)
        fds.append(fd)
    assert str(fds[0]) == str(fds[1])
    a, b = torch.randn(1, 4, generator=gen(11)), torch.randn(3, 4, generator=gen(12))
    same(fds[0].execute([a, b])[0], a + b)
    with pytest.raises(SmeltError, match="cannot expand"):
        fds[0].execute([torch.randn(1, 5), b])


@pytest.mark.parametrize("sizes, strides", [
    ([2, 3, 4], [12, 4, 1]), ([2, 3, 4], [1, 2, 6]), ([4, 1, 5], [5, 5, 1]),
    ([3, 4], [0, 1]), ([2, 3, 4], [24, 8, 1]), ([3, 2, 2], [4, 0, 1]), ([2, 2], [1, 1])])
def test_compute_tensor_descriptor_describes_what_define_tensor_reads(sizes, strides):
    contiguity, stride_order = compute_tensor_descriptor(sizes, strides)
    memory = sorted(range(len(sizes)), key=lambda d: -stride_order[d])
    # stride_order ranks the strides (stride-0 dimensions keep their place)...
    nonzero = [d for d in memory if strides[d] != 0]
    assert [strides[d] for d in nonzero] == sorted((strides[d] for d in nonzero), reverse=True)
    # ...and contiguity, in that order, says which strides are exactly packed.
    inner = 1
    for position in reversed(range(len(sizes))):
        d = memory[position]
        if strides[d] == 0 or sizes[d] == 1:
            assert contiguity[position] is None
            continue
        assert contiguity[position] == (strides[d] == inner)
        inner = strides[d] * sizes[d]
    # A tensor of those sizes and strides runs through define_tensor as described.
    x = torch.randn(sum((n - 1) * s for n, s in zip(sizes, strides)) + 1,
                    generator=gen(13)).as_strided(sizes, strides)

    def define(fd):
        shape = [1 if n == 1 or s == 0 else -1 for n, s in zip(sizes, strides)]
        t = fd.define_tensor(shape=shape, contiguity=contiguity, stride_order=stride_order)
        fd.add_output(fd.ops.mul(t, 2.0))
    if all(s != 0 or n == 1 for n, s in zip(sizes, strides)):
        (out,), _ = run(define, [x])
        torch.testing.assert_close(out, x * 2, rtol=0, atol=0)


def test_compute_tensor_descriptor_errors():
    with pytest.raises(SmeltError, match="differ in length"):
        compute_tensor_descriptor([2, 3], [1])
    with pytest.raises(SmeltError, match="negative strides"):
        compute_tensor_descriptor([2, 3], [-3, 1])


def test_segment_index_space_maps_name_the_definitions_values():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        total = fd.ops.sum(fd.ops.exp(x), [1])
        y = fd.ops.add(x, fd.ops.broadcast_in_dim(total, [x.size(0), x.size(1)], [0]))
        fd.add_output(y)
        fd.add_output(fd.ops.max(y, [0]))
    X = torch.randn(4, 5, generator=gen(14))
    segments = fd.segment([X])
    assert len(segments) == 2 and set(fd.segment_index_space_maps) == set(segments)
    values = {x: X}
    for s in segments:
        mapping = fd.segment_index_space_maps[s]
        assert all(v.fd is fd for v in mapping.values() if not isinstance(v, str))
        outs = s.execute([values[mapping[i]] for i in s.inputs])
        values.update({mapping[o]: v for o, v in zip(s.outputs, outs)})
    ref_y = X + X.exp().sum(1, keepdim=True)
    torch.testing.assert_close(values[fd.outputs[0]], ref_y)
    torch.testing.assert_close(values[fd.outputs[1]], ref_y.amax(0))
