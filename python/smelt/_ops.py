"""Implementations of every recorded operation on the active ``_C.Fusion``.

One function per record op: it receives the record's arguments with Refs
resolved to ``_C`` values and returns the values it defines. The same
functions build the definition eagerly (so mistakes raise at the line that
made them) and replay it on fresh fusions. Definition ops are listed in
DEFINITION_OPS, schedule ops in SCHEDULE_OPS.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from smelt import _C
from smelt._C import DataType
from smelt._records import ExtentRef, Impl
from smelt._deferred import DEFERRED, placeholder


def as_val(x: Any) -> Any:
    """A Python number becomes a constant scalar (bool, int64 or double, as
    PyTorch types Python scalars); fusion values pass through."""
    if isinstance(x, _C.Val):
        return x
    if isinstance(x, bool):
        return _C.constant(float(x), DataType.Bool)
    if isinstance(x, int):
        return _C.constant(float(x), DataType.Int)
    if isinstance(x, float):
        return _C.constant(x, DataType.Double)
    raise TypeError(f"expected a tensor, a scalar or a Python number, got {type(x).__name__}")


def _rank(tv: Any) -> int:
    return len(tv.logical_no_reductions)


def _axes(dims: Sequence[int], rank: int, op: str) -> list:
    axes = []
    for d in dims:
        n = d + rank if d < 0 else d
        if not 0 <= n < rank:
            raise _C.SmeltError(f"{op}: dimension {d} is out of range for a tensor of rank {rank}")
        axes.append(n)
    return axes


def physical_order(stride_order: Sequence[int]) -> tuple:
    """nvFuser's stride_order (dimension i has the stride_order[i]-th smallest
    stride) as the dimensions from outermost to innermost in memory."""
    return tuple(sorted(range(len(stride_order)), key=lambda d: -stride_order[d]))


def _define_tensor(shape, contiguity, dtype):
    tv = _C.define_tensor(list(shape), list(contiguity), dtype)
    _C.add_input(tv)
    return tv


def _define_scalar(value, dtype):
    if value is None:
        s = _C.symbolic_scalar(dtype)
        _C.add_input(s)
        return s
    return _C.constant(float(value), dtype)


def _reduction(c_op, tv, dims, keepdim, dtype):
    if dtype is not None and dtype != tv.dtype:
        tv = _C.cast(tv, dtype)
    rank = _rank(tv)
    # Half/bfloat16 sums and products accumulate in float in the core (ops.h).
    out = c_op(tv, list(dims) if dims is not None else list(range(rank)))
    if dtype is not None and out.dtype != dtype:
        out = _C.cast(out, dtype)  # torch.sum(int32, dtype=int32) stays int32
    if keepdim:
        reduced = {d + rank if d < 0 else d for d in dims} if dims is not None else set(range(rank))
        out = _C.broadcast(out, [d in reduced for d in range(rank)])
    return out


def _broadcast_in_dim(tv, shape, broadcast_dims):
    rank = len(shape)
    if len(broadcast_dims) != _rank(tv):
        raise _C.SmeltError(
            f"broadcast_in_dim: tensor {tv.name} has rank {_rank(tv)} but broadcast_dims has "
            f"{len(broadcast_dims)} entries")
    dims = _axes(broadcast_dims, rank, "broadcast_in_dim")
    if sorted(dims) != list(dims) or len(set(dims)) != len(dims):
        raise _C.SmeltError(f"broadcast_in_dim: broadcast_dims {list(broadcast_dims)} must be "
                            "strictly increasing")
    out = _C.broadcast(tv, [d not in dims for d in range(rank)]) if rank > len(dims) else tv
    # Axes of size 1 in `out` that `shape` asks to be larger are expanded.
    target = [-1] * rank
    for d, id_ in enumerate(out.logical_no_reductions):
        wanted = shape[d]
        if (isinstance(wanted, ExtentRef) or wanted not in (-1, 1)) and \
                id_.iter_type == _C.IterType.Broadcast:
            target[d] = _extent(wanted)
    return _C.expand(out, target) if any(not isinstance(t, int) or t != -1 for t in target) else out


_INTEGER_TYPES = (DataType.Int, DataType.Int32, DataType.Int16, DataType.Int8, DataType.UInt8)


def extent_of(scale: int, factors: Sequence[tuple]) -> Any:
    """`scale` times the sizes of the (TensorView, dimension) `factors`."""
    extent = _C.IntExpr(1)
    for tv, dim in factors:
        extent = extent * tv.logical_no_reductions[dim].size
    return extent * _C.IntExpr(scale)


def _extent(entry: Any) -> Any:
    """A reshape or expand entry: an int (-1: the rest, or kept), a Size (as Tensor.size()
    returns for a size known at run time; recorded as an ExtentRef) or the
    symbol of an input's size ("T0.size[1]")."""
    if isinstance(entry, ExtentRef):
        return extent_of(entry.scale, entry.factors)
    if isinstance(entry, _C.Val):
        # An integer scalar: a constant, or an input whose value is the extent
        # (bound by the executor like a tensor's size symbol).
        if entry.is_tensor or entry.dtype not in _INTEGER_TYPES:
            raise _C.SmeltError(f"a shape entry is {entry} ({entry.dtype}); extents are ints, "
                                "Tensor.size(d) or integer scalars")
        return _C.IntExpr(int(entry.value)) if entry.is_constant else _C.IntExpr.symbol(entry.symbol)
    if isinstance(entry, str):
        if not _C.is_size_symbol(entry):
            raise _C.SmeltError(f"reshape: entry {entry!r} is not a size symbol such as "
                                "'T0.size[1]'; pass Tensor.size(d) (products of them too)")
        return _C.IntExpr.symbol(entry)
    return _C.IntExpr(entry)


