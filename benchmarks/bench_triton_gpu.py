"""The ops of bench_triton_quality run on a GPU: values checked, then timed
side by side (issue 18's comparison, where a GPU is lent).

    python benchmarks/bench_triton_gpu.py [--ops softmax,col_sum] \\
        [--shapes 8192x4096,4096x4096x4096] [--json F] [--md F]

For each op and shape, on random CUDA inputs (no zeros: they hide unwritten
outputs), four implementations of the same computation:

- smelt: the op's unscheduled FusionDefinition (bench_triton_quality's) run
  with fd.execute, so the automatic schedulers and the segmenter choose;
- Triton: the same hand-written kernels bench_triton_quality compiles, with
  the same constexprs, warps and stages, launched through triton.jit;
- Inductor: torch.compile of the eager reference below (what a torch.compile
  user gets today);
- eager: that reference in plain PyTorch (fp32 math, as both kernels do);
- cublas (the matmul only): torch.relu(torch.mm(a, b) + bias) in fp16 eager,
  and the kernel time of torch.mm alone (cuBLAS: the floor any epilogue adds to).

By default the row ops run at 8192x4096 and the matmul at issue 41's six
shapes (MATMUL_SHAPES).

Every output of smelt, Triton and Inductor is compared with the reference
(max abs error; a NaN or an error over the op's tolerance marks the row
WRONG and the exit status is 1). Then each is timed two ways:
- wall: triton.testing.do_bench's median (CUDA events around one call, host
  overhead included where the GPU waits for it);
- kernel: the summed device time of the CUDA kernels one call launches, from
  torch.profiler (host overhead excluded), and their count.
Bytes moved at least (inputs read once, outputs written once) over the
kernel time give the effective bandwidth.

Without a GPU the script says so and exits 0 (tests/python/test_bench_triton_gpu.py
checks the references against smelt's CPU simulator).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_triton_quality as quality  # noqa: E402
from bench_torch_compile import kernel_profile, kernel_time_us  # noqa: E402

EPS = quality.EPS
# Who measures what, in the JSON and the table; "cublas" for the matmul only.
SIDES = ("smelt", "smelt_generated", "triton", "inductor", "eager", "cublas")
# Issue 41's matmul shapes (MxNxK, fp16 + bias + ReLU): square ones, a
# thin M (decode-like 64 and 512 rows), and an MLP's up projection.
MATMUL_SHAPES = ["4096x4096x4096", "8192x8192x8192", "2048x2048x2048", "512x4096x4096",
                 "64x4096x4096", "4096x11008x4096"]


# --------------------------------------------------------------------------
# References (eager, fp32 math) and Triton launches, per op.
# --------------------------------------------------------------------------


def _gelu_bias_ref(x, w, b):
    return [torch.nn.functional.gelu(x.float() * w.float() + b.float()).half()]


def _softmax_ref(x):
    return [torch.softmax(x.float(), dim=1).half()]


def _layer_norm_ref(x, w, b):
    xf = x.float()
    mean = xf.mean(dim=1, keepdim=True)
    centered = xf - mean
    rstd = torch.rsqrt((centered * centered).mean(dim=1, keepdim=True) + EPS)
    y = centered * rstd * w.float() + b.float()
    return [y.half(), mean.squeeze(1), rstd.squeeze(1)]


def _rms_norm_ref(x, w):
    xf = x.float()
    rstd = torch.rsqrt((xf * xf).mean(dim=1, keepdim=True) + EPS)
    return [(xf * rstd * w.float()).half()]


def _row_sum_ref(x):
    return [x.float().sum(dim=1).half()]


def _col_sum_ref(x):
    return [x.float().sum(dim=0).half()]


def _layer_norm_bwd_ref(dy, x, w, mean, rstd):
    dyf, xf = dy.float(), x.float()
    n = x.shape[1]
    xhat = (xf - mean[:, None]) * rstd[:, None]
    wdy = w.float() * dyf
    c1 = (xhat * wdy).sum(dim=1, keepdim=True) / n
    c2 = wdy.sum(dim=1, keepdim=True) / n
    dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
    return [dx.half(), (dyf * xhat).sum(dim=0).half(), dyf.sum(dim=0).half()]


def _matmul_ref(a, b, bias):
    return [torch.relu((a @ b).float() + bias.float()).half()]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _triton_calls(name: str, inputs: List[torch.Tensor],
                  outputs: List[torch.Tensor]) -> List[Tuple[tuple, list]]:
    """(grid, runtime arguments) of each Triton kernel of the op, in the order
    of bench_triton_quality's jobs; outputs are written in place."""
    if name == "matmul_bias_relu":
        a, b, bias = inputs
        M, K = a.shape
        N = b.shape[1]
        return [((_cdiv(M, 128) * _cdiv(N, 128),),
                 [a, b, bias, outputs[0], M, N, K, a.stride(0), b.stride(0),
                  outputs[0].stride(0)])]
    M, N = inputs[0].shape
    if name == "gelu_bias":
        return [((_cdiv(N, 1024), M), [*inputs, outputs[0], N])]
    if name in ("softmax", "row_sum"):
        return [((M,), [inputs[0], outputs[0], N])]
    if name == "layer_norm":
        return [((M,), [*inputs, *outputs, N, EPS])]
    if name == "rms_norm":
        return [((M,), [*inputs, outputs[0], N, EPS])]
    if name == "col_sum":
        return [((_cdiv(N, 64),), [inputs[0], outputs[0], M, N])]
    if name == "layer_norm_bwd":
        groups = _cdiv(M, quality.LN_BWD_ROWS_PER_PROGRAM)
        dw_part = torch.empty(groups, N, dtype=torch.float, device=inputs[0].device)
        db_part = torch.empty_like(dw_part)
        return [((groups,), [*inputs, outputs[0], dw_part, db_part, M, N]),
                ((_cdiv(N, 64),), [dw_part, db_part, outputs[1], outputs[2], groups, N])]
    raise KeyError(name)


