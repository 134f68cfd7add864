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

import itertools
from typing import Any, Dict, List, Optional, Sequence, Union

import torch

from smelt import _C
from smelt._C import DataType, SmeltError
from smelt import _execution, _host_scalars, _ops, inspection
from smelt._concretize import Concretization
from smelt.composite_ops import CompositeOps
from smelt._execution import ExecutionState
from smelt._records import ExtentRef, Record, Ref, apply, freeze, replay
from smelt.dtypes import to_data_type
from smelt.fusion_cache import CacheEntry, RecordsKey, fusion_cache
from smelt.handles import Axis, Number, Scalar, Shape, Size, Tensor, Value
from smelt.memory_layout import (InputLayout, contiguity_of, example_layout, ordered_input,
                                 output_physical_order)
from smelt.segmentation import Segment, index_space_maps
from smelt.shape_ops import ShapeOps

__all__ = ["Axis", "FusionDefinition", "Scalar", "SegmentDefinition", "Shape", "Size", "Tensor",
           "Value"]


def _dims_or_dtype(dims: Any, dtype: Any) -> tuple:
    """nvFuser's reductions also take the dtype in the place of the dims
    (fd.ops.prod(t, DataType.Float)); DataType.Null is no dtype."""
    if isinstance(dims, DataType) and dtype is None:
        return None, dims
    return dims, dtype


