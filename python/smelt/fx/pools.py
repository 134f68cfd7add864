"""Pools as reductions over windows (issue 44): max pooling with indices,
average pooling and their adaptive forms, for ATen's nodes. Each window
offset is one gather from the pooled input (its pooled dimensions
flattened), so a pool is one kernel; fx/translate.py adds POOL_TRANSLATORS
to its table."""
from __future__ import annotations

import itertools
import math
import operator
from typing import Any, Dict, List

import torch

from smelt._C import DataType
from smelt.fx.nodes import meta_tensor, meta_tensors
from smelt.fx.registry import Translator, registrar

aten = torch.ops.aten

POOL_TRANSLATORS: Dict[Any, Translator] = {}
translates = registrar(POOL_TRANSLATORS)


def _pair(value: Any, rank: int) -> List[int]:
    values = [value] * rank if isinstance(value, int) else list(value)
    return values * rank if len(values) == 1 else values


class _Windows:
    """The windows of a pool over x's last len(kernel) dimensions, for output
    sizes `out_sizes` (torch's, read from the traced output). Per window
    offset: the input positions it reads (flat in the pooled dimensions,
    clamped into range), whether each is inside the input, and x there: one
    gather from x viewed with its pooled dimensions flattened, so every
    offset reads the fusion's input directly. Adaptive windows (stride None)
    of output position i span [floor(i * n / out), ceil((i + 1) * n / out)),
    kernel the longest of them.

    A channels-last x (NHWC in memory) is gathered from as [N, H*W, C]: the
    tensor the gathers read is where the segmenter cuts (written by the
    kernel before, read by the pool's), so it is laid out as x is and both
    kernels read and write along C, contiguous. Each gathered offset is
    permuted back to [N, C, Ho, Wo]."""

    def __init__(self, t, x_node, kernel, out_sizes, stride=None, padding=None, dilation=None):
        ops = t.fd.ops
        x_meta = meta_tensor(x_node)
        shape = list(x_meta.shape)
        self.t, self.kernel = t, kernel
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.lead = shape[:len(shape) - len(kernel)]
        self.extents = shape[len(shape) - len(kernel):]
        self.out_sizes = out_sizes
        self.channels_last = (len(shape) == 4 and len(kernel) == 2 and not x_meta.is_contiguous()
                              and x_meta.is_contiguous(memory_format=torch.channels_last))
        if self.channels_last:
            nhwc = ops.permute(t.arg(x_node), [0, 2, 3, 1])
            self.flat = ops.reshape(nhwc, [shape[0], math.prod(self.extents), shape[1]])
        else:
            self.flat = ops.reshape(t.arg(x_node), self.lead + [math.prod(self.extents)])
        self.floating = meta_tensor(x_node).dtype.is_floating_point
        # Index arithmetic in int32 where every value computed fits: the
        # positions are computed ahead of the loops over the lead dimensions,
        # one per window offset and output element of the thread, and int64
        # doubles their registers (resnet50's 3x3 max pool: 208 -> 105).
        reach = max(o * max(n, s or 1) + n + o + k * (d or 1)
                    for o, n, k, s, d in zip(out_sizes, self.extents, kernel,
                                             stride or [None] * len(kernel),
                                             dilation or [None] * len(kernel)))
        fits = max(math.prod(self.extents), reach) < 2 ** 31
        self.index_dtype = DataType.Int32 if fits else DataType.Int

    def positions(self, axis: int, offset: int) -> Any:
        """Input positions along pooled axis `axis` of window offset `offset`
        (o * stride - padding + offset * dilation), broadcast to the pooled
        output dimensions; for adaptive windows also where each window ends."""
        ops = self.t.fd.ops
        if self.stride is None:
            n, out = self.extents[axis], self.out_sizes[axis]
            if out == 1:  # one window, the whole axis: broadcast, as below
                return tuple(ops.broadcast_in_dim(ops.full([], v, self.index_dtype),
                                                  list(self.out_sizes), []) for v in (offset, n))
            i = ops.iota(out, 0, 1, self.index_dtype)
            start = ops.div(ops.mul(i, n), out)
            end = ops.div(ops.add(ops.mul(i, n), n + out - 1), out)
            return tuple(ops.broadcast_in_dim(v, list(self.out_sizes), [axis])
                         for v in (ops.add(start, offset), end))
        start = offset * self.dilation[axis] - self.padding[axis]
        if self.out_sizes[axis] == 1:  # a broadcast axis, which a squeeze may drop
            return ops.broadcast_in_dim(ops.full([], start, self.index_dtype), list(self.out_sizes),
                                        []), None
        row = ops.iota(self.out_sizes[axis], start, self.stride[axis], self.index_dtype)
        return ops.broadcast_in_dim(row, list(self.out_sizes), [axis]), None

    def to_output(self, pooled: Any) -> Any:
        """A tensor over the pooled output dimensions, broadcast to the output's shape."""
        rank = len(self.out_sizes)
        return self.t.fd.ops.broadcast_in_dim(
            pooled, self.lead + list(self.out_sizes),
            list(range(len(self.lead), len(self.lead) + rank)))

    def offsets(self):
        """(flat position, inside the input, x's values there) per window
        offset, in row-major order (torch's scan order)."""
        ops = self.t.fd.ops
        for offset in itertools.product(*(range(k) for k in self.kernel)):
            flat = inside = None
            for axis, o in enumerate(offset):
                position, end = self.positions(axis, o)
                extent = self.extents[axis]
                ok = ops.logical_and(ops.ge(position, 0), ops.lt(position, extent))
                if end is not None:
                    ok = ops.logical_and(ok, ops.lt(position, end))
                inside = ok if inside is None else ops.logical_and(inside, ok)
                clamped = ops.minimum(ops.maximum(position, 0), extent - 1)
                flat = clamped if flat is None else ops.add(ops.mul(flat, extent), clamped)
            if self.channels_last:
                values = ops.permute(ops.index_select(self.flat, flat, 1), [0, 3, 1, 2])
            else:
                values = ops.index_select(self.flat, flat, len(self.lead))
            yield flat, inside, values