REFERENCES: Dict[str, Callable[..., List[torch.Tensor]]] = {
    "gelu_bias": _gelu_bias_ref, "softmax": _softmax_ref, "layer_norm": _layer_norm_ref,
    "rms_norm": _rms_norm_ref, "row_sum": _row_sum_ref, "col_sum": _col_sum_ref,
    "layer_norm_bwd": _layer_norm_bwd_ref, "matmul_bias_relu": _matmul_ref,
}
assert set(REFERENCES) == set(quality.OPS), "every op of bench_triton_quality needs a reference"


def tolerance(name: str, shape: Sequence[int]) -> float:
    """Max abs error allowed against the reference: fp16 outputs of O(1)
    values, sums of fp16 rounding over the reduced extent."""
    if name == "matmul_bias_relu":
        return 0.05 * math.sqrt(shape[2])  # fp16 accumulation-order differences
    if name in ("row_sum", "col_sum", "layer_norm_bwd"):
        return 0.02 * math.sqrt(shape[0] if name != "row_sum" else shape[1])
    return 2e-2


def make_inputs(name: str, shape: tuple, device: str,
                generator: torch.Generator) -> List[torch.Tensor]:
    """Random inputs of the op's meta shapes and dtypes; layer-norm backward's
    rstd is positive, as a forward produces it."""
    _, metas = quality.OPS[name].smelt(shape)
    inputs = [torch.randn(m.shape, dtype=torch.float, generator=generator).to(m.dtype)
              for m in metas]
    if name == "layer_norm_bwd":
        inputs[4] = inputs[4].abs() + 0.5
    if name == "matmul_bias_relu":  # unit-variance sums of K products
        inputs[0] = (inputs[0].float() / math.sqrt(shape[2])).half()
    return [t.to(device) for t in inputs]


def max_error(got: Sequence[torch.Tensor], expected: Sequence[torch.Tensor]) -> float:
    if len(got) != len(expected):
        return math.inf
    worst = 0.0
    for g, e in zip(got, expected):
        if g.shape != e.shape:
            return math.inf
        diff = (g.float() - e.float()).abs().max().item() if g.numel() else 0.0
        if math.isnan(diff):
            return math.nan
        worst = max(worst, diff)
    return worst


# --------------------------------------------------------------------------
# Timing.
# --------------------------------------------------------------------------


def min_bytes(inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in list(inputs) + list(outputs))


