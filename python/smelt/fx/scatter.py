"""The scatter family (issue 44) as smelt's scatter (fd.ops.scatter, the
core's ScatterOp): scatter, scatter_add, scatter_reduce and index_put with
one index tensor (what torch decomposes index_add, index_copy and
embedding_dense_backward into). fx/translate.py adds SCATTER_TRANSLATORS to
its table; backend/composites.py rewrites put, index_reduce and
max_pool2d_with_indices_backward into these."""
from __future__ import annotations

from typing import Any, Dict

import torch

from smelt.dtypes import to_data_type
from smelt.fx.nodes import Unsupported, meta_tensor
from smelt.fx.registry import Translator, registrar

aten = torch.ops.aten

SCATTER_TRANSLATORS: Dict[Any, Translator] = {}
translates = registrar(SCATTER_TRANSLATORS)

def _dim(x: Any, dim: int) -> int:
    rank = meta_tensor(x).dim()
    return dim + rank if dim < 0 else dim


def _checked(self: Any, index: Any) -> None:
    """torch's scatter wants the index's rank to be self's (a 0-dim pair aside)."""
    s, i = meta_tensor(self), meta_tensor(index)
    if s.dim() == 0 or i.dim() != s.dim():
        raise Unsupported("scatter of a 0-dim tensor, or an index of another rank")
    if i.numel() == 0:
        raise Unsupported("scatter with an empty index (the output is self)")


@translates(aten.scatter.src, aten.scatter.value, aten.scatter.reduce, aten.scatter.value_reduce)
def _scatter(t, node, self, dim, index, src, reduce=None):
    _checked(self, index)
    # fd.ops.scatter takes torch's reduce names ("multiply" too).
    return t.fd.ops.scatter(t.arg(self), t.arg(index), t.arg(src), _dim(self, dim), reduce=reduce)


@translates(aten.scatter_add.default)
def _scatter_add(t, node, self, dim, index, src):
    _checked(self, index)
    return t.fd.ops.scatter(t.arg(self), t.arg(index), t.arg(src), _dim(self, dim), reduce="add")


def _identity(reduce: str, dtype: torch.dtype) -> Any:
    """The value a position without self starts from."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    info = torch.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@translates(aten.scatter_reduce.two)
def _scatter_reduce(t, node, self, dim, index, src, reduce, include_self=True):
    _checked(self, index)
    ops, d = t.fd.ops, _dim(self, dim)
    x, i, s = t.arg(self), t.arg(index), t.arg(src)
    dtype = meta_tensor(self).dtype
    if dtype == torch.bool:
        raise Unsupported("scatter_reduce of bool")
    counts = None
    if reduce == "mean" or not include_self:
        # How many values land on each position (an atomic count).
        zeros = ops.full(list(meta_tensor(self).shape), 0, to_data_type(torch.int64))
        counts = ops.scatter(zeros, i, 1, d, reduce="add")
    if not include_self:  # the positions written start from the identity, not self
        x = ops.where(ops.gt(counts, 0), _identity(reduce, dtype), x)
    combined = ops.scatter(x, i, s, d, reduce="sum" if reduce == "mean" else reduce)
    if reduce != "mean":
        return combined
    divisor = ops.add(counts, 1) if include_self else ops.where(ops.gt(counts, 0), counts, 1)
    if dtype.is_floating_point:
        return ops.cast(ops.div(combined, divisor), to_data_type(dtype))
    # torch floors an integer mean.
    return ops.cast(ops.floor(ops.div(ops.cast(combined, to_data_type(torch.float64)), divisor)),
                    to_data_type(dtype))


@translates(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(t, node, self, indices, values, accumulate=False):
    """self[index] = values (or += with accumulate) for one integer index
    tensor on dim 0: the index flattened to [M] and expanded over self's
    other dims, values broadcast to the index's shape and those dims."""
    x = meta_tensor(self)
    if len(indices) != 1 or indices[0] is None or x.dim() == 0:
        raise Unsupported("index_put with other than one index tensor on dim 0")
    index = meta_tensor(indices[0])
    if index.dtype not in (torch.int64, torch.int32) or index.numel() == 0:
        raise Unsupported("index_put with a bool or empty index")
    ops = t.fd.ops
    rest = list(x.shape[1:])
    m = index.numel()
    flat = ops.reshape(t.arg(indices[0]), [m]) if index.dim() != 1 else t.arg(indices[0])
    spread = ops.expand(ops.broadcast(flat, [False] + [True] * len(rest)), [m] + rest)
    v, target = t.arg(values), list(index.shape) + rest
    rank = meta_tensor(values).dim()
    if list(meta_tensor(values).shape) != target:  # torch broadcasts values to the target
        v = ops.broadcast_in_dim(v, target, list(range(len(target) - rank, len(target))))
    if index.dim() != 1:
        v = ops.reshape(v, [m] + rest)
    return ops.scatter(t.arg(self), spread, v, 0, reduce="add" if accumulate else None,
                       wrap_negative=True)
