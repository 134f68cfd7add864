"""The abstract shared-memory planner: plan a plain list of buffers, no fusion needed.

    from smelt.planner import PlanBuffer, plan_buffers
    plan = plan_buffers([PlanBuffer("A", 128, live=(0, 3)),
                         PlanBuffer("B", 256, live=(2, 5)),
                         PlanBuffer("C", 128, live=(4, 7))])
    plan.addresses      # {"A": 0, "B": 128, "C": 0}
    plan.total_bytes    # 384 (the max-live lower bound: plan.status == "bound reached")

Conflicts (which buffers may not share bytes) come either from the live
intervals, under one of smelt's hazard modes (docs/planning.md):
  * "precise": buffers whose closed intervals [first, last] do not overlap may
    share bytes (the reuse is thread-private, e.g. a one-thread block);
  * "conservative" (nVFuser's rule): they may share only when one of
    `barriers` (program positions of block barriers) lies in [X.last, Y.first);
or from explicit `conflicts` pairs of buffer names (intervals then only guide
the heuristics' orderings and may be left out).

The result gives each buffer's byte offset, the total, the lower bound (the
heaviest set of pairwise-conflicting buffers: with intervals, the most bytes
live at one point), and whether optimality was proved. With intervals the
default planner is never worse than nvFuser's stack allocator on the same
buffers (`stack_total_bytes`), and in "precise" mode never worse than its own
"conservative" plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from smelt import _C
from smelt._C import SmeltError

_HAZARDS = {"precise": _C.SmemHazards.Precise, "conservative": _C.SmemHazards.Conservative}
_ALLOCATORS = {"best": _C.SmemAllocator.Best, "stack": _C.SmemAllocator.Stack}


@dataclass(frozen=True)
class PlanBuffer:
    """One buffer: `bytes` (an int), `alignment` (a power of two) and its live
    interval `live = (first_write, last_read)`, closed, in program positions."""
    name: str
    bytes: int
    alignment: int = 16
    live: Optional[Tuple[int, int]] = None


@dataclass(frozen=True)
class BufferPlan:
    addresses: Dict[str, int]
    total_bytes: int
    lower_bound_bytes: int
    no_reuse_bytes: int
    optimal: bool  # proved: the bound is reached or an exhaustive search proved it
    status: str  # "bound reached", "optimal" (proved above the bound) or "heuristic"
    strategy: str  # the layout kept ("baseline:stack", "best-fit/size", "exact", ...)
    attempts: List[Tuple[str, int]]  # (strategy, total) in the order tried
    stack_total_bytes: Optional[int]  # nvFuser's stack allocator (intervals only)
    conflicts: List[Tuple[str, str]]  # the pairs that may not share bytes

    @property
    def lower_bound_reached(self) -> bool:
        return self.total_bytes <= self.lower_bound_bytes


BufferLike = Union[PlanBuffer, dict, Sequence]


def _as_buffer(b: BufferLike) -> PlanBuffer:
    if isinstance(b, PlanBuffer):
        return b
    if isinstance(b, dict):
        return PlanBuffer(**b)
    return PlanBuffer(*b)


def plan_buffers(buffers: Iterable[BufferLike],
                 conflicts: Optional[Iterable[Tuple[str, str]]] = None,
                 barriers: Iterable[int] = (), hazards: str = "precise",
                 allocator: str = "best", min_alignment: int = 16,
                 time_limit_ms: float = 50.0, exact_search: bool = True) -> BufferPlan:
    """Plans `buffers` (PlanBuffer, dicts of its fields, or (name, bytes,
    alignment, live) tuples). See the module docstring for `conflicts`,
    `barriers` and `hazards`. `allocator="stack"` is nvFuser's stack allocator
    (intervals only). Every alignment is raised to at least `min_alignment`.
    The search stops at `time_limit_ms` (then `optimal` may be False); with
    `exact_search=False` only the heuristics run."""
    if hazards not in _HAZARDS:
        raise SmeltError(f"plan_buffers: hazards must be one of {sorted(_HAZARDS)}, got {hazards!r}")
    if allocator not in _ALLOCATORS:
        raise SmeltError(f"plan_buffers: allocator must be one of {sorted(_ALLOCATORS)}, "
                         f"got {allocator!r}")
    if min_alignment <= 0 or min_alignment & (min_alignment - 1):
        raise SmeltError(f"plan_buffers: min_alignment must be a positive power of two, "
                         f"got {min_alignment!r}")
    items = [_as_buffer(b) for b in buffers]
    index: Dict[str, int] = {}
    for i, b in enumerate(items):
        if b.name in index:
            raise SmeltError(f"plan_buffers: buffer name {b.name!r} appears twice")
        index[b.name] = i
        if not isinstance(b.bytes, int) or b.bytes < 0:
            raise SmeltError(f"plan_buffers: buffer {b.name!r} needs a non-negative int size, "
                             f"got {b.bytes!r}")
        if b.live is None and conflicts is None:
            raise SmeltError(f"plan_buffers: buffer {b.name!r} has no live interval; give "
                             "every buffer one, or pass explicit conflicts")
    pairs = None
    if conflicts is not None:
        pairs = []
        for pair in conflicts:
            a, b = pair
            for n in (a, b):
                if n not in index:
                    raise SmeltError(f"plan_buffers: conflict names unknown buffer {n!r}")
            if a == b:
                raise SmeltError(f"plan_buffers: buffer {a!r} cannot conflict with itself")
            pairs.append((index[a], index[b]))
    rows = [(b.name, b.bytes, max(b.alignment, min_alignment),
             *(b.live if b.live is not None else (0, 0))) for b in items]
    d = _C.plan_buffers(rows, pairs, list(barriers), _HAZARDS[hazards], _ALLOCATORS[allocator],
                        float(time_limit_ms), bool(exact_search))
    names = [b.name for b in items]
    return BufferPlan(
        addresses=dict(d["addresses"]), total_bytes=d["total_bytes"],
        lower_bound_bytes=d["lower_bound_bytes"], no_reuse_bytes=d["no_reuse_bytes"],
        optimal=d["optimal"], status=d["status"], strategy=d["strategy"],
        attempts=[tuple(a) for a in d["attempts"]], stack_total_bytes=d["stack_total_bytes"],
        conflicts=[(names[i], names[j]) for i, j in d["conflicts"]])


__all__ = ["BufferPlan", "PlanBuffer", "plan_buffers"]
