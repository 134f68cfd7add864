"""The lowered-kernel view: what smelt made of a scheduled fusion.

    k = fd.lower()
    k.kernel_ir          # the kernel IR with program positions
    k.cuda               # the CUDA C++ NVRTC compiles
    k.smem_plan          # SmemPlan: buffers (name, bytes, address, live
                         # interval, alias), barriers, total, lower bound
    k.smem_plan.json     # the same as JSON text; .svg the picture, .text the table
    k.ptxas              # ptxas's report (registers, spills, shared memory)
    k.quality            # machine code: SASS mix, LDL/STL, CALLs, access widths,
                         # occupancy (smelt.kernel_quality)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Dict, List, Optional, Union

from smelt import _C
from smelt._C import SmeltError
from smelt.kernel_quality import kernel_quality

IntOrExpr = Union[int, str]  # a symbolic size is its expression text

_HAZARDS = {"precise": _C.SmemHazards.Precise, "conservative": _C.SmemHazards.Conservative}
_ALLOCATORS = {"best": _C.SmemAllocator.Best, "stack": _C.SmemAllocator.Stack}
# ptxas counts only static shared memory; the CUDA text declares the array
# static when the plan's total is a constant below this (the static limit).
_STATIC_SMEM_LIMIT = 48 * 1024


@dataclass(frozen=True)
class SmemBuffer:
    name: str
    dtype: str
    bytes: IntOrExpr
    alignment: int
    address: IntOrExpr
    first_write: int  # program positions (as kernel_ir numbers them), closed interval
    last_read: int
    creation_order: int  # order of its allocation in the kernel
    aliased_to: Optional[str]  # "T3 (outer)" when this buffer reuses T3's bytes

    @property
    def interval(self) -> tuple:
        return (self.first_write, self.last_read)


@dataclass(frozen=True)
class InsertedBarrier:
    position: int
    reason: str


@dataclass(frozen=True)
class SmemPlan:
    """The shared-memory plan of one kernel (docs/reading-the-report.md)."""
    strategy: str
    buffers: List[SmemBuffer]
    total_bytes: IntOrExpr  # every shared buffer, block-reduction workspaces included
    tensor_bytes: IntOrExpr  # the fusion tensors' buffers only: the figure nvFuser reports
    lower_bound_bytes: int
    no_reuse_bytes: IntOrExpr
    lower_bound_reached: bool
    optimal: bool  # proved: the bound is reached or an exhaustive search proved it
    symbolic: bool
    barriers: List[int]  # positions of barriers the kernel already had
    inserted_barriers: List[InsertedBarrier]  # added so that buffers can share bytes
    notes: List[str]
    status: str  # "bound reached", "optimal" (proved above the bound), "heuristic", "symbolic"
    json: str = field(repr=False)
    text: str = field(repr=False)
    svg: str = field(repr=False)  # empty when sizes are symbolic

    @staticmethod
    def from_source(source) -> "SmemPlan":
        """From a _C.LoweredKernel or _C.KernelView."""
        json_text = source.smem_plan_json
        d = json.loads(json_text)
        return SmemPlan(
            strategy=d["strategy"],
            buffers=[SmemBuffer(**b) for b in d["buffers"]],
            total_bytes=d["total_bytes"],
            tensor_bytes=source.smem_tensor_bytes,
            lower_bound_bytes=d["lower_bound_bytes"],
            no_reuse_bytes=d["no_reuse_bytes"],
            lower_bound_reached=d["lower_bound_reached"],
            optimal=d["optimal"],
            symbolic=d["symbolic"],
            barriers=list(d["barriers"]),
            inserted_barriers=[InsertedBarrier(**b) for b in d["inserted_barriers"]],
            notes=list(d["notes"]),
            status=d.get("status", "heuristic"),
            json=json_text, text=source.smem_plan_text, svg=source.smem_plan_svg)

    def buffer(self, name: str) -> SmemBuffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(f"no shared buffer {name!r} in the plan (have "
                       f"{[b.name for b in self.buffers]})")

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(self.json)


@dataclass(frozen=True)
class PtxasReport:
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    static_smem_bytes: int
    barriers: int
    compile_ms: float
    log: str = field(repr=False)


class Kernel:
    """One lowered kernel (see the module docstring). CUDA text and NVRTC's
    compilation behind `ptxas` are produced on first access when the kernel
    was only lowered (fd.lower()); an executed one (fd.last_kernels()) has them."""

    def __init__(self, source, cuda: Callable[[], str], compiled: Callable[[], Any],
                 index_type: str):
        self._source = source  # _C.LoweredKernel or _C.KernelView
        self._cuda = cuda
        self._compiled = compiled
        self._index_type = index_type

    @staticmethod
    def from_lowered(lowered, name: str = "smelt_kernel", arch: int = 90) -> "Kernel":
        def cuda() -> str:
            total = lowered.shared_memory_bytes
            return lowered.cuda(name, isinstance(total, int) and 0 < total <= _STATIC_SMEM_LIMIT)
        kernel = Kernel(lowered, cuda, lambda: _C.compile_cuda(kernel.cuda, name, arch), "int64")
        return kernel

    @staticmethod
    def from_executor(view) -> "Kernel":
        """From a _C.KernelView of an executed kernel."""
        return Kernel(view, lambda: view.cuda_source, lambda: view.compiled, view.index_type)

    @property
    def index_type(self) -> str:
        """'int32' or 'int64', the type of the kernel's index arithmetic: an
        executed kernel's launch chose it (32-bit when its sizes and offsets
        fit); fd.lower(), knowing no sizes, is 64-bit."""
        return self._index_type

    @property
    def kernel_ir(self) -> str:
        return self._source.kernel_ir

    @property
    def summary(self) -> str:
        """Launch dimensions and every allocation."""
        return self._source.summary

    @property
    def grid(self) -> tuple:
        return self._source.grid

    @property
    def block(self) -> tuple:
        return self._source.block

    @property
    def shared_memory_bytes(self) -> IntOrExpr:
        return self._source.shared_memory_bytes

    @cached_property
    def smem_plan(self) -> SmemPlan:
        return SmemPlan.from_source(self._source)

    @property
    def bank_conflicts(self) -> List[Dict[str, Any]]:
        """Every shared access the bank-conflict analysis measured (lower/bank_conflicts.h):
        position, kind (read, write, cp.async, ldmatrix), buffer, bytes_per_lane, ways,
        wavefronts, ideal_wavefronts, in_loop."""
        return self._source.bank_conflicts

    @property
    def main_loop_guards(self) -> List[Dict[str, Any]]:
        """Guards that run on every K step of every tile (lower/main_loop_guards.h):
        position, buffer, guard. Empty for a kernel without a main loop."""
        return self._source.main_loop_guards

    @cached_property
    def cuda(self) -> str:
        return self._cuda()

    @cached_property
    def compiled(self):
        """NVRTC's result (_C.CompiledKernel): cubin, log, ptxas report."""
        return self._compiled()

    @cached_property
    def quality(self):
        """The machine-code report (smelt.kernel_quality.KernelQuality)."""
        return kernel_quality(self)

    @cached_property
    def ptxas(self) -> PtxasReport:
        compiled = self.compiled
        p = compiled.ptxas
        return PtxasReport(p.registers, p.spill_store_bytes, p.spill_load_bytes,
                           p.stack_frame_bytes, p.static_smem_bytes, p.barriers,
                           compiled.compile_ms, compiled.log)

    def __repr__(self) -> str:
        return (f"Kernel(grid {self.grid}, block {self.block}, "
                f"smem {self.shared_memory_bytes} B)")


