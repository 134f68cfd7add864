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
