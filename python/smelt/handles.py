"""The handles a FusionDefinition hands out: Scalar and Tensor values (with
Python operators and, on tensors, the schedule primitives), a tensor's Axis,
and Size, an extent known only at run time.

A handle names a value of its definition by creation order (`index`, what
records refer to) and holds the definition fusion's _C value (`ir`).
Schedule primitives are recorded through the definition (fd.schedule_op).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Union

from smelt import _ops
from smelt._C import DataType, MemoryType, ParallelType, SmeltError

if TYPE_CHECKING:
    from smelt.fusion_definition import FusionDefinition

Number = Union[bool, int, float]


class Value:
    """A value (tensor or scalar) of a FusionDefinition."""

    __slots__ = ("fd", "index", "ir")

    def __init__(self, fd: "FusionDefinition", index: int, ir: Any):
        self.fd = fd
        self.index = index
        self.ir = ir  # the definition fusion's _C value (values are never replaced)

    @property
    def dtype(self) -> DataType:
        return self.ir.dtype

    def __repr__(self) -> str:
        return f"{type(self).__name__}(%{self.index}: {self.ir})"


class Scalar(Value):
    """A scalar of the definition: a constant, or an input given to execute()."""

    @property
    def is_constant(self) -> bool:
        return self.ir.is_constant

    def is_tensor(self) -> bool:
        """nvFuser's Scalar.is_tensor(): False."""
        return False


class Axis:
    """Loop axis `index` of a tensor (as it stands when this is used)."""

    __slots__ = ("tensor", "index")

    def __init__(self, tensor: "Tensor", index: int):
        self.tensor = tensor
        self.index = index

    @property
    def _id(self):
        return self.tensor.ir.axis(self.index)

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
        self.tensor.fd.schedule_op("parallelize", self.tensor, self.index, parallel_type)
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
        return str(_ops.extent_of(self.scale, [(t.ir, d) for t, d in self.factors]))

    def __repr__(self) -> str:
        return f"Size({self})"


class Tensor(Value):
    """A tensor of the definition. Its scheduling methods return the tensor
    (so they chain), cache_after/cache_before the new tensor."""

    @property
    def name(self) -> str:
        return self.ir.name

    def is_tensor(self) -> bool:
        """nvFuser's Tensor.is_tensor(): True."""
        return True

    @property
    def ndim(self) -> int:
        """Rank as consumers see it (reduced axes excluded)."""
        return len(self.ir.logical_no_reductions)

    def size(self, dim: int) -> Union[int, Size]:
        """The size of logical dimension `dim`: an int when it is fixed, else
        a Size (reshape entries take it)."""
        dims = self.ir.logical_no_reductions
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
        return self.ir.ndim

    @property
    def memory_type(self) -> MemoryType:
        return self.ir.memory_type

    @property
    def compute_position(self) -> int:
        return self.ir.compute_position

    def axis(self, index: int) -> Axis:
        self.ir.axis(index)  # range check now, with smelt's message
        return Axis(self, index)

    def schedule_string(self) -> str:
        return self.ir.transforms_string()

    # ---- scheduling primitives (recorded, replayed on every built fusion) ----
    def split(self, axis: int, factor: int, inner_split: bool = True) -> "Tensor":
        self.fd.schedule_op("split", self, axis, factor, inner_split)
        return self

    def merge(self, axis_outer: int, axis_inner: Optional[int] = None) -> "Tensor":
        inner = axis_outer + 1 if axis_inner is None else axis_inner
        self.fd.schedule_op("merge", self, axis_outer, inner)
        return self

    def reorder(self, old_to_new: Dict[int, int]) -> "Tensor":
        pairs = tuple(sorted(old_to_new.items()))
        self.fd.schedule_op("reorder", self, pairs)
        return self

    def compute_at(self, consumer: "Tensor", position: int) -> "Tensor":
        self.fd.schedule_op("compute_at", self, consumer, position)
        return self

    def inline_at(self, position: int) -> "Tensor":
        self.fd.schedule_op("inline_at", self, position)
        return self

    def inline_most(self) -> "Tensor":
        self.fd.schedule_op("inline_most", self)
        return self

    def cache_after(self) -> "Tensor":
        return self.fd.schedule_op("cache_after", self)

    def cache_before(self) -> "Tensor":
        return self.fd.schedule_op("cache_before", self)

    def set_memory_type(self, memory_type: MemoryType) -> "Tensor":
        self.fd.schedule_op("set_memory_type", self, memory_type)
        return self

    def promote_reuse(self, enable: bool = True) -> "Tensor":
        self.fd.schedule_op("promote_reuse", self, enable)
        return self

    def circular_buffer(self, stages: int) -> "Tensor":
        """Rotates this tensor over `stages` copies across the loop it is
        computed in, so loads for later iterations overlap this one's use."""
        self.fd.schedule_op("circular_buffer", self, stages)
        return self

    def set_name(self, name: str) -> "Tensor":
        self.fd.schedule_op("set_name", self, name)
        return self

    def propagate_schedule(self) -> "Tensor":
        """Replays this tensor's schedule onto every tensor connected to it."""
        self.fd.schedule_op("propagate_schedule", self)
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


class Shape(list):
    """A tensor's extents: a list that can also be called (nvFuser's shape())."""

    def __call__(self) -> "Shape":
        return self