class Operators(ShapeOps, CompositeOps):
    """fd.ops: the ops of the IR (the shape ops in shape_ops.py, the index,
    scan and bit ops built from them in composite_ops.py). Python numbers
    are accepted wherever a scalar operand fits."""

    def __init__(self, fd: "FusionDefinition"):
        self._fd = fd

    def _op(self, name: str, *args: Any) -> Any:
        return self._fd._define_op(name, *args)

    def _deferred(self, op: str, *args: Any) -> Any:
        return self._fd._deferred_op(op, *args)

    def _ask_stride_order(self, out: Tensor, order: tuple) -> None:
        self._fd._stride_orders[out.index] = order

    def _constant(self, value: Number, dtype: DataType) -> Scalar:
        return self._fd.define_scalar(value, dtype)

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
        self._outputs: List[Tensor] = []
        # Inputs, their layouts, outputs' layouts, aliases: what execute() reads.
        self.state = ExecutionState()
        self._defining = False
        # fd.ops.stride_order: tensor index -> the stride order it asks for.
        self._stride_orders: Dict[int, tuple] = {}
        # An input defined in another memory order: its logical view's handle
        # index -> the input's position (add_output's alias_input names it).
        self._input_views: Dict[int, int] = {}
        self.segment_index_space_maps: Dict[Any, Dict[Value, Any]] = {}  # set by segment()
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
            return self._define_input(example_layout(example, static_sizes), dtype)
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
            layout = ordered_input(shape, tuple(contiguity), stride_order)
        t = self._define_input(layout, dtype)
        if empty_dims:
            self.state.empty_dims[len(self.state.inputs) - 1] = empty_dims
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
        self.state.fusion_inputs.append(("user", len(self.state.inputs)))
        self.state.inputs.append(t)
        self.state.input_layouts.append(layout.physical)
        if layout.physical is None:
            return t
        position = [0] * len(physical)
        for p, d in enumerate(physical):
            position[d] = p
        view = self.ops.permute(t, position)
        self._input_views[view.index] = len(self.state.inputs) - 1
        return view

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
            self.state.fusion_inputs.append(("user", len(self.state.inputs)))
            self.state.inputs.append(s)
            self.state.input_layouts.append(None)
        return s

    # ---- host scalars (see _host_scalars.py) ----
    def _host_scalar(self, dtype: DataType, compute) -> Scalar:
        s = self._define_op("define_scalar", None, dtype)
        self.state.fusion_inputs.append(("host", s, compute))
        return s

    def _getter(self, operand: Any):
        """(value getter, dtype, constant value or None) of a scalar operand."""
        if isinstance(operand, Size):
            extent = _ops.extent_of(operand.scale, [(t.ir, d) for t, d in operand.factors])
            return _host_scalars.extent_getter(extent), DataType.Int, None
        if isinstance(operand, Scalar):
            if operand.fd is not self:
                raise SmeltError(f"{operand!r} belongs to another FusionDefinition")
            if operand.is_constant:
                value = operand.ir.value
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
        layout = example_layout(tensor, static_sizes)
        if not in_memory_order and layout.physical is not None:
            layout = InputLayout(layout.shape, tuple(contiguity_of(tensor)), None)
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
        if any(tensor is t for t in self.state.inputs) or any(tensor is t for t in self._outputs):
            tensor = self.ops.set(tensor)  # an input, or an output again: a copy
        order = output_physical_order(tensor, stride_order)
        if order is None:
            self._define_op("add_output", tensor)
        else:
            self._define_op("add_output", tensor, tuple(stride_order))
        self._outputs.append(tensor)
        self.state.output_layouts.append(order)

    def _add_alias(self, tensor: Tensor, alias_input: Tensor, stride_order) -> None:
        position = next((k for k, t in enumerate(self.state.inputs) if t is alias_input),
                        self._input_views.get(getattr(alias_input, "index", None)))
        if not isinstance(alias_input, Tensor) or alias_input.fd is not self or position is None:
            raise SmeltError("add_output: alias_input must be a tensor input of this definition")
        if stride_order is not None:
            raise SmeltError("add_output: an output aliasing an input takes the input's layout; "
                             "give no stride_order")
        if tensor.ndim != alias_input.ndim or tensor.dtype != alias_input.dtype:
            raise SmeltError(f"add_output: {tensor.name} ({tensor.dtype}, rank {tensor.ndim}) "
                             f"cannot be written into input {alias_input.name} "
                             f"({alias_input.dtype}, rank {alias_input.ndim})")
        self.state.aliases[len(self._outputs)] = position

    def inline_all(self) -> None:
        """Schedule: inlines every computed tensor as deep as legal."""
        self.schedule_op("inline_all")

    @property
    def inputs(self) -> List[Value]:
        return list(self.state.inputs)

    @property
    def outputs(self) -> List[Tensor]:
        return list(self._outputs)

    @property
    def records(self) -> List[Record]:
        return list(self._records)

    @property
    def cache_key(self) -> RecordsKey:
        """The fusion cache's key of the record as it stands, hashed once
        per record length."""
        cached = self._key_cache
        if cached is None or cached[0] != len(self._records):
            cached = self._key_cache = (len(self._records), RecordsKey(tuple(self._records)))
        return cached[1]

    def cache_entry(self) -> CacheEntry:
        """The fusion cache's entry for the record. The cache's own key object
        is kept: an equal fusion defined again (each repeated layer of a model
        is a partition of its own) then finds its entry by identity, not by
        comparing every record."""
        key = self.cache_key
        entry = fusion_cache().entry(key)
        if entry.key is not key:  # an equal key: the dict found it
            self._key_cache = (self._key_cache[0], entry.key)
        return entry

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
        if self.state.concretization is not None:
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

    def schedule_op(self, op: str, *args: Any) -> Any:
        """Records one schedule primitive (the Tensor and Axis methods call it)."""
        return self._apply(op, args)

    def _deferred_op(self, op: str, *args: Any) -> Any:
        """An op whose extents need the run's values (see _deferred.py): from
        now on each run executes a concrete fusion (_concretize.py)."""
        out = self._define_op("deferred", op, *args)
        if self.state.concretization is None:
            self.state.concretization = Concretization(self._records, self._values)
        return out

    def _apply(self, op: str, args: Sequence[Any]) -> Any:
        record = Record(op, freeze([self._ref(a) for a in args]))
        with _C.FusionGuard(self._fusion):
            new = apply(_ops.IMPLS[op], record, self._values)
        self._records.append(record)
        self.state.plans.clear()
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
        handle = Tensor(self, index, val) if val.is_tensor else Scalar(self, index, val)
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
        return _execution.execute(self, inputs, tensor_cores, device, matmul)

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
        return _execution.compile_for(self, inputs, device, arch, matmul)

    def compile_cost(self) -> dict:
        """What compiling this fusion has cost so far, over every execute()
        and compile_for(): wall milliseconds segmenting, scheduling,
        lowering and in NVRTC, kernels NVRTC compiled and kernels read from
        the disk cache instead (smelt's kernel cache directory)."""
        if self.state.last_executor is None or not hasattr(self.state.last_executor, "compile_cost"):
            raise SmeltError("compile_cost: this FusionDefinition has not been executed or "
                             "compiled automatically (execute() or compile_for())")
        return self.state.last_executor.compile_cost()

    def segment(self, inputs: Sequence[Any]) -> list:
        """nvFuser's segmentation entry point: the FusionDefinitions of the
        kernels this (unscheduled) fusion becomes for inputs like `inputs`,
        in execution order; [] when it is one kernel. Each runs alone
        (SegmentDefinition: input_names, output_names); execute() still
        runs the whole fusion, through the same kernels. Afterwards
        fd.segment_index_space_maps is nvFuser's {segment: {segment value:
        this definition's value}} (see segmentation.index_space_maps)."""
        if self.is_scheduled:
            raise SmeltError("segment: this fusion is scheduled by hand (one kernel); "
                             "segmentation is for unscheduled fusions")
        self.compile_for(inputs)
        segments = self.state.last_executor.segments()
        result = [SegmentDefinition(s) for s in segments] if len(segments) > 1 else []
        self.segment_index_space_maps = index_space_maps(self._handles, result)
        return result

    def last_kernels(self) -> list:
        """The kernels the latest execute() ran (smelt.inspection.Kernel)."""
        if self.state.last_executor is None:
            raise SmeltError("last_kernels: this FusionDefinition has not been executed")
        return self.state.last_executor.kernels()

    def last_run_report(self) -> str:
        """How the latest execute() ran: per segment the scheduler, its
        parameters, whether it was compiled for this run, the launch."""
        if self.state.last_executor is None:
            raise SmeltError("last_run_report: this FusionDefinition has not been executed")
        return self.state.last_executor.report()

    def lower(self, **options: Any):
        """The lowered kernel of the (scheduled) fusion: kernel IR, CUDA,
        shared-memory plan, ptxas report. See smelt.inspection.Kernel."""
        return inspection.lower(self, **options)


