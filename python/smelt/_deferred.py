"""Definition time of ops whose output extents are known only at run time
(issue 45; _concretize.py builds them at execute).

A slice, pad, cat, reshape or expand whose extents need the run's values is
recorded as ``Record("deferred", (op, *args))``; replaying it gives the
definition fusion a placeholder of the right rank and dtype (a ``full`` of
fresh symbolic extents), so later calls check ranks and dtypes as usual.
This module decides which calls are deferred and builds the placeholder.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from smelt import _C
from smelt._C import DataType, SmeltError
from smelt._records import ExtentRef
from smelt.dtypes import to_data_type, to_torch_dtype

INT64_MAX = (1 << 63) - 1
DEFERRED = "deferred"


# ---- definition time: the placeholder --------------------------------------

_placeholder_count = [0]


def _fresh_extent(op: str, d: int) -> Any:
    _placeholder_count[0] += 1
    return _C.IntExpr.symbol(f"{op}{_placeholder_count[0]}.extent[{d}]")


def _check_int_entry(op: str, what: str, entry: Any) -> None:
    """A bound, width or shape entry: an int, a Size, or an integer scalar."""
    if isinstance(entry, (ExtentRef, int)) and not isinstance(entry, bool):
        return
    if isinstance(entry, _C.Val) and not entry.is_tensor and entry.dtype != DataType.Bool:
        return  # a floating scalar is truncated, as nvFuser casts it to an index
    raise SmeltError(f"{op}: {what} {entry} is not an integer (an int, Tensor.size(d), or an "
                     f"integer scalar)")


def tensor_rank(tv: Any) -> int:
    return len(tv.logical_no_reductions)


def placeholder(op: str, *args: Any) -> Any:
    """The definition fusion's stand-in for a deferred op: its rank and
    dtype, with the argument checks that do not need the run's values."""
    if op == "slice":
        tv, starts, stops, manual = args
        rank = tensor_rank(tv)
        if len(starts) != rank or len(stops) != rank:
            raise SmeltError(f"slice: tensor {tv.name} has rank {rank} but {len(starts)} starts "
                             f"and {len(stops)} ends were given")
        for d, (a, b) in enumerate(zip(starts, stops)):
            _check_int_entry("slice", f"dimension {d}'s start", a)
            _check_int_entry("slice", f"dimension {d}'s end", b)
        return _stand_in(op, tv.dtype, [None] * rank)
    if op == "pad":
        tv, widths, _value = args
        rank = tensor_rank(tv)
        if len(widths) % 2 or len(widths) // 2 > rank:
            raise SmeltError(f"pad: tensor {tv.name} of rank {rank} needs an even number of "
                             f"widths, at most {2 * rank}, got {len(widths)}")
        for k, w in enumerate(widths):
            _check_int_entry("pad", f"width {k}", w)
        padded = {rank - 1 - k for k in range(len(widths) // 2)}
        return _stand_in(op, tv.dtype, [None if d in padded else tv.logical_no_reductions[d].size
                                        for d in range(rank)])
    if op == "cat":
        tvs, dim = args
        rank = tensor_rank(tvs[0])
        d = dim + rank if dim < 0 else dim
        if not 0 <= d < rank:
            raise SmeltError(f"cat: dimension {dim} is out of range for rank {rank}")
        for tv in tvs:
            if tensor_rank(tv) != rank:
                raise SmeltError(f"cat: {tv.name} has rank {tensor_rank(tv)} where {tvs[0].name} has "
                                 f"rank {rank}")
        dtype = promoted_dtype([tv.dtype for tv in tvs])
        return _stand_in(op, dtype, [None if k == d else tvs[0].logical_no_reductions[k].size
                                     for k in range(rank)])
    if op == "reshape":
        tv, shape = args
        for k, e in enumerate(shape):
            _check_int_entry("reshape", f"entry {k}", e)
        if sum(1 for e in shape if isinstance(e, int) and e == -1) > 1:
            raise SmeltError(f"reshape: shape {_show(shape)} of {tv.name} has more than one -1")
        return _stand_in(op, tv.dtype, [None] * len(shape))
    if op == "expand":
        tv, shape = args
        rank = tensor_rank(tv)
        if len(shape) != rank:
            raise SmeltError(f"expand: tensor {tv.name} has rank {rank} but the shape has "
                             f"{len(shape)} entries")
        extents = []
        for d, (e, id_) in enumerate(zip(shape, tv.logical_no_reductions)):
            _check_int_entry("expand", f"entry {d}", e)
            broadcast = id_.iter_type == _C.IterType.Broadcast
            if is_int(e) and e != -1 and not broadcast and \
                    id_.size.value is not None and id_.size.value != e:
                raise SmeltError(f"expand: dimension {d} of {tv.name} has extent {id_.size} and "
                                 f"is not a broadcast, so it cannot expand to {e}")
            extents.append(id_.size if not broadcast or (is_int(e) and e == -1) else None)
        return _stand_in(op, tv.dtype, extents)
    raise SmeltError(f"{op}: cannot be deferred")  # not reached


def _stand_in(op: str, dtype: DataType, extents: Sequence[Any]) -> Any:
    shape = [_fresh_extent(op, d) if e is None else e for d, e in enumerate(extents)]
    return _C.full(shape, _C.constant(0.0, dtype), dtype)


def promoted_dtype(dtypes: Sequence[DataType]) -> DataType:
    result = to_torch_dtype(dtypes[0])
    for dt in dtypes[1:]:
        result = torch.promote_types(result, to_torch_dtype(dt))
    return to_data_type(result)


def _show(entries: Sequence[Any]) -> str:
    return "[" + ", ".join(str(e) for e in entries) + "]"


# ---- which calls are deferred -----------------------------------------------

def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def slice_needs_run_values(sizes: Sequence[Any], starts: Sequence[Any],
                           stops: Sequence[Any]) -> bool:
    """Whether a slice of a tensor of `sizes` (ints, or run-time sizes)
    needs the run's values: a bound that is not an int, a crop of a
    run-time extent, or an empty result (the core builds none)."""
    for size, a, b in zip(sizes, starts, stops):
        if not (is_int(a) and is_int(b)):
            return True
        whole = a == 0 and b >= INT64_MAX
        if whole:
            continue
        if not is_int(size):
            return True
        start, stop = (clamp(a, size), clamp(b, size))
        if stop <= start:
            return True
    return False


def pad_needs_run_values(sizes: Sequence[Any], widths: Sequence[Any]) -> bool:
    if not all(is_int(w) for w in widths):
        return True
    rank = len(sizes)
    for k in range(len(widths) // 2):
        size, lo, hi = sizes[rank - 1 - k], widths[2 * k], widths[2 * k + 1]
        if (lo < 0 or hi < 0) and not is_int(size):
            return True
        if is_int(size) and size + lo + hi < 1:
            return True
    return False


def clamp(p: int, extent: int) -> int:
    if p < 0:
        p += extent
    return min(max(p, 0), extent)
