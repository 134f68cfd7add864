"""ATen (and prims) nodes of an FX graph -> FusionDefinition ops.

TRANSLATORS maps each supported op overload to a function that adds the
node's computation to a FusionDefinition. Whether a node is supported is
decided by translating it alone into a scratch definition (node_support,
fx/definition.py):
the same code decides support and does the work, so nothing is claimed that
does not translate. A translator raises Unsupported for argument forms it
does not handle (symbolic sizes, unsupported keyword values).

A node of several outputs (split, unbind) translates to a tuple of values;
its users are `getitem` nodes, which take one of them. The partitioner puts
a node's getitems in the node's partition, so a tuple never crosses a
partition boundary.
"""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

import torch
import torch.fx

from smelt._C import DataType
from smelt.dtypes import to_data_type
from smelt.fusion_definition import Tensor
from smelt.fx.nodes import Unsupported, meta_tensor
from smelt.fx.pools import POOL_TRANSLATORS
from smelt.fx.registry import Translator, registrar
from smelt.fx.scans import SCAN_TRANSLATORS
from smelt.fx.scatter import SCATTER_TRANSLATORS
from smelt.fx.special import SPECIAL_TRANSLATORS

if TYPE_CHECKING:  # the translators' first argument (fx/definition.py)
    from smelt.fx.definition import Translation

aten = torch.ops.aten
prims = torch.ops.prims


TRANSLATORS: Dict[Any, Translator] = {}
translates = registrar(TRANSLATORS)


def _numel(node: torch.fx.Node, dims: Sequence[int]) -> int:
    """The number of elements reduced over `dims` (constant sizes only)."""
    val = meta_tensor(node)
    sizes = [val.shape[d] for d in dims] if val is not None else []
    if val is None or any(not isinstance(s, int) for s in sizes):
        raise Unsupported(f"{node.name}: the reduced extent is not a constant")
    return math.prod(sizes)


def _reduced_dims(node: torch.fx.Node, dims: Optional[Sequence[int]]) -> List[int]:
    rank = meta_tensor(node).dim()
    if dims is None or len(dims) == 0:
        return list(range(rank))
    return [d + rank if d < 0 else d for d in dims]


# ---- elementwise ----
def _with_alpha(t: Translation, node: torch.fx.Node, combine: str, a: Any, b: Any,
                alpha: Any) -> Any:
    """a + alpha * b (or a - alpha * b). torch computes it for half and
    bfloat16 in float and rounds once; alpha * b rounded to 16 bits first
    would be off by up to half an ulp of the product before the sum (more
    than an ulp of a result that cancels), so those operands go to float
    (translate() casts the result back)."""
    ops = t.fd.ops
    x, y = t.operand(a, node), t.operand(b, node)
    if alpha != 1:
        if meta_tensor(node).dtype in (torch.float16, torch.bfloat16):
            x, y = (ops.cast(v, DataType.Float) if isinstance(v, Tensor) else v for v in (x, y))
        y = ops.mul(y, alpha) if isinstance(y, Tensor) else y * alpha
    return getattr(ops, combine)(x, y)


@translates(aten.add.Tensor, aten.add.Scalar)
def _add(t, node, a, b, alpha=1):
    return _with_alpha(t, node, "add", a, b, alpha)


@translates(aten.sub.Tensor, aten.sub.Scalar)
def _sub(t, node, a, b, alpha=1):
    return _with_alpha(t, node, "sub", a, b, alpha)


def _simple(fd_op: str) -> Translator:
    def translate(t, node, *args):
        return getattr(t.fd.ops, fd_op)(*(t.operand(a, node) for a in args))
    return translate


_ELEMENTWISE = {
    "add": [prims.add.default],
    "sub": [prims.sub.default],
    "maximum": [aten.maximum.default, prims.maximum.default],
    "minimum": [aten.minimum.default, prims.minimum.default],
    "relu": [aten.relu.default],
    "where": [aten.where.self, prims.where.default],
    "set": [aten.alias.default],
    "logical_not": [aten.logical_not.default],
    "logical_and": [aten.logical_and.default],
    "logical_or": [aten.logical_or.default],
    "pow": [aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, prims.pow.default],
    "remainder": [aten.remainder.Tensor, aten.remainder.Scalar],
    "fmod": [aten.fmod.Tensor, aten.fmod.Scalar],
    "bitwise_not": [aten.bitwise_not.default, prims.bitwise_not.default],
    "signbit": [aten.signbit.default, prims.signbit.default],
}
for _name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    _ELEMENTWISE[_name] = [getattr(aten, _name).Tensor, getattr(aten, _name).Scalar,
                           getattr(prims, _name).default]
