"""Decompositions smelt writes itself (issue 44: OpInfo breadth), for ATen
ops torch has none of, or one that does not suit smelt (a mutation, or an
op smelt lacks). Each lowers to ops smelt translates (mm, index_select,
iota, where, reductions, elementwise math) and returns NotImplemented where
it does not apply, so that torch runs the op itself. backend/__init__.py adds
COMPOSITES to its decomposition table; each was checked against eager by
scripts/opinfo_sweep.py (values, dtypes and strides)."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict

import torch

aten = torch.ops.aten

COMPOSITES: Dict[Any, Callable[..., Any]] = {}


def _composite(*ops):
    def register(fn):
        for op in ops:
            COMPOSITES[op] = fn
        return fn
    return register


@_composite(aten.addbmm.default)
def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """The batched products summed: one matmul of the batches laid side by
    side along the contracted dim ([n, B*k] @ [B*k, m]), then addmm's
    beta/alpha rules (addmm is decomposed too)."""
    b, n, k = batch1.shape
    m = batch2.shape[2]
    lhs = batch1.permute(1, 0, 2).reshape(n, b * k)
    return aten.addmm(self, lhs, batch2.reshape(b * k, m), beta=beta, alpha=alpha)


@_composite(aten.diagonal_scatter.default)
def _diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with src on its diagonal, functionally: where(on the diagonal,
    src's element there, input). torch's decomposition copies into a clone,
    which AOTAutograd's functional graphs do not allow."""
    dim1, dim2 = dim1 % input.dim(), dim2 % input.dim()
    n1, n2 = input.shape[dim1], input.shape[dim2]
    if src.shape[-1] == 0 or input.dtype != src.dtype:
        return NotImplemented
    rows = torch.arange(n1, device=input.device)
    cols = torch.arange(n2, device=input.device)
    on_diagonal = (cols.unsqueeze(0) - rows.unsqueeze(1)) == offset
    last = src.shape[-1] - 1
    if offset >= 0:  # diagonal element i of row i, clamped (off the diagonal: unused)
        values = src.index_select(-1, rows.clamp(max=last)).unsqueeze(-1)
    else:
        values = src.index_select(-1, cols.clamp(max=last)).unsqueeze(-2)
    values = values.movedim((-2, -1), (dim1, dim2))
    mask = on_diagonal.reshape((n1, n2) + (1,) * (input.dim() - 2)).movedim((0, 1), (dim1, dim2))
    return torch.where(mask, values, input)


def _index_operands(x, indices):
    """The index tensors of x[indices] when they are integer tensors on x's
    leading dims (no None between): those dims flattened into one and the
    linear index into it; None otherwise (torch runs the op)."""
    if not indices or any(i is None for i in indices) or len(indices) > x.dim():
        return None
    if any(i.dtype not in (torch.int64, torch.int32) for i in indices):
        return None
    lead = x.shape[:len(indices)]
    if 0 in lead:
        return None
    linear = None
    for index, size in zip(indices, lead):
        wrapped = torch.where(index < 0, index + size, index).to(torch.int64)
        linear = wrapped if linear is None else linear * size + wrapped
    return x.reshape((math.prod(lead),) + tuple(x.shape[len(indices):])), linear


@_composite(aten.index.Tensor, aten._unsafe_index.Tensor)
def _index(x, indices):
    """x[i0, i1, ...] with integer index tensors on the leading dims: an
    index_select of x's leading dims flattened, at the linear index."""
    operands = _index_operands(x, indices)
    if operands is None:
        return NotImplemented
    flat, linear = operands
    picked = flat.index_select(0, linear.reshape(-1))
    return picked.reshape(tuple(linear.shape) + tuple(flat.shape[1:]))


def _pairwise_norm(diff, p):
    """The p-norm over diff's last dim, as torch's cdist and pdist define it."""
    if p == 0:
        return (diff != 0).sum(-1).to(diff.dtype)
    if p == math.inf:
        return diff.abs().amax(-1)
    if p == 1:
        return diff.abs().sum(-1)
    if p == 2:
        return (diff * diff).sum(-1).sqrt()
    return diff.abs().pow(p).sum(-1).pow(1.0 / p)


@_composite(aten._cdist_forward.default)
def _cdist(x1, x2, p, compute_mode=None):
    """Every row of x1 against every row of x2 (batch dims broadcast)."""
    if x1.shape[-1] == 0 or not x1.dtype.is_floating_point:
        return NotImplemented
    return _pairwise_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


@_composite(aten._pdist_forward.default)
def _pdist(x, p=2):
    """The distances of rows i < j, in row-major order of the pairs."""
    n = x.shape[0]
    if n < 2 or x.shape[1] == 0:
        return NotImplemented
    pairs = torch.triu_indices(n, n, 1, device=x.device)
    return _pairwise_norm(x.index_select(0, pairs[0]) - x.index_select(0, pairs[1]), p)
