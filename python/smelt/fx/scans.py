"""The scans (issue 44) as smelt's scan (fd.ops.scan, the core's ScanOp):
cumsum, cumprod, logcumsumexp, cummax and cummin (their indices, where read,
a second scan). fx/translate.py adds SCAN_TRANSLATORS to its table."""
from __future__ import annotations

import operator
from typing import Any, Dict

import torch

from smelt._C import DataType
from smelt.dtypes import to_data_type
from smelt.fx.nodes import meta_tensor
from smelt.fx.registry import Translator, registrar

aten = torch.ops.aten

SCAN_TRANSLATORS: Dict[Any, Translator] = {}
translates = registrar(SCAN_TRANSLATORS)


@translates(aten.cumsum.default, aten.cumprod.default)
def _cumsum_or_cumprod(t, node, x, dim, dtype=None):
    """With `dtype`, torch casts the input first; without it, integers and
    bool accumulate in int64 (fd.ops.cumsum / cumprod)."""
    value = t.arg(x)
    if dtype is not None:
        value = t.fd.ops.cast(value, to_data_type(dtype))
    scan = t.fd.ops.cumsum if node.target is aten.cumsum.default else t.fd.ops.cumprod
    return scan(value, dim)


@translates(aten.logcumsumexp.default)
def _logcumsumexp(t, node, x, dim):
    return t.fd.ops.logcumsumexp(t.arg(x), dim)


@translates(aten.cummax.default, aten.cummin.default)
def _cummax_or_cummin(t, node, x, dim):
    """Values, and where the graph reads them, torch's indices: the last
    position j <= i whose element became the running extreme (x[j] equal to
    it, or a NaN, which always takes the index), found as a running maximum
    of those positions (-1 elsewhere)."""
    ops = t.fd.ops
    value = t.arg(x)
    maximum = node.target is aten.cummax.default
    indexed = any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users)
    values = (ops.cummax if maximum else ops.cummin)(value, dim)
    rank = meta_tensor(x).dim()
    if not indexed:
        return values, None
    if rank == 0:  # the element itself, at position 0
        return values, ops.full([], 0, DataType.Int)
    d = dim + rank if dim < 0 else dim
    positions = ops.broadcast(ops.iota(value.size(d), 0, 1, DataType.Int), [k != d for k in range(rank)])
    took = ops.logical_or(ops.eq(value, values), ops.ne(value, value))
    return values, ops.scan(ops.where(took, positions, -1), d, "max")