for _name in ["neg", "exp", "tanh", "abs", "sqrt", "rsqrt", "log", "log2", "log1p", "exp2",
              "expm1", "sigmoid", "erf", "reciprocal", "sin", "cos", "floor", "ceil", "round",
              "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log10", "erfc", "lgamma",
              "trunc"]:
    _ELEMENTWISE.setdefault(_name, []).append(getattr(aten, _name).default)
    if hasattr(prims, _name):
        _ELEMENTWISE[_name].append(getattr(prims, _name).default)
_ELEMENTWISE["pow"].append(aten.pow.Scalar)  # a number to the power of a tensor
_ELEMENTWISE["atan2"] = [aten.atan2.default, prims.atan2.default]
_ELEMENTWISE["hypot"] = [aten.hypot.default, prims.hypot.default]
_ELEMENTWISE["copysign"] = [aten.copysign.Tensor, aten.copysign.Scalar]
_ELEMENTWISE["nextafter"] = [aten.nextafter.default, prims.nextafter.default]
_ELEMENTWISE["gcd"] = [aten.gcd.default, prims.gcd.default]
_ELEMENTWISE["lcm"] = [aten.lcm.default]
_ELEMENTWISE["bitwise_left_shift"] = [aten.bitwise_left_shift.Tensor,
                                      aten.bitwise_left_shift.Tensor_Scalar,
                                      aten.__lshift__.Tensor, aten.__lshift__.Scalar,
                                      prims.shift_left.default]
_ELEMENTWISE["bitwise_right_shift"] = [aten.bitwise_right_shift.Tensor,
                                       aten.bitwise_right_shift.Tensor_Scalar,
                                       aten.__rshift__.Tensor, aten.__rshift__.Scalar,
                                       prims.shift_right_arithmetic.default]
for _name in ["eq", "ne", "lt", "le", "gt", "ge"]:
    _ELEMENTWISE[_name] = [getattr(aten, _name).Tensor, getattr(aten, _name).Scalar]
    if hasattr(prims, _name):
        _ELEMENTWISE[_name].append(getattr(prims, _name).default)
for _name, _targets in _ELEMENTWISE.items():
    for _target in _targets:
        TRANSLATORS[_target] = _simple(_name)


@translates(aten.mul.Tensor, aten.mul.Scalar, prims.mul.default)
def _mul(t, node, a, b):
    # A factor of 1 (addmm's alpha and beta as torch decomposes it) is the
    # other operand, cast to the product's dtype by translate(): no multiply
    # between a matmul and its bias add, which the library's addmm takes.
    for x, y in ((a, b), (b, a)):
        if type(y) in (int, float) and y == 1 and isinstance(x, torch.fx.Node):
            return t.operand(x, node)
    return t.fd.ops.mul(t.operand(a, node), t.operand(b, node))


@translates(aten.clone.default)
def _clone(t, node, x, memory_format=None):
    # A copy in any memory format: a fusion output is written in its traced
    # layout (fx/layout.py), which is the format the clone asked for.
    return t.fd.ops.set(t.arg(x))


@translates(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode,
            prims.div.default, aten.floor_divide.default, aten.floor_divide.Scalar)
def _div(t, node, a, b, rounding_mode=None):
    # torch's meanings in smelt's ops: aten.div is true division (truediv);
    # rounding_mode='trunc' and prims.div on integers are smelt's div (C's
    # truncation, integers stay integral); 'floor' (floor_divide) rounds the
    # quotient toward -inf.
    if node.target in (aten.floor_divide.default, aten.floor_divide.Scalar):
        rounding_mode = "floor"
    elif node.target is prims.div.default:
        rounding_mode = None if meta_tensor(node).dtype.is_floating_point else "trunc"
    if rounding_mode not in (None, "trunc", "floor"):
        raise Unsupported(f"div with rounding_mode={rounding_mode!r}")
    ops = t.fd.ops
    x, y = t.operand(a, node), t.operand(b, node)
    if rounding_mode is None:
        return ops.truediv(x, y)
    if meta_tensor(node).dtype.is_floating_point:
        if meta_tensor(node).dtype in (torch.float16, torch.bfloat16):
            # Rounded in float, as torch does: a half/bfloat16 quotient would
            # round first (-5.0074 to -5.0 in bfloat16, floored to -5, not -6).
            x, y = (ops.cast(v, DataType.Float) if isinstance(v, Tensor) else v for v in (x, y))
        q = ops.truediv(x, y)
        return ops.trunc(q) if rounding_mode == "trunc" else ops.floor(q)
    q = ops.div(x, y)
    if rounding_mode == "trunc":
        return q
    # Integers: the truncated quotient, one less where the remainder is nonzero
    # and its sign differs from the divisor's.
    r = ops.fmod(x, y)
    if isinstance(y, (int, float)):
        signs_differ = ops.lt(r, 0) if y >= 0 else ops.gt(r, 0)
    else:
        signs_differ = ops.ne(ops.lt(r, 0), ops.lt(y, 0))
    return ops.where(ops.logical_and(ops.ne(r, 0), signs_differ), ops.sub(q, 1), q)