def measure(name: str, shape: tuple, seed: int = 0) -> dict:
    from triton.testing import do_bench
    from smelt import fusion_cache
    op = quality.OPS[name]
    gen = torch.Generator().manual_seed(seed)
    inputs = make_inputs(name, shape, "cuda", gen)
    reference = REFERENCES[name]
    expected = reference(*inputs)
    row: Dict[str, Any] = {"op": name, "shape": list(shape),
                           "min_bytes": min_bytes(inputs, expected),
                           "tolerance": tolerance(name, shape)}

    fusion_cache().clear()
    fd, _ = op.smelt(shape)
    outputs = [torch.full_like(e, math.nan) for e in expected]
    jobs = op.triton(shape)

    def run_triton():
        for job, (grid, args) in zip(jobs, _triton_calls(name, inputs, outputs)):
            job.fn[grid](*args, **job.constexprs, num_warps=job.num_warps,
                         num_stages=job.num_stages)
        return outputs

    inductor = torch.compile(reference, dynamic=False)
    sides: Dict[str, Callable[[], Any]] = {
        "smelt": lambda: fd.execute(inputs),
        "triton": run_triton,
        "inductor": lambda: inductor(*inputs),
        "eager": lambda: reference(*inputs),
    }
    if name == "matmul_bias_relu":
        a, b, bias = inputs
        sides["cublas"] = lambda: [torch.relu(torch.mm(a, b) + bias)]  # fp16 eager
        # smelt's own kernel, epilogue inside; "smelt" is the default choice
        # (on a GPU the matmul in cuBLAS, the epilogue in smelt's kernel).
        sides["smelt_generated"] = lambda: fd.execute(inputs, matmul="generated")
    for side, fn in sides.items():
        entry: Dict[str, Any] = {}
        try:
            got = fn()
            torch.cuda.synchronize()
            entry["max_error"] = max_error(got, expected)
            entry["wrong"] = not (entry["max_error"] <= row["tolerance"])
            entry["wall_us"] = do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
            entry["kernel_us"], entry["kernels"] = kernel_time_us(fn)
            if entry["kernel_us"] > 0:
                entry["gb_per_s"] = row["min_bytes"] / entry["kernel_us"] / 1e3
            if side.startswith("smelt"):
                entry["smelt_kernels"] = [k.compiled.kernel_name for k in fd.last_kernels()]
            if side == "cublas":  # the matmul alone: what any epilogue adds to
                entry["mm_kernel_us"], _ = kernel_time_us(lambda: torch.mm(a, b))
        except Exception as e:  # a failure is a result
            entry["error"] = f"{type(e).__name__}: {str(e).strip()[:1500]}"
        row[side] = entry
    return row


# Reduction heuristics swept on the GPU: each op's kernels with every
# reduction segment's (block_x, block_y) forced, next to the heuristics' own.
SWEEP_BLOCKS = [(bx, by) for bx in (2, 4, 8, 16) for by in (16, 32, 64, 128, 256)
                if 128 <= bx * by <= 1024]


def sweep_reduction(name: str, shape: tuple, seed: int = 0) -> List[dict]:
    from smelt._execution import AutoExecutor
    gen = torch.Generator().manual_seed(seed)
    inputs = make_inputs(name, shape, "cuda", gen)
    expected = REFERENCES[name](*inputs)
    device = inputs[0].device
    rows = []
    for blocks in [None] + SWEEP_BLOCKS:
        params = {} if blocks is None else {"block_x": blocks[0], "block_y": blocks[1]}
        fd, _ = quality.OPS[name].smelt(shape)
        row: Dict[str, Any] = {"op": name, "shape": list(shape), "params": params}
        try:
            executor = AutoExecutor(fd, reduction_params=params)
            fn = lambda: executor.run(inputs, device)  # noqa: E731
            row["max_error"] = max_error(fn(), expected)
            by_kernel = kernel_profile(fn)
            row["kernel_us"] = sum(us for us, _ in by_kernel.values())
            row["kernels"] = sum(n for _, n in by_kernel.values())
            row["by_kernel_us"] = {k: us for k, (us, _) in by_kernel.items()}
            row["segments"] = executor.report().strip().splitlines()
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e).strip()[:300]}"
        print(json.dumps({k: v for k, v in row.items() if k not in ("segments", "by_kernel_us")}),
              flush=True)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Report.
# --------------------------------------------------------------------------


