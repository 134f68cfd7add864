"""Memory layouts: dimension orders, density and contiguity of tensors,
as the definition declares its inputs and outputs and execute() views them.

A layout other than row-major is a *physical order*: the dimensions from
outermost to innermost in memory (None stands for row-major).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import torch

from smelt import _ops
from smelt._C import SmeltError


@dataclass(frozen=True)
class InputLayout:
    """How a tensor input is declared: logical shape and contiguity, and its
    dimensions outermost first in memory when that is not row-major."""
    shape: tuple  # logical order
    contiguity: tuple  # logical order
    physical: Optional[tuple]  # dimensions outermost first, None for row-major


def ordered_input(shape: tuple, contiguity: tuple, stride_order: Sequence[int]) -> InputLayout:
    """nvFuser's stride_order form: contiguity is given in memory order
    (outermost first), as nvFuser reads it."""
    order = list(stride_order)
    if len(contiguity) != len(shape):
        raise SmeltError(f"define_tensor: shape {list(shape)} has {len(shape)} dimensions but "
                         f"contiguity has {len(contiguity)} entries")
    if sorted(order) != list(range(len(shape))):
        raise SmeltError(f"define_tensor: stride_order {order} must be a permutation of "
                         f"0..{len(shape) - 1}")
    physical = _ops.physical_order(order)
    logical_contiguity = [None] * len(shape)
    for p, d in enumerate(physical):
        logical_contiguity[d] = contiguity[p]
    return InputLayout(shape, tuple(logical_contiguity),
                       None if physical == tuple(range(len(shape))) else physical)


def example_layout(tensor: torch.Tensor, static_sizes: bool) -> InputLayout:
    """The layout of an example tensor: size-1 dimensions broadcast, the
    others symbolic unless static_sizes; a dense tensor in another memory
    order (channels-last, a transposed view) is read in that order."""
    shape = tuple(1 if s == 1 else (s if static_sizes else -1) for s in tensor.shape)
    sizes, strides = list(tensor.shape), list(tensor.stride())
    physical = tuple(memory_order(sizes, strides))
    if physical != tuple(range(tensor.dim())) and is_dense(sizes, strides):
        permuted = tensor.permute(physical)
        contiguity = contiguity_of(permuted)
        logical = [None] * tensor.dim()
        for p, d in enumerate(physical):
            logical[d] = contiguity[p]
        return InputLayout(shape, tuple(logical), physical)
    return InputLayout(shape, tuple(contiguity_of(tensor)), None)


def memory_order(sizes: Sequence[int], strides: Sequence[int]) -> List[int]:
    """Dimensions from outermost to innermost in memory (ties, as size-1
    dimensions make them, keep the logical order)."""
    return sorted(range(len(sizes)), key=lambda d: (-strides[d], d))


def is_dense(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the elements cover one block of memory exactly once."""
    expected = 1
    for d in reversed(memory_order(sizes, strides)):
        if sizes[d] != 1 and strides[d] != expected:
            return False
        expected *= sizes[d]
    return True


def output_physical_order(tensor: Any, stride_order: Optional[Sequence[int]]) -> Optional[tuple]:
    """The physical dimension order stride_order asks for, None for row-major."""
    if stride_order is None:
        return None
    rank = tensor.ndim
    order = list(stride_order)
    if sorted(order) != list(range(rank)) or any(isinstance(o, bool) for o in order):
        raise SmeltError(f"add_output: stride_order {order} of tensor {tensor.name} must be a "
                         f"permutation of 0..{rank - 1} (one entry per dimension)")
    physical = _ops.physical_order(order)
    return None if physical == tuple(range(rank)) else physical


def logical_view(output: torch.Tensor, physical: Optional[tuple]) -> torch.Tensor:
    """An output written densely in `physical` order, viewed in its logical
    dimension order."""
    if physical is None:
        return output
    position = [0] * len(physical)
    for p, d in enumerate(physical):
        position[d] = p
    return output.permute(position)


def contiguity_of(tensor: torch.Tensor) -> List[Optional[bool]]:
    """Per dimension: None for size 1, else whether its stride is the
    product of the inner (non-size-1) dimension's extent and stride (1 for
    the innermost)."""
    result: List[Optional[bool]] = [None] * tensor.dim()
    expected = 1
    for d in reversed(range(tensor.dim())):
        if tensor.shape[d] == 1:
            continue
        result[d] = tensor.stride(d) == expected
        expected = tensor.stride(d) * tensor.shape[d]
    return result


def compute_tensor_descriptor(sizes: Sequence[int],
                              strides: Sequence[int]) -> Tuple[List[Optional[bool]], List[int]]:
    """nvFuser's compute_tensor_descriptor: (contiguity, stride_order) of a
    tensor of `sizes` and `strides`, as define_tensor takes them.

    Dimensions of nonzero stride are ordered by decreasing stride (ties keep
    the logical order); those of stride 0 keep their logical position in
    that order. stride_order[d] is dimension d's rank from the innermost.
    contiguity is in that memory order: None for a broadcast (stride 0 or
    size 1), else whether the stride is the extent times the stride of the
    next non-broadcast dimension inward (1 for the innermost)."""
    if len(sizes) != len(strides):
        raise SmeltError(f"compute_tensor_descriptor: sizes {list(sizes)} and strides "
                         f"{list(strides)} differ in length")
    if any(s < 0 for s in strides):
        raise SmeltError(f"compute_tensor_descriptor: negative strides {list(strides)} are not "
                         "supported")
    rank = len(sizes)
    order = sorted((d for d in range(rank) if strides[d] != 0), key=lambda d: -strides[d])
    for d in range(rank):
        if strides[d] == 0:
            order.insert(d, d)
    stride_order = [0] * rank
    for position, d in enumerate(order):
        stride_order[d] = rank - 1 - position

    def broadcast(d: int) -> bool:
        return strides[d] == 0 or sizes[d] == 1

    contiguity: List[Optional[bool]] = [None] * rank
    inner = 1  # what the stride of a contiguous dimension is, from the innermost out
    for position in reversed(range(rank)):
        d = order[position]
        if broadcast(d):
            continue
        contiguity[position] = strides[d] == inner
        inner = strides[d] * sizes[d]
    return contiguity, stride_order