@translates(prims.sign.default)
def _sign(t, node, x):
    """-1, 0 or 1 in x's type; NaN gives 0, as torch.sign."""
    ops = t.fd.ops
    if meta_tensor(x).dtype == torch.bool:
        return ops.set(t.arg(x))
    v = t.arg(x)
    return ops.where(ops.gt(v, 0), 1, ops.where(ops.lt(v, 0), -1, 0))


@translates(aten.angle.default)
def _angle(t, node, x):
    """The argument of a real number: pi below 0, else 0; NaN stays NaN."""
    ops = t.fd.ops
    v = t.arg(x)
    return ops.where(ops.lt(v, 0), math.pi, ops.where(ops.ne(v, v), v, 0.0))


@translates(prims.fmax.default, prims.fmin.default)
def _fmax_fmin(t, node, a, b):
    """maximum/minimum ignoring a NaN operand (NaN only where both are)."""
    ops = t.fd.ops
    x, y = t.operand(a, node), t.operand(b, node)
    pick = ops.maximum if node.target is prims.fmax.default else ops.minimum
    if not meta_tensor(node).dtype.is_floating_point:
        return pick(x, y)
    return ops.where(ops.ne(x, x), y, ops.where(ops.ne(y, y), x, pick(x, y)))


@translates(aten.gelu.default)
def _gelu(t, node, x, approximate="none"):
    return t.fd.ops.gelu(t.arg(x), approximate)


@translates(aten._to_copy.default)
def _to_copy(t, node, x, dtype=None, layout=None, device=None, pin_memory=None,
             non_blocking=False, memory_format=None):
    src = meta_tensor(x)
    if device is not None and src is not None and torch.device(device) != src.device:
        raise Unsupported("_to_copy to another device")
    x = t.arg(x)
    return t.fd.ops.cast(x, to_data_type(dtype)) if dtype is not None else t.fd.ops.set(x)


@translates(prims.convert_element_type.default)
def _convert(t, node, x, dtype):
    return t.fd.ops.cast(t.arg(x), to_data_type(dtype))


# ---- reductions ----
def reduces(*targets: Any) -> Callable[[Translator], Translator]:
    """translates() for a reduction: of a 0-dim tensor (one element, no axis
    to reduce) the result is the element itself, in the result's dtype
    (translate() casts: a sum of int32 is int64, any() a bool)."""
    def register(fn: Translator) -> Translator:
        def translate(t, node, x, *args, **kwargs):
            if meta_tensor(x).dim() == 0:
                return t.fd.ops.set(t.arg(x))
            return fn(t, node, x, *args, **kwargs)
        translates(*targets)(translate)
        return fn
    return register


@reduces(aten.sum.dim_IntList, aten.sum.default)
def _sum(t, node, x, dims=None, keepdim=False, dtype=None):
    dims = _reduced_dims(x, dims)
    return t.fd.ops.sum(t.arg(x), dims, keepdim, None if dtype is None else to_data_type(dtype))


@reduces(prims.sum.default)
def _prims_sum(t, node, x, dims, output_dtype=None):
    return t.sum(t.arg(x), _reduced_dims(x, dims))


@reduces(aten.prod.dim_int, aten.prod.default)
def _prod(t, node, x, dim=None, keepdim=False, dtype=None):
    dims = _reduced_dims(x, None if dim is None else [dim])
    return t.fd.ops.prod(t.arg(x), dims, keepdim, None if dtype is None else to_data_type(dtype))


@reduces(prims.prod.default)
def _prims_prod(t, node, x, dims, output_dtype=None):
    return t.fd.ops.prod(t.arg(x), _reduced_dims(x, dims))


