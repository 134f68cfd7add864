"""The replayable record of a fusion definition and its schedule.

Every call that builds or schedules a fusion (``fd.define_tensor``,
``fd.ops.add``, ``tensor.split``, ...) appends one :class:`Record`. A record
names the operation and its arguments; tensors and scalars of the definition
appear as :class:`Ref` (their index in the order they were created), all other
arguments as plain hashable Python values. Replaying the records on a fresh
``_C.Fusion`` rebuilds the same fusion with the same schedule, so

* the tuple of records is the fusion cache key (two definitions with the same
  records share compiled kernels), and
* a new Fusion can be built whenever one is needed (per device, per input
  signature, for inspection) without touching the user's objects.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple


@dataclass(frozen=True)
class Ref:
    """A value (tensor or scalar) of the definition, by creation order."""
    index: int


@dataclass(frozen=True)
class ExtentRef:
    """A symbolic extent in a record (a Size): `scale` times the product of
    the logical extents (value, dimension) in `factors`."""
    factors: Tuple[Tuple[Any, int], ...]
    scale: int = 1


@dataclass(frozen=True)
class Record:
    op: str
    args: Tuple[Any, ...]

    def __str__(self) -> str:
        def show(a: Any) -> str:
            if isinstance(a, Ref):
                return f"%{a.index}"
            if isinstance(a, ExtentRef):
                return " * ".join([f"%{v.index}.size({d})" for v, d in a.factors] +
                                  ([str(a.scale)] if a.scale != 1 else []))
            if isinstance(a, tuple):
                return "(" + ", ".join(show(x) for x in a) + ("," if len(a) == 1 else "") + ")"
            return repr(a)
        return f"{self.op}({', '.join(show(a) for a in self.args)})"


# An operation's implementation: builds into the active _C.Fusion from resolved
# arguments (Refs replaced by _C objects) and returns the new values it
# defines: None, one _C value, or a tuple of them.
Impl = Callable[..., Any]


def freeze(value: Any) -> Any:
    """Lists become tuples (recursively) so that records hash."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    return value


def resolve(args: Sequence[Any], values: List[Any]) -> List[Any]:
    """Replaces each Ref (also inside tuples) by the value it names."""
    def one(a: Any) -> Any:
        if isinstance(a, Ref):
            return values[a.index]
        if isinstance(a, tuple):
            return tuple(one(x) for x in a)
        if isinstance(a, ExtentRef):
            return ExtentRef(tuple((one(v), d) for v, d in a.factors), a.scale)
        return a
    return [one(a) for a in args]


def apply(impl: Impl, record: Record, values: List[Any]) -> List[Any]:
    """Runs one record and appends the values it defines; returns them."""
    result = impl(*resolve(record.args, values))
    new = [] if result is None else list(result) if isinstance(result, tuple) else [result]
    values.extend(new)
    return new


def replay(records: Sequence[Record], impls: Dict[str, Impl], values: List[Any]) -> None:
    for record in records:
        apply(impls[record.op], record, values)
