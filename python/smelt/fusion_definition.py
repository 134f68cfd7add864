"""FusionDefinition: build a fusion from Python, schedule it, inspect and run it.

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.relu(fd.ops.add(t0, 1.0))
        fd.add_output(t1)
    out, = fd.execute([x])

Every call is recorded (see _records.py) and applied at once to a definition
Fusion, so a mistake raises SmeltError at the call that made it and tensors
know their rank and dtype. The record is the cache key: defining the same
fusion again reuses its compiled kernels.

Scheduling by hand: tensors expose split, merge, reorder, axis(i).parallelize,
compute_at, inline_at, inline_most, cache_after, cache_before,
set_memory_type, promote_reuse; call them after the definition (or in the
schedule() method of a FusionDefinition subclass). They are recorded like the
definition and replayed on every fusion built from it. A fusion without
schedule calls is scheduled automatically when it runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

import torch

from smelt import _C
from smelt._C import DataType, MemoryType, ParallelType, SmeltError
from smelt import _host_scalars, _ops
from smelt._records import ExtentRef, Record, Ref, apply, freeze, replay
from smelt.dtypes import to_data_type
from smelt.fusion_cache import RecordsKey

Number = Union[bool, int, float]


class Value:
    """A value (tensor or scalar) of a FusionDefinition."""

    __slots__ = ("fd", "index")

    def __init__(self, fd: "FusionDefinition", index: int):
        self.fd = fd
        self.index = index

    @property
    def _val(self):
        return self.fd._values[self.index]

    @property
    def dtype(self) -> DataType:
        return self._val.dtype

    def __repr__(self) -> str:
        return f"{type(self).__name__}(%{self.index}: {self._val})"


class Scalar(Value):
    """A scalar of the definition: a constant, or an input given to execute()."""

    @property
    def is_constant(self) -> bool:
        return self._val.is_constant


class Axis:
    """Loop axis `index` of a tensor (as it stands when this is used)."""

    __slots__ = ("tensor", "index")

    def __init__(self, tensor: "Tensor", index: int):
        self.tensor = tensor
        self.index = index

    @property
    def _id(self):
        return self.tensor._val.axis(self.index)

    @property
    def extent(self) -> Union[int, str]:
        value = self._id.extent_value
        return value if value is not None else self._id.extent

    @property
    def parallel_type(self) -> ParallelType:
        return self._id.parallel_type

    @property
    def iter_type(self):
        return self._id.iter_type

    def parallelize(self, parallel_type: ParallelType) -> "Axis":
        self.tensor.fd._schedule_op("parallelize", self.tensor, self.index, parallel_type)
        return self

    def __repr__(self) -> str:
        return f"Axis({self.tensor.name}[{self.index}]: {self._id})"


class Size:
    """A size known only at run time, as Tensor.size(d) returns it for a
    symbolic dimension: a product of logical extents of the definition's
    tensors, times an integer. reshape takes it as exactly that extent, so
    sizes of any tensor pass through, merge again (x.size(0) * x.size(1)) and
    split back a merged extent they are the factors of. The record keeps the
    tensors and dimensions, not the text, so replaying it on another fusion
    denotes the same extent there."""

    __slots__ = ("fd", "factors", "scale")

    def __init__(self, fd: "FusionDefinition", factors: Sequence[tuple], scale: int = 1):
        self.fd = fd
        self.factors = tuple(factors)  # (Tensor, logical dimension) pairs
        self.scale = scale

    def __mul__(self, other: Union[int, "Size"]) -> "Size":
        if isinstance(other, bool) or not isinstance(other, (int, Size)):
            return NotImplemented
        if isinstance(other, int):
            if other < 1:
                raise SmeltError(f"a size can only be multiplied by a positive int, got {other}")
            return Size(self.fd, self.factors, self.scale * other)
        if other.fd is not self.fd:
            raise SmeltError(f"{other!r} belongs to another FusionDefinition")
        return Size(self.fd, self.factors + other.factors, self.scale * other.scale)

    __rmul__ = __mul__

    def __str__(self) -> str:
        """The extent as the kernel spells it, e.g. (T0.size[2] * T0.size[3])."""
        return str(_ops.extent_of(self.scale, [(t._val, d) for t, d in self.factors]))

    def __repr__(self) -> str:
        return f"Size({self})"


class Tensor(Value):
    """A tensor of the definition. Its scheduling methods return the tensor
    (so they chain), cache_after/cache_before the new tensor."""

    @property
    def name(self) -> str:
        return self._val.name

    @property
    def ndim(self) -> int:
        """Rank as consumers see it (reduced axes excluded)."""
        return len(self._val.logical_no_reductions)

    def size(self, dim: int) -> Union[int, Size]:
        """The size of logical dimension `dim`: an int when it is fixed, else
        a Size (reshape entries take it)."""
        dims = self._val.logical_no_reductions
        n = dim + len(dims) if dim < 0 else dim
        if not 0 <= n < len(dims):
            raise SmeltError(f"size: dimension {dim} is out of range for tensor {self.name} "
                             f"of rank {len(dims)}")
        value = dims[n].size.value
        return value if value is not None else Size(self.fd, ((self, n),))

    @property
    def shape(self) -> "Shape":
        """The sizes (ints, or Size for sizes known at run time). Also
        callable, as nvFuser's Tensor.shape() is."""
        return Shape(self.size(d) for d in range(self.ndim))

    @property
    def num_loop_axes(self) -> int:
        return self._val.ndim

    @property
    def memory_type(self) -> MemoryType:
        return self._val.memory_type

    @property
    def compute_position(self) -> int:
        return self._val.compute_position

    def axis(self, index: int) -> Axis:
        self._val.axis(index)  # range check now, with smelt's message
        return Axis(self, index)

    def schedule_string(self) -> str:
        return self._val.transforms_string()

    # ---- scheduling primitives (recorded, replayed on every built fusion) ----
    def split(self, axis: int, factor: int, inner_split: bool = True) -> "Tensor":
        self.fd._schedule_op("split", self, axis, factor, inner_split)
        return self

    def merge(self, axis_outer: int, axis_inner: Optional[int] = None) -> "Tensor":
        inner = axis_outer + 1 if axis_inner is None else axis_inner
        self.fd._schedule_op("merge", self, axis_outer, inner)
        return self

    def reorder(self, old_to_new: Dict[int, int]) -> "Tensor":
        pairs = tuple(sorted(old_to_new.items()))
        self.fd._schedule_op("reorder", self, pairs)
        return self

    def compute_at(self, consumer: "Tensor", position: int) -> "Tensor":
        self.fd._schedule_op("compute_at", self, consumer, position)
        return self

    def inline_at(self, position: int) -> "Tensor":
        self.fd._schedule_op("inline_at", self, position)
        return self

    def inline_most(self) -> "Tensor":
        self.fd._schedule_op("inline_most", self)
        return self

    def cache_after(self) -> "Tensor":
        return self.fd._schedule_op("cache_after", self)

    def cache_before(self) -> "Tensor":
        return self.fd._schedule_op("cache_before", self)

    def set_memory_type(self, memory_type: MemoryType) -> "Tensor":
        self.fd._schedule_op("set_memory_type", self, memory_type)
        return self

    def promote_reuse(self, enable: bool = True) -> "Tensor":
        self.fd._schedule_op("promote_reuse", self, enable)
        return self

    def circular_buffer(self, stages: int) -> "Tensor":
        """Rotates this tensor over `stages` copies across the loop it is
        computed in, so loads for later iterations overlap this one's use."""
        self.fd._schedule_op("circular_buffer", self, stages)
        return self

    def set_name(self, name: str) -> "Tensor":
        self.fd._schedule_op("set_name", self, name)
        return self

    def propagate_schedule(self) -> "Tensor":
        """Replays this tensor's schedule onto every tensor connected to it."""
        self.fd._schedule_op("propagate_schedule", self)
        return self