@reduces(aten.amax.default, prims.amax.default, aten.max.default)
def _amax(t, node, x, dims=(), keepdim=False):
    return t.fd.ops.max(t.arg(x), _reduced_dims(x, dims), keepdim)


@reduces(prims.amin.default, aten.min.default)
def _amin(t, node, x, dims=()):
    return t.fd.ops.min(t.arg(x), _reduced_dims(x, dims))


def _extreme_and_index(t, x_node, dim, keepdim, largest):
    """(the max or min over `dim`, the index of its first occurrence), as
    torch.max/min(dim) and argmax/argmin: a NaN counts as the extreme (the
    reduction propagates it, and x != x finds it). dim None: over every
    element, the index into the flattened tensor."""
    ops = t.fd.ops
    x = t.arg(x_node)
    if meta_tensor(x_node).dtype == torch.bool:  # as 0/1 (translate() casts the values back)
        x = ops.cast(x, DataType.Int32)
    shape = list(meta_tensor(x_node).shape)
    if dim is None:
        x = ops.reshape(x, [math.prod(shape)]) if len(shape) != 1 else x
        shape, dim, keepdim_shape = [math.prod(shape)], 0, [1] * len(meta_tensor(x_node).shape)
    else:
        dim = dim + len(shape) if dim < 0 else dim
        keepdim_shape = None
    floating = meta_tensor(x_node).dtype.is_floating_point
    extreme = ops.max(x, [dim], True) if largest else ops.min(x, [dim], True)
    hit = ops.eq(x, extreme)
    if floating:
        hit = ops.logical_or(hit, ops.ne(x, x))
    positions = ops.broadcast_in_dim(ops.iota(shape[dim], 0, 1, DataType.Int), shape, [dim])
    candidates = ops.where(hit, positions, shape[dim])  # the first hit is the least
    index = ops.min(candidates, [dim], True)
    if keepdim_shape is not None:  # argmax(x, keepdim=True) without dim: all ones
        return (ops.reshape(extreme, keepdim_shape) if keepdim else ops.squeeze(extreme, [0]),
                ops.reshape(index, keepdim_shape) if keepdim else ops.squeeze(index, [0]))
    if keepdim:
        return extreme, index
    return ops.squeeze(extreme, [dim]), ops.squeeze(index, [dim])


@translates(aten.argmax.default, aten.argmin.default)
def _argmax(t, node, x, dim=None, keepdim=False):
    if meta_tensor(x).dim() == 0:
        return t.fd.ops.full([], 0, DataType.Int)
    largest = node.target is aten.argmax.default
    return _extreme_and_index(t, x, dim, keepdim, largest)[1]


@translates(aten.max.dim, aten.min.dim)
def _max_dim(t, node, x, dim, keepdim=False):
    if meta_tensor(x).dim() == 0:  # the element and index 0
        return t.fd.ops.set(t.arg(x)), t.fd.ops.full([], 0, DataType.Int)
    return _extreme_and_index(t, x, dim, keepdim, node.target is aten.max.dim)


@reduces(aten.any.default, aten.any.dim, aten.any.dims)
def _any(t, node, x, dims=None, keepdim=False):
    """Whether any element is nonzero: the maximum of (x != 0)."""
    ops = t.fd.ops
    if isinstance(dims, int):
        dims = [dims]
    return ops.max(ops.ne(t.arg(x), 0), _reduced_dims(x, dims), keepdim)


@reduces(aten.mean.dim, aten.mean.default)
def _mean(t, node, x, dims=None, keepdim=False, dtype=None):
    dims = _reduced_dims(x, dims)
    total = t.fd.ops.sum(t.arg(x), dims, keepdim, None if dtype is None else to_data_type(dtype))
    return t.fd.ops.div(total, float(_numel(x, dims)))


@translates(prims.var.default)
def _prims_var(t, node, x, dims, correction, output_dtype=None):
    dims = _reduced_dims(x, dims)
    n = _numel(x, dims)
    ops, xv = t.fd.ops, t.arg(x)
    mean = ops.div(t.sum(xv, dims, keepdim=True), float(n))
    centered = ops.sub(xv, mean)
    return ops.div(ops.sum(ops.mul(centered, centered), dims), float(n - correction))


# ---- shapes ----
@translates(prims.broadcast_in_dim.default)
def _broadcast_in_dim(t, node, x, shape, broadcast_dims):
    return t.fd.ops.broadcast_in_dim(t.arg(x), t.ints(shape, "shape"),
                                     t.ints(broadcast_dims, "broadcast_dims"))


