"""The model zoo (tests/python/models/zoo.py) and issue 41's real-size bf16
models (tests/python/models/real_size.py, GPU only) through
torch.compile(backend="smelt"), model by model, against eager.

    python benchmarks/bench_models.py [--models gpt2,bert|zoo|real_size]
        [--json out.json] [--md out.md] [--gpu-only]

Per model (forward, eval, static shapes, CPU tensors so smelt's kernels run
in its simulator): ATen nodes fused / all nodes of the compiled graphs,
the fused fraction (fused / all but convolution, attention and
data-dependent ops, which libraries run: GraphReport.library_nodes, and the
views left in torch, which launch nothing: GraphReport.free_view_nodes),
fusions, run-time fallbacks (partitions smelt failed on), the largest
absolute difference from eager over every output, and the wall time of the
first call (Dynamo, AOTAutograd, partitioning, smelt lowering + NVRTC, the
simulator) and of the second (cached kernels, simulator); kernels launched
per forward (smelt's, and the ATen ops left in torch that launch one) and the
machine code of smelt's kernels (static SASS of the non-matmul kernels, stack
frames); with --peers, Inductor's launches and SASS beside them. A Markdown
table on stdout (and in --md), JSON with --json, both rewritten after each
model. The simulator's times are not GPU times.

Each smelt kernel of a forward is listed with its grid, block, registers,
shared memory, blocks per SM, waves over the SMs and roofline floor
(smelt.occupancy; without a GPU, sm_90 on an H100's figures); a kernel whose
grid is under one wave while its work could fill the GPU is flagged, and
each model's row counts them. Without a GPU the real-size models (too big
for the simulator) are planned instead: compiled for CUDA here, not run,
with each kernel's fill and each matmul's implementation (gpu_plan).

With a GPU (skipped without one), each model also runs on it: for eager,
Inductor and smelt, and both compiled backends with mode="reduce-overhead"
(CUDA graphs), the median wall time per forward measured in one run with
CUDA events (--gpu-iters after warm-up), the summed device time and count of
one forward's kernels (torch.profiler), the first call's seconds
(compilation included), and smelt's largest difference from eager there;
smelt's kernels with their waves and floors on that GPU beside their
measured µs.
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
sys.path.insert(0, str(REPO / "benchmarks"))

from models import real_size  # noqa: E402
from models.zoo import CASES, output_tensors  # noqa: E402
from smelt.occupancy import Device, device_named, fill_of  # noqa: E402
from bench_torch_compile import (host_hotspots, host_ops, host_us, kernel_profile,  # noqa: E402
                                 median_us)

# The public zoo, then issue 41's real-size bf16 models, which only a GPU
# runs (far too big for the simulator).
MODELS = {**CASES, **real_size.CASES}
GPU_ONLY = set(real_size.CASES)
# Names --models also takes for a whole set.
GROUPS = {"zoo": list(CASES), "real_size": list(real_size.CASES)}

GPU_MODES = ("eager", "inductor", "smelt", "smelt-generated", "smelt-nchw", "inductor-graphs",
             "smelt-graphs")
# The compiled backends (backend, mode, options): "-graphs" is torch.compile's
# mode="reduce-overhead" (each compiled graph replayed as a CUDA graph);
# "smelt-generated" runs smelt's own matmul kernels, where the default gives
# a GPU's matmuls to cuBLAS; "smelt-nchw" keeps convolutions in the traced
# layout, where the default runs them channels-last (each choice before and
# after, in one run; smelt-nchw only for models with convolutions).
COMPILED = {"inductor": ("inductor", None, None), "smelt": ("smelt", None, None),
            "smelt-generated": ("smelt", None, {"matmul": "generated"}),
            "smelt-nchw": ("smelt", None, {"conv_layout": "as_traced"}),
            "inductor-graphs": ("inductor", "reduce-overhead", None),
            "smelt-graphs": ("smelt", "reduce-overhead", None)}


def measure(name: str) -> Dict[str, object]:
    import smelt.backend
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    build, make_inputs = MODELS[name]
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
    fills = kernel_fills(reports, device_named(None))
    # What a GPU would launch, decided here: each fusion compiled for CUDA on
    # its traced inputs (the matmuls there go to cuBLAS by default).
    on_gpu = Counter("library" if s.startswith("library_matmul") else s
                     for r in reports for s in r.segments_on("cuda"))
    return {
        "model": name,
        "graphs": len(reports),
        "nodes_fused": sum(r.fused_node_count for r in reports),
        "nodes_total": sum(r.total_nodes for r in reports),
        "library_nodes": sum(r.library_nodes for r in reports),
        "free_view_nodes": sum(r.free_view_nodes for r in reports),
        "fusions": sum(len(r.partitions) for r in reports),
        "fallback_partitions": sum(p.failed for r in reports for p in r.partitions),
        "max_abs_error": max_error,
        "first_call_s": times[0],
        "second_call_s": times[1],
        "smelt_kernels_per_forward": sum(r.smelt_kernels() for r in reports),
        "torch_launches_per_forward": sum(r.torch_launches() for r in reports),
        "gpu_smelt_kernels_per_forward": sum(n for kind, n in on_gpu.items()
                                             if kind not in ("library", "view")),
        "gpu_library_calls_per_forward": on_gpu["library"],
        **code,
        "kernel_fill": fills,
        "underfilled_kernels": sum(f["underfilled"] for f in fills),
        "left_to_torch": dict(sum((r.unsupported_ops for r in reports), Counter()).most_common()),
    }


def _to_cuda(value):
    if isinstance(value, torch.Tensor):
        return value.cuda()
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cuda(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_cuda(v) for k, v in value.items()}
    return value


def _smelt_kernel_times(profile: Dict[str, tuple]) -> list:
    """Each smelt kernel of the latest forward: [name, µs per forward,
    launches, partition, grid, block, scheduler and parameters] (which
    kernels are slow, and how they were scheduled), slowest first."""
    import smelt.backend
    rows = []
    for report in smelt.backend.reports():
        for part in report.partitions:
            segments: List[str] = []  # a segment's first line and its indented ones
            for line in (part.last_run or "").splitlines():
                if line[:1].isdigit():
                    segments.append(line)
                elif line.startswith("  ") and segments:
                    segments[-1] += " |" + line.strip()
            schedules = [seg for seg in segments if " view:" not in seg.split("|")[0]]
            for kernel, schedule in zip(part.kernels, schedules):
                name = kernel.compiled.kernel_name
                us, n = profile.get(name, (0.0, 0.0))
                rows.append([name, us, n, part.name, list(kernel.grid), list(kernel.block),
                             schedule[:240]])
    return sorted(rows, key=lambda row: -row[1])


def gpu_times(name: str, iters: int) -> Dict[str, object]:
    """Median µs per forward on the GPU of eager, Inductor and smelt, and of
    both compiled backends with mode="reduce-overhead" (CUDA events, one
    run); per mode the first call's seconds (compilation included) and the
    kernels' device time and launches; smelt's kernels with their waves and
    roofline floors beside their measured µs; smelt's largest absolute
    difference from eager, and eager's largest output value."""
    build, make_inputs = MODELS[name]
    model = build().cuda()
    args, kwargs = _to_cuda(make_inputs(1))
    device = device_named(torch.cuda.get_device_name())
    first_call: Dict[str, float] = {}
    fills: List[Dict[str, object]] = []
    times: Dict[str, float] = {}
    kernel_us: Dict[str, float] = {}
    kernels: Dict[str, float] = {}
    top: Dict[str, list] = {}
    host: Dict[str, float] = {}
    hotspots: Dict[str, list] = {}
    ops: Dict[str, list] = {}
    errors: Dict[str, str] = {}
    smelt_kernels: list = []
    error = 0.0
    with torch.no_grad():
        expected = output_tensors(model(*args, **kwargs))
        largest = max(e.float().abs().max().item() for e in expected if e.is_floating_point())
        has_convolutions = any(isinstance(m, torch.nn.Conv2d) for m in model.modules())
        for mode in GPU_MODES:
            if mode == "smelt-nchw" and not has_convolutions:
                continue
            torch._dynamo.reset()
            try:
                if mode == "eager":
                    fn = model
                else:
                    import smelt.backend  # (registers the backend)
                    smelt.backend.reset_reports()  # this model's graphs alone
                    backend, compile_mode, options = COMPILED[mode]
                    fn = torch.compile(model, backend=backend, mode=compile_mode, options=options)
                for call in range(3):  # a CUDA graph is recorded on the second or third call
                    start = time.perf_counter()
                    actual = output_tensors(fn(*args, **kwargs))
                    if call == 0:
                        torch.cuda.synchronize()
                        first_call[mode] = time.perf_counter() - start
                    if mode.startswith("smelt"):
                        for a, e in zip(actual, expected):
                            error = max(error, (a.float() - e.float()).abs().max().item())
                times[mode] = median_us(lambda *a: fn(*a, **kwargs), args, iters, cuda=True)
                profile = kernel_profile(lambda: fn(*args, **kwargs))
                kernel_us[mode] = sum(us for us, _ in profile.values())
                kernels[mode] = sum(n for _, n in profile.values())
                top[mode] = sorted(([name[:80], us, n] for name, (us, n) in profile.items()),
                                   key=lambda row: -row[1])[:8]
                if mode == "smelt":
                    smelt_kernels = _smelt_kernel_times(profile)
                    fills = kernel_fills(smelt.backend.reports(), device, profile)
                host[mode] = host_us(lambda: fn(*args, **kwargs))
                if mode != "eager":
                    hotspots[mode] = host_hotspots(lambda: fn(*args, **kwargs))
                    ops[mode] = host_ops(lambda: fn(*args, **kwargs))
            except Exception as e:  # one mode's failure leaves the others' figures
                errors[mode] = f"{type(e).__name__}: {e}"[:2000]
    if "eager" not in times:
        raise RuntimeError(f"eager failed: {errors['eager']}")
    ratios = {f"gpu_{a.replace('-', '_')}_vs_{b.replace('-', '_')}": times[b] / times[a]
              for a, b in (("smelt", "inductor"), ("smelt-graphs", "inductor-graphs"),
                           ("smelt", "eager"), ("smelt", "smelt-nchw"))
              if a in times and b in times}
    return {"gpu_us": times, "gpu_first_call_s": first_call, "gpu_kernel_us": kernel_us,
            "gpu_kernels": kernels, "gpu_kernel_fill": fills,
            "gpu_underfilled_kernels": sum(f["underfilled"] for f in fills),
            "gpu_max_abs_expected": largest,
            "gpu_top_kernels": top, "gpu_host_us": host, "gpu_host_hotspots": hotspots,
            "gpu_host_ops": ops, "gpu_smelt_kernels": smelt_kernels, "gpu_mode_errors": errors, "gpu_max_abs_error": error,
            **ratios}


