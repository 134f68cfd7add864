"""Autotuning who computes a fusion's matmuls, as Inductor's max-autotune
times its matmul templates: opt-in, with options={"matmul": "autotune"} or
mode="max-autotune" / "max-autotune-no-cudagraphs".

At the first compile of a graph on a GPU, each fusion holding a matmul is
run both ways on random inputs of its traced sizes and strides: with its
matmuls in the library (cuBLAS through ATen, the epilogue in smelt's kernels
around them) and in smelt's generated kernels (the epilogue inside). The
faster policy is kept in smelt's disk cache (kind "autotune", keyed by the
fusion's record, its inputs, the GPU and torch's version), so a later
process reads the choice instead of measuring again. Off a GPU (CPU tensors
run in the simulator, whose times say nothing about a GPU) fusions keep the
default rules.
"""
from __future__ import annotations

import statistics
from typing import Any, Callable, Dict, List, Sequence

import torch

from smelt import _C
from smelt.backend.compile_ahead import storage_extent

CANDIDATES = ("library", "generated")
# Calls timed per candidate, after one warm-up call that compiles.
TIMED_CALLS = 10

Measure = Callable[[Any, List[Any], str, str], float]


def holds_matmul(fd) -> bool:
    return any(record.op in ("matmul", "linear") for record in fd.records)


def random_like(meta: Any, device: str) -> Any:
    """A tensor of `meta`'s sizes, strides and dtype on `device`, with values
    a matmul's inputs could have (a Python number stays as it is)."""
    if not isinstance(meta, torch.Tensor):
        return meta
    extent = storage_extent(meta.shape, meta.stride(), meta.storage_offset())
    if meta.dtype.is_floating_point:
        storage = torch.randn(extent, device=device).to(meta.dtype)
    elif meta.dtype == torch.bool:
        storage = torch.rand(extent, device=device) < 0.5
    else:
        storage = torch.randint(0, 2, (extent,), device=device, dtype=meta.dtype)
    return storage.as_strided(meta.shape, meta.stride(), meta.storage_offset())


def measure_us(fd, inputs: List[Any], device: str, policy: str) -> float:
    """Median µs of one call of the fusion with `policy`, on the GPU (CUDA events)."""
    args = [random_like(x, device) for x in inputs]
    fd.execute(args, matmul=policy)  # compiles
    times = []
    for _ in range(TIMED_CALLS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fd.execute(args, matmul=policy)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def cache_key(fd, inputs: Sequence[Any], device: str) -> str:
    described = [(tuple(x.shape), tuple(x.stride()), x.storage_offset(), str(x.dtype))
                 if isinstance(x, torch.Tensor) else x for x in inputs]
    gpu = torch.cuda.get_device_name(torch.device(device)) if torch.cuda.is_available() else device
    records = "\n".join(str(r) for r in fd.records)
    return f"torch {torch.__version__}\ngpu {gpu}\ninputs {described}\n{records}"


def choose(fd, inputs: List[Any], device: str, measure: Measure = measure_us) -> str:
    """The faster candidate for the fusion on `device`, from the disk cache
    when a process measured it before; measured (and stored) otherwise."""
    key = cache_key(fd, inputs, device)
    stored = _C.load_cache_entry("autotune", key)
    if stored is not None and stored.decode() in CANDIDATES:
        return stored.decode()
    times = {policy: measure(fd, inputs, device, policy) for policy in CANDIDATES}
    best = min(CANDIDATES, key=lambda policy: times[policy])
    _C.store_cache_entry("autotune", key, best.encode())
    return best


def tuned_policies(jobs: Sequence[tuple], measure: Measure = measure_us) -> Dict[int, str]:
    """Per fusion (by id) that holds a matmul and runs on a GPU, the policy
    `choose` picks; jobs are compile_ahead's (fd, meta inputs, device)."""
    policies: Dict[int, str] = {}
    for fd, inputs, device in jobs:
        if torch.device(device).type == "cuda" and holds_matmul(fd):
            policies[id(fd)] = choose(fd, inputs, device, measure)
    return policies
