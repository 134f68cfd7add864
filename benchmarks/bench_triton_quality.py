"""smelt against Triton, side by side, from the machine code only (issue 18).

    python benchmarks/bench_triton_quality.py --out DIR
    python benchmarks/bench_triton_quality.py --ops softmax,layer_norm \\
        --shapes 8192x4096 --archs 80,90 --out DIR

For every op and shape, the same computation is compiled twice without a GPU:

- smelt: a FusionDefinition left unscheduled (the automatic schedulers and
  the segmenter choose), compiled for meta tensors of the shape and each
  architecture (fd.compile_for(..., arch=)), which segments, schedules,
  lowers and NVRTC-compiles the kernels smelt would run on that GPU; the
  report comes from each kernel's `.quality` (smelt.kernel_quality).
- Triton: the kernel a Triton user writes for it (below; one row per program
  for the row ops, a tiled tl.dot matmul), compiled with triton.compile on an
  ASTSource for GPUTarget("cuda", arch, 32). Its cubin goes through the same
  counting (count_sass on cuobjdump's disassembly, occupancy from smelt's
  device-limits table); registers, stack frame and spills come from ptxas -v
  run again on Triton's PTX with the flags Triton uses (n_regs/n_spills in
  Triton's metadata need a GPU to load the binary).

Figures of a side with several kernels (a segmented smelt fusion, Triton's
two-kernel layer-norm backward) are summed (instructions, LDL/STL, CALLs,
spills, barriers) or taken at their worst (registers, stack frame, shared
memory: the maximum; occupancy: the minimum); the kernel count is reported
and every kernel's own figures are in the JSON.

Architectures: both sides are compiled for every --archs entry (default
sm_80 and sm_90), and each architecture has its side-by-side table.

Compile time, same run, median of --repeats: smelt's wall time of
fd.compile_for on meta tensors (segmentation, scheduling, lowering, NVRTC;
plus NVRTC's own share) against triton.compile's wall time (AST to cubin),
both cold: Triton's disk cache is bypassed and smelt's is turned off
(SMELT_KERNEL_CACHE_DIR=off). smelt keeps compiled kernels in a
process-wide C++ cache that Python cannot clear (smelt.fusion_cache().clear()
empties only the FusionDefinition cache), so every repeat runs in a fresh
worker process (one per repeat and shape, so no op meets its own kernel
twice), with a fresh FusionDefinition, after an unrelated warm-up compile on
each side so that one-off library loading counts for neither.

Writes DIR/triton_quality.json and DIR/triton_quality.md (and a PNG plot when
matplotlib is installed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_quality_ops import (  # noqa: E402, F401  (EPS, LN_BWD_ROWS_PER_PROGRAM: bench_triton_gpu's)
    EPS, LN_BWD_ROWS_PER_PROGRAM, MATMUL_SHAPES, OPS, ROW_SHAPES, SIZES_ENV, SMELT_CACHE_ENV,
    Op, TritonJob, triton, triton_job, warm_up_kernel)


# --------------------------------------------------------------------------
# Measuring one side.
# --------------------------------------------------------------------------


@dataclass
class PtxasFigures:
    """What sass_quality needs from ptxas -v (the fields of smelt's report)."""
    registers: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    static_smem_bytes: int = 0
    barriers: int = 0


def parse_ptxas_log(log: str) -> PtxasFigures:
    """ptxas -v's report of the one entry function in `log`."""
    def capture(pattern: str) -> int:
        m = re.search(pattern, log)
        return int(m.group(1)) if m else 0
    if "registers" not in log:
        raise RuntimeError(f"ptxas -v printed no register count:\n{log}")
    return PtxasFigures(
        registers=capture(r"Used (\d+) registers"),
        stack_frame_bytes=capture(r"(\d+) bytes stack frame"),
        spill_store_bytes=capture(r"(\d+) bytes spill stores"),
        spill_load_bytes=capture(r"(\d+) bytes spill loads"),
        static_smem_bytes=capture(r"(\d+) bytes smem"),
        barriers=capture(r"used (\d+) barriers"))


_ASYNC_COPY = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?((?:LDGSTS|UTMALDG)[A-Z0-9_.]*)")


def async_copies(sass: str) -> Dict[str, int]:
    """Global-to-shared copies the LDG counts leave out: LDGSTS (cp.async) by
    width and UTMALDG (TMA) as 'tma'."""
    from smelt.kernel_quality import _access_width
    counts: Dict[str, int] = {}
    for m in _ASYNC_COPY.finditer(sass):
        key = "tma" if m.group(1).startswith("UTMALDG") else str(_access_width(m.group(1)))
        counts[key] = counts.get(key, 0) + 1
    return counts


_MMA = {"HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "QGMMA", "BMMA"}


def kernel_figures(quality, sass: str, extra: Optional[dict] = None) -> dict:
    """One kernel's figures from a smelt.kernel_quality.KernelQuality."""
    s = quality.sass
    d = {
        "name": quality.name,
        "threads_per_block": quality.threads_per_block,
        "registers": quality.registers,
        "stack_frame_bytes": quality.stack_frame_bytes,
        "spill_bytes": quality.spill_store_bytes + quality.spill_load_bytes,
        "shared_memory_bytes": quality.shared_memory_bytes,
        "sass_instructions": s.instructions,
        "mix": s.mix,
        "ldl": s.local_loads,
        "stl": s.local_stores,
        "calls": s.calls,
        "integer_division_calls": s.integer_division_calls,
        "inline_integer_divisions": s.inline_integer_divisions,
        "global_loads": {str(w): n for w, n in sorted(s.global_loads.items())},
        "global_stores": {str(w): n for w, n in sorted(s.global_stores.items())},
        "async_copies": async_copies(sass),
        "block_barriers": s.block_barriers,
        "tensor_core_instructions": {m: n for m, n in s.mnemonics.items() if m in _MMA},
        "mnemonics": s.mnemonics,
        "occupancy": {f"sm_{a}": {"occupancy": o.occupancy, "warps_per_sm": o.warps_per_sm,
                                  "blocks_per_sm": o.blocks_per_sm, "limited_by": o.limited_by}
                      for a, o in quality.occupancy.items()},
    }
    d.update(extra or {})
    return d


def _width_summary(kernels: List[dict], key: str) -> Tuple[int, int]:
    """(widest, most common) access width in bits over all kernels; 0 for none."""
    total: Dict[int, int] = {}
    for k in kernels:
        for w, n in k[key].items():
            if w != "tma":
                total[int(w)] = total.get(int(w), 0) + n
    if not total:
        return 0, 0
    return max(total), max(total, key=lambda w: (total[w], w))


def _merge(dicts) -> Dict[str, int]:
    total: Dict[str, int] = {}
    for d in dicts:
        for k, n in d.items():
            total[k] = total.get(k, 0) + n
    return total


def summarize(kernels: List[dict], arch: int) -> dict:
    """The figures of one side: sums, worst cases, width summaries."""
    occ_key = f"sm_{arch}"
    loads_widest, loads_common = _width_summary(kernels, "global_loads")
    stores_widest, stores_common = _width_summary(kernels, "global_stores")
    copies_widest, _ = _width_summary(kernels, "async_copies")
    return {
        "kernels": len(kernels),
        "sass_instructions": sum(k["sass_instructions"] for k in kernels),
        "registers": max(k["registers"] for k in kernels),
        "stack_frame_bytes": max(k["stack_frame_bytes"] for k in kernels),
        "spill_bytes": sum(k["spill_bytes"] for k in kernels),
        "ldl": sum(k["ldl"] for k in kernels),
        "stl": sum(k["stl"] for k in kernels),
        "calls": sum(k["calls"] for k in kernels),
        "integer_division_calls": sum(k["integer_division_calls"] for k in kernels),
        "inline_integer_divisions": sum(k["inline_integer_divisions"] for k in kernels),
        "block_barriers": sum(k["block_barriers"] for k in kernels),
        "shared_memory_bytes": max(k["shared_memory_bytes"] for k in kernels),
        "threads_per_block": [k["threads_per_block"] for k in kernels],
        "widest_global_load_bits": loads_widest,
        "common_global_load_bits": loads_common,
        "widest_global_store_bits": stores_widest,
        "common_global_store_bits": stores_common,
        "widest_async_copy_bits": copies_widest,
        "async_copies": sum(n for k in kernels for w, n in k["async_copies"].items()
                            if w != "tma"),
        "tma_loads": sum(k["async_copies"].get("tma", 0) for k in kernels),
        "tensor_core_instructions": _merge(k["tensor_core_instructions"] for k in kernels),
        "occupancy": min(k["occupancy"][occ_key]["occupancy"] for k in kernels),
    }


def measure_triton(job: TritonJob, arch: int, quality: bool = True) -> dict:
    """Compiles one Triton job for sm_<arch>; its figures (unless not
    `quality`: the compile wall only) and compile wall."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability
    from triton.compiler import ASTSource
    from smelt.kernel_quality import disassemble, sass_quality
    attrs = {(job.fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in job.divisible}
    src = ASTSource(job.fn, job.signature, job.constexprs, attrs)
    start = time.perf_counter()
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32),
                              options={"num_warps": job.num_warps, "num_stages": job.num_stages})
    compile_s = time.perf_counter() - start
    if not quality:
        return {"job": job.name, "compile_s": compile_s}
    # ptxas -v again on Triton's PTX, with Triton's flags, for the figures
    # Triton only learns when it loads the binary on a GPU.
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "kernel.ptx"
        ptx.write_text(compiled.asm["ptx"])
        result = subprocess.run([get_ptxas(arch).path, "-lineinfo", "-v",
                                 f"--gpu-name={sm_arch_from_capability(arch)}", str(ptx),
                                 "-o", str(Path(tmp) / "kernel.cubin")],
                                capture_output=True, text=True, check=True)
    ptxas = parse_ptxas_log(result.stderr + result.stdout)
    cubin = compiled.asm["cubin"]
    meta = compiled.metadata
    threads = meta.num_warps * 32
    # Triton declares its shared memory as one dynamic buffer (metadata.shared).
    dynamic = max(int(meta.shared) - ptxas.static_smem_bytes, 0)
    quality = sass_quality(cubin, meta.name, threads, dynamic, ptxas, archs=(arch,))
    return kernel_figures(quality, disassemble(cubin), {
        "job": job.name, "num_warps": job.num_warps, "num_stages": job.num_stages,
        "constexprs": job.constexprs, "compile_s": compile_s})


def measure_smelt(op: Op, shape: tuple, arch: int, quality: bool = True) -> dict:
    """Compiles the op's fusion for `shape` through meta tensors for sm_<arch>
    (a fresh FusionDefinition, the Python fusion cache cleared)."""
    from smelt import fusion_cache
    from smelt.kernel_quality import disassemble
    fusion_cache().clear()
    fd, inputs = op.smelt(shape)
    start = time.perf_counter()
    fd.compile_for(inputs, arch=arch)
    compile_s = time.perf_counter() - start
    kernels = []
    nvrtc_ms = 0.0
    for kernel in fd.last_kernels():
        compiled = kernel.compiled
        nvrtc_ms += compiled.compile_ms
        if not quality:
            kernels.append({"name": compiled.kernel_name, "nvrtc_ms": compiled.compile_ms})
            continue
        kernels.append(kernel_figures(kernel.quality, disassemble(compiled.cubin), {
            "grid": list(kernel.grid), "block": list(kernel.block),
            "nvrtc_ms": compiled.compile_ms}))
    return {"kernels": kernels, "compile_s": compile_s, "nvrtc_s": nvrtc_ms / 1000.0,
            "report": fd.last_run_report()}


def _warm_up(archs: Sequence[int]) -> None:
    """One unrelated compile on each side: library loading counts for neither."""
    import torch
    from smelt import DataType, FusionDefinition
    fd = FusionDefinition()
    with fd:
        fd.add_output(fd.ops.add(fd.define_tensor([-1], True, DataType.Float), 1.0))
    fd.compile_for([torch.empty(1000, device="meta")])
    if triton is not None:
        for arch in archs:
            job = triton_job("warm_up", warm_up_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 256}, num_warps=4)
            measure_triton(job, arch, quality=False)


def run_jobs(jobs: Sequence[Tuple[str, tuple]], archs: Sequence[int],
             quality: bool = True) -> List[dict]:
    """Measures (op, shape) jobs in this process: each side once per arch,
    cold (no disk cache on either side). A failure of either side is
    recorded with its reason."""
    if triton is not None:
        triton.knobs.compilation.always_compile = True  # no disk-cache hits
    saved_cache_dir = os.environ.get(SMELT_CACHE_ENV)
    os.environ[SMELT_CACHE_ENV] = "off"
    try:
        return _measure_jobs(jobs, archs, quality)
    finally:
        if saved_cache_dir is None:
            del os.environ[SMELT_CACHE_ENV]
        else:
            os.environ[SMELT_CACHE_ENV] = saved_cache_dir


def _measure_jobs(jobs: Sequence[Tuple[str, tuple]], archs: Sequence[int],
                  quality: bool) -> List[dict]:
    _warm_up(archs)
    results = []
    for name, shape in jobs:
        op = OPS[name]
        entry: Dict[str, Any] = {"op": name, "shape": list(shape), "smelt": {}}
        for arch in archs:
            try:
                entry["smelt"][f"sm_{arch}"] = measure_smelt(op, shape, arch, quality)
            except Exception as e:  # a refusal or failure is a result
                entry["smelt"][f"sm_{arch}"] = {
                    "error": f"{type(e).__name__}: {str(e).strip()[:2000]}"}
        entry["triton"] = {}
        for arch in archs:
            try:
                if triton is None:
                    raise RuntimeError("triton is not installed")
                kernels = [measure_triton(job, arch, quality) for job in op.triton(shape)]
                entry["triton"][f"sm_{arch}"] = {
                    "kernels": kernels, "compile_s": sum(k["compile_s"] for k in kernels)}
            except Exception as e:
                entry["triton"][f"sm_{arch}"] = {
                    "error": f"{type(e).__name__}: {str(e).strip()[:2000]}"}
        results.append(entry)
    return results


# --------------------------------------------------------------------------
# Repeats in worker processes, the comparison, the report.
# --------------------------------------------------------------------------


def _worker_env() -> Dict[str, str]:
    """This process's import path for the worker (smelt may come from a build
    tree that is only on sys.path here)."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and Path(p).is_dir()]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_worker(jobs: Sequence[Tuple[str, tuple]], archs: Sequence[int], quality: bool) -> List[dict]:
    """run_jobs in a fresh Python process (an empty smelt kernel cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        spec = json.dumps({"jobs": [[n, list(s)] for n, s in jobs], "archs": list(archs),
                           "quality": quality})
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", spec,
                               "--out", str(result)], env=_worker_env(), capture_output=True,
                              text=True)
        if proc.returncode != 0 or not result.is_file():
            raise RuntimeError(f"worker failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                               f"{proc.stderr[-3000:]}")
        return json.loads(result.read_text())


def _ratio(s: Optional[float], t: Optional[float]) -> Optional[float]:
    if s is None or t is None:
        return None
    if t == 0:
        return 1.0 if s == 0 else None  # x / 0: no ratio (the table shows both figures)
    return s / t


RATIO_KEYS = ["kernels", "sass_instructions", "registers", "stack_frame_bytes", "spill_bytes",
              "ldl", "stl", "integer_division_calls", "inline_integer_divisions",
              "widest_global_load_bits", "common_global_load_bits", "widest_global_store_bits",
              "block_barriers", "shared_memory_bytes", "occupancy"]


def combine(op: str, shape: tuple, repeats: List[dict], archs: Sequence[int]) -> dict:
    """One table entry from the repeats of (op, shape): per side and arch the
    first repeat's figures and the median compile times of all; per arch the
    ratios smelt/Triton (None where a side failed)."""
    first = repeats[0]
    entry: Dict[str, Any] = {"op": op, "shape": list(shape),
                             "description": OPS[op].description, "smelt": {}, "triton": {},
                             "ratios": {}}
    for arch in archs:
        key = f"sm_{arch}"
        for side_name in ("smelt", "triton"):
            side = dict(first[side_name][key])
            if "error" not in side:
                ok = [r[side_name][key] for r in repeats if "error" not in r[side_name][key]]
                for timing in ("compile_s", "nvrtc_s"):
                    if timing in side:
                        samples = [r[timing] for r in ok]
                        side[timing] = {"median": statistics.median(samples), "samples": samples}
                side["summary"] = summarize(side["kernels"], arch)
            entry[side_name][key] = side
        s_side, t_side = entry["smelt"][key], entry["triton"][key]
        if "summary" in s_side and "summary" in t_side:
            s, t = s_side["summary"], t_side["summary"]
            ratios = {k: _ratio(s[k], t[k]) for k in RATIO_KEYS}
            ratios["ldl_stl"] = _ratio(s["ldl"] + s["stl"], t["ldl"] + t["stl"])
            ratios["compile_time"] = _ratio(s_side["compile_s"]["median"],
                                            t_side["compile_s"]["median"])
            entry["ratios"][key] = ratios
        else:
            entry["ratios"][key] = None
    return entry


def _fmt_ratio(r: Optional[float]) -> str:
    return "–" if r is None else f"×{r:.2f}"


def _pair(s, t, r: Optional[float], fmt=str) -> str:
    return f"{fmt(s)} / {fmt(t)} ({_fmt_ratio(r)})"


def _shape_text(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def _side_by_side(report: dict, arch: int, notes: List[str]) -> List[str]:
    """The table of one architecture: smelt / Triton (ratio) per figure."""
    key = f"sm_{arch}"
    lines = [
        f"## sm_{arch}", "",
        "| op | shape | kernels | SASS instr | registers | stack B | LDL+STL | idiv CALLs "
        "| inline idiv | widest LDG | common LDG | occupancy | compile ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in report["results"]:
        s, t = e["smelt"][key], e["triton"][key]
        head = f"| {e['op']} | {_shape_text(e['shape'])} "
        if "summary" not in s or "summary" not in t:
            why = "; ".join(f"{side}: {d['error'].splitlines()[0][:200]}"
                            for side, d in (("smelt", s), ("Triton", t)) if "error" in d)
            lines.append(head + f"| failed: {why} |" + " |" * 10)
            continue
        a, b, r = s["summary"], t["summary"], e["ratios"][key]
        pct = lambda x: f"{x:.0%}"
        ms = lambda x: f"{x * 1000:.0f}"
        lines.append(head + "| " + " | ".join([
            _pair(a["kernels"], b["kernels"], r["kernels"]),
            _pair(a["sass_instructions"], b["sass_instructions"], r["sass_instructions"]),
            _pair(a["registers"], b["registers"], r["registers"]),
            _pair(a["stack_frame_bytes"], b["stack_frame_bytes"], r["stack_frame_bytes"]),
            _pair(a["ldl"] + a["stl"], b["ldl"] + b["stl"], r["ldl_stl"]),
            _pair(a["integer_division_calls"], b["integer_division_calls"],
                  r["integer_division_calls"]),
            _pair(a["inline_integer_divisions"], b["inline_integer_divisions"],
                  r["inline_integer_divisions"]),
            _pair(a["widest_global_load_bits"], b["widest_global_load_bits"],
                  r["widest_global_load_bits"]),
            _pair(a["common_global_load_bits"], b["common_global_load_bits"],
                  r["common_global_load_bits"]),
            _pair(a["occupancy"], b["occupancy"], r["occupancy"], pct),
            _pair(s["compile_s"]["median"], t["compile_s"]["median"], r["compile_time"], ms),
        ]) + " |")
        where = f"{e['op']} {_shape_text(e['shape'])} (sm_{arch})"
        if a["async_copies"] or b["async_copies"] or a["tma_loads"] or b["tma_loads"] or \
                a["tensor_core_instructions"] or b["tensor_core_instructions"]:
            mma = lambda d: ", ".join(f"{n} {m}" for m, n in sorted(d.items())) or "none"
            notes.append(
                f"- {where}: operands reach shared memory by async "
                f"copy (LDGSTS, widest {a['widest_async_copy_bits']} / "
                f"{b['widest_async_copy_bits']} bits): {a['async_copies']} / {b['async_copies']} "
                f"instructions, TMA loads {a['tma_loads']} / {b['tma_loads']}; tensor-core "
                f"instructions {mma(a['tensor_core_instructions'])} / "
                f"{mma(b['tensor_core_instructions'])} (smelt / Triton); global stores widest "
                f"{a['widest_global_store_bits']} / {b['widest_global_store_bits']} bits")
        if a["kernels"] > 1:
            notes.append(f"- {where}: smelt segments into "
                         f"{a['kernels']} kernels: "
                         + "; ".join(f"{k['name']} ({k['sass_instructions']} instr, "
                                     f"{k['registers']} regs, grid {k['grid']}, block {k['block']})"
                                     for k in s["kernels"]))
    return lines + [""]


def markdown(report: dict) -> str:
    meta = report["meta"]
    archs = meta["archs"]
    lines = [
        "# smelt vs Triton: machine code, side by side",
        "",
        f"smelt {meta['smelt_commit']} ({meta.get('sizes', 'symbolic')} sizes: fd.compile_for on "
        f"meta tensors for each architecture), Triton {meta['triton_version']} "
        f"(triton.compile), both for {', '.join('sm_' + str(a) for a in archs)}; "
        f"torch {meta['torch_version']}; compile times: median of {meta['repeats']} fresh "
        f"processes, no disk cache on either side, on {meta['host']}. No GPU: static figures "
        "only.",
        "",
        "Cells: smelt / Triton (ratio smelt/Triton), both for the table's architecture. Several "
        "kernels on a side: instructions, LDL/STL, CALLs summed; registers, stack frame the "
        "maximum; occupancy the minimum. idiv CALL: CALLs of the integer-division routine; "
        "inline idiv: integer divisions emulated in line. LDG bits: widest / most common global "
        "load width (async copies, LDGSTS, are not LDG: see the JSON).",
        "",
    ]
    notes: List[str] = []
    for arch in archs:
        lines += _side_by_side(report, arch, notes)
    lines += ["## Compile time (ms, median)", "",
              "smelt: wall of fd.compile_for on meta tensors (segmentation, scheduling, "
              "lowering, NVRTC; NVRTC's share apart). Triton: wall of triton.compile (AST to "
              "cubin, disk cache bypassed).", "",
              "| op | shape | " + " | ".join(
                  f"smelt sm_{a} | smelt NVRTC | Triton sm_{a} | ratio" for a in archs) + " |",
              "|---|---|" + "---|---|---|---|" * len(archs)]
    for e in report["results"]:
        cells = [e["op"], _shape_text(e["shape"])]
        for arch in archs:
            key = f"sm_{arch}"
            s, t = e["smelt"][key], e["triton"][key]
            timing = lambda d, k: f"{d[k]['median'] * 1000:.0f}" if k in d else "failed"
            ratios = e["ratios"][key]
            cells += [timing(s, "compile_s"), timing(s, "nvrtc_s"), timing(t, "compile_s"),
                      _fmt_ratio(ratios["compile_time"]) if ratios else "–"]
        lines.append("| " + " | ".join(cells) + " |")
    errors = [f"- {e['op']} {_shape_text(e['shape'])} ({side} {key}): {d['error']}"
              for e in report["results"]
              for side in ("smelt", "triton")
              for key, d in e[side].items()
              if "error" in d]
    lines += ["", "## Notes", ""] + notes
    lines += [f"- {e['op']}: {e['description']}" for e in _unique_ops(report["results"])]
    if errors:
        lines += ["", "## Refused or failed", ""] + errors
    if report["meta"].get("plot"):
        lines += ["", f"![smelt/Triton ratios]({report['meta']['plot']})"]
    return "\n".join(lines) + "\n"


def _unique_ops(results: List[dict]) -> List[dict]:
    seen, out = set(), []
    for e in results:
        if e["op"] not in seen:
            seen.add(e["op"])
            out.append(e)
    return out


def plot(report: dict, path: Path) -> bool:
    """A bar chart of the ratios at the newest architecture, when matplotlib
    is installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    keys = ["sass_instructions", "registers", "occupancy", "compile_time"]
    arch_key = f"sm_{max(report['meta']['archs'])}"
    rows = [e for e in report["results"] if e["ratios"].get(arch_key)]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.9), 4))
    width = 0.8 / len(keys)
    for i, k in enumerate(keys):
        ax.bar([j + i * width for j in range(len(rows))],
               [e["ratios"][arch_key][k] or 0 for e in rows], width, label=k)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
    ax.set_xticklabels([f"{e['op']}\n{_shape_text(e['shape'])}" for e in rows], fontsize=7)
    ax.set_ylabel(f"smelt / Triton ({arch_key})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def _git_commit(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def parse_shape(text: str) -> tuple:
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r}: expected AxB or MxNxK")
    if len(shape) not in (2, 3) or min(shape) <= 0:
        raise argparse.ArgumentTypeError(f"shape {text!r}: expected AxB (row ops) or MxNxK "
                                         "(matmul), positive")
    return shape