class _Planned(Exception):
    """Raised in place of a planned graph's first call: nothing runs."""


def _plan_backend(gm: torch.fx.GraphModule, example_inputs):
    """smelt's backend, which partitions the graph and compiles every fusion
    ahead for its traced inputs, returning a forward that runs nothing. The
    convolutions' layout is decided as for a CUDA device (the graph is
    traced on the CPU)."""
    import smelt.backend
    smelt.backend.smelt_backend(gm, example_inputs, options={"conv_layout": "channels_last"})

    def planned(*args):
        raise _Planned()
    return planned


def gpu_plan(name: str) -> Dict[str, object]:
    """What a GPU would launch for one forward of a model too big for the
    simulator, decided here without running it: its first graph compiled
    by smelt's backend (partitioning, compile ahead), then each fusion
    compiled for CUDA on its traced inputs (compile_for on meta stand-ins),
    every kernel's fill on an H100 and each matmul's implementation."""
    import smelt.backend
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    build, make_inputs = MODELS[name]
    torch.manual_seed(0)
    model = build()
    args, kwargs = make_inputs(1)
    start = time.perf_counter()
    try:
        with torch.no_grad():
            torch.compile(model, backend=_plan_backend)(*args, **kwargs)
    except _Planned:
        pass
    compile_s = time.perf_counter() - start
    reports = smelt.backend.reports()
    device = device_named(None)
    fills: List[Dict[str, object]] = []
    matmuls: Counter = Counter()
    for report in reports:
        for fd, inputs, _ in report.traced_calls:
            fd.compile_for(inputs, device="cuda")
            last_run = fd.last_run_report()
            matmuls.update(line.split("{", 1)[1].split(";", 1)[0]
                           for line in last_run.splitlines() if " library_matmul " in line)
            matmuls["smelt matmul kernel"] += sum(s == "matmul" for s in _schedulers(last_run))
            schedulers = [s for s in _schedulers(last_run) if s != "library_matmul"]
            for scheduler, kernel in zip(schedulers, fd.last_kernels()):
                fills.append({"scheduler": scheduler,
                              **fill_of(kernel, device, scheduler == "matmul").to_dict()})
    return {"model": name, "planned_graphs": len(reports), "plan_compile_s": compile_s,
            "planned_kernels": len(fills), "planned_matmuls": dict(+matmuls),
            "left_to_torch": dict(sum((r.unsupported_ops for r in reports), Counter()).most_common()),
            "kernel_fill": fills, "underfilled_kernels": sum(f["underfilled"] for f in fills)}


