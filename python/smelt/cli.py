"""The `smelt` command line.

    smelt demo [--out DIR] [--device auto|cpu|cuda]
        Plans, compiles and checks the gallery (smelt.gallery): for each kernel
        the shared-memory plan, bytes planned vs lower bound vs no reuse vs
        nvFuser-style stack allocation, ptxas's registers and shared memory,
        and the result against torch (on the GPU when there is one, else in
        the CPU simulator with race detection). Writes one SVG per kernel and
        an index.html linking them.

    smelt quality FILE.py [--sizes AxB ...] [--json]
        Compiles FILE.py's FusionDefinitions for the given sizes (meta
        tensors: nothing runs) and prints each kernel's machine-code report
        (smelt.kernel_quality: SASS mix, LDL/STL, CALLs, access widths,
        registers, stack frame, occupancy on sm_80 and sm_90).

    smelt plan FILE.py [--json] [--svg DIR] [--cuda] [--hazards precise|conservative]
                       [--allocator best|stack] [--arch sm_80|sm_90]
        Runs FILE.py and reports every FusionDefinition it leaves in its
        module namespace (in definition order), with its schedule.

Exit status: 0 success, 1 a result check failed, 2 bad usage or a file that
cannot run, 3 smelt refused a fusion (SmeltError; the message says why).
"""
from __future__ import annotations

import argparse
import html
import json
import runpy
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch

from smelt._C import SmeltError
from smelt.dtypes import to_torch_dtype
from smelt.fusion_definition import FusionDefinition
from smelt.gallery import EXAMPLES
from smelt.handles import Tensor
from smelt.inspection import Kernel

EXIT_CHECK_FAILED, EXIT_USAGE, EXIT_SMELT_ERROR = 1, 2, 3


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class KernelFigures:
    """What the report says of one kernel."""
    name: str
    planned: object  # bytes, workspaces included; an expression string when symbolic
    lower_bound: int
    no_reuse: object
    stack: object  # nvFuser-style stack allocation of the same buffers
    inserted_barriers: int
    registers: int
    spills: int
    ptxas_smem: int
    check: str = "not run"

    def row(self) -> List[str]:
        return [self.name, str(self.planned), str(self.lower_bound), str(self.no_reuse),
                str(self.stack), str(self.inserted_barriers), str(self.registers),
                str(self.spills), str(self.ptxas_smem), self.check]


HEADER = ["kernel", "planned B", "lower bound B", "no reuse B", "stack B", "barriers added",
          "registers", "spills", "ptxas smem B", "check"]


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def figures(name: str, fd: FusionDefinition, hazards: str, allocator: str,
            arch: int) -> tuple:
    """Lowers `fd` as asked and with the stack allocator; compiles with NVRTC."""
    kernel: Kernel = fd.lower(hazards=hazards, allocator=allocator, arch=arch, name=name)
    plan = kernel.smem_plan
    stack = fd.lower(hazards=hazards, allocator="stack", arch=arch).smem_plan
    ptxas = kernel.ptxas
    return kernel, KernelFigures(
        name=name, planned=plan.total_bytes, lower_bound=plan.lower_bound_bytes,
        no_reuse=plan.no_reuse_bytes, stack=stack.total_bytes,
        inserted_barriers=len(plan.inserted_barriers), registers=ptxas.registers,
        spills=ptxas.spill_store_bytes + ptxas.spill_load_bytes,
        ptxas_smem=ptxas.static_smem_bytes)


def print_kernel_report(title: str, kernel: Kernel, fig: KernelFigures, cuda: bool) -> None:
    plan = kernel.smem_plan
    print(f"=== {fig.name}: {title} ===")
    print(f"launch: grid {kernel.grid}, block {kernel.block}")
    print(plan.text.rstrip())
    for barrier in plan.inserted_barriers:
        print(f"barrier inserted at position {barrier.position}: {barrier.reason}")
    print(f"bytes: planned {fig.planned} | lower bound {fig.lower_bound} | no reuse "
          f"{fig.no_reuse} | nvFuser-style stack {fig.stack}")
    print(f"ptxas: {fig.registers} registers, {fig.spills} B spilled, "
          f"{fig.ptxas_smem} B static shared memory")
    print(f"check: {fig.check}")
    if cuda:
        print("--- CUDA ---")
        print(kernel.cuda.rstrip())
    print()


