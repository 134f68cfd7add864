"""Zero-size tensors (a dimension of extent 0) through fd.execute: no kernel
is launched; the outputs have torch's shapes and dtypes, are empty, or hold a
reduction's identity where torch has one (sum over an empty dimension is 0);
max over an empty dimension is an error, as in torch."""
import pytest
import torch

from smelt import DataType, FusionDefinition, SmeltError
from frontend_helpers import assert_matches


def fusion(build, shapes_dtypes):
    with FusionDefinition() as fd:
        args = [fd.define_tensor(shape=[-1] * len(shape), contiguity=[True] * len(shape),
                                 dtype=dtype) for shape, dtype in shapes_dtypes]
        outs = build(fd, *args)
        for out in (outs if isinstance(outs, (list, tuple)) else [outs]):
            fd.add_output(out)
    return fd


@pytest.mark.parametrize("shape", [(0,), (0, 5), (4, 0), (2, 0, 3)])
def test_pointwise_on_empty_tensors(shape):
    x = torch.randn(*shape)
    y = torch.randn(*shape)
    fd = fusion(lambda fd, x, y: [fd.ops.add(fd.ops.exp(x), y), fd.ops.cast(fd.ops.mul(x, 2.0),
                                                                             DataType.Half)],
                [(shape, DataType.Float), (shape, DataType.Float)])
    outs = fd.execute([x, y])
    assert_matches(outs, [torch.exp(x) + y, (x * 2.0).half()], "cpu")
    assert "empty dimension" in fd.last_run_report()
    assert fd.last_kernels() == []


@pytest.mark.parametrize("dtype,torch_dtype", [(DataType.Float, torch.float32),
                                               (DataType.Int, torch.int64)])
def test_sum_over_an_empty_dimension_is_zero(dtype, torch_dtype):
    x = torch.ones(4, 0, dtype=torch_dtype)
    fd = fusion(lambda fd, x: [fd.ops.sum(x, [1]), fd.ops.sum(x, [0]), fd.ops.sum(x, [0, 1]),
                               fd.ops.add(fd.ops.sum(x, [1], keepdim=True), 1)],
                [((4, 0), dtype)])
    outs = fd.execute([x])
    expected = [x.sum(1), x.sum(0), x.sum(), x.sum(1, keepdim=True) + 1]
    assert_matches(outs, expected, "cpu")
    assert outs[0].tolist() == [0, 0, 0, 0] and outs[3].tolist() == [[1]] * 4


def test_empty_then_nonempty_inputs_share_the_fusion():
    fd = fusion(lambda fd, x: fd.ops.sum(fd.ops.relu(x), [1]), [((3, 0), DataType.Float)])
    (out,) = fd.execute([torch.randn(3, 0)])
    assert_matches([out], torch.zeros(3), "cpu")
    x = torch.randn(3, 7)
    (out,) = fd.execute([x])
    assert_matches([out], torch.relu(x).sum(1), "cpu")
    assert len(fd.last_kernels()) == 1


def test_from_pytorch_of_an_empty_tensor():
    x = torch.randn(0, 6)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.mul(t, t))
    (out,) = fd.execute([x])
    assert out.shape == (0, 6) and out.dtype == torch.float32


def test_max_over_an_empty_dimension_is_an_error():
    fd = fusion(lambda fd, x: fd.ops.max(x, [1]), [((2, 0), DataType.Float)])
    with pytest.raises(SmeltError, match="max"):
        fd.execute([torch.randn(2, 0)])
