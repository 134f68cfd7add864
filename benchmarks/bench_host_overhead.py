"""Host time per call of smelt's hot path, split into smelt's Python and the rest.

    python benchmarks/bench_host_overhead.py [--before REV] [--models gpt2,resnet18]
        [--iters N] [--rounds R] [--inductor] [--out DIR]

Issue 41.4: what a call of a compiled graph costs the host beyond its
kernels. On CPU tensors the kernels run in smelt's simulator, so the time
inside the C++ executor says nothing of a GPU; what it does show is smelt's
own Python per call, which is the same on any device. Per case (µs per call):

  wall         the call, instrumented (the timing adds about a µs per
               fusion call); the parts below are measured in the same calls;
  smelt_py     smelt's Python: time inside smelt's entry points (each
               SmeltPartition module call of a compiled graph, or
               fd.execute) minus the time inside the C++ executors they call;
  executor     inside the C++ executors (FusionExecutorCache.run and
               FusionExecutor.run: input checks, kernel lookup, launch, here
               the simulator);
  outside      wall - smelt_py - executor: Dynamo's guards, AOTAutograd's
               wrappers, the FX graph's code and the ops left to torch;
  fusion_calls smelt fusions run per call;
  scopes       torch.profiler's CPU activity: self µs per call of smelt's
               C++ runtime scopes (smelt::run_segments, smelt::segment, ...);
  wall_uninstrumented  the call without the timing (in the JSON).

Torch runs on one thread and the garbage collector is collected before and
off during the timed calls (see _timed_calls): both would otherwise put the
machine's noise into µs-sized figures. Of the repeats and rounds, the one
of the least smelt_py is kept, with its other parts.

Cases: a one-op fusion through fd.execute; a compiled function of one
fusion (a linear layer with GELU: a transposed weight, a traced layout);
zoo models (tests/python/models/zoo.py; eval, no_grad, static shapes).
With --inductor, Inductor compiles the same function on the CPU as a side
reference (its wall per call; it runs generated C++, not a simulator).

--before REV measures the package as it was at git revision REV beside the
working tree's, alternating rounds in fresh processes with the same built
extension (<build>/python/smelt/_C*.so, SMELT_BUILD_DIR, default build/):
the Python changes alone, side by side in one run. Results go to --out
(default benchmarks/results/host_overhead/) as host_overhead.json and
host_overhead.md.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "host_overhead"
DEFAULT_MODELS = "gpt2,resnet18"


# ---- in the measuring process ----

class Clock:
    """Seconds inside smelt's entry points and inside the C++ executors."""

    def __init__(self):
        self.smelt = 0.0
        self.executor = 0.0
        self.fusion_calls = 0


def _timed(original: Callable, clock: Clock, field: str) -> Callable:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            setattr(clock, field, getattr(clock, field) + time.perf_counter() - start)
            if field == "smelt":
                clock.fusion_calls += 1
    return timed


def _instrumented(clock: Clock, entry: str) -> Callable[[], None]:
    """Times the C++ executors and smelt's entry point ("partition": each
    SmeltPartition module call; "execute": fd.execute); returns the undo."""
    import torch
    from smelt import _C
    from smelt.backend.partition import SmeltPartition
    from smelt.fusion_definition import FusionDefinition
    patches = [(_C.FusionExecutorCache, "run", _C.FusionExecutorCache.run, "executor"),
               (_C.FusionExecutor, "run", _C.FusionExecutor.run, "executor")]
    if entry == "partition":
        patches.append((SmeltPartition, "__call__", torch.nn.Module.__call__, "smelt"))
    else:
        patches.append((FusionDefinition, "execute", FusionDefinition.execute, "smelt"))
    saved = [(cls, name, cls.__dict__.get(name)) for cls, name, _, _ in patches]
    for cls, name, original, field in patches:
        setattr(cls, name, _timed(original, clock, field))

    def undo() -> None:
        for cls, name, original in saved:
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)
    return undo