def check_against_torch(fd: FusionDefinition, shapes: Sequence[Sequence[int]], reference,
                        device: str) -> str:
    """Runs `fd` on random inputs and compares with `reference` (torch)."""
    gen = torch.Generator().manual_seed(0)
    inputs = [torch.randn(*s, generator=gen).to(device) for s in shapes]
    (out,) = fd.execute(inputs)
    expected = reference(*inputs)
    err = (out - expected).abs().max().item()
    where = "GPU" if device == "cuda" else "simulator, race-free"
    if torch.allclose(out, expected, rtol=1e-4, atol=1e-4):
        return f"ok ({where}, max err {err:.1e})"
    return f"MISMATCH ({where}, max err {err:.1e})"


def write_index(out_dir: Path, entries: List[tuple], table: str) -> Path:
    items = "\n".join(
        f'<h2>{html.escape(name)}: {html.escape(title)}</h2>\n'
        f'<p>planned {fig.planned} B, lower bound {fig.lower_bound} B, no reuse {fig.no_reuse}'
        f' B, stack {fig.stack} B; {html.escape(fig.check)}</p>\n'
        f'<img src="{html.escape(svg)}" alt="{html.escape(name)} plan">'
        for name, title, fig, svg in entries)
    page = (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>smelt demo</title>"
            f"</head><body>\n<h1>smelt: shared-memory plans</h1>\n"
            f"<pre>{html.escape(table)}</pre>\n{items}\n</body></html>\n")
    index = out_dir / "index.html"
    index.write_text(page)
    return index


def demo(args: argparse.Namespace) -> int:
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    rows, entries, failed = [], [], False
    for i, ex in enumerate(EXAMPLES, 1):
        _progress(f"[{i}/{len(EXAMPLES)}] {ex.name}: lowering, planning, NVRTC, "
                  f"{'GPU run' if device == 'cuda' else 'simulating'}")
        fd = ex.build()
        kernel, fig = figures(ex.name, fd, ex.hazards, "best", args.arch)
        fig.check = check_against_torch(fd, ex.input_shapes, ex.reference, device)
        failed |= fig.check.startswith("MISMATCH")
        print_kernel_report(ex.title, kernel, fig, cuda=False)
        svg = f"{ex.name}.svg"
        (out_dir / svg).write_text(kernel.smem_plan.svg)
        rows.append(fig.row())
        entries.append((ex.name, ex.title, fig, svg))
    table = markdown_table(rows)
    print("=== summary ===")
    print(table)
    (out_dir / "summary.md").write_text(table + "\n")
    index = write_index(out_dir, entries, table)
    print(f"\nwrote {index} and {len(entries)} SVG plans in {out_dir} "
          f"({time.monotonic() - start:.1f} s)")
    return EXIT_CHECK_FAILED if failed else 0


def fusions_of(namespace: Dict[str, object]) -> List[tuple]:
    """(variable name, FusionDefinition) for every definition a module left
    in its namespace, directly or in a list/tuple/dict, in definition order."""
    found = []
    for var, value in namespace.items():
        if isinstance(value, FusionDefinition):
            found.append((var, value))
        elif isinstance(value, (list, tuple)):
            found += [(f"{var}[{i}]", v) for i, v in enumerate(value)
                      if isinstance(v, FusionDefinition)]
        elif isinstance(value, dict):
            found += [(f"{var}[{k!r}]", v) for k, v in value.items()
                      if isinstance(v, FusionDefinition)]
    return found