def plan(ops: Sequence[str], shapes: Optional[Sequence[tuple]]) -> List[Tuple[str, tuple]]:
    """(op, shape) pairs: each op takes the given shapes of its rank, else its
    defaults (row ops [8192, 4096] and [8192, 8192], the matmul 4096^3)."""
    pairs = []
    for name in ops:
        op = OPS[name]
        mine = [s for s in (shapes or []) if len(s) == op.rank]
        if not mine:
            mine = ROW_SHAPES if op.rank == 2 else MATMUL_SHAPES
        pairs += [(name, tuple(s)) for s in mine]
    return pairs


def run(ops: Sequence[str], shapes: Optional[Sequence[tuple]], archs: Sequence[int],
        out: Path, repeats: int = 3, in_process: bool = False, log=print) -> dict:
    """The whole benchmark; writes out/triton_quality.json and .md."""
    import torch
    import smelt
    if triton is None:
        raise RuntimeError("triton is not installed (pip install triton)")
    archs = sorted(set(archs))
    if in_process and repeats != 1:
        raise ValueError("--in-process measures one repeat (smelt's kernel cache would serve "
                         "the others)")
    pairs = plan(ops, shapes)
    by_shape: Dict[tuple, List[Tuple[str, tuple]]] = {}
    for name, shape in pairs:
        by_shape.setdefault(shape, []).append((name, shape))
    measured: Dict[Tuple[str, tuple], List[dict]] = {p: [] for p in pairs}
    for rep in range(repeats):
        for shape, jobs in by_shape.items():
            start = time.perf_counter()
            if in_process:
                results = run_jobs(jobs, archs, quality=rep == 0)
            else:
                results = run_worker(jobs, archs, quality=rep == 0)
            log(f"repeat {rep + 1}/{repeats}, {_shape_text(shape)}: {len(jobs)} ops in "
                f"{time.perf_counter() - start:.1f} s")
            for r in results:
                measured[(r["op"], tuple(r["shape"]))].append(r)
    report = {
        "meta": {
            "smelt_commit": _git_commit(Path(smelt.__file__).resolve().parent),
            "triton_version": triton.__version__, "torch_version": torch.__version__,
            "archs": archs, "repeats": repeats,
            "sizes": os.environ.get(SIZES_ENV, "static"),
            "host": f"{os.cpu_count()} CPUs", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
        "results": [combine(name, shape, measured[(name, shape)], archs)
                    for name, shape in pairs],
    }
    out.mkdir(parents=True, exist_ok=True)
    if plot(report, out / "triton_quality.png"):
        report["meta"]["plot"] = "triton_quality.png"
    (out / "triton_quality.json").write_text(json.dumps(report, indent=2))
    (out / "triton_quality.md").write_text(markdown(report))
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(OPS),
                   help=f"comma-separated, from {', '.join(OPS)} (default all)")
    p.add_argument("--shapes", default=None,
                   help="comma-separated AxB (row ops) and MxNxK (matmul); an op without a "
                        "shape of its rank keeps its defaults")
    p.add_argument("--archs", default="80,90",
                   help="compute capabilities both sides compile for")
    p.add_argument("--repeats", type=int, default=3, help="compile-time repeats (median)")
    p.add_argument("--in-process", action="store_true",
                   help="no worker processes (one repeat only)")
    p.add_argument("--out", required=True, help="output directory (or the worker's result file)")
    p.add_argument("--sizes", choices=("static", "symbolic"), default="static",
                   help="smelt's extents: the concrete sizes (torch.compile's default) or "
                        "symbolic (one kernel for all sizes)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    os.environ[SIZES_ENV] = args.sizes
    if args.worker is not None:
        spec = json.loads(args.worker)
        results = run_jobs([(n, tuple(s)) for n, s in spec["jobs"]], spec["archs"],
                           spec["quality"])
        Path(args.out).write_text(json.dumps(results))
        return 0
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        p.error(f"unknown op(s) {', '.join(unknown)}; choose from {', '.join(OPS)}")
    shapes = [parse_shape(s) for s in args.shapes.split(",")] if args.shapes else None
    try:
        archs = [int(a.strip().removeprefix("sm_")) for a in args.archs.split(",") if a.strip()]
    except ValueError:
        p.error(f"--archs {args.archs!r}: expected e.g. 80,90")
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    report = run(ops, shapes, archs, Path(args.out), args.repeats, args.in_process,
                 log=lambda m: print(m, file=sys.stderr))
    print((Path(args.out) / "triton_quality.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