def _schedulers(last_run: str) -> List[str]:
    """The scheduler of each kernel, in order, from fd.last_run_report() (a
    segment whose outputs were views of its inputs ran no kernel)."""
    names = []
    for line in (last_run or "").splitlines():
        words = line.split()
        if len(words) > 1 and words[0].isdigit() and words[1] != "view:":
            names.append(words[1])
    return names


def _kernels(reports):
    """(scheduler, smelt.inspection.Kernel) of each kernel the latest forward
    launched, in order, over the partitions smelt ran."""
    for r in reports:
        for p in r.partitions:
            if p.failed:
                continue
            schedulers = _schedulers(p.last_run)
            for i, kernel in enumerate(p.kernels):
                yield (schedulers[i] if i < len(schedulers) else "?"), kernel


def machine_code(reports) -> Dict[str, object]:
    """The machine code of the kernels of the latest forward (sm_90, from the
    disassembler: smelt.kernel_quality): static SASS instructions of the
    distinct non-matmul kernels (the matmul scheduler's apart, as Inductor's
    matmuls are cuBLAS calls), each counted once however often it launches,
    as the peer tool counts Inductor's (sass_non_matmul_per_launch counts
    every launch); the most registers, and stack frame bytes summed over the
    distinct kernels."""
    sass = per_launch = matmul_sass = stack = registers = 0
    seen = set()
    for scheduler, kernel in _kernels(reports):
        q = kernel.quality
        matmul = scheduler == "matmul"
        if not matmul:
            per_launch += q.sass.instructions
        if kernel.cuda in seen:
            continue
        seen.add(kernel.cuda)
        if matmul:
            matmul_sass += q.sass.instructions
        else:
            sass += q.sass.instructions
        stack += q.stack_frame_bytes
        registers = max(registers, q.registers)
    return {"sass_non_matmul": sass, "sass_non_matmul_per_launch": per_launch,
            "sass_matmul": matmul_sass, "stack_frame_bytes": stack, "max_registers": registers,
            "distinct_kernels": len(seen)}