def _pad(tv, widths, value):
    """pad's fill is a constant when lowered; a scalar input fills through a
    mask of the padded positions (a padded all-true tensor) and where()."""
    if not isinstance(value, _C.Val):
        return _C.pad(tv, list(widths), float(value))
    if value.is_tensor:
        raise _C.SmeltError("pad: the fill value must be a scalar, not a tensor")
    if value.is_constant:
        return _C.pad(tv, list(widths), float(value.value))
    shape = [id_.size for id_ in tv.logical_no_reductions]
    inside = _C.pad(_C.full(shape, _C.constant(1.0, DataType.Bool), DataType.Bool),
                    list(widths), 0.0)
    out = _C.where(inside, _C.pad(tv, list(widths), 0.0), value)
    return out if out.dtype == tv.dtype else _C.cast(out, tv.dtype)


def _unary(c_op):
    return lambda a: c_op(as_val(a))


def _same_rank(*operands: Any) -> list:
    """Tensors of lower rank gain leading broadcast dimensions (numpy's and
    torch's implicit broadcasting, as nvFuser's binary ops do)."""
    vals = [as_val(v) for v in operands]
    rank = max((_rank(v) for v in vals if v.is_tensor), default=0)
    return [_C.broadcast(v, [True] * (rank - _rank(v)) + [False] * _rank(v))
            if v.is_tensor and 0 < _rank(v) < rank else v for v in vals]


def _binary(c_op):
    return lambda a, b: c_op(*_same_rank(a, b))


# torch's special functions (SMELT_SPECIAL_*_OPS in csrc/fusion/ir.h).
SPECIAL_UNARY_OPS = ("i0", "i0e", "i1", "i1e", "digamma", "erfinv", "ndtri", "log_ndtr", "erfcx",
                     "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                     "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                     "scaled_modified_bessel_k1", "spherical_bessel_j0")
SPECIAL_BINARY_OPS = ("polygamma", "igamma", "igammac", "zeta", "chebyshev_polynomial_t",
                      "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                      "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                      "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
                      "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
                      "legendre_polynomial_p")

# Elementwise ops: fd.ops.<name> maps to _C.<name> (scalars allowed).
UNARY_OPS = ("set", "neg", "exp", "tanh", "abs", "relu", "sqrt", "rsqrt", "log", "log2", "log1p",
             "exp2", "expm1", "sigmoid", "erf", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log10", "erfc", "lgamma", "floor", "ceil",
             "round", "trunc", "logical_not", "signbit", "bitwise_not") + SPECIAL_UNARY_OPS
BINARY_OPS = ("add", "sub", "mul", "div", "truediv", "maximum", "minimum", "pow", "remainder", "fmod", "atan2", "hypot", "copysign", "nextafter", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "eq",
              "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
              "bitwise_xor") + SPECIAL_BINARY_OPS

