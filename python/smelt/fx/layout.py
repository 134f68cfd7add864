"""Fusion outputs with the sizes and strides torch traced.

The code after a partition (torch ops, later views, `as_strided`, the user)
may rely on the strides of the values the partition returns: eager CPU
attention returns its input's layout, so a transpose that was free at trace
time is dropped and the next `.view()` needs the traced strides. Each output
is therefore written densely in the traced memory order (add_output's
stride_order) and returned with exactly the traced strides; a layout that is
not dense (gaps, overlaps) is copied into a tensor of the traced strides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from smelt.memory_layout import is_dense, memory_order


def _hint(s: Any) -> Optional[int]:
    """An int size or stride, or a SymInt's value at trace time."""
    if isinstance(s, int):
        return s
    node = getattr(s, "node", None)
    hint = getattr(node, "hint", None)
    return int(hint) if hint is not None else None


@dataclass(frozen=True)
class OutputLayout:
    """The layout a partition output must have (from its traced value)."""
    stride_order: Optional[tuple]  # add_output's stride_order, None for row-major
    sizes: Optional[tuple]         # static shapes: the exact sizes and strides to return
    strides: Optional[tuple]

    def restore(self, out: torch.Tensor) -> torch.Tensor:
        """`out` (written in stride_order) with the traced strides."""
        if self.strides is None or tuple(out.stride()) == self.strides:
            return out
        if tuple(out.shape) != self.sizes:
            return out  # a shape smelt computed differently: checked elsewhere
        if is_dense(self.sizes, self.strides):
            if is_dense(tuple(out.shape), tuple(out.stride())):
                # Same elements in the same places; only size-1 strides differ.
                return out.as_strided(self.sizes, self.strides)
            # A broadcast smelt returns expanded (stride 0) where torch's
            # value is dense: written out in torch's layout.
            return torch.empty_strided(self.sizes, self.strides, dtype=out.dtype,
                                       device=out.device).copy_(out)
        # Gaps and overlaps (an expand: stride 0): lay out storage for the
        # traced strides and write each element once, along index 0 of the
        # stride-0 dimensions.
        extent = 1 + sum((n - 1) * s for n, s in zip(self.sizes, self.strides))
        storage = torch.empty(extent, dtype=out.dtype, device=out.device)
        result = storage.as_strided(self.sizes, self.strides)
        once = tuple(slice(0, 1) if s == 0 else slice(None) for s in self.strides)
        try:
            result[once].copy_(out[once])
        except RuntimeError:
            return out  # overlapping beyond stride 0: the values, torch's own layout
        return result


def traced_layout(val: torch.Tensor) -> OutputLayout:
    sizes = [_hint(s) for s in val.shape]
    strides = [_hint(s) for s in val.stride()]
    if any(s is None for s in sizes + strides):
        return OutputLayout(None, None, None)
    static = all(isinstance(s, int) for s in list(val.shape) + list(val.stride()))
    exact = (tuple(sizes), tuple(strides)) if static else (None, None)
    order = memory_order(sizes, strides) if is_dense(sizes, strides) else list(range(len(sizes)))
    if order == list(range(len(sizes))):
        return OutputLayout(None, *exact)
    stride_order = [0] * len(order)
    for rank, d in enumerate(reversed(order)):
        stride_order[d] = rank
    return OutputLayout(tuple(stride_order), *exact)
