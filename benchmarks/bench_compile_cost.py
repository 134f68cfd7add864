"""What the first call of a compiled model costs: smelt beside aot_eager and Inductor.

    python benchmarks/bench_compile_cost.py [--models gpt2,mamba_L1] [--json out.json]
        [--markdown out.md] [--no-inductor]

Models: benchmarks/compile_cost_cases.py (the public zoo, GPT-2 tiny with 1,
2, 4 and 8 layers, transformers' Mamba with its reference scan). Per model,
fresh Python processes compile the forward (eval, no_grad, static shapes)
and time its first call, Dynamo and AOTAutograd included, and its second
(what running costs without compiling: for smelt on a machine without a GPU,
the CPU simulator running every kernel):
  - aot_eager (Dynamo + AOTAutograd, no compiler), cold and warm (a second
    process: what Python's and torch's own caches give);
  - smelt, cold (one new, empty kernel cache directory,
    SMELT_KERNEL_CACHE_DIR) and warm (a second process on that directory:
    segmentations, launch descriptions and cubins from disk). The first
    call runs every kernel in the CPU simulator on a machine without a GPU;
    the breakdown separates what compiling cost:
      compile wall: the backend compiling every fusion ahead of the first
        call on SMELT_COMPILE_THREADS threads (segmentation, scheduling,
        lowering, NVRTC or the disk cache);
      segment / schedule / lower / NVRTC: the same work summed over the
        fusions (thread-milliseconds), with the segmentation search's
        candidates checked, kernels compiled and read from disk, and the
        NVRTC programs the process compiled (several kernels to a
        program: csrc/runtime/nvrtc_batch.h);
      partitioning: Python, partitioning and translating the graphs;
  - Inductor, cold (fresh caches): on a machine without a GPU through
    ../shared/peers/inductor/inductor_kernels.py, which compiles every
    Triton kernel for sm_90 (an H100) and launches nothing; skipped when
    the peer is not there.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
CASES_FILE = REPO / "benchmarks" / "compile_cost_cases.py"
INDUCTOR_PEER = REPO.parent / "shared" / "peers" / "inductor" / "inductor_kernels.py"

# One process: compile and run the model once with backend argv[2], print the
# first call's seconds (and smelt's costs) as JSON.
_CHILD = r"""
import importlib.util, json, sys, time
import torch
spec = importlib.util.spec_from_file_location("compile_cost_cases", sys.argv[1])
cases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cases)
backend = sys.argv[3]
if backend == "smelt":
    import smelt.backend
build, make_inputs = cases.CASES[sys.argv[2]]
model = build()
args, kwargs = make_inputs(0)
compiled = torch.compile(model, backend=backend)
with torch.no_grad():
    start = time.perf_counter()
    compiled(*args, **kwargs)
    result = {"first_call_s": time.perf_counter() - start}
    start = time.perf_counter()
    compiled(*args, **kwargs)
    result["second_call_s"] = time.perf_counter() - start
if backend == "smelt":
    reports = smelt.backend.reports()
    for report in reports:
        for key, value in report.compile_cost().items():
            result[key] = result.get(key, 0) + value
    result["nvrtc_programs"] = smelt._C.nvrtc_programs_compiled()
    result["graphs"] = len(reports)
    result["fallbacks"] = sum(r.fallback_runs for r in reports)
    result["compile_ahead_errors"] = sum(len(r.compile_ahead_errors) for r in reports)
print(json.dumps(result))
"""


def _last_json(done: subprocess.CompletedProcess, what: str) -> Dict[str, float]:
    if done.returncode != 0:
        raise RuntimeError(f"{what}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_call(model: str, backend: str, cache_dir: Path) -> Dict[str, float]:
    env = dict(os.environ, SMELT_KERNEL_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(CASES_FILE), model, backend],
                          env=env, capture_output=True, text=True, timeout=900)
    return _last_json(done, f"{model} ({backend})")


def inductor_first_call(model: str) -> Optional[float]:
    """Inductor's cold first call for sm_90 through the peer; None without it."""
    if not INDUCTOR_PEER.exists():
        return None
    with tempfile.TemporaryDirectory(prefix="inductor-peer-") as tmp:
        out = Path(tmp) / "out.json"
        done = subprocess.run([sys.executable, str(INDUCTOR_PEER), model, "--cases", str(CASES_FILE),
                               "--json", str(out)], capture_output=True, text=True, timeout=900,
                              cwd=str(REPO))
        if done.returncode != 0 or not out.exists():
            print(f"{model} (inductor peer) failed: {done.stderr[-500:]}", file=sys.stderr)
            return None
        return json.loads(out.read_text())["first_call_s"]


