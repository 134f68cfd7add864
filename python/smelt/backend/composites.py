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
from torch._prims_common import get_computation_dtype

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
    # The mask in input's dim order (its layout, first operand, is the output's).
    placed = [1] * input.dim()
    placed[dim1] = n1
    row_at, placed[dim1] = rows.reshape(placed), 1
    placed[dim2] = n2
    mask = (cols.reshape(placed) - row_at) == offset
    last = src.shape[-1] - 1
    if offset >= 0:  # diagonal element i of row i, clamped (off the diagonal: unused)
        values = src.index_select(-1, rows.clamp(max=last)).unsqueeze(-1)
    else:
        values = src.index_select(-1, cols.clamp(max=last)).unsqueeze(-2)
    values = values.movedim((-2, -1), (dim1, dim2)).contiguous()  # input's dim order
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


@_composite(aten.put.default)
def _put(x, index, source, accumulate=False):
    """x.put_(index, source) functionally: index_put on x flattened (one
    index tensor, negative indices counting from the end as put's do)."""
    if x.numel() == 0 or index.numel() == 0 or not x.is_contiguous():
        return NotImplemented
    flat = aten.index_put(x.reshape(-1), [index.reshape(-1)], source.reshape(-1), accumulate)
    return flat.reshape(x.shape)


def _along(index, dim, source):
    """A 1-D index of positions along dim, expanded to source's shape: the
    index of torch.scatter for the index_* ops."""
    shape = [1] * source.dim()
    shape[dim] = -1
    return index.reshape(shape).expand(source.shape)


def _zero_dim_as_vector(fn):
    """An index_* op of a 0-dim tensor computed on it as a 1-element vector."""
    def op(x, dim, index, source, *args, **kwargs):
        if index.numel() == 0:
            return NotImplemented
        if x.dim() == 0:
            return fn(x.reshape(1), 0, index.reshape(-1), source.reshape(-1), *args, **kwargs).reshape(())
        return fn(x, dim % x.dim(), index, source, *args, **kwargs)
    return op


@_composite(aten.index_reduce.default)
@_zero_dim_as_vector
def _index_reduce(x, dim, index, source, reduce, include_self=True):
    """index_reduce as scatter_reduce along dim."""
    return aten.scatter_reduce.two(x, dim, _along(index, dim, source), source, reduce,
                                   include_self=include_self)


@_composite(aten.index_add.default)
@_zero_dim_as_vector
def _index_add(x, dim, index, source, *, alpha=1):
    """index_add as scatter_add along dim (not torch's index_put, which
    would accept the negative indices index_add rejects)."""
    return aten.scatter_add(x, dim, _along(index, dim, source), source if alpha == 1 else source * alpha)


@_composite(aten.index_copy.default)
@_zero_dim_as_vector
def _index_copy(x, dim, index, source):
    """index_copy as scatter along dim (negative indices rejected, as eager does)."""
    return aten.scatter.src(x, dim, _along(index, dim, source), source)


@_composite(aten.max_pool2d_with_indices_backward.default)
def _max_pool2d_backward(grad_output, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    """Each window's gradient added at its argmax: indices count positions
    in a plane of x, so the planes are flattened and the gradients
    scatter-added into zeros along them."""
    if not x.is_contiguous() or grad_output.numel() == 0:
        return NotImplemented
    planes = x.shape[:-2]
    area = x.shape[-2] * x.shape[-1]
    zeros = x.new_zeros(tuple(planes) + (area,))
    flat_grad = grad_output.reshape(tuple(planes) + (-1,))
    flat_index = indices.reshape(tuple(planes) + (-1,))
    return aten.scatter_add(zeros, -1, flat_index, flat_grad).reshape(x.shape)


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


@_composite(aten.trace.default)
def _trace(x):
    """The diagonal's sum: x's elements at i * (columns + 1), gathered."""
    if x.dim() != 2 or x.numel() == 0:
        return NotImplemented
    diagonal = torch.arange(min(x.shape), device=x.device) * (x.shape[1] + 1)
    return x.reshape(-1).index_select(0, diagonal).sum()


@_composite(aten.unfold_copy.default)
def _unfold_copy(x, dim, size, step):
    """The windows gathered along dim (window w, element e: w * step + e),
    split into (windows, size) and the window's elements moved last."""
    if x.dim() == 0 or size == 0:
        return NotImplemented
    dim = dim % x.dim()
    windows = (x.shape[dim] - size) // step + 1
    at = (torch.arange(windows, device=x.device) * step).unsqueeze(1) \
        + torch.arange(size, device=x.device)
    picked = x.index_select(dim, at.reshape(-1))
    split = picked.reshape(x.shape[:dim] + (windows, size) + x.shape[dim + 1:])
    return split.movedim(dim + 1, -1).contiguous()


@_composite(aten.frexp.Tensor)
def _frexp(x):
    """mantissa * 2**exponent == x with |mantissa| in [0.5, 1): the exponent
    floor(log2|x|) + 1, corrected by one where log2 rounded across a power
    of two; 2**-exponent applied as two halves (each a normal float even for
    subnormal x). Zeros, infinities and NaN: themselves and exponent 0."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    wide = x.to(get_computation_dtype(x.dtype))
    magnitude = wide.abs()
    regular = (magnitude != 0) & torch.isfinite(magnitude)
    exponent = torch.floor(torch.log2(torch.where(regular, magnitude, 1.0))) + 1
    half = torch.floor(exponent * 0.5)
    mantissa = wide * torch.exp2(-half) * torch.exp2(half - exponent)
    above = mantissa.abs() >= 1
    below = mantissa.abs() < 0.5
    mantissa = torch.where(above, mantissa * 0.5, torch.where(below, mantissa * 2, mantissa))
    exponent = exponent + above.to(exponent.dtype) - below.to(exponent.dtype)
    mantissa = torch.where(regular, mantissa, wide).to(x.dtype)
    return mantissa, torch.where(regular, exponent, 0).to(torch.int32)
