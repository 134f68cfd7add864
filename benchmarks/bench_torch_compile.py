"""Small models through torch eager, torch.compile (Inductor) and
torch.compile(backend="smelt"), side by side in one run.

    python benchmarks/bench_torch_compile.py --out DIR/torch_compile.json

On a GPU: each model at a bandwidth-bound size, timed with CUDA events
(median of --iters after warm-up), reported in µs and GB/s (bytes of inputs
and outputs over time) with the ratio to eager and to Inductor. Without one:
--smoke sizes on the CPU, where smelt runs in its simulator: a check that
every path runs and agrees with eager, not a speed measurement. The JSON has
Google Benchmark's layout, so benchmarks/report.py tabulates it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

import torch


def pointwise(x, b):
    return torch.nn.functional.gelu(x + b)


def softmax(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x):
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def row_sum(x):
    return x.sum(dim=-1)


# name -> (function, input shapes at full size, at smoke size)
MODELS: Dict[str, tuple] = {
    "pointwise_gelu_bias": (pointwise, [[8192, 8192], [8192]], [[4, 32], [32]]),
    "softmax": (softmax, [[8192, 8192]], [[4, 32]]),
    "layer_norm": (layer_norm, [[8192, 8192]], [[4, 32]]),
    "row_sum": (row_sum, [[8192, 8192]], [[4, 32]]),
}
MODES = ("eager", "inductor", "smelt")


def compiled(fn: Callable, mode: str) -> Callable:
    if mode == "eager":
        return fn
    torch._dynamo.reset()
    if mode == "smelt":
        import smelt.backend  # noqa: F401  (registers the backend)
        return torch.compile(fn, backend="smelt", dynamic=False)
    return torch.compile(fn, dynamic=False)


def median_us(fn: Callable, inputs: Sequence[torch.Tensor], iters: int, cuda: bool) -> float:
    for _ in range(2):
        fn(*inputs)
    times = []
    for _ in range(iters):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        else:
            t0 = time.perf_counter()
            fn(*inputs)
            times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def kernel_profile(fn: Callable[[], Any], iters: int = 20) -> Dict[str, Tuple[float, float]]:
    """Per name, the device work one call launches (kernels, copies, fills):
    (us per call, launches per call), from torch.profiler over `iters` calls
    after a warm-up."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    by_name: Dict[str, Tuple[float, float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            us, n = by_name.get(e.name, (0.0, 0.0))
            by_name[e.name] = (us + e.device_time / iters, n + 1.0 / iters)
    return by_name


def host_us(fn: Callable[[], Any], iters: int = 50,
            synchronize: Callable[[], Any] = torch.cuda.synchronize) -> float:
    """Median µs the host spends issuing one call: the device is drained
    before each call and nothing waits for it inside the timed region, so a
    host-bound call shows its whole cost here."""
    fn()
    times = []
    for _ in range(iters):
        synchronize()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    synchronize()
    return statistics.median(times)


def host_hotspots(fn: Callable[[], Any], iters: int = 20, top: int = 12,
                  synchronize: Callable[[], Any] = torch.cuda.synchronize) -> List[Tuple[str, float]]:
    """The functions a call spends the most host time in, by their own time
    (cProfile; µs per call): a C++ extension's call shows as one built-in."""
    import cProfile
    import pstats
    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(iters):
        fn()
    profiler.disable()
    synchronize()
    rows = [(f"{Path(file).name}:{line}({func})", own / iters * 1e6)
            for (file, line, func), (_, _, own, _, _) in pstats.Stats(profiler).stats.items()]
    return sorted(rows, key=lambda row: -row[1])[:top]


def host_ops(fn: Callable[[], Any], iters: int = 20, top: int = 16) -> List[Tuple[str, float, float]]:
    """The host-side events of one call by their own (self) CPU time, from
    torch.profiler's CPU activity: ATen ops, CUDA runtime/driver calls and
    smelt's runtime scopes (smelt::run_segments, smelt::segment,
    smelt::prepare, smelt::launch); (name, µs per call, count per call)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows = [(e.key[:80], e.self_cpu_time_total / iters, e.count / iters)
            for e in prof.key_averages() if e.self_cpu_time_total > 0]
    return sorted(rows, key=lambda row: -row[1])[:top]


def kernel_time_us(fn: Callable[[], Any], iters: int = 20) -> Tuple[float, float]:
    """(device time of the work one call launches, in us; launches per call)."""
    profile = kernel_profile(fn, iters).values()
    return sum(us for us, _ in profile), sum(n for _, n in profile)


def run(models: Sequence[str], modes: Sequence[str], device: str, smoke: bool,
        iters: int) -> List[dict]:
    cuda = device == "cuda"
    gen = torch.Generator().manual_seed(0)
    runs = []
    for name in models:
        fn, full, small = MODELS[name]
        inputs = [torch.randn(*s, generator=gen).to(device) for s in (small if smoke else full)]
        expected = fn(*inputs)
        moved = sum(t.numel() * t.element_size() for t in inputs + [expected])
        times = {}
        for mode in modes:
            f = compiled(fn, mode)
            out = f(*inputs)
            error = (out - expected).abs().max().item()
            us = median_us(f, inputs, iters, cuda)
            times[mode] = us
            run_ = {"name": f"{name}/{mode}", "run_type": "iteration", "iterations": iters,
                    "real_time": us, "time_unit": "us", "GB_per_s": moved / us / 1e3,
                    "max_abs_error": error, "matches_eager": bool(error <= 1e-4)}
            if mode != "eager":
                run_["speedup_vs_eager"] = times["eager"] / us if "eager" in times else None
            if mode == "smelt" and "inductor" in times:
                run_["speedup_vs_inductor"] = times["inductor"] / us
            runs.append(run_)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (default without a GPU): a correctness run")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    smoke = args.smoke or device == "cpu"
    runs = run(args.models, args.modes, device, smoke, 3 if smoke else args.iters)
    context = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu (simulator)",
               "smoke": smoke, "torch": torch.__version__}
    args.out.write_text(json.dumps({"context": context, "benchmarks": runs}, indent=2))
    bad = [r["name"] for r in runs if not r["matches_eager"]]
    for r in runs:
        print(f"{r['name']:32s} {r['real_time']:12.1f} us {r['GB_per_s']:9.2f} GB/s"
              f"  err {r['max_abs_error']:.1e}")
    if bad:
        print(f"results differ from eager: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