def _smelt_scopes(fn: Callable[[], Any], iters: int) -> Dict[str, float]:
    """Self CPU µs per call of smelt's C++ runtime scopes (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(iters):
            fn()
    return {e.key: round(e.self_cpu_time_total / iters, 1) for e in prof.key_averages()
            if e.key.startswith("smelt::")}


def _timed_calls(fn: Callable[[], Any], iters: int) -> float:
    """Seconds for `iters` calls, with the garbage collector collected first
    and off meanwhile: a collection lands on whichever call crosses its
    threshold, a cost of the whole heap, not of that call."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def _measure(fn: Callable[[], Any], entry: str, iters: int, repeats: int) -> Dict[str, Any]:
    """The split of the instrumented repeat with the least smelt_py, the
    least disturbed measure of what this benchmark is about (its parts are
    measured together, so they add up); the uninstrumented wall is the
    median of `repeats`."""
    fn()
    fn()  # compiled, and every lookup warm
    plain = statistics.median(_timed_calls(fn, iters) / iters * 1e6 for _ in range(repeats))
    splits = []
    for _ in range(repeats):
        clock = Clock()
        undo = _instrumented(clock, entry)
        try:
            wall = _timed_calls(fn, iters) / iters * 1e6
        finally:
            undo()
        smelt_py = (clock.smelt - clock.executor) / iters * 1e6
        executor = clock.executor / iters * 1e6
        splits.append({"wall": wall, "smelt_py": smelt_py, "executor": executor,
                       "outside": wall - smelt_py - executor,
                       "fusion_calls": clock.fusion_calls / iters})
    best = min(splits, key=lambda split: split["smelt_py"])
    return {**best, "wall_uninstrumented": plain, "scopes": _smelt_scopes(fn, max(2, iters // 4))}


def _tiny_definition():
    import torch
    from smelt import FusionDefinition
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.relu(fd.ops.add(x, 1.0)))
    x = torch.randn(4, 8)
    return lambda: fd.execute([x])


def _linear_gelu():
    import torch
    x, w, b = torch.randn(4, 8), torch.randn(8, 8), torch.randn(8)

    def fn(x, w, b):
        return torch.nn.functional.gelu(x @ w.t() + b) * 2
    return fn, (x, w, b)


def _compiled(fn: Callable, args: tuple, kwargs: Optional[dict] = None,
              backend: str = "smelt") -> Callable[[], Any]:
    import torch
    compiled = torch.compile(fn, backend=backend)
    kwargs = kwargs or {}

    def call():
        with torch.no_grad():
            return compiled(*args, **kwargs)
    return call


def child(models: List[str], iters: int, model_iters: int, inductor: bool) -> Dict[str, Any]:
    import torch
    import smelt.backend  # noqa: F401  (registers the backend "smelt")
    # One thread: ATen's idle OpenMP workers spin after each parallel op and,
    # on a machine of few cores, slow down the Python that follows.
    torch.set_num_threads(1)
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from models.zoo import CASES
    torch.manual_seed(0)
    cases: Dict[str, Any] = {}
    cases["fd.execute relu(x + 1) [4, 8]"] = _measure(_tiny_definition(), "execute", iters, 5)
    fn, args = _linear_gelu()
    cases["compiled gelu(x @ w.t() + b) * 2"] = _measure(_compiled(fn, args), "partition",
                                                         iters, 5)
    for name in models:
        build, make_inputs = CASES[name]
        model_args, model_kwargs = make_inputs(0)
        call = _compiled(build(), model_args, model_kwargs)
        cases[f"zoo {name}"] = _measure(call, "partition", model_iters, 3)
    if inductor:
        start = time.perf_counter()
        call = _compiled(fn, args, backend="inductor")
        call()
        compile_s = time.perf_counter() - start
        wall = statistics.median(_timed_calls(call, iters) / iters * 1e6 for _ in range(5))
        cases["Inductor: compiled gelu(x @ w.t() + b) * 2"] = {"wall": wall,
                                                                "first_call_s": compile_s}
    return cases


# ---- the driving process ----

def _extension(build: Path) -> Path:
    found = sorted((build / "python" / "smelt").glob("_C*.so"))
    if not found:
        raise SystemExit(f"no built extension under {build}/python/smelt (scripts/build.sh)")
    return found[0]


def _package_at(rev: str, extension: Path, into: Path) -> Path:
    """A package root holding python/smelt as at `rev`, with `extension`."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "python/smelt"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "python" / "smelt" / extension.name).symlink_to(extension)
    return into / "python"


def _run_child(package_root: Path, args: argparse.Namespace, inductor: bool) -> Dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(package_root), OMP_NUM_THREADS="1")
    command = [sys.executable, __file__, "--child", "--models", args.models,
               "--iters", str(args.iters), "--model-iters", str(args.model_iters)]
    if inductor:
        command.append("--inductor")
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _best(rounds: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per case the round of the least smelt_py (as _measure chooses)."""
    return {case: min((r[case] for r in rounds), key=lambda m: m["smelt_py"])
            for case in rounds[0]}


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("Model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def markdown(result: Dict[str, Any]) -> str:
    variants = list(result["variants"])
    lines = [f"# Host time per call (µs), {result['cpu']}, {result['cpus']} CPUs, "
             f"torch {result['torch']}", "",
             "smelt_py: smelt's Python per call (entry points minus the C++ executors); "
             "executor: inside the C++ executors (here the CPU simulator runs the kernels); "
             "outside: Dynamo, AOTAutograd, the FX graph, ops left to torch.", ""]
    header = "| case | fusion calls | " + " | ".join(
        f"{v} smelt_py | {v} executor | {v} outside | {v} wall" for v in variants) + " |"
    lines += [header, "|" + "---|" * (2 + 4 * len(variants))]
    first = result["variants"][variants[0]]
    for case in first:
        if "smelt_py" not in first[case]:
            continue
        cells = []
        for v in variants:
            m = result["variants"][v][case]
            cells += [f"{m['smelt_py']:.1f}", f"{m['executor']:.1f}", f"{m['outside']:.1f}",
                      f"{m['wall']:.1f}"]
        lines.append(f"| {case} | {first[case]['fusion_calls']:.0f} | " + " | ".join(cells) + " |")
    for v in variants:
        for case, m in result["variants"][v].items():
            if "smelt_py" not in m:
                lines += ["", f"{case} ({v} run): {m['wall']:.1f} µs per call, first call "
                          f"{m['first_call_s']:.1f} s."]
    lines += ["", "smelt's C++ runtime scopes (torch.profiler CPU, self µs per call, "
              f"{variants[-1]}):", ""]
    for case, m in result["variants"][variants[-1]].items():
        if m.get("scopes"):
            lines.append(f"- {case}: " + ", ".join(f"{k} {v}" for k, v in m["scopes"].items()))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git revision to measure beside the working tree")
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--iters", type=int, default=300, help="calls per round, small cases")
    parser.add_argument("--model-iters", type=int, default=4, help="calls per round, models")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--inductor", action="store_true")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    if args.child:
        print(json.dumps(child(models, args.iters, args.model_iters, args.inductor)))
        return
    import torch
    build = Path(os.environ.get("SMELT_BUILD_DIR", REPO / "build"))
    build = build if build.is_absolute() else REPO / build
    roots = {"after": build / "python"}
    with tempfile.TemporaryDirectory() as tmp:
        if args.before:
            roots = {"before": _package_at(args.before, _extension(build), Path(tmp)), **roots}
        rounds: Dict[str, List[Dict[str, Any]]] = {label: [] for label in roots}
        for r in range(args.rounds):
            for label, root in roots.items():
                inductor = args.inductor and r == 0 and label == list(roots)[-1]
                rounds[label].append(_run_child(root, args, inductor))
                print(f"round {r + 1}: {label} done", file=sys.stderr)
    variants = {}
    for label, measured in rounds.items():
        best = _best([{c: m for c, m in one.items() if "smelt_py" in m} for one in measured])
        extra = {c: m for one in measured for c, m in one.items() if "smelt_py" not in m}
        variants[label] = {**best, **extra}
    result = {"cpu": _cpu_model(), "cpus": os.cpu_count(), "torch": torch.__version__,
              "before": args.before, "models": models, "iters": args.iters,
              "model_iters": args.model_iters, "rounds": args.rounds, "variants": variants}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "host_overhead.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    (args.out / "host_overhead.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
