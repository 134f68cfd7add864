"""The model zoo (tests/python/models/zoo.py) through
torch.compile(backend="smelt"), model by model, against eager.

    python benchmarks/bench_models.py [--models gpt2,bert] [--json out.json]

Per model (forward, eval, static shapes, CPU tensors so smelt's kernels run
in its simulator): ATen nodes fused / all nodes of the compiled graphs,
fusions, run-time fallbacks (partitions smelt failed on), the largest
absolute difference from eager over every output, and the wall time of the
first call (Dynamo, AOTAutograd, partitioning, smelt lowering + NVRTC, the
simulator) and of the second (cached kernels, simulator). A Markdown table
on stdout, JSON with --json. The simulator's times are not GPU times.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))

from models.zoo import CASES, output_tensors  # noqa: E402


def measure(name: str) -> Dict[str, object]:
    import smelt.backend
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    build, make_inputs = CASES[name]
    model = build()
    compiled = torch.compile(model, backend="smelt")
    times: List[float] = []
    max_error = 0.0
    with torch.no_grad():
        for seed in (1, 2):
            args, kwargs = make_inputs(seed)
            expected = output_tensors(model(*args, **kwargs))
            start = time.perf_counter()
            actual = output_tensors(compiled(*args, **kwargs))
            times.append(time.perf_counter() - start)
            for a, e in zip(actual, expected):
                if a.is_floating_point():
                    max_error = max(max_error, (a - e).abs().max().item())
                elif not torch.equal(a, e):
                    max_error = float("inf")
    reports = smelt.backend.reports()
    return {
        "model": name,
        "graphs": len(reports),
        "nodes_fused": sum(r.fused_node_count for r in reports),
        "nodes_total": sum(r.total_nodes for r in reports),
        "fusions": sum(len(r.partitions) for r in reports),
        "fallback_partitions": sum(p.failed for r in reports for p in r.partitions),
        "max_abs_error": max_error,
        "first_call_s": times[0],
        "second_call_s": times[1],
        "left_to_torch": dict(sum((r.unsupported_ops for r in reports), Counter()).most_common()),
    }


def markdown(rows: List[Dict[str, object]]) -> str:
    lines = ["| model | nodes fused / total | fusions | run-time fallbacks | max abs error | "
             "first call | second call |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['nodes_fused']} / {r['nodes_total']} | {r['fusions']} | "
                     f"{r['fallback_partitions']} | {r['max_abs_error']:.2g} | "
                     f"{r['first_call_s']:.2f} s | {r['second_call_s']:.3f} s |")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CASES), help="comma-separated zoo names")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = [measure(name) for name in args.models.split(",")]
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(r["fallback_partitions"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