def kernel_fills(reports, device: Device,
                 profile: Optional[Dict[str, tuple]] = None) -> List[Dict[str, object]]:
    """Each kernel of the latest forward, launch by launch: grid, block,
    registers, shared memory, blocks per SM, waves over `device`'s SMs, the
    roofline floor, and whether it is under one wave while its work could
    fill the GPU (smelt.occupancy); with a torch.profiler `profile`
    (kernel_profile's), its measured µs per launch beside the floor."""
    rows = []
    for scheduler, kernel in _kernels(reports):
        row = {"scheduler": scheduler, **fill_of(kernel, device, scheduler == "matmul").to_dict()}
        if profile is not None:
            us, launches = profile.get(row["name"], (0.0, 0.0))
            row["measured_us"] = us / launches if launches else None
        rows.append(row)
    return rows


def fill_markdown(model: str, fills: List[Dict[str, object]], device: Device) -> List[str]:
    """One model's kernels as a Markdown table, the flagged ones marked."""
    if not fills:
        return []
    measured = any("measured_us" in f for f in fills)
    lines = ["", f"{model}: smelt's kernels on {device.name} ({device.sms} SMs; floor: least "
             f"bytes over {device.bandwidth_bytes_per_s / 1e12:g} TB/s or flops over "
             f"{device.cuda_core_flops / 1e12:g} (CUDA cores) / "
             f"{device.tensor_core_flops / 1e12:g} (tensor cores) TFLOP/s)", "",
             "| kernel | scheduler | grid | block | regs | smem B | blocks/SM (limit) | waves | "
             "MB moved | GFLOP | floor µs |" + (" measured µs |" if measured else "") +
             " under one wave, could fill |",
             "|---" * (12 + measured) + "|"]
    for f in fills:
        dims = lambda d: "×".join(map(str, d))  # noqa: E731
        lines.append(
            f"| {f['name']} | {f['scheduler']} | {dims(f['grid'])} | {dims(f['block'])} | "
            f"{f['registers']} | {f['smem_bytes']} | {f['blocks_per_sm']} ({f['limited_by']}) | "
            f"{f['waves']:.3g} | {f['bytes_moved'] / 1e6:.3g} | {f['flops'] / 1e9:.3g} | "
            f"{f['floor_us']:.3g} |" +
            (f" {f['measured_us']:.1f} |" if f.get("measured_us") else " — |" if measured else "") +
            (" **FLAG** |" if f["underfilled"] else " |"))
    return lines