class SegmentDefinition(FusionDefinition):
    """One segment of a segmented FusionDefinition: executable on its own
    (inputs in `input_names` order, outputs in `output_names` order)."""

    _keys = itertools.count()  # a segment's cache key: its own, never shared

    def __init__(self, segment: Segment):
        super().__init__()
        self._fusion = segment.fusion
        self.scheduler = segment.scheduler
        self.input_names = list(segment.input_names)
        self.output_names = list(segment.output_names)
        self._key = ("segment", next(SegmentDefinition._keys))
        for val in segment.fusion.inputs():
            self._values.append(val)
            self.state.fusion_inputs.append(("user", len(self.state.inputs)))
            self.state.inputs.append(self._new_handle(val))
            self.state.input_layouts.append(None)
        for val in segment.fusion.outputs():
            self._values.append(val)
            self._outputs.append(self._new_handle(val))
            self.state.output_layouts.append(None)

    def __enter__(self):
        raise SmeltError("a segment's definition comes from the segmenter; it cannot be extended")

    @property
    def cache_key(self) -> tuple:
        return self._key

    def cache_entry(self) -> CacheEntry:
        return fusion_cache().entry(self._key)

    @property
    def is_scheduled(self) -> bool:
        return False

    def build_fusion(self):
        return self._fusion.clone()

    def __repr__(self) -> str:
        return (f"SegmentDefinition ({self.scheduler}): {', '.join(self.input_names)} -> "
                f"{', '.join(self.output_names)}\n{self._fusion.math_string()}")