def lower(fd, hazards: str = "precise", allocator: str = "best",
          max_shared_memory_bytes: Optional[int] = None, name: str = "smelt_kernel",
          arch: int = 90, min_shared_alignment: int = 16) -> Kernel:
    """Lowers a fresh fusion built from `fd`'s record as scheduled by hand
    (an unscheduled fusion lowers as written: one thread, a loop nest per op).
    `min_shared_alignment` aligns every shared buffer to at least that many
    bytes (16 by default; nvFuser uses 128)."""
    if hazards not in _HAZARDS:
        raise SmeltError(f"lower: hazards must be one of {sorted(_HAZARDS)}, got {hazards!r}")
    if allocator not in _ALLOCATORS:
        raise SmeltError(f"lower: allocator must be one of {sorted(_ALLOCATORS)}, got {allocator!r}")
    if (not isinstance(min_shared_alignment, int) or min_shared_alignment <= 0
            or min_shared_alignment & (min_shared_alignment - 1)):
        raise SmeltError("lower: min_shared_alignment must be a positive power of two, "
                         f"got {min_shared_alignment!r}")
    options = {"hazards": _HAZARDS[hazards], "allocator": _ALLOCATORS[allocator],
               "min_shared_alignment": min_shared_alignment}
    if max_shared_memory_bytes is not None:
        options["max_shared_memory_bytes"] = max_shared_memory_bytes
    return Kernel.from_lowered(_C.lower(fd.build_fusion(), **options), name, arch)
