"""Helpers shared by the FusionDefinition tests."""
from typing import Callable, List, Sequence

import pytest
import torch

from smelt import FusionDefinition

# CPU tensors run through the simulator everywhere; CUDA tensors where a GPU is.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))]

TOLERANCES = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1e-2, atol=1e-2),
}


def define(build: Callable[..., Sequence], inputs: Sequence) -> FusionDefinition:
    """A FusionDefinition with one input per entry of `inputs` (tensors via
    from_pytorch, Python numbers as scalar inputs) and build(fd, *inputs)'s
    results as outputs."""
    with FusionDefinition() as fd:
        args = [fd.from_pytorch(x) if isinstance(x, torch.Tensor) else fd.define_scalar()
                for x in inputs]
        outs = build(fd, *args)
        for out in (outs if isinstance(outs, (list, tuple)) else [outs]):
            fd.add_output(out)
    return fd


def assert_matches(actual: List[torch.Tensor], expected, device: str) -> None:
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.device.type == device
        assert a.dtype == e.dtype, f"dtype {a.dtype}, torch gives {e.dtype}"
        assert a.shape == e.shape, f"shape {tuple(a.shape)}, torch gives {tuple(e.shape)}"
        torch.testing.assert_close(a, e, **TOLERANCES.get(e.dtype, dict(rtol=0, atol=0)))