def _operator(name: str, reflected: bool = False):
    def method(self, other):
        a, b = (other, self) if reflected else (self, other)
        return getattr(self.fd.ops, name)(a, b)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


# & | ^ ~ are torch's bitwise ops (the logical ones on bool tensors).
for _op, _name in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "truediv"),
                   ("pow", "pow"), ("mod", "remainder"), ("and", "bitwise_and"),
                   ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lt", "lt"), ("le", "le"),
                   ("gt", "gt"), ("ge", "ge")]:
    setattr(Value, f"__{_op}__", _operator(_name))
    if _op not in ("lt", "le", "gt", "ge"):
        setattr(Value, f"__r{_op}__", _operator(_name, reflected=True))
Value.__neg__ = lambda self: self.fd.ops.neg(self)
Value.__abs__ = lambda self: self.fd.ops.abs(self)
Value.__invert__ = lambda self: self.fd.ops.bitwise_not(self)


def _dims_or_dtype(dims: Any, dtype: Any) -> tuple:
    """nvFuser's reductions also take the dtype in the place of the dims
    (fd.ops.prod(t, DataType.Float)); DataType.Null is no dtype."""
    if isinstance(dims, DataType) and dtype is None:
        return None, dims
    return dims, dtype


def _expand_needs_run_values(x: "Tensor", shape: Sequence[Any]) -> bool:
    """An expand to an empty extent, or one that names the extent of a
    non-broadcast run-time dimension (e.g. expand(t0, t1.shape())), which
    only the run can check."""
    axes = x._val.logical_no_reductions
    for d, (e, id_) in enumerate(zip(shape, axes)):
        if isinstance(e, int) and e == -1:
            continue
        if isinstance(e, int) and e == 0:
            return True
        if id_.iter_type != _C.IterType.Broadcast and not isinstance(x.size(d), int):
            return True
    return False


def _int_or_value(entry: Any) -> Any:
    """A bound, width or shape entry: constant scalars become ints."""
    if isinstance(entry, Scalar) and entry.is_constant and entry.dtype not in (
            DataType.Double, DataType.Float, DataType.Half, DataType.BFloat16, DataType.Bool):
        return int(entry._val.value)
    if isinstance(entry, bool):
        return int(entry)
    return entry


class Shape(list):
    """A tensor's extents: a list that can also be called (nvFuser's shape())."""

    def __call__(self) -> "Shape":
        return self