@translates(aten.unsqueeze.default)
def _unsqueeze(t, node, x, dim):
    return t.fd.ops.unsqueeze(t.arg(x), dim)


@translates(aten.squeeze.dim, aten.squeeze.dims)
def _squeeze(t, node, x, dims):
    return t.fd.ops.squeeze(t.arg(x), [dims] if isinstance(dims, int) else t.ints(dims, "dims"))


@translates(aten.permute.default, prims.transpose.default)
def _permute(t, node, x, dims):
    return t.fd.ops.permute(t.arg(x), t.ints(dims, "dims"))


@translates(aten.transpose.int)
def _transpose(t, node, x, dim0, dim1):
    return t.fd.ops.transpose(t.arg(x), dim0, dim1)


@translates(aten.t.default)
def _t(t, node, x):
    xv = t.arg(x)
    return t.fd.ops.transpose(xv, 0, 1) if meta_tensor(x).dim() == 2 else t.fd.ops.set(xv)


@translates(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view(t, node, x, shape):
    """With static shapes the fusion's extents are the traced sizes and the
    view is the traced shape. Over symbolic input extents the new shape is
    written in terms of the input's: dimensions equal from the front or the
    back pass through (as the input's extents), the one remaining entry other
    than 1 is -1. Anything else (a symbolic dimension split in several) is
    refused by smelt's reshape and the node stays in torch."""
    src, out = meta_tensor(x), meta_tensor(node)
    in_shape, out_shape = list(src.shape), list(out.shape)
    if any(not isinstance(s, int) for s in in_shape + out_shape):
        raise Unsupported(f"{node.name}: view with symbolic sizes")
    xv = t.arg(x)
    if all(isinstance(e, int) for e in xv.shape):
        return t.fd.ops.reshape(xv, out_shape)
    entries: List[Any] = list(out_shape)
    i = j = 0
    while i < len(in_shape) and j < len(out_shape) and in_shape[i] == out_shape[j]:
        entries[j] = xv.size(i)
        i, j = i + 1, j + 1
    a, b = len(in_shape) - 1, len(out_shape) - 1
    while a >= i and b >= j and in_shape[a] == out_shape[b]:
        entries[b] = xv.size(a)
        a, b = a - 1, b - 1
    middle = [k for k in range(j, b + 1) if out_shape[k] != 1]
    if len(middle) == 1:
        entries[middle[0]] = -1
    return t.fd.ops.reshape(xv, entries)


@translates(aten.expand.default)
def _expand(t, node, x, sizes, implicit=False):
    sizes = t.ints(sizes, "sizes")
    src = meta_tensor(x)
    lead = len(sizes) - src.dim()
    xv = t.arg(x)
    if lead > 0:
        xv = t.fd.ops.broadcast(xv, [d < lead for d in range(len(sizes))])
    src_shape = [1] * lead + list(src.shape)
    target = [s if s != -1 and src_shape[d] == 1 and s != 1 else -1 for d, s in enumerate(sizes)]
    return t.fd.ops.expand(xv, target) if any(s != -1 for s in target) else xv


@translates(aten.constant_pad_nd.default)
def _pad(t, node, x, pad, value=0):
    return t.fd.ops.pad(t.arg(x), t.ints(pad, "pad"), value)


def _dim(node_or_val: Any, dim: int) -> int:
    rank = meta_tensor(node_or_val).dim()
    return dim + rank if dim < 0 else dim


def _slice_dim(t: Translation, node: torch.fx.Node, x: Any, dim: int, start: int, stop: int) -> Any:
    rank = meta_tensor(x).dim()
    starts, stops = [0] * rank, [_TO_THE_END] * rank
    starts[dim], stops[dim] = start, stop
    xv = t.arg(x)
    if not isinstance(xv.size(dim), int) and (start, stop) != (0, _TO_THE_END):
        # The fusion would concretize it per size (issue 45), but its output
        # is dense where torch's is a view whose strides a symbolic output
        # layout cannot restore: the view stays in torch.
        raise Unsupported(f"{node.name}: slice of the symbolic extent of dimension {dim}")
    return t.fd.ops.slice(xv, starts, stops)


_TO_THE_END = 2**63 - 1


@translates(aten.slice.Tensor)
def _slice(t, node, x, dim=0, start=None, end=None, step=1):
    if step != 1:
        raise Unsupported(f"slice with step {step}")
    start = 0 if start is None else start
    end = _TO_THE_END if end is None else end
    if not isinstance(start, int) or not isinstance(end, int):
        raise Unsupported("slice with symbolic bounds")
    return _slice_dim(t, node, x, _dim(x, dim), start, min(end, _TO_THE_END))


@translates(aten.narrow.default)
def _narrow(t, node, x, dim, start, length):
    if not isinstance(start, int) or not isinstance(length, int):
        raise Unsupported("narrow with symbolic bounds")
    dim = _dim(x, dim)
    if start < 0:
        start += meta_tensor(x).shape[dim]
    return _slice_dim(t, node, x, dim, start, start + length)


def _select_at(t: Translation, node: torch.fx.Node, x: Any, dim: int, index: int) -> Any:
    """x[..., index, ...] along `dim` (non-negative), the dimension removed."""
    stop = index + 1 if index != -1 else _TO_THE_END
    return t.fd.ops.squeeze(_slice_dim(t, node, x, dim, index, stop), [dim])


@translates(aten.select.int)
def _select(t, node, x, dim, index):
    if not isinstance(index, int):
        raise Unsupported("select with a symbolic index")
    return _select_at(t, node, x, _dim(x, dim), index)


def _static_extent(node: torch.fx.Node, x: Any, dim: int) -> int:
    extent = meta_tensor(x).shape[dim]
    if not isinstance(extent, int):
        raise Unsupported(f"{node.name}: the split dimension has a symbolic extent")
    return extent


def _pieces(t: Translation, node: torch.fx.Node, x: Any, dim: int, sizes: List[int]) -> tuple:
    """Consecutive slices of x along `dim`, of the given sizes (torch's split)."""
    if sum(sizes) != _static_extent(node, x, dim) or any(s < 0 for s in sizes):
        raise Unsupported(f"{node.name}: split sizes {sizes} do not add up to the extent")
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return tuple(_slice_dim(t, node, x, dim, b, b + s) for b, s in zip(starts, sizes))


@translates(aten.split.Tensor)
def _split(t, node, x, split_size, dim=0):
    if not isinstance(split_size, int) or split_size <= 0:
        raise Unsupported(f"split with split size {split_size}")
    dim = _dim(x, dim)
    extent = _static_extent(node, x, dim)
    sizes = [min(split_size, extent - b) for b in range(0, extent, split_size)] or [0]
    return _pieces(t, node, x, dim, sizes)


@translates(aten.split_with_sizes.default)
def _split_with_sizes(t, node, x, split_sizes, dim=0):
    return _pieces(t, node, x, _dim(x, dim), t.ints(split_sizes, "split sizes"))


@translates(aten.unbind.int)
def _unbind(t, node, x, dim=0):
    dim = _dim(x, dim)
    return tuple(_select_at(t, node, x, dim, i) for i in range(_static_extent(node, x, dim)))


@translates(operator.getitem)
def _getitem(t, node, source, index):
    """One output of a node of several outputs translated in this fusion."""
    values = t.values.get(source) if isinstance(source, torch.fx.Node) else None
    if not isinstance(values, tuple) or not isinstance(index, int):
        raise Unsupported(f"{node.name}: indexing a value that is not a tuple of the fusion")
    return values[index]


def _torch_slice_bounds(extent: int, start: Optional[int], end: Optional[int]) -> tuple:
    """torch's x.slice(dim, start, end) bounds of a dimension of `extent`:
    None is the whole range, negatives count from the end, both clamp into
    [0, extent] and end to at least start."""
    start = 0 if start is None else start
    end = extent if end is None else end
    if start < 0:
        start += extent
    if end < 0:
        end += extent
    start = min(max(start, 0), extent)
    end = min(max(end, start), extent)
    return start, end


def _zero_pad_along(t: Translation, value: Tensor, rank: int, dim: int, before: int,
                    after: int) -> Tensor:
    """`value` with `before` zeros ahead of it and `after` behind along `dim`."""
    widths = [0] * (2 * (rank - dim))
    widths[-2:] = [before, after]  # constant_pad_nd's order: the last dimension first
    return t.fd.ops.pad(value, widths, 0)


@translates(aten.slice_backward.default)
def _slice_backward(t, node, grad, input_sizes, dim, start, end, step):
    """zeros(input_sizes) with grad written at [start:end] along dim: with
    step 1 a zero padding of grad."""
    if not isinstance(step, int) or step != 1:
        raise Unsupported(f"slice_backward with step {step}: only step 1 is a padding")
    sizes = t.ints(input_sizes, "input sizes")
    if not all(isinstance(v, int) or v is None for v in (start, end)):
        raise Unsupported("slice_backward with symbolic bounds")
    dim = dim + len(sizes) if dim < 0 else dim
    start, end = _torch_slice_bounds(sizes[dim], start, end)
    if meta_tensor(grad).shape[dim] != end - start:
        raise Unsupported(f"{node.name}: the gradient's extent is not the slice's")
    if end == start:
        raise Unsupported(f"{node.name}: an empty slice (its gradient is all zeros)")
    return _zero_pad_along(t, t.arg(grad), len(sizes), dim, start, sizes[dim] - end)


@translates(aten.select_backward.default)
def _select_backward(t, node, grad, input_sizes, dim, index):
    """zeros(input_sizes) with grad written at index along dim."""
    sizes = t.ints(input_sizes, "input sizes")
    if not isinstance(index, int):
        raise Unsupported("select_backward with a symbolic index")
    dim = dim + len(sizes) if dim < 0 else dim
    index = index + sizes[dim] if index < 0 else index
    if not 0 <= index < sizes[dim]:
        raise Unsupported(f"{node.name}: index {index} out of range")
    return _zero_pad_along(t, t.fd.ops.unsqueeze(t.arg(grad), dim), len(sizes), dim, index,
                           sizes[dim] - index - 1)


def _row_major(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether (sizes, strides) lays elements out densely in row-major order
    (strides of size-1 dimensions do not matter)."""
    expected = 1
    for n, s in reversed(list(zip(sizes, strides))):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _whole_row_major_view(node: torch.fx.Node, x: Any, size: Any, stride: Any,
                          offset: Any) -> List[int]:
    """The sizes of as_strided(x, size, stride, offset) when it reads every
    element of x in row-major order and lays them out in row-major order, a
    reshape: x's traced layout is row-major from offset, and so is the view's
    (ConvNeXt's training graphs restride its pooled [1, C, 1, 1] value this
    way, and the backward of that as_strided scatters its gradient into
    zeros through the same view). Anything else depends on a storage layout
    a fusion does not have."""
    src = meta_tensor(x)
    offset = src.storage_offset() if offset is None else offset  # None: x's own
    values = list(size) + list(stride) + list(src.shape) + list(src.stride()) + [offset]
    if not all(isinstance(v, int) for v in values + [src.storage_offset()]):
        raise Unsupported("as_strided with symbolic sizes")
    if offset != src.storage_offset() or math.prod(size) != src.numel() or \
            not _row_major(size, stride) or not _row_major(src.shape, src.stride()):
        raise Unsupported(f"{node.target.__name__} other than a reshape of a row-major tensor")
    return list(size)


@translates(aten.as_strided.default)
def _as_strided(t, node, x, size, stride, storage_offset=None):
    sizes = _whole_row_major_view(node, x, size, stride, storage_offset)
    xv = t.arg(x)
    return t.fd.ops.reshape(xv, sizes) if sizes != list(meta_tensor(x).shape) else t.fd.ops.set(xv)


@translates(aten.as_strided_scatter.default)
def _as_strided_scatter(t, node, x, src, size, stride, storage_offset=None):
    """x with the view as_strided(x, ...) replaced by src: when that view is
    all of x (a reshape), src reshaped to x's sizes."""
    _whole_row_major_view(node, x, size, stride, storage_offset)
    shape = list(meta_tensor(x).shape)
    sv = t.arg(src)
    return t.fd.ops.reshape(sv, shape) if list(meta_tensor(src).shape) != shape else t.fd.ops.set(sv)


@translates(aten.copy.default)
def _copy(t, node, x, src, non_blocking=False):
    """A tensor like x holding src (broadcast to x's sizes, in x's dtype)."""
    shape = t.ints(meta_tensor(x).shape, "sizes")
    src_shape = list(meta_tensor(src).shape)
    sv = t.fd.ops.cast(t.arg(src), to_data_type(meta_tensor(x).dtype))
    if src_shape == shape:
        return t.fd.ops.set(sv)
    lead = len(shape) - len(src_shape)
    return t.fd.ops.broadcast_in_dim(sv, shape, list(range(lead, len(shape))))


@translates(aten.new_zeros.default)
def _new_zeros(t, node, x, size, dtype=None, layout=None, device=None, pin_memory=None):
    return t.fd.ops.full(t.ints(size, "size"), 0, to_data_type(meta_tensor(node).dtype))


@translates(aten.cat.default)
def _cat(t, node, tensors, dim=0):
    # Empty operands (a key/value cache before its first entry) are dropped
    # from the graph before partitioning (drop_empty_cat_operands).
    if any(_is_empty(a) for a in tensors):
        raise Unsupported("cat of an empty tensor")
    return t.fd.ops.cat([t.arg(a) for a in tensors], _dim(node, dim))


def _is_empty(node: Any) -> bool:
    val = meta_tensor(node)
    return val is not None and any(isinstance(s, int) and s == 0 for s in val.shape)


def drop_empty_cat_operands(graph: torch.fx.Graph) -> None:
    """cat skips empty operands (torch also skips legacy [0]-shaped ones of
    another rank); left in the graph they would be fusion inputs with no
    elements. The nodes that only fed them (lift_fresh_copy of an empty
    constant) become dead and are removed."""
    changed = False
    for node in graph.nodes:
        if node.target is not aten.cat.default or not node.args:
            continue
        operands = list(node.args[0])
        kept = [a for a in operands if not _is_empty(a)]
        if kept and len(kept) < len(operands):
            node.args = (kept,) + tuple(node.args[1:])
            changed = True
    if changed:
        graph.eliminate_dead_code()


@translates(aten.embedding.default)
def _embedding(t, node, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # padding_idx and the flags only change the backward pass. A 0-dim index
    # selects one row, which index_select keeps as a dimension of extent 1.
    rows = t.fd.ops.index_select(t.arg(weight), t.arg(indices), 0)
    return t.fd.ops.squeeze(rows, [0]) if meta_tensor(indices).dim() == 0 else rows


@translates(aten.index_select.default)
def _index_select(t, node, x, dim, index):
    if meta_tensor(index).dim() != 1:
        raise Unsupported("index_select with an index that is not 1-D")
    return t.fd.ops.index_select(t.arg(x), t.arg(index), _dim(x, dim))


@translates(aten.gather.default)
def _gather(t, node, x, dim, index, sparse_grad=False):
    return t.fd.ops.gather(t.arg(x), t.arg(index), _dim(x, dim))


@translates(aten.arange.default, aten.arange.start, aten.arange.start_step)
def _arange(t, node, *args, dtype=None, layout=None, device=None, pin_memory=None):
    bounds = list(args)
    start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (bounds + [1])[:3]
    if not all(isinstance(v, (int, float)) for v in (start, end, step)):
        raise Unsupported("arange with symbolic bounds")
    length = math.ceil((end - start) / step)
    out = meta_tensor(node)
    if out is None or out.dim() != 1 or out.shape[0] != length:
        raise Unsupported("arange whose length is not the traced one")
    return t.fd.ops.iota(length, start, step, to_data_type(out.dtype))


@translates(aten.full.default)
def _full(t, node, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    out = meta_tensor(node)
    return t.fd.ops.full(t.ints(size, "size"), fill_value, to_data_type(out.dtype))


@translates(prims.rev.default)
def _rev(t, node, x, dims):
    """flip: along each dim, the elements at n-1, n-2, ..., 0 (an index map)."""
    ops = t.fd.ops
    out = t.arg(x)
    shape = meta_tensor(x).shape
    for dim in _reduced_dims(x, dims) if dims else []:
        n = shape[dim]
        out = ops.index_select(out, ops.iota(n, n - 1, -1, DataType.Int), dim)
    return out if dims else ops.set(out)


@translates(aten.full_like.default)
def _full_like(t, node, x, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    out = meta_tensor(node)
    if not out.is_contiguous():
        raise Unsupported("full_like of a non-contiguous layout")
    return t.fd.ops.full(list(out.shape), fill_value, to_data_type(out.dtype))


@translates(aten.scalar_tensor.default)
def _scalar_tensor(t, node, value, dtype=None, layout=None, device=None, pin_memory=None):
    return t.fd.ops.full([], value, to_data_type(meta_tensor(node).dtype))


@translates(aten.lift_fresh_copy.default)
def _lift_fresh_copy(t, node, x):
    return t.fd.ops.set(t.arg(x))


# ---- matmul ----
@translates(aten.mm.default, aten.bmm.default)
def _mm(t, node, a, b):
    return t.fd.ops.matmul(t.arg(a), t.arg(b))


# Pools (fx/pools.py), special functions (fx/special.py), the scatter
# family (fx/scatter.py) and the scans (fx/scans.py) translate through the
# same table.
TRANSLATORS.update(POOL_TRANSLATORS)
TRANSLATORS.update(SPECIAL_TRANSLATORS)
TRANSLATORS.update(SCATTER_TRANSLATORS)
TRANSLATORS.update(SCAN_TRANSLATORS)