def load_fusions(command: str, path: Path):
    """The FusionDefinitions FILE.py leaves at module level, or an exit
    status after saying why there are none."""
    if not path.is_file():
        print(f"smelt {command}: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    _progress(f"running {path}")
    try:
        namespace = runpy.run_path(str(path), run_name=f"__smelt_{command}__")
    except SmeltError:
        raise
    except Exception as e:  # the user's file failed on its own
        print(f"smelt {command}: {path} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE
    defined = fusions_of(namespace)
    if not defined:
        print(f"smelt {command}: {path} defines no FusionDefinition at module level "
              f"(assign it to a variable)", file=sys.stderr)
        return EXIT_USAGE
    return defined


def plan(args: argparse.Namespace) -> int:
    path = Path(args.file)
    defined = load_fusions("plan", path)
    if isinstance(defined, int):
        return defined
    reports, rows = [], []
    for var, fd in defined:
        _progress(f"lowering {var}")
        kernel, fig = figures(var, fd, args.hazards, args.allocator, args.arch)
        rows.append(fig.row())
        if args.svg:
            svg_dir = Path(args.svg)
            svg_dir.mkdir(parents=True, exist_ok=True)
            (svg_dir / f"{var}.svg").write_text(kernel.smem_plan.svg)
        if args.json:
            reports.append({"name": var, "grid": list(kernel.grid), "block": list(kernel.block),
                            "smem_plan": kernel.smem_plan.to_dict(),
                            "stack_bytes": fig.stack, "ptxas": {
                                "registers": fig.registers, "spill_bytes": fig.spills,
                                "static_smem_bytes": fig.ptxas_smem},
                            **({"cuda": kernel.cuda} if args.cuda else {})})
        else:
            print_kernel_report(f"{path.name}:{var}", kernel, fig, cuda=args.cuda)
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        print(markdown_table(rows))
    return 0


def _meta_inputs(fd: FusionDefinition, sizes: Optional[List[str]]) -> List[object]:
    """Meta tensors for fd's inputs: --sizes per tensor input in order
    (e.g. 8192x4096), else the definition's static extents; scalars get 1."""
    tensors = [v for v in fd.inputs if isinstance(v, Tensor)]
    if sizes is not None and len(sizes) != len(tensors):
        raise SmeltError(f"--sizes was given {len(sizes)} times; the fusion has {len(tensors)} "
                         "tensor inputs")
    inputs, k = [], 0
    for value in fd.inputs:
        if not isinstance(value, Tensor):
            inputs.append(1)
            continue
        if sizes is not None:
            shape = [int(e) for e in sizes[k].split("x")] if sizes[k] else []
        else:
            shape = value.shape
            if not all(isinstance(e, int) and e >= 0 for e in shape):
                raise SmeltError(f"input {value.name} has symbolic extents {list(shape)}; give "
                                 "its sizes with --sizes (one per tensor input, e.g. 8192x4096)")
        k += 1
        inputs.append(torch.empty(shape, dtype=to_torch_dtype(value.dtype), device="meta"))
    return inputs


def quality(args: argparse.Namespace) -> int:
    defined = load_fusions("quality", Path(args.file))
    if isinstance(defined, int):
        return defined
    reports = []
    for var, fd in defined:
        _progress(f"compiling {var} for its shapes (nothing runs)")
        fd.execute(_meta_inputs(fd, args.sizes))
        for i, kernel in enumerate(fd.last_kernels()):
            q = kernel.quality
            if args.json:
                reports.append({"fusion": var, "kernel": i, **q.to_dict()})
            else:
                print(f"{var} kernel {i}: {q.text()}")
    if args.json:
        print(json.dumps(reports, indent=2))
    return 0


def _arch(text: str) -> int:
    if text not in ("sm_80", "sm_90"):
        raise argparse.ArgumentTypeError(f"unsupported architecture {text!r} (sm_80 or sm_90)")
    return int(text[3:])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="smelt", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="plan, compile and check the gallery of example kernels")
    d.add_argument("--out", default="smelt-demo", help="folder for the SVG plans and index.html")
    d.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    d.add_argument("--arch", type=_arch, default=90, help="sm_80 or sm_90 (default sm_90)")
    d.set_defaults(run=demo)
    f = sub.add_parser("plan", help="report the kernels of a Python fusion definition")
    f.add_argument("file", help="a Python file leaving FusionDefinitions in its namespace")
    f.add_argument("--json", action="store_true", help="print the report as JSON")
    f.add_argument("--svg", metavar="DIR", help="write one SVG plan per kernel into DIR")
    f.add_argument("--cuda", action="store_true", help="print the generated CUDA source")
    f.add_argument("--hazards", choices=["precise", "conservative"], default="precise")
    f.add_argument("--allocator", choices=["best", "stack"], default="best")
    f.add_argument("--arch", type=_arch, default=90, help="sm_80 or sm_90 (default sm_90)")
    f.set_defaults(run=plan)
    q = sub.add_parser("quality", help="machine-code report of the kernels smelt compiles for a "
                       "Python fusion definition at given sizes (nothing runs)")
    q.add_argument("file", help="a Python file leaving FusionDefinitions in its namespace")
    q.add_argument("--sizes", action="append", metavar="AxB",
                   help="sizes of one tensor input (repeat per input, in order); default: the "
                        "definition's static extents")
    q.add_argument("--json", action="store_true", help="print the report as JSON")
    q.set_defaults(run=quality)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except SmeltError as e:
        print(f"smelt {args.command}: {e}", file=sys.stderr)
        return EXIT_SMELT_ERROR


if __name__ == "__main__":
    sys.exit(main())