def _fmt(value: Optional[float], digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def markdown(rows: List[dict], device: str) -> str:
    lines = [f"# smelt vs Triton, Inductor and eager on {device}", "",
             "Kernel: summed device time of one call's CUDA kernels (torch.profiler); wall: "
             "do_bench median (host overhead included); GB/s: least bytes moved over kernel "
             "time; error: max abs against the eager reference.", "",
             "cuBLAS: the matmul's torch.mm + bias + ReLU in fp16 eager, and torch.mm alone "
             "(the cuBLAS kernel any epilogue adds to). smelt: its default choice (on a GPU "
             "the matmul in cuBLAS, its epilogue in a smelt kernel); smelt generated: smelt's "
             "own matmul kernel, epilogue inside.", "",
             "| op | shape | smelt kernel us (n) | smelt generated | Triton | Inductor | eager | "
             "cuBLAS mm + bias + ReLU | cuBLAS mm alone | smelt/Triton | smelt/Inductor | "
             "smelt/cuBLAS mm | smelt GB/s | smelt wall us | Triton wall | smelt error |",
             "|---" * 16 + "|"]
    for r in rows:
        def k(side):
            e = r.get(side)
            if e is None:
                return "—"
            if "error" in e:
                return "error"
            return f"{_fmt(e.get('kernel_us'))} ({_fmt(e.get('kernels'), 0)})" + (
                " WRONG" if e.get("wrong") else "")
        s, t, i, c = (r.get(x, {}) for x in ("smelt", "triton", "inductor", "cublas"))
        ratio = lambda a, b, key="kernel_us": _fmt(a["kernel_us"] / b[key], 2) if (  # noqa: E731
            a.get("kernel_us") and b.get(key)) else "—"
        lines.append(
            f"| {r['op']} | {'x'.join(map(str, r['shape']))} | {k('smelt')} | "
            f"{k('smelt_generated')} | {k('triton')} | "
            f"{k('inductor')} | {k('eager')} | {k('cublas')} | {_fmt(c.get('mm_kernel_us'))} | "
            f"{ratio(s, t)} | {ratio(s, i)} | {ratio(s, c, 'mm_kernel_us')} | "
            f"{_fmt(s.get('gb_per_s'), 0)} | {_fmt(s.get('wall_us'))} | "
            f"{_fmt(t.get('wall_us'))} | {s.get('max_error', s.get('error', '—'))} |")
    errors = [(r["op"], side, r[side]["error"]) for r in rows
              for side in SIDES if "error" in r.get(side, {})]
    if errors:
        lines += ["", "Errors:"] + [f"- {op} ({side}): {msg}" for op, side, msg in errors]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(quality.OPS))
    p.add_argument("--shapes", default=",".join(["8192x4096"] + MATMUL_SHAPES),
                   help="AxB for the row ops, MxNxK for the matmul")
    p.add_argument("--json", default=None)
    p.add_argument("--md", default=None)
    p.add_argument("--sweep", default=None,
                   help="comma-separated OP:AxB whose reduction (block_x, block_y) to sweep "
                        "instead of the comparison")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_triton_gpu: no CUDA device; nothing measured")
        return 0
    if args.sweep:
        jobs = [item.split(":") for item in args.sweep.split(",") if item]
        rows = [r for op, shape in jobs for r in sweep_reduction(op, quality.parse_shape(shape))]
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2))
        for r in rows:
            print(f"{r['op']:16s} {'x'.join(map(str, r['shape'])):10s} {str(r['params']):36s} "
                  f"{_fmt(r.get('kernel_us'))} us  ({r.get('error', '')})")
        return 0
    ops = [o for o in args.ops.split(",") if o]
    unknown = [o for o in ops if o not in quality.OPS]
    if unknown:
        p.error(f"unknown op(s) {', '.join(unknown)}")
    shapes = [quality.parse_shape(s) for s in args.shapes.split(",") if s]
    device = torch.cuda.get_device_name()
    rows = []
    for name, shape in quality.plan(ops, shapes):
        row = measure(name, shape)
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("op", "shape")} | {
            side: {k: v for k, v in row[side].items() if k != "smelt_kernels"}
            for side in SIDES if side in row}), flush=True)
    text = markdown(rows, device)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=2))
    if args.md:
        Path(args.md).write_text(text)
    wrong = [r["op"] for r in rows for side in ("smelt", "triton", "inductor", "cublas")
             if side in r and (r[side].get("wrong") or "error" in r[side])]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