@translates(aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
def _max_pool_with_indices(t, node, x, kernel_size, stride=(), padding=0, dilation=1,
                           ceil_mode=False):
    """Each window's maximum and its flat index (_window_maximum)."""
    rank = 3 if node.target is aten.max_pool3d_with_indices.default else 2
    kernel = _pair(kernel_size, rank)
    stride = _pair(stride, rank) if stride else kernel
    out_sizes = list(meta_tensors(node)[0].shape[-rank:])
    w = _Windows(t, x, kernel, out_sizes, stride, _pair(padding, rank), _pair(dilation, rank))
    return _window_maximum(w, _indices_used(node))


@translates(aten.adaptive_max_pool2d.default, aten.adaptive_max_pool3d.default)
def _adaptive_max_pool(t, node, x, output_size):
    rank = 3 if node.target is aten.adaptive_max_pool3d.default else 2
    extents = list(meta_tensor(x).shape[-rank:])
    out_sizes = list(meta_tensors(node)[0].shape[-rank:])
    return _window_maximum(_adaptive_windows(t, x, extents, out_sizes), _indices_used(node))


def _indices_used(node) -> bool:
    """Whether the graph reads a max pool's indices (its output 1): an
    eval forward reads only the values."""
    return any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users)


def _adaptive_windows(t, x, extents: List[int], out_sizes: List[int]) -> _Windows:
    """Adaptive windows; the kernel is the longest window along each axis."""
    kernel = [max(-(-(i + 1) * n // o) - i * n // o for i in range(o))
              for n, o in zip(extents, out_sizes)]
    return _Windows(t, x, kernel, out_sizes)


def _window_sum(w: _Windows, x, counted: bool = False) -> tuple:
    """(each window's sum over its positions inside the input, their count
    if `counted` else None); half and bfloat16 sum in float."""
    ops = w.t.fd.ops
    total = count = None
    for _, inside, value in w.offsets():
        if meta_tensor(x).dtype in (torch.float16, torch.bfloat16):
            value = ops.cast(value, DataType.Float)
        value = ops.where(inside, value, 0.0)
        total = value if total is None else ops.add(total, value)
        if counted:
            count = ops.cast(inside, w.index_dtype) if count is None else ops.add(count, inside)
    return total, count


@translates(aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool(t, node, x, output_size):
    """Each adaptive window's mean (half and bfloat16 summed in float)."""
    extents = list(meta_tensor(x).shape[-3:])
    out_sizes = list(meta_tensor(node).shape[-3:])
    total, count = _window_sum(_adaptive_windows(t, x, extents, out_sizes), x, counted=True)
    return t.fd.ops.truediv(total, count)


def _window_maximum(w: _Windows, indexed: bool):
    """Values and flat indices of each window's maximum, as torch's CPU
    kernels scan it: the first maximum in row-major order, a NaN always
    taking over; positions outside the input or the window never count.
    Without `indexed` the indices are None (no node reads them), and
    floating values are scanned from -inf without them: the same values,
    signed zeros included, without an index per window offset held in
    registers."""
    ops = w.t.fd.ops
    if not indexed and w.floating:
        best = None
        for _, inside, value in w.offsets():
            best = ops.where(inside, value, float("-inf")) if best is None else ops.where(
                ops.logical_and(inside, ops.logical_or(ops.gt(value, best), ops.ne(value, value))),
                value, best)
        return best, None
    best = best_index = None
    for flat, inside, value in w.offsets():
        if best is None:  # where inside, the window's first position
            best, best_index = value, ops.where(inside, flat, -1)
            continue
        take = ops.logical_and(inside, ops.logical_or(
            ops.eq(best_index, -1), ops.logical_or(ops.gt(value, best), ops.ne(value, value))))
        best = ops.where(take, value, best)
        best_index = ops.where(take, flat, best_index)
    if math.prod(w.kernel) == 1:  # no where() above broadcast it to the output's shape
        best_index = w.to_output(best_index)
    return best, best_index


@translates(aten.avg_pool2d.default, aten.avg_pool3d.default)
def _avg_pool(t, node, x, kernel_size, stride=(), padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    """Each window's sum over its divisor, torch's: divisor_override, or the
    window's size clipped to the padded input (count_include_pad) or to the
    input; half and bfloat16 sum in float."""
    ops = t.fd.ops
    rank = 3 if node.target is aten.avg_pool3d.default else 2
    kernel = _pair(kernel_size, rank)
    stride = _pair(stride, rank) if stride else kernel
    padding = _pair(padding, rank)
    out_sizes = list(meta_tensor(node).shape[-rank:])
    w = _Windows(t, x, kernel, out_sizes, stride, padding, [1] * rank)
    total, _ = _window_sum(w, x)
    if divisor_override:
        return ops.truediv(total, divisor_override)
    divisor = None
    for axis in range(rank):
        extent, k, p = w.extents[axis], kernel[axis], padding[axis]
        start, _ = w.positions(axis, 0)
        end = ops.minimum(ops.add(start, k), extent + p)
        if not count_include_pad:
            start, end = ops.maximum(start, 0), ops.minimum(end, extent)
        size = ops.sub(end, start)
        divisor = size if divisor is None else ops.mul(divisor, size)
    return ops.truediv(total, divisor)
