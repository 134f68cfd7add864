"""smelt: a fusion compiler for PyTorch in the style of nvFuser.

    from smelt import FusionDefinition, DataType
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.add(x, 1.0)))
    out, = fd.execute([torch.randn(4, 8)])

CPU tensors run through smelt's CPU simulator (the reference path: CUDA
semantics with race detection, slow), CUDA tensors on the GPU.
`torch.compile(model, backend="smelt")` uses smelt.backend.
"""
import torch  # noqa: F401  (loads libtorch before the extension that links it)

from smelt import _C
from smelt._C import DataType, MemoryType, ParallelType, SmeltError
from smelt.fusion_cache import fusion_cache
from smelt.fusion_definition import Axis, FusionDefinition, Scalar, Size, Tensor
from smelt.inspection import Kernel, SmemBuffer, SmemPlan
from smelt.memory_layout import compute_tensor_descriptor
from smelt.planner import BufferPlan, PlanBuffer, plan_buffers



def enable_torchscript_fusion(enabled: bool = True) -> None:
    """Sends supported subgraphs of TorchScript models to smelt (see smelt.torchscript)."""
    from smelt.torchscript import enable_torchscript_fusion as enable
    enable(enabled)


__all__ = [
    "Axis", "BufferPlan", "DataType", "FusionDefinition", "Kernel", "MemoryType", "ParallelType",
    "PlanBuffer", "Scalar", "Size", "SmeltError", "SmemBuffer", "SmemPlan", "Tensor",
    "compute_tensor_descriptor", "enable_torchscript_fusion", "fusion_cache",
    "plan_buffers",
]
