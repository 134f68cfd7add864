"""Concretization: ops whose output extents are known only at run time.

A slice, pad, cat or reshape whose extents depend on a scalar input (or on
arithmetic of run-time sizes), or that crops a dimension whose extent is
symbolic, cannot be built into the definition Fusion: the core needs its
crops as constants. Such a call is recorded as a *deferred* record,
``Record("deferred", (op, *args))``, and the definition fusion gets a
placeholder of the right rank and dtype (a ``full`` of fresh symbolic
extents) so that later calls check ranks and dtypes as usual (_deferred.py
decides which calls are deferred and builds the placeholder). What
concretizing keeps between runs is the definition's Concretization, held
in its ExecutionState (state.concretization); CallPlan.concretized calls
:func:`concretize` with that state.

At execute, :func:`concretize` rebuilds the record with the run's values:

* the scalars the deferred records read are bound (user scalar inputs and
  host scalars, e.g. ``fd.ops.sub(x.size(1), 2)``);
* slice bounds are normalized as Python does (negative from the end, both
  clamped; an end before the start gives an empty slice) unless the slice
  was defined with ``manual_normalization=True``, when they must already be
  within ``[0, extent]``;
* each deferred record becomes the ordinary op with integer arguments; an
  input extent that op must know as a constant is made static in the
  concrete fusion's ``define_tensor`` (only those extents: the others stay
  symbolic);
* a result with no element becomes a ``full`` whose zero extent is a scalar
  input bound to 0 (the runtime launches nothing for it).

The concrete record is itself the fusion cache's key, so a *binding class*
(the values the extents depend on, and the static input extents) has its
own kernels, while scalars that change no extent stay kernel arguments. The
definition and its concrete fusions share one implementation: the concrete
record replays through the same op implementations (_ops.IMPLS).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import torch

from smelt import _C, _ops
from smelt._C import DataType, SmeltError
from smelt._deferred import DEFERRED, INT64_MAX, clamp, is_int, promoted_dtype, tensor_rank
from smelt._records import ExtentRef, Record, Ref, apply, replay
from smelt.fusion_cache import CacheEntry, RecordsKey, fusion_cache
from smelt.handles import Scalar

_INTEGER_TYPES = (DataType.Int, DataType.Int32, DataType.Int16, DataType.Int8, DataType.UInt8)

# ---- execute time: the concrete fusion --------------------------------------

@dataclass
class Concretization:
    """What concretizing a definition keeps, declared in one place: the
    definition's record and values (its own lists, shared: records are only
    appended, values never replaced), the input extents found to be needed
    as constants, and the concrete fusions of recent runs. A definition with
    a deferred op holds one in its ExecutionState (state.concretization)."""
    records: List[Record]
    values: List[Any]  # the definition fusion's _C values, by handle index
    # (fusion input position, dim) that concrete fusions make static.
    static_dims: FrozenSet[Tuple[int, int]] = frozenset()
    # (input sizes, scalar values) -> ConcreteDefinition; forget() clears it.
    memo: Dict[tuple, "ConcreteDefinition"] = field(default_factory=dict)
    memo_records: int = 0  # the record's length when the memo was filled

    def forget(self) -> None:
        """The record grew: the concrete fusions found so far are stale."""
        self.memo.clear()


class ConcreteDefinition:
    """A FusionDefinition's record with the run's extents: what the executor
    builds, schedules and caches (for _execution's executors it offers what
    a FusionDefinition does: cache_entry, is_scheduled, build_fusion)."""

    def __init__(self, records: Tuple[Record, ...], arg_plan: Tuple[Any, ...],
                 is_scheduled: bool):
        self.records = records
        self.arg_plan = arg_plan  # per concrete fusion input: original position, or ("zero",)
        self.is_scheduled = is_scheduled
        self._key: Optional[RecordsKey] = None

    def cache_entry(self) -> CacheEntry:
        """The fusion cache's entry of the concrete record (its own key
        object kept, as FusionDefinition.cache_entry does)."""
        if self._key is None:
            self._key = RecordsKey(self.records)
        entry = fusion_cache().entry(self._key)
        if entry.key is not self._key:
            self._key = entry.key
        return entry

    def build_fusion(self):
        fusion = _C.Fusion()
        with _C.FusionGuard(fusion):
            replay(self.records, _ops.IMPLS, [])
        return fusion

    def arguments(self, args: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        return [torch.tensor(0, dtype=torch.int64) if p == ("zero",) else args[p]
                for p in self.arg_plan]


class _NeedStatic(Exception):
    """A deferred op found input extents it needs as constants."""

    def __init__(self, dims: Set[Tuple[int, int]]):
        super().__init__()
        self.dims = dims


def concretize(state: Any, args: List[torch.Tensor], scheduled: bool):
    """(ConcreteDefinition, its arguments) for a run with `args` (the
    fusion's inputs in order, host scalars included). `state` is the
    definition's ExecutionState (inputs, fusion_inputs, concretization)."""
    c: Concretization = state.concretization
    scalars = _scalar_values(state, args)
    # The same sizes and scalar values give the same concrete fusion: a run
    # repeated with them skips the replay (the fusion cache then finds the
    # kernels of its binding class).
    if c.memo_records != len(c.records):
        c.forget()
        c.memo_records = len(c.records)
    memo = c.memo
    key = (tuple(tuple(a.shape) for a in args), tuple(sorted(scalars.items())))
    concrete = memo.get(key)
    if concrete is not None:
        return concrete, concrete.arguments(args)
    static: Set[Tuple[int, int]] = set(c.static_dims)
    while True:
        try:
            concrete = _Concretizer(c, scheduled, args, scalars, static).run()
        except _NeedStatic as need:
            grown = static | need.dims
            if grown == static:  # cannot happen: a static extent is a constant
                raise SmeltError("concretization did not converge") from None
            static = grown
            c.static_dims = frozenset(static)
            continue
        if len(memo) >= 64:
            memo.pop(next(iter(memo)))
        if all(v is not None for _, v in key[1]):
            memo[key] = concrete
        return concrete, concrete.arguments(args)


def _scalar_values(state: Any, args: Sequence[torch.Tensor]) -> Dict[int, Any]:
    """Handle index -> value of every scalar input of the run (the user's
    and the host scalars)."""
    values: Dict[int, Any] = {}
    for entry, arg in zip(state.fusion_inputs, args):
        if entry[0] == "user":
            decl = state.inputs[entry[1]]
            if isinstance(decl, Scalar):
                values[decl.index] = None if arg.is_meta else arg.item()
        else:
            values[entry[1].index] = None if arg.is_meta else arg.item()
    return values


class _Concretizer:
    def __init__(self, definition: Concretization, scheduled: bool, args, scalars, static):
        self.definition = definition
        self.scheduled = scheduled
        self.args = args
        self.scalars = scalars
        self.static = static
        self.records: List[Record] = []
        self.values: List[Any] = []       # concrete fusion's values
        self.remap: Dict[int, int] = {}   # definition value index -> concrete value index
        self.arg_plan: List[Any] = []
        self.sizes: Dict[str, int] = {}   # concrete size symbol -> value
        self.symbol_dims: Dict[str, Tuple[int, int]] = {}  # -> (fusion input position, dim)
        self.need: Set[Tuple[int, int]] = set()
        self.zero: Optional[int] = None   # concrete index of the scalar bound to 0
        self.input_position = 0

    # records with Refs remapped, applied to the concrete fusion
    def _emit(self, op: str, args: Sequence[Any]) -> List[int]:
        record = Record(op, tuple(args))
        new = apply(_ops.IMPLS[op], record, self.values)
        self.records.append(record)
        return list(range(len(self.values) - len(new), len(self.values)))

    def _map(self, a: Any) -> Any:
        if isinstance(a, Ref):
            return Ref(self.remap[a.index])
        if isinstance(a, ExtentRef):
            return ExtentRef(tuple((self._map(v), d) for v, d in a.factors), a.scale)
        if isinstance(a, tuple):
            return tuple(self._map(x) for x in a)
        return a

    def run(self) -> ConcreteDefinition:
        fusion = _C.Fusion()
        count = 0  # values the definition had created before this record
        with _C.FusionGuard(fusion):
            for record in self.definition.records:
                if record.op == DEFERRED:
                    new = self._deferred(record.args[0], record.args[1:])
                elif record.op == "define_tensor":
                    new = self._define_tensor(record)
                elif record.op == "define_scalar" and record.args[0] is None:
                    self.arg_plan.append(self.input_position)
                    self.input_position += 1
                    new = self._emit(record.op, self._map(record.args))
                    value = self.scalars.get(count)
                    if record.args[1] in _INTEGER_TYPES and value is not None:
                        self.sizes[self.values[new[0]].symbol] = int(value)
                else:
                    new = self._emit(record.op, self._map(record.args))
                for k, concrete in enumerate(new):
                    self.remap[count + k] = concrete
                count += len(new)
        if self.need:
            # Dimensions the fusion maps onto a needed one must be static too: a
            # segment rebuilt from its inputs may take the extent from any of
            # them. Mapped dimensions have equal sizes, so every symbolic input
            # dimension of a needed size is made static (a superset: it costs a
            # kernel per such size, never a wrong value).
            sizes = {self.sizes[sym] for sym, dim in self.symbol_dims.items() if dim in self.need}
            self.need |= {dim for sym, dim in self.symbol_dims.items() if self.sizes[sym] in sizes}
            raise _NeedStatic(self.static | self.need)
        return ConcreteDefinition(tuple(self.records), tuple(self.arg_plan),
                                  self.scheduled)

    def _define_tensor(self, record: Record) -> List[int]:
        shape, contiguity, dtype = record.args
        position = self.input_position
        self.input_position += 1
        self.arg_plan.append(position)
        arg = self.args[position]
        shape = list(shape)
        for d, n in enumerate(shape):
            if n == -1 and (position, d) in self.static and arg.shape[d] > 0:
                shape[d] = int(arg.shape[d])
        new = self._emit("define_tensor", (tuple(shape), contiguity, dtype))
        tv = self.values[new[0]]
        for d, id_ in enumerate(tv.logical_no_reductions):
            text = str(id_.size)
            if _C.is_size_symbol(text):
                self.symbol_dims[text] = (position, d)
                self.sizes[text] = int(arg.shape[d])
        return new

    # ---- values of the run ----
    def _value(self, op: str, what: str, entry: Any) -> int:
        """An int argument of a deferred op, with the run's values."""
        if isinstance(entry, Ref):
            val = self.definition.values[entry.index]
            if val.is_constant:
                return int(val.value)
            value = self.scalars.get(entry.index)
            if value is None:
                raise SmeltError(f"{op}: {what} is a scalar known only at run time; give it a "
                                 f"value (compile_for's meta inputs have none)")
            return int(value)
        if isinstance(entry, ExtentRef):
            n = entry.scale
            for v, d in entry.factors:
                n *= self._extent(self.values[self.remap[v.index]], d)
            return n
        return int(entry)

    def _extent(self, tv: Any, d: int) -> int:
        size = tv.logical_no_reductions[d].size
        if size.value is not None:
            return int(size.value)
        return int(size.evaluate(self.sizes))

    def _require_constant(self, op: str, tv: Any, d: int) -> bool:
        """Whether extent d of tv is a constant; else asks for its symbols to
        be made static (the run restarts) and says False."""
        size = tv.logical_no_reductions[d].size
        if size.value is not None:
            return True
        for symbol in size.symbols:
            dim = self.symbol_dims.get(symbol)
            if dim is None:
                raise SmeltError(
                    f"{op}: dimension {d} of {tv.name} has the extent {size}, which this op needs "
                    f"as a constant; only extents of input tensors can be made static")
            self.need.add(dim)
        return False

    def _empty(self, dtype: DataType, shape: Sequence[int]) -> List[int]:
        """A tensor of `shape` (an extent is 0) as a full whose zero extents
        are a scalar input bound to 0."""
        if self.zero is None:
            self.arg_plan.append(("zero",))
            self.zero = self._emit("define_scalar", (None, DataType.Int))[0]
            self.sizes[self.values[self.zero].symbol] = 0
        entries = tuple(Ref(self.zero) if n == 0 else n for n in shape)
        fill = False if dtype == DataType.Bool else 0
        return self._emit("full", (entries, fill, dtype))

    # ---- the deferred ops ----
    def _deferred(self, op: str, args: Sequence[Any]) -> List[int]:
        return getattr(self, f"_{op}")(*args)

    def _tensor(self, ref: Ref) -> Tuple[Ref, Any]:
        index = self.remap[ref.index]
        return Ref(index), self.values[index]

    def _slice(self, ref, starts, stops, manual) -> List[int]:
        cref, tv = self._tensor(ref)
        rank = tensor_rank(tv)
        extents = [self._extent(tv, d) for d in range(rank)]
        lo, hi, out = [], [], []
        for d in range(rank):
            e = extents[d]
            a = self._value("slice", f"dimension {d}'s start", starts[d])
            b = self._value("slice", f"dimension {d}'s end", stops[d])
            if manual:
                if not 0 <= a <= b <= e:
                    raise SmeltError(
                        f"slice: dimension {d} of {self._name(ref)} (extent {e}) takes [{a}, {b}), "
                        f"outside the tensor; with manual_normalization=True bounds must satisfy "
                        f"0 <= start <= end <= extent")
            else:
                a, b = clamp(a, e), clamp(b, e)
                b = max(a, b)
            lo.append(a)
            hi.append(b)
            out.append(b - a)
        if any(n == 0 for n in out):
            return self._empty(tv.dtype, out)
        cropped = [d for d in range(rank) if (lo[d], hi[d]) != (0, extents[d])]
        if not all([self._require_constant("slice", tv, d) for d in cropped]):
            return self._stub(tv.dtype, out)
        return self._emit("slice", (cref, tuple(lo[d] if d in cropped else 0 for d in range(rank)),
                                    tuple(hi[d] if d in cropped else INT64_MAX
                                          for d in range(rank))))

    def _stub(self, dtype, shape) -> List[int]:
        """Keeps the walk going when a restart is already due."""
        return self._emit("full", (tuple(max(n, 1) for n in shape), False if dtype ==
                                   DataType.Bool else 0, dtype))

    def _pad(self, ref, widths, value) -> List[int]:
        cref, tv = self._tensor(ref)
        rank = tensor_rank(tv)
        ws = [self._value("pad", f"width {k}", w) for k, w in enumerate(widths)]
        out = [self._extent(tv, d) for d in range(rank)]
        negative = []
        for k in range(len(ws) // 2):
            d = rank - 1 - k
            n = out[d] + ws[2 * k] + ws[2 * k + 1]
            if n < 0:
                raise SmeltError(f"pad: dimension {d} of {self._name(ref)} (extent {out[d]}) with "
                                 f"widths ({ws[2 * k]}, {ws[2 * k + 1]}) would have extent {n}")
            if ws[2 * k] < 0 or ws[2 * k + 1] < 0:
                negative.append(d)
            out[d] = n
        if any(n == 0 for n in out):
            return self._empty(tv.dtype, out)
        if not all([self._require_constant("pad", tv, d) for d in negative]):
            return self._stub(tv.dtype, out)
        return self._emit("pad", (cref, tuple(ws), self._map(value)))

    def _cat(self, refs, dim) -> List[int]:
        pieces = [self._tensor(r) for r in refs]
        rank = tensor_rank(pieces[0][1])
        d = dim + rank if dim < 0 else dim
        dtype = promoted_dtype([tv.dtype for _, tv in pieces])
        kept = [(r, tv) for r, tv in pieces if self._extent(tv, d) > 0]
        shape = [self._extent(pieces[0][1], k) for k in range(rank)]
        shape[d] = sum(self._extent(tv, d) for _, tv in pieces)
        if not kept or any(n == 0 for n in shape):
            return self._empty(dtype, shape)
        if not all([self._require_constant("cat", tv, d) for _, tv in kept]):
            return self._stub(dtype, shape)
        new = self._emit("cat", (tuple(r for r, _ in kept), d))
        if self.values[new[0]].dtype != dtype:
            new = self._emit("cast", (Ref(new[0]), dtype))
        return new

    def _reshape(self, ref, shape) -> List[int]:
        cref, tv = self._tensor(ref)
        rank = tensor_rank(tv)
        numel = 1
        for d in range(rank):
            numel *= self._extent(tv, d)
        entries = [self._value("reshape", f"entry {k}", e) for k, e in enumerate(shape)]
        infer = [k for k, e in enumerate(entries) if e == -1]
        known = 1
        for k, e in enumerate(entries):
            if e < -1 or (e == -1 and len(infer) > 1):
                raise SmeltError(f"reshape: shape {entries} of {self._name(ref)} has an invalid "
                                 f"entry {e} at {k}")
            if e != -1:
                known *= e
        if infer:
            if known == 0 or numel % known:
                raise SmeltError(f"reshape: shape {entries} is invalid for {self._name(ref)} of "
                                 f"{numel} elements")
            entries[infer[0]] = numel // known
        elif known != numel:
            raise SmeltError(f"reshape: shape {entries} is invalid for {self._name(ref)} of "
                             f"{numel} elements")
        if numel == 0:
            return self._empty(tv.dtype, entries)
        if not all([self._require_constant("reshape", tv, d) for d in range(rank)]):
            return self._stub(tv.dtype, entries)
        return self._emit("reshape", (cref, tuple(entries)))

    def _expand(self, ref, shape) -> List[int]:
        cref, tv = self._tensor(ref)
        out, target = [], []
        for d, e in enumerate(shape):
            n = self._value("expand", f"entry {d}", e)
            extent = self._extent(tv, d)
            broadcast = tv.logical_no_reductions[d].iter_type == _C.IterType.Broadcast
            if n != -1 and not broadcast and n != extent:
                raise SmeltError(f"expand: dimension {d} of {self._name(ref)} has extent {extent} "
                                 f"and is not a broadcast, so it cannot expand to {n}")
            keep = n == -1 or not broadcast or n == 1
            out.append(extent if keep else n)
            # a run-time size stays symbolic in the kernel (no recompilation per value)
            target.append(-1 if keep else n if is_int(e) else self._map(e))
        if any(n == 0 for n in out):
            return self._empty(tv.dtype, out)
        if all(n == -1 for n in target):
            return self._emit("set", (cref,))
        return self._emit("expand", (cref, tuple(target)))

    def _name(self, ref: Ref) -> str:
        return self.definition.values[ref.index].name