def markdown(rows: List[Dict[str, object]], peers: Dict[str, dict]) -> str:
    lines = [] if not any("nodes_fused" in r for r in rows) else [
             "| model | nodes fused / total | fused fraction | fusions | run-time fallbacks | "
             "max abs error | first call | second call | launches per forward: smelt + torch "
             "(Inductor); on a GPU (compiled for it here) | SASS non-matmul, distinct kernels (Inductor) | stack frames | "
             "kernels under one wave that could fill the GPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in (r for r in rows if "nodes_fused" in r):
        peer = peers.get(r["model"], {})
        launches = f"{r['smelt_kernels_per_forward']} + {r['torch_launches_per_forward']}"
        if "launches_per_forward" in peer:
            launches += f" ({peer['launches_per_forward']})"
        if "gpu_library_calls_per_forward" in r:  # the matmuls in cuBLAS
            launches += (f"; GPU: {r['gpu_smelt_kernels_per_forward']} + "
                         f"{r['gpu_library_calls_per_forward']} cuBLAS + {r['torch_launches_per_forward']}")
        sass = str(r["sass_non_matmul"])
        if "total_sass_instructions" in peer:
            sass += f" ({peer['total_sass_instructions']})"
        candidates = r["nodes_total"] - r.get("library_nodes", 0) - r.get("free_view_nodes", 0)
        fraction = f"{100 * r['nodes_fused'] / candidates:.1f}%" if candidates else "-"
        lines.append(f"| {r['model']} | {r['nodes_fused']} / {r['nodes_total']} | {fraction} | "
                     f"{r['fusions']} | "
                     f"{r['fallback_partitions']} | {r['max_abs_error']:.2g} | "
                     f"{r['first_call_s']:.2f} s | {r['second_call_s']:.3f} s | {launches} | "
                     f"{sass} | {r['stack_frame_bytes']} B | {_flagged(r, 'kernel_fill')} |")
    timed = [r for r in rows if "gpu_us" in r]
    gpu_name = torch.cuda.get_device_name() if timed else None
    lines += [f"GPU run of {r['model']} failed: {r['gpu_error']}" for r in rows if "gpu_error" in r]
    if timed:
        lines += ["", f"GPU ({gpu_name}), median µs per forward, CUDA events:",
                  "(graphs: mode=\"reduce-overhead\", each compiled graph replayed as a CUDA "
                  "graph; kernel: summed device time of the kernels one forward launches, and "
                  "their count, from torch.profiler; host: median µs the host spends issuing "
                  "one forward; first call: seconds to the first forward's result, compilation "
                  "included; the JSON has each compiled backend's host hotspots and host ops)",
                  "", "| model | " + " | ".join(GPU_MODES) + " | smelt vs Inductor | "
                  "smelt-graphs vs inductor-graphs | kernel µs (n) " + " / ".join(GPU_MODES) +
                  " | host µs " + " / ".join(GPU_MODES) + " | max abs error (GPU) | "
                  "first call s " + " / ".join(GPU_MODES) + " | smelt kernels under one wave "
                  "that could fill the GPU |",
                  "|---" * (len(GPU_MODES) + 8) + "|"]
        for r in timed:
            t, k, n = r["gpu_us"], r.get("gpu_kernel_us", {}), r.get("gpu_kernels", {})
            h = r.get("gpu_host_us", {})
            device = " / ".join(f"{k[m]:.0f} ({n[m]:.0f})" if m in k else "—" for m in GPU_MODES)
            issue = " / ".join(f"{h[m]:.0f}" if m in h else "—" for m in GPU_MODES)
            first = r.get("gpu_first_call_s", {})
            first = " / ".join(f"{first[m]:.1f}" if m in first else "—" for m in GPU_MODES)
            def ratio(a, b):
                return f"×{t[b] / t[a]:.2f}" if a in t and b in t else "—"
            lines.append(f"| {r['model']} | " +
                         " | ".join(f"{t[m]:.1f}" if m in t else "—" for m in GPU_MODES) +
                         f" | {ratio('smelt', 'inductor')} | "
                         f"{ratio('smelt-graphs', 'inductor-graphs')} | {device} | {issue} | "
                         f"{r['gpu_max_abs_error']:.2g} | {first} | "
                         f"{_flagged(r, 'gpu_kernel_fill')} |")
            lines += [f"{r['model']} {mode} failed: {why}"
                      for mode, why in r.get("gpu_mode_errors", {}).items()]
    lines += [f"{r['model']}: skipped, {r['skipped']}" for r in rows if "skipped" in r]
    planned = [r for r in rows if "planned_kernels" in r]
    if planned:
        lines += ["", "Planned for a GPU without one (compiled for CUDA here, not run): one "
                  "forward's smelt kernels, its matmuls by implementation, the ops left in torch",
                  "", "| model | graphs | smelt kernels | matmuls | left to torch | "
                  "kernels under one wave that could fill the GPU |", "|---|---|---|---|---|---|"]
        for r in planned:
            matmuls = ", ".join(f"{n} × {kind}" for kind, n in r["planned_matmuls"].items())
            torch_ops = ", ".join(f"{n} × {op}" for op, n in r["left_to_torch"].items())
            lines.append(f"| {r['model']} | {r['planned_graphs']} | {r['planned_kernels']} | "
                         f"{matmuls or '—'} | {torch_ops or '—'} | {_flagged(r, 'kernel_fill')} |")
    for r in rows:
        for key, device in (("kernel_fill", device_named(None)),
                            ("gpu_kernel_fill", device_named(gpu_name))):
            lines += fill_markdown(r["model"], r.get(key, []), device)
    return "\n".join(lines)


def _flagged(row: Dict[str, object], key: str) -> str:
    """"n of m" kernels of a row's fill list flagged under one wave, "—" when
    the row has none."""
    fills = row.get(key)
    if not fills:
        return "—"
    return f"{sum(f['underfilled'] for f in fills)} of {len(fills)}"


def load_peers(directory: Optional[Path]) -> Dict[str, dict]:
    """Inductor's figures per model: the JSON files that
    ../shared/peers/inductor/inductor_kernels.py --json wrote as MODEL.json."""
    if directory is None:
        return {}
    return {f.stem: json.loads(f.read_text()) for f in sorted(directory.glob("*.json"))}


def within_tolerance(row: Dict[str, object]) -> bool:
    """smelt's GPU values against eager's: 1e-3 absolute for the fp32 zoo;
    for the bf16 models 2% of eager's largest output value (bf16 keeps 8
    bits: eager and the compilers round in different places)."""
    error = row.get("gpu_max_abs_error", 0.0)
    if row["model"] in GPU_ONLY:
        return error <= 0.02 * row.get("gpu_max_abs_expected", 0.0)
    return error <= 1e-3


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="zoo,real_size",
                        help="comma-separated names: the zoo's (or 'zoo' for all of them) and "
                             f"the real-size bf16 models, GPU only ({', '.join(real_size.CASES)}, "
                             "or 'real_size'); default both sets")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    parser.add_argument("--md", type=Path, help="write the Markdown tables here")
    parser.add_argument("--peers", type=Path,
                        help="a folder of Inductor's figures (MODEL.json from the peer tool, "
                             "../shared/peers/inductor) to print beside smelt's")
    parser.add_argument("--gpu-iters", type=int, default=100,
                        help="timed forwards per model and mode on the GPU")
    parser.add_argument("--gpu-only", action="store_true",
                        help="only the GPU timings (no simulator run, no machine code)")
    args = parser.parse_args(argv)
    names = [m for n in args.models.split(",") if n for m in GROUPS.get(n, [n])]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    gpu = torch.cuda.is_available()
    if args.gpu_only and not gpu:
        print("--gpu-only: no CUDA device", file=sys.stderr)
        return 2
    peers = load_peers(args.peers)
    rows = []
    for name in names:
        if name in GPU_ONLY and not gpu:
            # Too big for the simulator: what a GPU would launch, planned here.
            row = gpu_plan(name)
        else:
            # The simulator cannot run the real-size models: the GPU alone does.
            row = {"model": name} if args.gpu_only or name in GPU_ONLY else measure(name)
            if gpu:
                try:
                    row.update(gpu_times(name, args.gpu_iters))
                except Exception as error:  # one model's failure must not hide the others'
                    row["gpu_error"] = f"{type(error).__name__}: {error}"[:2000]
                    print(f"{name}: {row['gpu_error']}", file=sys.stderr)
            print(json.dumps(row), file=sys.stderr, flush=True)  # progress, should a run be cut off
        rows.append(row)
        # Written after each model: a run cut off by its time limit leaves
        # the models it finished.
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        if args.md:
            args.md.write_text(markdown(rows, peers) + "\n")
    print(markdown(rows, peers))
    ok = all(r.get("fallback_partitions", 0) == 0 and within_tolerance(r) and "gpu_error" not in r
             for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
