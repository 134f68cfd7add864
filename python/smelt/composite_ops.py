"""fd.ops' index, scan and bit ops that smelt builds from its core's ops:
index_select and gather in torch's forms, select, take_along_axis,
embedding_fwd, the cumulative ops, triu, min, logical_right_shift and
segment_set (nvFuser's names and argument orders).

FusionDefinition's Operators inherits them; each is a composition of
recorded ops, so the record, the cache and the kernels see only core ops.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from smelt._C import DataType, SmeltError
from smelt._deferred import INT64_MAX, is_int
from smelt.handles import Number, Scalar, Tensor

_FLOATING = (DataType.Double, DataType.Float, DataType.Half, DataType.BFloat16)
_INTEGER_BITS = {DataType.Int: 64, DataType.Int32: 32, DataType.Int16: 16, DataType.Int8: 8,
                 DataType.UInt8: 8}


# torch's reduce names (scatter, scatter_reduce) to the core's combine modes.
_SCATTER_COMBINES = {None: "set", "add": "add", "sum": "add", "multiply": "mul", "prod": "mul",
                     "amax": "max", "amin": "min"}


def _dim(op: str, x: Tensor, dim: int) -> int:
    """dim of x, negative counting from the end (0 for a 0-dim x)."""
    rank = max(x.ndim, 1)
    d = dim + rank if dim < 0 else dim
    if not 0 <= d < rank:
        raise SmeltError(f"{op}: dimension {dim} is out of range for {x.name} of rank {x.ndim}")
    return d


def _same_extent(a: Tensor, b: Tensor, d: int) -> bool:
    """Whether dimension d of a and of b have one extent (equal ints, or the
    same run-time expression)."""
    return str(a.ir.logical_no_reductions[d].size) == str(b.ir.logical_no_reductions[d].size)


def _constant_int(value: Any) -> Optional[int]:
    """value as an int when it is one now (an int or a constant integer scalar)."""
    if is_int(value):
        return value
    if isinstance(value, Scalar) and value.is_constant and value.dtype in _INTEGER_BITS:
        return int(value.ir.value)
    return None


class CompositeOps:
    """The composite ops of fd.ops; a subclass records them (the hooks below)."""

    def _op(self, name: str, *args: Any) -> Any:
        """Records the op `name` and returns its handle(s)."""
        raise NotImplementedError

    def _constant(self, value: Number, dtype: DataType) -> Scalar:
        """A constant scalar of `dtype`."""
        raise NotImplementedError

    # ---- indexing ----
    def index_select(self, x: Tensor, index: Tensor, dim: int) -> Tensor:
        """x's dimensions before `dim`, then index's, then x's after `dim`:
        element [.., i.., ..] is x[.., index[i..], ..] (nvFuser's argument
        order; torch.index_select for a 1-D index, torch.embedding at dim 0).
        A 0-dim index selects like a 1-element one, as in torch (`dim` keeps
        extent 1). An index outside x's extent fails the run."""
        if isinstance(index, Tensor) and index.ndim == 0:
            index = self.broadcast(index, [True])
        return self._op("index_select", x, index, dim)

    def gather(self, x: Tensor, index: Tensor, dim: int) -> Tensor:
        """torch.gather (nvFuser's argument order): index has x's rank and
        the result its shape; element [i] is x[i with i[dim] = index[i]].
        Outside `dim` index's extents may be smaller than x's (x is then
        read through a slice to them, concretized at execute when they are
        known only at run time); a larger one is a SmeltError."""
        if isinstance(x, Tensor) and isinstance(index, Tensor) and x.ndim == index.ndim:
            d = _dim("gather", x, dim)
            stops = []
            for k in range(x.ndim):
                if k == d or _same_extent(x, index, k):
                    stops.append(INT64_MAX)
                    continue
                have, want = x.size(k), index.size(k)
                if is_int(have) and is_int(want) and want > have:
                    raise SmeltError(f"gather: index {index.name} has extent {want} in dimension "
                                     f"{k}, larger than {have} of {x.name}")
                stops.append(want)
            if any(s != INT64_MAX for s in stops):
                x = self.slice(x, [0] * x.ndim, stops)
        return self._op("gather", x, index, dim)

    def scatter(self, x: Tensor, index: Tensor, src: Union[Tensor, Scalar, Number], dim: int,
                reduce: Optional[str] = None, wrap_negative: bool = False) -> Tensor:
        """torch.scatter (nvFuser's argument order): x's shape and dtype; for
        every position p of index, out[p with p[dim] = index[p]] is src[p]
        (src a tensor no smaller than index, or a scalar). `reduce` combines
        instead: "add"/"sum", "multiply"/"prod", "amax", "amin" (duplicate
        indices all contribute; without it a position written twice keeps one
        of the values, as in torch). An index outside [0, extent) fails the
        run; with `wrap_negative`, negative ones count from the end first."""
        combine = _SCATTER_COMBINES.get(reduce)
        if combine is None:
            raise SmeltError(f"scatter: unknown reduce {reduce!r} (None, {', '.join(sorted(k for k in _SCATTER_COMBINES if k))})")
        return self._op("scatter", x, index, src, dim, combine, wrap_negative)

    def take_along_axis(self, x: Tensor, index: Tensor, dim: int) -> Tensor:
        """nvFuser's take_along_axis: gather with index's extents equal to
        x's outside `dim` (checked at execute when known only at run time)."""
        return self._op("gather", x, index, dim)

    def select(self, x: Tensor, index: Union[int, Scalar], dim: int) -> Tensor:
        """torch.select: x[.., index, ..] along `dim`, the dimension removed.
        index is an int or an integer scalar (a scalar input too); negative
        counts from the end. An index outside the extent fails the run (a
        constant one with a fixed extent is a SmeltError now)."""
        d = _dim("select", x, dim)
        if isinstance(index, bool) or not isinstance(index, (int, Scalar)) or (
                isinstance(index, Scalar) and index.dtype not in _INTEGER_BITS):
            raise SmeltError(f"select: the index into {x.name} must be an int or an integer "
                             f"scalar, got {index!r}")
        extent, constant = x.size(d), _constant_int(index)
        if constant is not None and is_int(extent):
            if not -extent <= constant < extent:
                raise SmeltError(f"select: index {constant} is out of range for dimension {d} of "
                                 f"{x.name} (extent {extent})")
            position = self.full([], constant % extent, DataType.Int)
        else:
            position = self.full([], index, DataType.Int)
            position = self.where(self.lt(position, 0), self.add(position, extent), position)
        # A 0-dim index: `dim` becomes a broadcast dimension, squeezed away.
        return self.squeeze(self.index_select(x, position, d), [d])

    def embedding_fwd(self, input: Tensor, weight: Tensor, padding_idx: Any = None,
                      max_norm: Any = None, norm_type: Any = None,
                      scale_grad_by_freq: Any = None, sparse: Any = None) -> Tensor:
        """torch.nn.functional.embedding's forward (nvFuser's embedding_fwd):
        the rows of `weight` that `input` names. With max_norm (a number or
        a scalar), rows whose norm_type-norm (default 2) exceeds it are
        scaled by max_norm / (norm + 1e-7), as torch's embedding_renorm_;
        the result has those values, but `weight` itself is not modified
        (torch rescales its rows in place). padding_idx, scale_grad_by_freq
        and sparse only change the backward pass."""
        rows = self.index_select(weight, input, 0)
        if max_norm is None:
            return rows
        if weight.dtype not in _FLOATING:
            raise SmeltError(f"embedding_fwd: max_norm needs a floating weight, {weight.name} is "
                             f"{weight.dtype}")
        values = rows if weight.dtype in (DataType.Double, DataType.Float) else \
            self.cast(rows, DataType.Float)
        norm = self._vector_norm(values, 2.0 if norm_type is None else norm_type)
        scale = self.where(self.gt(norm, max_norm),
                           self.truediv(max_norm, self.add(norm, 1e-7)), 1.0)
        return self.cast(self.mul(values, scale), weight.dtype)

    def _vector_norm(self, x: Tensor, p: Any) -> Tensor:
        """torch.linalg.vector_norm over the last dimension (kept): p is a
        number, or a scalar whose value the run gives (inf, -inf and 0 are
        selected by value, the general power sum otherwise)."""
        magnitude = self.abs(x)
        dims = [x.ndim - 1]
        special = {
            math.inf: lambda: self.max(magnitude, dims, keepdim=True),
            -math.inf: lambda: self.min(magnitude, dims, keepdim=True),
            0: lambda: self.sum(self.cast(self.ne(x, 0.0), x.dtype), dims, keepdim=True),
            1: lambda: self.sum(magnitude, dims, keepdim=True),
            2: lambda: self.sqrt(self.sum(self.mul(x, x), dims, keepdim=True)),
        }
        number = isinstance(p, (int, float)) and not isinstance(p, bool)
        if number and p in special:
            return special[p]()
        general = self.pow(self.sum(self.pow(magnitude, p), dims, keepdim=True),
                           self.truediv(1.0, p))
        if number:
            return general
        for value in (math.inf, -math.inf, 0):
            general = self.where(self.eq(p, value), special[value](), general)
        return general

    # ---- reductions and scans ----
    def min(self, x: Tensor, dims: Union[int, Sequence[int], None] = None, keepdim: bool = False,
            dtype: Optional[DataType] = None) -> Tensor:
        """torch.amin over `dims`: the maximum of a reversed order, -x for
        floats (NaN stays NaN), ~x (= -x - 1, which cannot overflow) for
        integers and bool."""
        out = self._reversed(self.max(self._reversed(x), dims, keepdim))
        return out if dtype is None or dtype == out.dtype else self.cast(out, dtype)

    def _reversed(self, x: Tensor) -> Tensor:
        """x in the reversed order: -x for floats, ~x for integers and bool."""
        return self.neg(x) if x.dtype in _FLOATING else self.bitwise_not(x)

    def scan(self, x: Tensor, dim: int, combine: str) -> Tensor:
        """The core's scan along `dim` (x's shape and dtype): combine "add",
        "mul", "max", "min" (NaN propagates) or "logaddexp"; one pass over
        the extent, the running value in a register."""
        return self._op("scan", x, _dim(f"scan ({combine})", x, dim), combine)

    def _cumulative(self, x: Tensor, dim: int, op: str, combine: str) -> Tensor:
        """torch's cumulative op `op`: integer and bool sums and products in
        int64 (as torch), a 0-dim x as its one element."""
        d = _dim(op, x, dim)
        if combine in ("add", "mul") and x.dtype not in _FLOATING:
            x = self.cast(x, DataType.Int)
        if x.ndim == 0:
            return self.set(x)
        return self.scan(x, d, combine)

    def cumsum(self, x: Tensor, dim: int) -> Tensor:
        """torch.cumsum along `dim` (integers and bool sum in int64)."""
        return self._cumulative(x, dim, "cumsum", "add")

    def cumprod(self, x: Tensor, dim: int) -> Tensor:
        """torch.cumprod along `dim` (integers and bool multiply in int64)."""
        return self._cumulative(x, dim, "cumprod", "mul")

    def cummax(self, x: Tensor, dim: int) -> Tensor:
        """torch.cummax(x, dim).values (nvFuser returns no indices); a NaN
        propagates to every later position, as in torch."""
        return self._cumulative(x, dim, "cummax", "max")

    def cummin(self, x: Tensor, dim: int) -> Tensor:
        """torch.cummin(x, dim).values; a NaN propagates as in cummax."""
        return self._cumulative(x, dim, "cummin", "min")

    def logcumsumexp(self, x: Tensor, dim: int) -> Tensor:
        """torch.logcumsumexp along `dim` (floating x)."""
        if x.dtype not in _FLOATING:
            raise SmeltError(f"logcumsumexp: {x.name} has dtype {x.dtype}; expected a floating dtype")
        return self._cumulative(x, dim, "logcumsumexp", "logaddexp")

    # ---- masks and bits ----
    def triu(self, x: Tensor, diagonal: Union[int, Scalar] = 0) -> Tensor:
        """torch.triu: the elements of the last two dimensions on and above
        `diagonal` (column - row >= diagonal), zero elsewhere."""
        if not isinstance(x, Tensor) or x.ndim < 2:
            raise SmeltError(f"triu: expected a tensor of rank 2 or more, got {x!r}")
        rank = x.ndim
        rows = self.broadcast(self.iota(x.size(rank - 2), 0, 1, DataType.Int),
                              [k != rank - 2 for k in range(rank)])
        cols = self.broadcast(self.iota(x.size(rank - 1), 0, 1, DataType.Int),
                              [k != rank - 1 for k in range(rank)])
        keep = self.ge(self.sub(cols, rows), diagonal)
        zero = self._constant(False if x.dtype == DataType.Bool else 0, x.dtype)
        return self.where(keep, x, zero)

    def logical_right_shift(self, x: Tensor, shift: Any) -> Tensor:
        """x shifted right by `shift` bits, filling with zeros (jax's
        shift_right_logical): a shift of the bit width or more, or a
        negative one, gives 0. Built from the arithmetic shift of x >> 1
        with its sign bit cleared, so no shift is ever out of range."""
        if not isinstance(x, Tensor) or x.dtype not in _INTEGER_BITS:
            raise SmeltError(f"logical_right_shift: expected an integer tensor, got {x!r}")
        bits = _INTEGER_BITS[x.dtype]
        cleared = self.bitwise_and(self.bitwise_right_shift(x, 1),
                                   self._constant(2 ** (bits - 1) - 1, x.dtype))
        constant = _constant_int(shift)
        if constant is not None:
            if constant == 0:
                return self.set(x)
            if not 0 < constant < bits:
                return self.bitwise_and(x, self._constant(0, x.dtype))
            return self.bitwise_right_shift(cleared, constant - 1)
        amount = self.minimum(self.maximum(self.sub(shift, 1), 0), bits - 1)
        shifted = self.bitwise_right_shift(cleared, amount)
        outside = self.logical_or(self.lt(shift, 0), self.ge(shift, bits))
        return self.where(self.eq(shift, 0), x,
                          self.where(outside, self._constant(0, x.dtype), shifted))

    def segment_set(self, x: Tensor) -> Tensor:
        """nvFuser's segmentation hint (a segment boundary after x): a copy
        of x here; smelt's segmenter places the boundaries itself."""
        return self.set(x)
