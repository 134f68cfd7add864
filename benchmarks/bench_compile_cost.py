"""What compiling each zoo model costs smelt, cold and warm.

    python benchmarks/bench_compile_cost.py [--models gpt2,bert] [--json out.json]

Per model, two fresh Python processes compile the model's forward with
torch.compile(backend="smelt") against one new, empty kernel cache directory
(SMELT_KERNEL_CACHE_DIR): the first is cold (it segments, lowers and
NVRTC-compiles every kernel and fills the cache), the second warm (a second
process: each fusion's segmentation, each kernel's launch description and
cubin come from the disk cache, so it neither searches, lowers nor compiles).
Reported per process, from the backend's GraphReports:
  - compile wall: smelt's compile of every fusion of the graphs, ahead of the
    first call on SMELT_COMPILE_THREADS threads (segmentation with its trial
    lowering, scheduling, lowering, NVRTC or the disk cache): the "lowering +
    NVRTC" cost, the simulator excluded;
  - the same work summed over fusions in thread-milliseconds (segment,
    lower, NVRTC), kernels compiled and read from the disk cache; "lower"
    includes the first call's lowerings for the CPU simulator (all of it in
    a warm process);
  - partitioning (Python: partitioning and translating the graphs);
  - the first call's wall time (Dynamo and AOTAutograd included, and the
    simulator running every kernel on CPU tensors), for context.
Warm / cold compares the compile walls.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]

# One process: compile and run the model once, print the costs as JSON.
_CHILD = r"""
import json, sys, time
import torch
sys.path.insert(0, sys.argv[2])
from models.zoo import CASES
import smelt.backend
build, make_inputs = CASES[sys.argv[1]]
model = build()
args, kwargs = make_inputs(0)
compiled = torch.compile(model, backend="smelt")
with torch.no_grad():
    start = time.perf_counter()
    compiled(*args, **kwargs)
    first = time.perf_counter() - start
total = {}
for report in smelt.backend.reports():
    for key, value in report.compile_cost().items():
        total[key] = total.get(key, 0) + value
total["first_call_ms"] = first * 1000.0
total["fallbacks"] = sum(r.fallback_runs for r in smelt.backend.reports())
total["compile_ahead_errors"] = sum(len(r.compile_ahead_errors) for r in smelt.backend.reports())
print(json.dumps(total))
"""


def compile_once(model: str, cache_dir: Path) -> Dict[str, float]:
    env = dict(os.environ, SMELT_KERNEL_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", _CHILD, model, str(REPO / "tests" / "python")],
                          env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{model}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(model: str) -> Dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="smelt-kernel-cache-") as cache_dir:
        cold = compile_once(model, Path(cache_dir))
        warm = compile_once(model, Path(cache_dir))
    return {"model": model, "cold": cold, "warm": warm,
            "warm_over_cold": warm["compile_ahead_ms"] / cold["compile_ahead_ms"]
            if cold["compile_ahead_ms"] else None}


def markdown(rows: List[Dict[str, object]]) -> str:
    lines = [f"compile threads: {os.environ.get('SMELT_COMPILE_THREADS') or os.cpu_count()}", "",
             "| model | | compile wall | segmentation search | lower | NVRTC / disk | "
             "kernels compiled / from disk | partitioning | first call |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for kind in ("cold", "warm"):
            c = r[kind]
            lines.append(f"| {r['model'] if kind == 'cold' else ''} | {kind} | "
                         f"{c['compile_ahead_ms']:.0f} ms | {c['segment_ms']:.0f} ms | "
                         f"{c['lower_ms']:.0f} ms | {c['nvrtc_ms']:.0f} ms | "
                         f"{c['nvrtc_compiles']:.0f} / {c['disk_cache_hits']:.0f} | "
                         f"{c['partition_ms']:.0f} ms | {c['first_call_ms'] / 1000:.2f} s |")
        lines.append(f"| | warm / cold | {100 * r['warm_over_cold']:.0f}% | | | | | | |")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from models.zoo import CASES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CASES), help="comma-separated zoo names")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(r[k]["fallbacks"] == 0 for r in rows for k in ("cold", "warm")) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
