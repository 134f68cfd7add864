"""Compiling a graph's fusions ahead of its first call, in parallel.

When torch.compile hands smelt a graph, every fusion's input sizes and
strides are known from the traced example values (static shapes). Each
fusion is then compiled for them at once, instead of one after another as
the first call reaches them: the first call finds its kernels ready.

The whole graph goes to C++ at once (smelt._execution.compile_for_all ->
compileForAll, csrc/runtime/fusion_executor_cache.h), which waits once:
  - each fusion's segments are segmented and scheduled in order (each one's
    outputs are the next one's inputs), fusions on up to the pool's threads
    at once; every new kernel is lowered and generated on the C++
    CompilePool (csrc/runtime/compile_pool.h, one per process);
  - then the new kernels of every fusion are compiled as one NVRTC program
    per pool thread (NVRTC's start is paid per program: a CNN's one-kernel
    fusions share programs), and each fusion is finished.
SMELT_COMPILE_THREADS sizes the pool (default: the CPU count; 0 turns
compiling ahead off). A fusion that fails to compile here is left alone: its
first call meets the same error and falls back to torch as before. Errors
are listed in the graph's order.
"""
from __future__ import annotations

import time
from typing import Any, List, Optional, Sequence, Tuple

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from smelt._C import compile_threads
from smelt._execution import compile_for_all


def storage_extent(sizes: Sequence[int], strides: Sequence[int], offset: int) -> int:
    """Elements of storage a non-empty strided view reaches (its offset included)."""
    return offset + 1 + sum((s - 1) * abs(st) for s, st in zip(sizes, strides))


def meta_stand_in(val: Any) -> Optional[Any]:
    """A meta tensor with `val`'s sizes, strides, dtype and storage offset (a
    Python number stays as it is); None when a size or stride is symbolic."""
    if not isinstance(val, torch.Tensor):
        return val if isinstance(val, (bool, int, float)) else None
    sizes, strides = tuple(val.shape), tuple(val.stride())
    if not all(isinstance(x, int) for x in sizes + strides + (val.storage_offset(),)):
        return None
    if any(s == 0 for s in sizes):
        return torch.empty_strided(sizes, strides, dtype=val.dtype, device="meta")
    storage = torch.empty(storage_extent(sizes, strides, val.storage_offset()), dtype=val.dtype,
                          device="meta")
    return storage.as_strided(sizes, strides, val.storage_offset())


def compile_jobs(graph: torch.fx.Graph, fusion_of) -> List[Tuple[Any, list, str]]:
    """(FusionDefinition, meta inputs, device) for each call of a fusion
    module (`fusion_of(target)`: its FxFusion, None for other modules)
    whose inputs all have static example values."""
    # The backend runs under the graph's fake-tensor mode: stand-ins made in
    # it would be fake tensors, not the plain meta tensors smelt reads.
    with unset_fake_temporarily():
        return _compile_jobs(graph, fusion_of)


def _compile_jobs(graph: torch.fx.Graph, fusion_of) -> List[Tuple[Any, list, str]]:
    jobs = []
    for node in graph.nodes:
        fusion = fusion_of(node.target) if node.op == "call_module" else None
        if fusion is None:
            continue
        vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in node.args]
        stand_ins = [meta_stand_in(v) for v in vals]
        if any(s is None for s in stand_ins):
            continue
        devices = [v.device for v in vals if isinstance(v, torch.Tensor)]
        device = devices[0] if devices else fusion.device or "cpu"
        jobs.append((fusion.definition, fusion.arguments(stand_ins), str(device)))
    return jobs


def compile_all(definitions: Sequence[Tuple[Any, list, str]],
                matmul: Optional[str] = None) -> Tuple[float, List[str]]:
    """Compiles every (FusionDefinition, meta inputs, device) together, with
    fd.compile_for's `matmul` option.
    Returns the wall milliseconds it took and the errors met (one line
    each; those fusions fall back at their first call)."""
    if compile_threads() == 0 or not definitions:
        return 0.0, []
    start = time.perf_counter()
    with unset_fake_temporarily():  # C++ computes on the meta stand-ins on this thread too
        found = compile_for_all(definitions, matmul)
    errors = [error.splitlines()[0] for error in found if error is not None]
    return (time.perf_counter() - start) * 1000.0, errors