DEFINITION_OPS: Dict[str, Impl] = {
    "define_tensor": _define_tensor,
    "define_scalar": _define_scalar,
    "add_output": lambda v, stride_order=None: _C.add_output(
        _C.permute(v, list(physical_order(stride_order))) if stride_order else v),
    "full": lambda shape, value, dtype: _C.full([_extent(e) for e in shape], as_val(value), dtype),
    "cast": lambda tv, dtype: _C.cast(tv, dtype),
    "where": lambda c, a, b: _C.where(*_same_rank(c, a, b)),
    "sum": lambda tv, dims, keepdim, dtype: _reduction(_C.sum, tv, dims, keepdim, dtype),
    "max": lambda tv, dims, keepdim, dtype: _reduction(_C.max, tv, dims, keepdim, dtype),
    "prod": lambda tv, dims, keepdim, dtype: _reduction(_C.prod, tv, dims, keepdim, dtype),
    "uniform": lambda low, high, shape, seed, offset, dtype: _C.uniform(
        [_extent(e) for e in shape], as_val(low), as_val(high), as_val(seed), as_val(offset), dtype),
    "normal": lambda mean, std, shape, seed, offset, dtype: _C.normal(
        [_extent(e) for e in shape], as_val(mean), as_val(std), as_val(seed), as_val(offset), dtype),
    "broadcast": lambda tv, is_new: _C.broadcast(tv, list(is_new)),
    "broadcast_in_dim": _broadcast_in_dim,
    "expand": lambda tv, shape: _C.expand(tv, [_extent(e) for e in shape]),
    "pad": lambda tv, widths, value: _pad(tv, widths, value),
    "slice": lambda tv, starts, stops: _C.slice(tv, list(starts), list(stops)),
    "cat": lambda tvs, dim: _C.cat(list(tvs), dim),
    "index_select": lambda tv, index, dim: _C.index_select(tv, dim, index),
    "gather": lambda tv, index, dim: _C.gather(tv, dim, index),
    "scatter": lambda tv, index, src, dim, combine, wrap_negative: _C.scatter(
        tv, dim, index, as_val(src), combine, wrap_negative),
    "scan": lambda tv, dim, combine: _C.scan(tv, dim, combine),
    "iota": lambda length, start, step, dtype: _C.iota(_extent(length), as_val(start),
                                                      as_val(step), dtype),
    "matmul": _C.matmul,
    "permute": lambda tv, dims: _C.permute(tv, list(dims)),
    "transpose": _C.transpose,
    "squeeze": lambda tv, dims: _C.squeeze(tv, list(dims)),
    "unsqueeze": _C.unsqueeze,
    "reshape": lambda tv, shape: _C.reshape(tv, [_extent(e) for e in shape]),
    "flatten": _C.flatten,
    "linear": _C.linear,
    "gelu": lambda tv, approximate: _C.gelu(tv, approximate == "tanh"),
    # An op whose extents need the run's values (see _deferred.py, _concretize.py): the
    # definition holds a placeholder; execute() builds the concrete op.
    DEFERRED: lambda op, *args: placeholder(op, *args),
    **{name: _unary(getattr(_C, name)) for name in UNARY_OPS},
    **{name: _binary(getattr(_C, name)) for name in BINARY_OPS},
}


def _schedule(method: str) -> Impl:
    def impl(tv, *args):
        getattr(tv, method)(*args)
    return impl


def _reorder(tv, pairs):
    tv.reorder(dict(pairs))


def _parallelize(tv, axis, parallel_type):
    tv.axis(axis).parallelize(parallel_type)


SCHEDULE_OPS: Dict[str, Impl] = {
    "split": _schedule("split"),
    "merge": _schedule("merge"),
    "reorder": _reorder,
    "parallelize": _parallelize,
    "compute_at": _schedule("compute_at"),
    "inline_at": _schedule("inline_at"),
    "inline_most": _schedule("inline_most"),
    "inline_all": lambda: _C.inline_all(),
    "propagate_schedule": lambda tv: _C.propagate_schedule(tv),
    "cache_after": lambda tv: tv.cache_after(),
    "cache_before": lambda tv: tv.cache_before(),
    "set_memory_type": _schedule("set_memory_type"),
    "promote_reuse": _schedule("promote_reuse"),
    "circular_buffer": _schedule("circular_buffer"),
    "set_name": _schedule("set_name"),
}

IMPLS: Dict[str, Impl] = {**DEFINITION_OPS, **SCHEDULE_OPS}


def reduction_dims(dims: Optional[Sequence[int]]) -> Optional[tuple]:
    if dims is None:
        return None
    return (dims,) if isinstance(dims, int) else tuple(dims)