def measure(model: str, inductor: bool) -> Dict[str, object]:
    row: Dict[str, object] = {"model": model}
    with tempfile.TemporaryDirectory(prefix="smelt-kernel-cache-") as cache_dir:
        for backend in ("aot_eager", "smelt"):
            row[backend] = {kind: first_call(model, backend, Path(cache_dir))
                            for kind in ("cold", "warm")}
    row["inductor_cold_s"] = inductor_first_call(model) if inductor else None
    return row


def _growth(rows: List[Dict[str, object]], prefix: str) -> List[str]:
    """Seconds per added layer (1 to the most layers measured), per backend."""
    layered = sorted((int(r["model"][len(prefix):]), r) for r in rows
                     if r["model"].startswith(prefix) and r["model"][len(prefix):].isdigit())
    if len(layered) < 2:
        return []
    (l0, first), (l1, last) = layered[0], layered[-1]
    slope = {b: (last[b]["cold"]["first_call_s"] - first[b]["cold"]["first_call_s"]) / (l1 - l0)
             for b in ("aot_eager", "smelt")}
    text = (f"{prefix.rstrip('_L')}: cold first call per added layer ({l0} to {l1} layers): "
            f"aot_eager {slope['aot_eager']:.2f} s, smelt {slope['smelt']:.2f} s")
    if slope["aot_eager"] > 0:
        text += f" ({slope['smelt'] / slope['aot_eager']:.1f}x aot_eager's)"
    return [text]


def markdown(rows: List[Dict[str, object]]) -> str:
    def s(value: Optional[float]) -> str:
        return "—" if value is None else f"{value:.2f} s"

    lines = [f"compile threads: {os.environ.get('SMELT_COMPILE_THREADS') or os.cpu_count()}", "",
             "First call, seconds (Dynamo and AOTAutograd included):", "",
             "| model | aot_eager cold | aot_eager warm | Inductor cold (sm_90) | smelt cold | smelt warm "
             "| smelt second call |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {s(r['aot_eager']['cold']['first_call_s'])} | "
                     f"{s(r['aot_eager']['warm']['first_call_s'])} | {s(r['inductor_cold_s'])} | "
                     f"{s(r['smelt']['cold']['first_call_s'])} | {s(r['smelt']['warm']['first_call_s'])} | "
                     f"{s(r['smelt']['cold']['second_call_s'])} |")
    lines += [""] + [t for p in ("gpt2_L", "mamba_L") for t in _growth(rows, p)]
    lines += ["", "smelt's compile by stage (segment / schedule / lower / NVRTC: thread-milliseconds "
              "summed over the fusions; the first call also runs the CPU simulator):", "",
              "| model | | compile wall | segment | candidates | schedule | lower | NVRTC / disk | "
              "kernels compiled / from disk | NVRTC programs | partitioning |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for kind in ("cold", "warm"):
            c = r["smelt"][kind]
            lines.append(f"| {r['model'] if kind == 'cold' else ''} | {kind} | "
                         f"{c['compile_ahead_ms']:.0f} ms | {c['segment_ms']:.0f} ms | "
                         f"{c.get('segment_candidates', 0):.0f} | {c['schedule_ms']:.0f} ms | "
                         f"{c['lower_ms']:.0f} ms | {c['nvrtc_ms']:.0f} ms | "
                         f"{c['nvrtc_compiles']:.0f} / {c['disk_cache_hits']:.0f} | "
                         f"{c.get('nvrtc_programs', '—')} | {c['partition_ms']:.0f} ms |")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    sys.path.insert(0, str(CASES_FILE.parent))
    from compile_cost_cases import CASES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the tables here")
    parser.add_argument("--no-inductor", action="store_true", help="skip the Inductor peer")
    args = parser.parse_args(argv)
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, not args.no_inductor))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    text = markdown(rows)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0 if all(r["smelt"][k]["fallbacks"] == 0 for r in rows for k in ("cold", "warm")) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
