"""What an FX node of an ATen graph says about its value (node.meta["val"]).

Unsupported is how every part of the translation says "not this node".
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import torch
import torch.fx


class Unsupported(Exception):
    """A node (or one of its arguments) smelt does not translate."""


def meta_tensor(node: Any) -> Optional[torch.Tensor]:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def meta_tensors(node: Any) -> Optional[List[torch.Tensor]]:
    """The traced values of a node of several outputs (split, unbind), or None."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if isinstance(val, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in val):
        return list(val)
    return None


def is_static(val: torch.Tensor) -> bool:
    """Whether Dynamo traced every size of `val` as an int (torch.compile's
    default): the kernel is then specialized on those sizes."""
    return all(isinstance(s, int) for s in val.shape)



def is_static_2d(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 2 and \
        all(isinstance(s, int) for s in val.shape)


def hashable_arguments(value: Any, node_key: Callable[[torch.fx.Node], Any] = lambda n: n) -> Any:
    """A node's args or kwargs as a nested tuple that hashes and compares
    alike when they are alike: each list, tuple, dict and constant tagged
    with its type (an exponent 2 is not 2.0), each node as node_key gives it
    (itself by default)."""
    if isinstance(value, (list, tuple)):
        return type(value), tuple(hashable_arguments(v, node_key) for v in value)
    if isinstance(value, dict):
        return dict, tuple((k, hashable_arguments(v, node_key)) for k, v in value.items())
    if isinstance(value, torch.fx.Node):
        return node_key(value)
    return type(value), value