class Operators:
    """fd.ops: the ops of the IR. Python numbers are accepted wherever a
    scalar operand fits."""

    def __init__(self, fd: "FusionDefinition"):
        self._fd = fd

    def _op(self, name: str, *args: Any) -> Any:
        return self._fd._define_op(name, *args)

    def cast(self, x: Tensor, dtype: DataType) -> Tensor:
        """A tensor or a scalar (a scalar's cast is computed on the host)."""
        if not isinstance(x, Tensor):
            return self._fd._host_scalar_cast(x, to_data_type(dtype))
        return self._op("cast", x, to_data_type(dtype))

    def where(self, condition, a, b) -> Tensor:
        return self._op("where", condition, a, b)

    # reductions
    def sum(self, x: Tensor, dims: Union[int, Sequence[int], None] = None, keepdim: bool = False,
            dtype: Optional[DataType] = None) -> Tensor:
        dims, dtype = _dims_or_dtype(dims, dtype)
        return self._op("sum", x, _ops.reduction_dims(dims), keepdim,
                        None if dtype is None else to_data_type(dtype))

    def max(self, x: Tensor, dims: Union[int, Sequence[int], None] = None,
            keepdim: bool = False, dtype: Optional[DataType] = None) -> Tensor:
        dims, dtype = _dims_or_dtype(dims, dtype)
        return self._op("max", x, _ops.reduction_dims(dims), keepdim,
                        None if dtype is None else to_data_type(dtype))

    def prod(self, x: Tensor, dims: Union[int, Sequence[int], None] = None, keepdim: bool = False,
             dtype: Optional[DataType] = None) -> Tensor:
        """torch.prod over `dims` (integers and bool multiply in int64)."""
        dims, dtype = _dims_or_dtype(dims, dtype)
        return self._op("prod", x, _ops.reduction_dims(dims), keepdim,
                        None if dtype is None else to_data_type(dtype))

    def size(self, x: Tensor, dim: int) -> Union[int, Size]:
        """nvFuser's fd.ops.size: x's extent along `dim` (an int when fixed,
        else a Size, usable in shapes and, as a number, in arithmetic)."""
        return x.size(dim)

    # random numbers
    def uniform(self, minval: Any, maxval: Any, shape: Sequence[Any], *, rng_seed: Any = None,
                rng_offset: Any = None, dtype: DataType = DataType.Float) -> Tensor:
        """A tensor of `shape` drawn from U[minval, maxval) (nvFuser's form).
        Element i draws from counter rng_offset + i of the stream rng_seed
        picks, so equal (seed, offset) give equal tensors on every device
        and in the simulator. Without rng_seed each run draws a fresh seed
        from torch's default generator (torch.manual_seed repeats runs). The
        stream is smelt's own (a splitmix64 hash), not torch's Philox."""
        return self._random("uniform", minval, maxval, shape, rng_seed, rng_offset, dtype)

    def normal(self, mean: Any, std: Any, shape: Sequence[Any], *, rng_seed: Any = None,
               rng_offset: Any = None, dtype: DataType = DataType.Float) -> Tensor:
        """A tensor of `shape` drawn from N(mean, std^2) (Box-Muller on two
        uniform draws per element); seeds and offsets as in uniform()."""
        return self._random("normal", mean, std, shape, rng_seed, rng_offset, dtype)

    def _random(self, op, a, b, shape, seed, offset, dtype) -> Tensor:
        if seed is None:
            seed = self._fd._host_scalar(DataType.Int, _host_scalars.random_seed)
        return self._op(op, a, b, tuple(shape), seed, 0 if offset is None else offset,
                        to_data_type(dtype))

    # shape
    def broadcast(self, x: Tensor, is_broadcast_dim: Sequence[bool]) -> Tensor:
        return self._op("broadcast", x, tuple(is_broadcast_dim))

    def broadcast_in_dim(self, x: Tensor, shape: Sequence[int],
                         broadcast_dims: Sequence[int]) -> Tensor:
        shape = tuple(_int_or_value(e) for e in shape)
        if isinstance(x, Tensor) and any(isinstance(e, int) and e == 0 for e in shape) and \
                len(broadcast_dims) == x.ndim:
            # To an empty extent: the new axes, then an expand (concretized at execute).
            dims = [d + len(shape) if d < 0 else d for d in broadcast_dims]
            if len(shape) > x.ndim:
                x = self.broadcast(x, [d not in dims for d in range(len(shape))])
            return self.expand(x, shape)
        return self._op("broadcast_in_dim", x, shape, tuple(broadcast_dims))

    def expand(self, x: Tensor, shape: Sequence[Union[int, str]]) -> Tensor:
        """Entries are ints (-1 keeps the dimension) or, for a size known only
        at run time, Tensor.size(d) of a fusion input (e.g. [y.size(0), -1])."""
        shape = tuple(_int_or_value(e) for e in shape)
        if isinstance(x, Tensor) and len(shape) == x.ndim and _expand_needs_run_values(x, shape):
            return self._fd._deferred_op("expand", x, shape)  # checked at execute
        return self._op("expand", x, shape)

    def pad(self, x: Tensor, pad_widths: Sequence[Any], value: Number = 0.0) -> Tensor:
        """torch.nn.functional.pad: widths from the last dimension, (before,
        after) pairs; negative widths crop. Widths may be scalar inputs or
        sizes: the pad is then concretized at execute (see _concretize.py)."""
        widths = tuple(_int_or_value(w) for w in pad_widths)
        from smelt._concretize import pad_needs_run_values
        if isinstance(x, Tensor) and pad_needs_run_values(x.shape, widths):
            return self._fd._deferred_op("pad", x, widths, value)
        return self._op("pad", x, widths, value)

    def slice(self, x: Tensor, start_indices: Sequence[Any], end_indices: Sequence[Any],
              strides: Optional[Sequence[int]] = None, *,
              manual_normalization: bool = False) -> Tensor:
        """x[start:end] along every dimension (nvFuser's form). Bounds are
        ints, scalar inputs or sizes (e.g. T.shape()); negative positions
        count from the end and both clamp, as in Python (an end before the
        start gives an empty slice), unless manual_normalization=True, when
        they are taken as given and must lie in [0, extent]. Bounds known only
        at run time, and crops of extents known only at run time, are
        concretized at execute. Steps other than 1 are not supported."""
        if strides is not None and any(s != 1 for s in strides):
            raise SmeltError(f"slice: steps {list(strides)} are not supported, only 1")
        starts = tuple(_int_or_value(a) for a in start_indices)
        stops = tuple(_int_or_value(b) for b in end_indices)
        from smelt._concretize import slice_needs_run_values
        if not isinstance(x, Tensor):
            raise SmeltError(f"slice: expected a tensor, got {type(x).__name__}")
        if len(starts) != x.ndim or len(stops) != x.ndim:
            raise SmeltError(f"slice: tensor {x.name} has rank {x.ndim} but {len(starts)} starts "
                             f"and {len(stops)} ends were given")
        if manual_normalization or slice_needs_run_values(x.shape, starts, stops):
            return self._fd._deferred_op("slice", x, starts, stops, bool(manual_normalization))
        return self._op("slice", x, starts, stops)

    def cat(self, tensors: Sequence[Tensor], dim: int = 0, manual_padding: bool = False) -> Tensor:
        """torch.cat: joins tensors along `dim`. Extents along `dim` known
        only at run time are concretized at execute (manual_padding, an
        nvFuser hint, changes nothing here)."""
        tensors = tuple(tensors)
        if tensors and all(isinstance(t, Tensor) for t in tensors):
            rank = tensors[0].ndim
            d = dim + rank if dim < 0 else dim
            if 0 <= d < rank and all(t.ndim == rank for t in tensors) and \
                    not all(isinstance(t.size(d), int) for t in tensors):
                return self._fd._deferred_op("cat", tensors, dim)
        return self._op("cat", tensors, dim)

    def index_select(self, x: Tensor, index: Tensor, dim: int) -> Tensor:
        """x's dimensions before `dim`, then index's, then x's after `dim`:
        element [.., i.., ..] is x[.., index[i..], ..] (nvFuser's argument
        order; torch.index_select for a 1-D index, torch.embedding at dim 0).
        An index outside x's extent fails the run."""
        return self._op("index_select", x, index, dim)

    def gather(self, x: Tensor, index: Tensor, dim: int) -> Tensor:
        """torch.gather (nvFuser's argument order): index has x's rank and
        the result its shape; element [i] is x[i with i[dim] = index[i]].
        Outside `dim`, index must have x's extents."""
        return self._op("gather", x, index, dim)

    def iota(self, length: Union[int, "Size"], start: Number = 0, step: Number = 1,
             dtype: DataType = DataType.Int) -> Tensor:
        """[length] tensor of start + i * step (torch.arange)."""
        return self._op("iota", length, start, step, to_data_type(dtype))

    def full(self, shape: Sequence[int], fill_value: Number,
             dtype: DataType = DataType.Float) -> Tensor:
        """Entries of shape are ints or Tensor.size(d) values; fill_value a
        number, a scalar or a size."""
        return self._op("full", tuple(shape), self._fd._as_operand(fill_value), to_data_type(dtype))

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        return self._op("matmul", a, b)

    # layout (torch semantics; negative dimensions count from the end)
    def permute(self, x: Tensor, dims: Sequence[int]) -> Tensor:
        return self._op("permute", x, tuple(dims))

    def transpose(self, x: Tensor, dim0: int, dim1: int) -> Tensor:
        return self._op("transpose", x, dim0, dim1)

    def squeeze(self, x: Tensor, dims: Union[int, Sequence[int]]) -> Tensor:
        return self._op("squeeze", x, _ops.reduction_dims(dims))

    def unsqueeze(self, x: Tensor, dim: int) -> Tensor:
        return self._op("unsqueeze", x, dim)

    def reshape(self, x: Tensor, shape: Optional[Sequence[Union[int, Size]]] = None, *,
                new_shape: Optional[Sequence[Union[int, Size]]] = None) -> Tensor:
        """Entries are ints (one may be -1) or, for sizes known only at run
        time, Tensor.size(d) of any tensor of the definition and products of
        them (e.g. [-1, x.size(2)], [y.size(0) * y.size(1), -1]). Symbolic
        dimensions may pass through, merge, and split into extents whose
        product they are (a merged extent back into its factors); splitting
        one otherwise is an error (it would need a divisibility check at run
        time). nvFuser's new_shape= is the same argument."""
        if (shape is None) == (new_shape is None):
            raise SmeltError("reshape: give the new shape once (shape= or nvFuser's new_shape=)")
        entries = tuple(_int_or_value(e) for e in (shape if shape is not None else new_shape))
        if isinstance(x, Tensor) and any(isinstance(e, Scalar) for e in entries):
            return self._fd._deferred_op("reshape", x, entries)  # scalar inputs: at execute
        try:
            return self._op("reshape", x, entries)
        except SmeltError:
            # A split of an extent known only at run time: concretized at execute.
            if not isinstance(x, Tensor) or all(isinstance(n, int) for n in x.shape) or \
                    not all(isinstance(e, (int, Size, Scalar)) for e in entries):
                raise
            return self._fd._deferred_op("reshape", x, entries)

    def stride_order(self, x: Tensor, stride_order: Sequence[int]) -> Tensor:
        """nvFuser's stride_order op: x, to be laid out in memory with
        dimension i having the stride_order[i]-th smallest stride when it is
        an output (as add_output(t, stride_order=) does)."""
        _layout_order(x, stride_order)  # checks the permutation
        out = self.set(x)
        self._fd._stride_orders[out.index] = tuple(stride_order)
        return out


    def var(self, x: Tensor, dims: Union[int, Sequence[int], None] = None, correction: int = 1,
            keepdim: bool = False) -> Tensor:
        """Variance over `dims` with Bessel's `correction` (torch.var)."""
        return self.var_mean(x, dims, correction, keepdim)[0]

    def var_mean(self, x: Tensor, dims: Union[int, Sequence[int], None] = None,
                 correction: int = 1, keepdim: bool = False):
        """(variance, mean) over `dims`, as torch.var_mean; the extents
        reduced must be known (static) to scale by them."""
        axes, count = self._reduced_count("var_mean", x, dims)
        mean = self.truediv(self.sum(x, axes, keepdim=True), count)
        centered = self.sub(x, mean)
        var = self.truediv(self.sum(self.mul(centered, centered), axes, keepdim),
                           self.maximum(self.sub(count, correction), 0))
        return var, (mean if keepdim else self.squeeze(mean, axes))

    def welford(self, x: Tensor, dims: Union[int, Sequence[int], None] = None):
        """nvFuser's welford: (mean, sum of squared deviations, element
        count) over `dims`; the count is an int64 tensor shaped like the
        others. smelt computes it in two passes over x (one kernel when the
        reduced rows fit), which is at least as accurate."""
        axes, count = self._reduced_count("welford", x, dims)
        mean = self.truediv(self.sum(x, axes), count)
        centered = self.sub(x, self.broadcast(mean, [d in axes for d in range(x.ndim)]))
        var_sum = self.sum(self.mul(centered, centered), axes)
        return mean, var_sum, self.full(mean.shape, count, DataType.Int)

    def _reduced_count(self, op: str, x: Tensor, dims) -> tuple:
        """The reduced axes and their element count: an int, or a host
        scalar when an extent is known only at run time."""
        dims = _ops.reduction_dims(dims)
        axes = list(range(x.ndim)) if dims is None else [d + x.ndim if d < 0 else d for d in dims]
        count: Any = 1
        for d in axes:
            count = count * x.size(d)
        return axes, count

    def addcmul(self, x, a, b, value=1.0) -> Tensor:
        """x + value * a * b (torch.addcmul)."""
        return self.add(x, self.mul(self.mul(a, b), value))

    def flatten(self, x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return self._op("flatten", x, start_dim, end_dim)

    # composites
    def linear(self, x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        """torch.nn.functional.linear: x [..., K] @ weight[N, K]^T (+ bias[N])."""
        return self._op("linear", x, weight, bias)

    def gelu(self, x: Tensor, approximate: str = "none") -> Tensor:
        """torch.nn.functional.gelu (approximate "none" or "tanh")."""
        if approximate not in ("none", "tanh"):
            raise SmeltError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return self._op("gelu", x, approximate)


# nvFuser's "no dtype" (e.g. sum(..., dtype=DataType.Null)): keep the default.
if not hasattr(DataType, "Null"):
    DataType.Null = None


def _elementwise_method(name: str, arity: int):
    def method(self, *args):
        if len(args) != arity:
            raise TypeError(f"fd.ops.{name} takes {arity} operand(s), got {len(args)}")
        if not any(isinstance(a, Tensor) for a in args):
            return self._fd._host_scalar_op(name, args)
        return self._op(name, *[self._fd._as_operand(a) for a in args])
    method.__name__ = name
    method.__doc__ = f"fd.ops.{name}: elementwise, {arity} operand(s) (tensors or scalars)."
    return method


for _name in _ops.UNARY_OPS:
    setattr(Operators, _name, _elementwise_method(_name, 1))
for _name in _ops.BINARY_OPS:
    setattr(Operators, _name, _elementwise_method(_name, 2))


class FusionDefinition:
    """A fusion defined from Python (see the module docstring).

    Subclasses may define it in `definition(self)` and schedule it in
    `schedule(self)`; both run when the object is created."""

    def __init__(self, id: Optional[int] = None, max_length: Optional[int] = None):
        # id, max_length: nvFuser's fusion-cache slot and record limit; the
        # cache here keys on the record itself, so an id only names it.
        self._given_id = id
        self._records: List[Record] = []
        self._key_cache = None  # (records counted, the fusion cache's key of them)
        self._scheduled_cache = None  # (records counted, is_scheduled of them)
        self._values: List[Any] = []  # the definition fusion's _C values
        self._handles: List[Value] = []
        self._fusion = _C.Fusion()
        self._inputs: List[Value] = []
        self._outputs: List[Tensor] = []
        # Per output: its dimensions from outermost to innermost in memory
        # when add_output was given a stride_order other than row-major.
        self._output_layouts: List[Optional[tuple]] = []
        # Per input: its dimensions from outermost to innermost in memory when
        # defined in an order other than row-major (execute permutes to it).
        self._input_layouts: List[Optional[tuple]] = []
        # The fusion's inputs in order: ("user", k) for self._inputs[k], or
        # ("host", scalar, compute) for a host scalar (see _host_scalars.py).
        self._fusion_inputs: List[tuple] = []
        # Outputs written back into an input (add_output(alias_input=)):
        # output position -> input position; such outputs are not returned.
        self._aliases: Dict[int, int] = {}
        # Inputs defined with static extents of 0: input position -> dimensions.
        self._empty_dims: Dict[int, tuple] = {}
        self._defining = False
        self._last_executor = None
        # Set once an op is deferred to execute (see _concretize.py).
        self._deferred = False
        # fd.ops.stride_order: tensor index -> the stride order it asks for.
        self._stride_orders: Dict[int, tuple] = {}
        self.ops = Operators(self)
        if type(self).definition is not FusionDefinition.definition:
            with self:
                self.definition()
            if type(self).schedule is not FusionDefinition.schedule:
                self.schedule()

    # ---- hooks for subclasses ----
    def definition(self) -> None:
        raise NotImplementedError

    def schedule(self) -> None:
        pass

    # ---- the definition ----
    def __enter__(self) -> "FusionDefinition":
        if self._records:
            raise SmeltError("this FusionDefinition is already defined; create a new one")
        self._defining = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._defining = False
        if exc_type is None and not self._outputs:
            raise SmeltError("the fusion has no outputs: call fd.add_output(tensor)")

    def define_tensor(self, shape: Optional[Sequence[int]] = None,
                      contiguity: Union[None, bool, Sequence[Optional[bool]]] = None,
                      dtype: Any = DataType.Float, is_cpu: bool = False,
                      stride_order: Optional[Sequence[int]] = None, *,
                      sizes: Optional[Sequence[int]] = None,
                      strides: Optional[Sequence[int]] = None,
                      static_sizes: bool = False) -> Tensor:
        """An input tensor, in nvFuser's forms:

        - shape: -1 for an extent known at run time, 1 for a broadcast
          dimension, else a fixed (static) extent; contiguity: per dimension
          (None for broadcast dimensions), or one bool for all; default all
          contiguous. stride_order: the memory order of the given tensors
          (dimension i has the stride_order[i]-th smallest stride; default
          row-major); contiguity then reads in that order, as in nvFuser.
        - sizes= and strides= of an example tensor: extents symbolic unless
          static_sizes, contiguity and stride order from the strides.

        is_cpu (a CPU scalar tensor in nvFuser) is accepted and must be False:
        the device is the one of the tensors given to execute()."""
        if is_cpu:
            raise SmeltError("define_tensor: is_cpu=True (a CPU scalar tensor) is not supported; "
                             "pass a Python number or a 0-dim tensor for a define_scalar() input")
        if sizes is not None or strides is not None:
            if shape is not None or sizes is None or strides is None or len(sizes) != len(strides):
                raise SmeltError("define_tensor: give sizes= and strides= together (same length), "
                                 "without shape=")
            example = torch.empty_strided(list(sizes), list(strides), device="meta")
            return self._define_input(_from_example(example, static_sizes), dtype)
        if shape is None:
            raise SmeltError("define_tensor: shape= (or sizes= and strides=) is required")
        shape = tuple(int(s) for s in shape)
        # A static extent of 0: the kernel never runs on it (execute returns
        # empty outputs), so the fusion keeps it symbolic and execute checks it.
        empty_dims = tuple(d for d, n in enumerate(shape) if n == 0)
        shape = tuple(-1 if n == 0 else n for n in shape)
        if contiguity is None or isinstance(contiguity, bool):
            flag = True if contiguity is None else contiguity
            contiguity = tuple(None if s == 1 else flag for s in shape)
        layout = InputLayout(shape, tuple(contiguity), None)
        if stride_order is not None:
            layout = _ordered_input(shape, tuple(contiguity), stride_order)
        t = self._define_input(layout, dtype)
        if empty_dims:
            self._empty_dims[len(self._inputs) - 1] = empty_dims
        return t

    def _define_input(self, layout: "InputLayout", dtype: Any) -> Tensor:
        """The fusion input is the tensor as it lies in memory (dimensions
        outermost first); an input given in another order is permuted back
        to its logical order inside the fusion."""
        physical = layout.physical or ()
        shape, contiguity = layout.shape, layout.contiguity
        if physical:
            shape = tuple(shape[d] for d in physical)
            contiguity = tuple(contiguity[d] for d in physical)
        t = self._define_op("define_tensor", shape, contiguity, to_data_type(dtype))
        self._fusion_inputs.append(("user", len(self._inputs)))
        self._inputs.append(t)
        self._input_layouts.append(layout.physical)
        if layout.physical is None:
            return t
        position = [0] * len(physical)
        for p, d in enumerate(physical):
            position[d] = p
        return self.ops.permute(t, position)

    def define_scalar(self, value: Any = None, dtype: Any = None) -> Scalar:
        """A constant scalar (value given), or a scalar input (value None, or
        a DataType as nvFuser's define_scalar(DataType.Double) declares one)
        passed to execute() in its place among the inputs."""
        if isinstance(value, DataType):
            if dtype is not None and to_data_type(dtype) != value:
                raise SmeltError(f"define_scalar: value {value} (a scalar input of that type) and "
                                 f"dtype={dtype} disagree")
            value, dtype = None, value
        if isinstance(value, complex):
            raise SmeltError(f"define_scalar: complex scalars ({value}) are not supported: smelt "
                             "has no complex dtype (no complex arithmetic in codegen)")
        if value is not None and not isinstance(value, (bool, int, float)):
            raise SmeltError(f"define_scalar: expected a Python number, None or a DataType, got "
                             f"{type(value).__name__}")
        if dtype is None:
            dtype = DataType.Double if value is None or isinstance(value, float) else (
                DataType.Bool if isinstance(value, bool) else DataType.Int)
        s = self._define_op("define_scalar", value, to_data_type(dtype))
        if value is None:
            self._fusion_inputs.append(("user", len(self._inputs)))
            self._inputs.append(s)
            self._input_layouts.append(None)
        return s

    # ---- host scalars (see _host_scalars.py) ----
    def _host_scalar(self, dtype: DataType, compute) -> Scalar:
        s = self._define_op("define_scalar", None, dtype)
        self._fusion_inputs.append(("host", s, compute))
        return s

    def _getter(self, operand: Any):
        """(value getter, dtype, constant value or None) of a scalar operand."""
        if isinstance(operand, Size):
            extent = _ops.extent_of(operand.scale, [(t._val, d) for t, d in operand.factors])
            return _host_scalars.extent_getter(extent), DataType.Int, None
        if isinstance(operand, Scalar):
            if operand.fd is not self:
                raise SmeltError(f"{operand!r} belongs to another FusionDefinition")
            if operand.is_constant:
                value = operand._val.value
                value = bool(value) if operand.dtype == DataType.Bool else (
                    int(value) if operand.dtype not in (DataType.Double, DataType.Float,
                                                        DataType.Half, DataType.BFloat16)
                    else value)
                return (lambda env, v=value: v), operand.dtype, value
            index = operand.index
            return (lambda env: env.scalars[index]), operand.dtype, None
        if isinstance(operand, (bool, int, float)):
            dtype = (DataType.Bool if isinstance(operand, bool) else
                     DataType.Int if isinstance(operand, int) else DataType.Double)
            return (lambda env, v=operand: v), dtype, operand
        raise SmeltError(f"expected a tensor, a scalar, a size or a Python number, got "
                         f"{type(operand).__name__}")

    def _host_scalar_op(self, name: str, operands: Sequence[Any]) -> Scalar:
        """fd.ops.<name> on scalars alone: folded now when every operand is a
        constant, else a host scalar computed before each run."""
        parts = [self._getter(a) for a in operands]
        dtypes = [p[1] for p in parts]
        out = _host_scalars.result_dtype(name, dtypes)
        compute = _host_scalars.compute_fn(name, [p[0] for p in parts], dtypes, out)
        if all(p[2] is not None for p in parts):
            return self.define_scalar(compute(None), out)
        return self._host_scalar(out, compute)

    def _host_scalar_cast(self, operand: Any, dtype: DataType) -> Scalar:
        getter, operand_dtype, constant = self._getter(operand)
        compute = _host_scalars.compute_fn("set", [getter], [operand_dtype], dtype)
        if constant is not None:
            return self.define_scalar(compute(None), dtype)
        return self._host_scalar(dtype, compute)

    def _as_operand(self, operand: Any) -> Any:
        """A Size used as a number becomes a host scalar (its value)."""
        if isinstance(operand, Size):
            getter, dtype, _ = self._getter(operand)
            return self._host_scalar(dtype, getter)
        return operand

    def define_vector(self, values: Union[int, Sequence[Any]],
                      dtype: Any = DataType.Int) -> List[Any]:
        """nvFuser's vector of sizes, accepted wherever a shape or slice
        bounds are. define_vector([...]): the list itself (ints, scalars,
        Tensor.size() values); define_vector(n): n integer scalar inputs of
        `dtype`, given to execute() as a list or tuple among the inputs (or
        as n numbers in their place)."""
        dtype = to_data_type(dtype)
        if dtype not in (DataType.Int, DataType.Int32):
            raise SmeltError(f"define_vector: dtype {dtype} is not an index type (Int or Int32)")
        if isinstance(values, int) and not isinstance(values, bool):
            if values < 0:
                raise SmeltError(f"define_vector: size {values} is negative")
            return [self.define_scalar(dtype=dtype) for _ in range(values)]
        if not isinstance(values, (list, tuple)):
            raise SmeltError(f"define_vector: expected a list of sizes or a length, got "
                             f"{type(values).__name__}")
        return list(values)

    def id(self) -> int:
        """A stable identifier of this definition: equal for equal records
        (the id given to FusionDefinition(id=...) when there was one)."""
        if self._given_id is not None:
            return self._given_id
        return hash(tuple(self._records)) & ((1 << 63) - 1)

    def validate(self, inputs: Sequence[Any], reference_outputs: Optional[Sequence[Any]] = None,
                 rtol: Optional[float] = None, atol: Optional[float] = None) -> List[torch.Tensor]:
        """Runs the fusion and checks its outputs against `reference_outputs`
        (torch.testing.assert_close, sizes included); returns the outputs."""
        outputs = self.execute(inputs)
        if reference_outputs is not None:
            if len(reference_outputs) != len(outputs):
                raise SmeltError(f"validate: the fusion has {len(outputs)} outputs, "
                                 f"{len(reference_outputs)} references were given")
            for i, (out, ref) in enumerate(zip(outputs, reference_outputs)):
                torch.testing.assert_close(out, ref, rtol=rtol, atol=atol,
                                           msg=lambda m, i=i: f"output {i}: {m}")
        return outputs

    def from_pytorch(self, tensor: torch.Tensor, static_sizes: bool = False, *,
                     in_memory_order: bool = True) -> Tensor:
        """An input tensor shaped like `tensor` (symbolic extents unless
        static_sizes; size-1 dimensions broadcast), with its dtype and
        contiguity. A dense tensor in another memory order (channels-last, a
        transposed view) is read in that order (the fusion input, permuted
        back inside the fusion); in_memory_order=False reads it in logical
        order through its strides instead, as the matmul scheduler wants its
        operands (fusion inputs, in any layout)."""
        if not isinstance(tensor, torch.Tensor):
            raise SmeltError(f"from_pytorch: expected a torch.Tensor, got {type(tensor).__name__}")
        layout = _from_example(tensor, static_sizes)
        if not in_memory_order and layout.physical is not None:
            layout = InputLayout(layout.shape, tuple(_contiguity(tensor)), None)
        return self._define_input(layout, tensor.dtype)

    def add_output(self, tensor: Tensor, stride_order: Optional[Sequence[int]] = None,
                   alias_input: Optional[Tensor] = None) -> None:
        """Marks `tensor` as an output. stride_order (nvFuser's form): the
        output's memory layout, dimension i having the stride_order[i]-th
        smallest stride (default: row-major, [rank-1, ..., 0]); the output is
        written densely in that order and returned as a view of the logical
        shape, with torch's strides for that layout. An input may be an
        output (returned as a copy).

        alias_input (nvFuser's form, e.g. batch norm's running statistics):
        after each run the output is copied into that input tensor, in
        place, and is not among the returned outputs. smelt computes it into
        its own buffer first, so the fusion may still read the input."""
        if not isinstance(tensor, Tensor) or tensor.fd is not self:
            raise SmeltError("add_output: expected a tensor of this FusionDefinition")
        if isinstance(stride_order, Tensor) and alias_input is None:
            stride_order, alias_input = None, stride_order  # nvFuser: add_output(out, alias_input)
        if stride_order is None and alias_input is None:
            stride_order = self._stride_orders.get(tensor.index)
        if alias_input is not None:
            self._add_alias(tensor, alias_input, stride_order)
        if any(tensor is t for t in self._inputs) or any(tensor is t for t in self._outputs):
            tensor = self.ops.set(tensor)  # an input, or an output again: a copy
        order = _layout_order(tensor, stride_order)
        if order is None:
            self._define_op("add_output", tensor)
        else:
            self._define_op("add_output", tensor, tuple(stride_order))
        self._outputs.append(tensor)
        self._output_layouts.append(order)

    def _add_alias(self, tensor: Tensor, alias_input: Tensor, stride_order) -> None:
        if not isinstance(alias_input, Tensor) or not any(alias_input is t for t in self._inputs):
            raise SmeltError("add_output: alias_input must be a tensor input of this definition")
        if stride_order is not None:
            raise SmeltError("add_output: an output aliasing an input takes the input's layout; "
                             "give no stride_order")
        if tensor.ndim != alias_input.ndim or tensor.dtype != alias_input.dtype:
            raise SmeltError(f"add_output: {tensor.name} ({tensor.dtype}, rank {tensor.ndim}) "
                             f"cannot be written into input {alias_input.name} "
                             f"({alias_input.dtype}, rank {alias_input.ndim})")
        self._aliases[len(self._outputs)] = next(
            k for k, t in enumerate(self._inputs) if t is alias_input)

    def inline_all(self) -> None:
        """Schedule: inlines every computed tensor as deep as legal."""
        self._schedule_op("inline_all")

    @property
    def inputs(self) -> List[Value]:
        return list(self._inputs)

    @property
    def outputs(self) -> List[Tensor]:
        return list(self._outputs)

    @property
    def records(self) -> List[Record]:
        return list(self._records)

    def _records_key(self):
        """The fusion cache's key of the record as it stands (kept until a
        record is added)."""
        cached = self._key_cache
        if cached is None or cached[0] != len(self._records):
            cached = self._key_cache = (len(self._records), RecordsKey(tuple(self._records)))
        return cached[1]

    def _adopt_key(self, key) -> None:
        """Keeps the fusion cache's own key object for these records: an equal
        fusion defined again (each repeated layer of a model is a partition of
        its own) then finds its entry by identity, not by comparing every record."""
        if self._key_cache is not None and self._key_cache[1] == key:
            self._key_cache = (self._key_cache[0], key)

    @property
    def is_scheduled(self) -> bool:
        """True once a schedule primitive was called (no automatic scheduling)."""
        cached = self._scheduled_cache
        if cached is None or cached[0] != len(self._records):
            cached = self._scheduled_cache = (
                len(self._records), any(r.op in _ops.SCHEDULE_OPS for r in self._records))
        return cached[1]

    def __repr__(self) -> str:
        lines = [f"FusionDefinition ({len(self._records)} records):"]
        lines += [f"  {r}" for r in self._records]
        return "\n".join(lines)

    def fusion_text(self) -> str:
        """The definition fusion's math and schedule as smelt prints them."""
        return str(self._fusion)

    # ---- building fusions from the record ----
    def build_fusion(self):
        """A fresh _C.Fusion from the record (definition and schedule)."""
        if self._deferred:
            raise SmeltError("this fusion has ops whose extents are known only at run time "
                             "(a slice, pad, cat or reshape by scalar inputs or run-time sizes); "
                             "it is concretized by execute() for its inputs")
        fusion = _C.Fusion()
        with _C.FusionGuard(fusion):
            replay(self._records, _ops.IMPLS, [])
        return fusion

    def _define_op(self, op: str, *args: Any) -> Any:
        if not self._defining:
            raise SmeltError(f"{op}: definitions go inside `with FusionDefinition() as fd:` "
                             "(or a definition() method); this one is closed")
        return self._apply(op, args)

    def _schedule_op(self, op: str, *args: Any) -> Any:
        return self._apply(op, args)

    def _deferred_op(self, op: str, *args: Any) -> Any:
        """An op whose extents need the run's values (see _concretize.py)."""
        out = self._define_op("deferred", op, *args)
        self._deferred = True
        return out

    def _apply(self, op: str, args: Sequence[Any]) -> Any:
        record = Record(op, freeze([self._ref(a) for a in args]))
        with _C.FusionGuard(self._fusion):
            new = apply(_ops.IMPLS[op], record, self._values)
        self._records.append(record)
        handles = [self._new_handle(v) for v in new]
        return handles[0] if len(handles) == 1 else (tuple(handles) if handles else None)

    def _ref(self, arg: Any) -> Any:
        if isinstance(arg, Size):
            if arg.fd is not self:
                raise SmeltError(f"{arg!r} belongs to another FusionDefinition")
            return ExtentRef(tuple((Ref(t.index), d) for t, d in arg.factors), arg.scale)
        if isinstance(arg, Value):
            if arg.fd is not self:
                raise SmeltError(f"{arg!r} belongs to another FusionDefinition")
            return Ref(arg.index)
        if isinstance(arg, (list, tuple)):
            return tuple(self._ref(a) for a in arg)
        return arg

    def _new_handle(self, val: Any) -> Value:
        index = len(self._handles)
        handle = Tensor(self, index) if val.is_tensor else Scalar(self, index)
        self._handles.append(handle)
        return handle

    # ---- running and inspecting (see _execution.py, inspection.py) ----
    def execute(self, inputs: Sequence[Any], *, device: Optional[Any] = None,
                tensor_cores: Optional[bool] = None,
                matmul: Optional[str] = None) -> List[torch.Tensor]:
        """Runs the fusion: CUDA tensors on the GPU, CPU tensors through the
        CPU simulator (the reference path: exact CUDA semantics, slow).
        Returns the outputs in add_output order.

        device: where a fusion without tensor inputs (an iota, a full) runs
        and puts its outputs (default: the CPU); with tensor inputs it may
        only name theirs (SmeltError otherwise).

        tensor_cores (unscheduled fusions): None lets the matmul scheduler
        choose (mma.sync for fp16/bf16 operands on sm_80+ when the extents
        allow; last_run_report() says why not); True forces tensor cores
        (SmeltError naming the operand and axis where they cannot run);
        False keeps CUDA cores.

        matmul (unscheduled fusions): who computes each matmul. "auto"
        (default, or $SMELT_MATMUL) decides per matmul by rules backed by
        measurements: a library (cuBLAS through ATen) on GPUs, with the
        epilogue fused into smelt's kernels around it; smelt's generated
        kernel in the CPU simulator. "library" or "generated" forces one
        side (on CPU tensors "library" runs ATen's CPU matmul).
        last_run_report() names the choice and its reason."""
        from smelt._execution import execute
        return execute(self, inputs, tensor_cores, device, matmul)

    def compile_for(self, inputs: Sequence[Any], device: Optional[str] = None, *,
                    arch: Optional[int] = None,
                    matmul: Optional[str] = None) -> List[torch.Tensor]:
        """Segments, schedules, lowers and compiles the (unscheduled) fusion
        for inputs like `inputs`, running nothing; a later execute() of such
        inputs on `device` finds every kernel ready. Tensors of any device,
        meta ones included, stand for their sizes, strides, dtype and storage
        offset; scalars are Python numbers or 0-dim tensors. `device`: where
        the real inputs will be (default: the inputs' device; for meta
        inputs CUDA when available, else the CPU). Returns the outputs as
        meta tensors. The C++ work releases the GIL, so fusions compile in
        parallel on threads.
        arch: a compute capability as major*10+minor (80 for sm_80) to
        schedule and compile for instead of the device's: the kernels are for
        inspection (last_kernels(), smelt.kernel_quality); a later execute()
        compiles for the device it runs on.
        matmul: as for execute(); with device="cuda" (meta inputs, no GPU
        needed) last_run_report() says which matmuls a GPU run would give
        to the library."""
        from smelt._execution import compile_for
        return compile_for(self, inputs, device, arch, matmul)

    def compile_cost(self) -> dict:
        """What compiling this fusion has cost so far, over every execute()
        and compile_for(): wall milliseconds segmenting, scheduling,
        lowering and in NVRTC, kernels NVRTC compiled and kernels read from
        the disk cache instead (smelt's kernel cache directory)."""
        if self._last_executor is None or not hasattr(self._last_executor, "compile_cost"):
            raise SmeltError("compile_cost: this FusionDefinition has not been executed or "
                             "compiled automatically (execute() or compile_for())")
        return self._last_executor.compile_cost()

    def segment(self, inputs: Sequence[Any]) -> list:
        """nvFuser's segmentation entry point: the FusionDefinitions of the
        kernels this (unscheduled) fusion becomes for inputs like `inputs`,
        in execution order; [] when it is one kernel. Each runs alone
        (smelt.segmentation.SegmentDefinition: input_names, output_names);
        execute() still runs the whole fusion, through the same kernels."""
        from smelt.segmentation import segment
        return segment(self, inputs)

    def last_kernels(self) -> list:
        """The kernels the latest execute() ran (smelt.inspection.Kernel)."""
        if self._last_executor is None:
            raise SmeltError("last_kernels: this FusionDefinition has not been executed")
        return self._last_executor.kernels()

    def last_run_report(self) -> str:
        """How the latest execute() ran: per segment the scheduler, its
        parameters, whether it was compiled for this run, the launch."""
        if self._last_executor is None:
            raise SmeltError("last_run_report: this FusionDefinition has not been executed")
        return self._last_executor.report()

    def lower(self, **options: Any):
        """The lowered kernel of the (scheduled) fusion: kernel IR, CUDA,
        shared-memory plan, ptxas report. See smelt.inspection.Kernel."""
        from smelt.inspection import lower
        return lower(self, **options)


@dataclass(frozen=True)
class InputLayout:
    shape: tuple  # logical order
    contiguity: tuple  # logical order
    physical: Optional[tuple]  # dimensions outermost first, None for row-major


def _ordered_input(shape: tuple, contiguity: tuple, stride_order: Sequence[int]) -> InputLayout:
    """nvFuser's stride_order form: contiguity is given in memory order
    (outermost first), as nvFuser reads it."""
    order = list(stride_order)
    if len(contiguity) != len(shape):
        raise SmeltError(f"define_tensor: shape {list(shape)} has {len(shape)} dimensions but "
                         f"contiguity has {len(contiguity)} entries")
    if sorted(order) != list(range(len(shape))):
        raise SmeltError(f"define_tensor: stride_order {order} must be a permutation of "
                         f"0..{len(shape) - 1}")
    physical = _ops.physical_order(order)
    logical_contiguity = [None] * len(shape)
    for p, d in enumerate(physical):
        logical_contiguity[d] = contiguity[p]
    return InputLayout(shape, tuple(logical_contiguity),
                       None if physical == tuple(range(len(shape))) else physical)


def _from_example(tensor: torch.Tensor, static_sizes: bool) -> InputLayout:
    """The layout of an example tensor: size-1 dimensions broadcast, the
    others symbolic unless static_sizes; a dense tensor in another memory
    order (channels-last, a transposed view) is read in that order."""
    shape = tuple(1 if s == 1 else (s if static_sizes else -1) for s in tensor.shape)
    sizes, strides = list(tensor.shape), list(tensor.stride())
    physical = tuple(memory_order(sizes, strides))
    if physical != tuple(range(tensor.dim())) and is_dense(sizes, strides):
        permuted = tensor.permute(physical)
        contiguity = _contiguity(permuted)
        logical = [None] * tensor.dim()
        for p, d in enumerate(physical):
            logical[d] = contiguity[p]
        return InputLayout(shape, tuple(logical), physical)
    return InputLayout(shape, tuple(_contiguity(tensor)), None)


def memory_order(sizes: Sequence[int], strides: Sequence[int]) -> List[int]:
    """Dimensions from outermost to innermost in memory (ties, as size-1
    dimensions make them, keep the logical order)."""
    return sorted(range(len(sizes)), key=lambda d: (-strides[d], d))


def is_dense(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the elements cover one block of memory exactly once."""
    expected = 1
    for d in reversed(memory_order(sizes, strides)):
        if sizes[d] != 1 and strides[d] != expected:
            return False
        expected *= sizes[d]
    return True


def _layout_order(tensor: Tensor, stride_order: Optional[Sequence[int]]) -> Optional[tuple]:
    """The physical dimension order stride_order asks for, None for row-major."""
    if stride_order is None:
        return None
    rank = tensor.ndim
    order = list(stride_order)
    if sorted(order) != list(range(rank)) or any(isinstance(o, bool) for o in order):
        raise SmeltError(f"add_output: stride_order {order} of tensor {tensor.name} must be a "
                         f"permutation of 0..{rank - 1} (one entry per dimension)")
    physical = _ops.physical_order(order)
    return None if physical == tuple(range(rank)) else physical


def logical_view(output: torch.Tensor, physical: Optional[tuple]) -> torch.Tensor:
    """An output written densely in `physical` order, viewed in its logical
    dimension order."""
    if physical is None:
        return output
    position = [0] * len(physical)
    for p, d in enumerate(physical):
        position[d] = p
    return output.permute(position)


def _contiguity(tensor: torch.Tensor) -> List[Optional[bool]]:
    """Per dimension: None for size 1, else whether its stride is the
    product of the inner (non-size-1) dimension's extent and stride (1 for
    the innermost)."""
    result: List[Optional[bool]] = [None] * tensor.dim()
    expected = 1
    for d in reversed(range(tensor.dim())):
        if tensor.shape[d] == 1:
            continue
        result[d] = tensor.stride(d) == expected
        expected = tensor.stride(d) * tensor.shape[d]
    return result
