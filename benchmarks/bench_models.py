"""The model zoo (tests/python/models/zoo.py) through
torch.compile(backend="smelt"), model by model, against eager.

    python benchmarks/bench_models.py [--models gpt2,bert] [--json out.json]

Per model (forward, eval, static shapes, CPU tensors so smelt's kernels run
in its simulator): ATen nodes fused / all nodes of the compiled graphs,
fusions, run-time fallbacks (partitions smelt failed on), the largest
absolute difference from eager over every output, and the wall time of the
first call (Dynamo, AOTAutograd, partitioning, smelt lowering + NVRTC, the
simulator) and of the second (cached kernels, simulator); kernels launched
per forward (smelt's, and the ATen ops left in torch that launch one) and the
machine code of smelt's kernels (static SASS of the non-matmul kernels, stack
frames); with --peers, Inductor's launches and SASS beside them. A Markdown
table on stdout, JSON with --json. The simulator's times are not GPU times.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

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
    code = machine_code(reports)
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
        "smelt_kernels_per_forward": sum(r.smelt_kernels() for r in reports),
        "torch_launches_per_forward": sum(r.torch_launches() for r in reports),
        **code,
        "left_to_torch": dict(sum((r.unsupported_ops for r in reports), Counter()).most_common()),
    }


def _schedulers(last_run: str) -> List[str]:
    """The scheduler of each segment, in kernel order, from fd.last_run_report()."""
    names = []
    for line in (last_run or "").splitlines():
        words = line.split()
        if len(words) > 1 and words[0].isdigit():
            names.append(words[1])
    return names


def machine_code(reports) -> Dict[str, object]:
    """The machine code of the kernels of the latest forward (sm_90, from the
    disassembler: smelt.kernel_quality): static SASS instructions of the
    non-matmul kernels (the matmul scheduler's apart, as Inductor's matmuls
    are cuBLAS calls), the most registers, and stack frame bytes summed."""
    sass = matmul_sass = stack = registers = 0
    for r in reports:
        for p in r.partitions:
            if p.failed:
                continue
            schedulers = _schedulers(p.last_run)
            for i, kernel in enumerate(p.kernels):
                q = kernel.quality
                if i < len(schedulers) and schedulers[i] == "matmul":
                    matmul_sass += q.sass.instructions
                else:
                    sass += q.sass.instructions
                stack += q.stack_frame_bytes
                registers = max(registers, q.registers)
    return {"sass_non_matmul": sass, "sass_matmul": matmul_sass, "stack_frame_bytes": stack,
            "max_registers": registers}


def markdown(rows: List[Dict[str, object]], peers: Dict[str, dict]) -> str:
    lines = ["| model | nodes fused / total | fusions | run-time fallbacks | max abs error | "
             "first call | second call | launches per forward: smelt + torch (Inductor) | "
             "SASS non-matmul (Inductor) | stack frames |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        peer = peers.get(r["model"], {})
        launches = f"{r['smelt_kernels_per_forward']} + {r['torch_launches_per_forward']}"
        if "launches_per_forward" in peer:
            launches += f" ({peer['launches_per_forward']})"
        sass = str(r["sass_non_matmul"])
        if "total_sass_instructions" in peer:
            sass += f" ({peer['total_sass_instructions']})"
        lines.append(f"| {r['model']} | {r['nodes_fused']} / {r['nodes_total']} | {r['fusions']} | "
                     f"{r['fallback_partitions']} | {r['max_abs_error']:.2g} | "
                     f"{r['first_call_s']:.2f} s | {r['second_call_s']:.3f} s | {launches} | "
                     f"{sass} | {r['stack_frame_bytes']} B |")
    return "\n".join(lines)


def load_peers(directory: Optional[Path]) -> Dict[str, dict]:
    """Inductor's figures per model: the JSON files that
    ../shared/peers/inductor/inductor_kernels.py --json wrote as MODEL.json."""
    if directory is None:
        return {}
    return {f.stem: json.loads(f.read_text()) for f in sorted(directory.glob("*.json"))}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CASES), help="comma-separated zoo names")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    parser.add_argument("--peers", type=Path,
                        help="a folder of Inductor's figures (MODEL.json from the peer tool, "
                             "../shared/peers/inductor) to print beside smelt's")
    args = parser.parse_args(argv)
    rows = [measure(name) for name in args.models.split(",")]
    print(markdown(rows, load_peers(args.peers)))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(r["fallback_partitions"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
