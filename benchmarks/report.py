#!/usr/bin/env python3
"""Summarises a scripts/bench run: reads the Google Benchmark JSON files in a
folder and writes results.md (Markdown tables) and PNG plots next to them.

    python3 benchmarks/report.py build/bench/<timestamp>

Files it knows by name (others get a generic table):
  alloc_plan.json  planning time by buffer count  -> planning_time.png
  case_plans.json  bytes per case kernel           -> case_bytes.png
Plots need matplotlib; without it the tables are still written (and say so).
"""
import argparse
import json
import pathlib
import re
import sys

# Planners of bench_alloc_plan, in the order they are shown.
PLANNERS = {
    "BM_PlanAddresses": "default planner",
    "BM_StackAllocator": "stack (nvFuser)",
    "BM_FreeList": "free list (TVM-style)",
    "BM_LinearScan": "linear scan",
    "BM_ConflictsAndPlan": "conflicts + default planner",
}
# Columns of the case table: (JSON counter, heading); the baselines are also
# shown as their excess over the default planner's total.
CASE_COLUMNS = [
    ("tensors_B", "planned (tensors)"),
    ("total_B", "planned (total)"),
    ("lower_bound_B", "lower bound"),
    ("free_list_B", "free list (TVM)"),
    ("linear_scan_B", "linear scan"),
    ("stack_B", "stack (nvFuser)"),
    ("no_reuse_B", "no reuse"),
    ("barriers", "barriers inserted"),
]
UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def load(path):
    """The benchmark entries of one JSON file (iterations only, no aggregates);
    none when the program died before finishing it."""
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return {}, []
    runs = [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    return data.get("context", {}), runs


def time_us(run, key="real_time"):
    return run[key] * UNIT_TO_US[run.get("time_unit", "ns")]


def fmt_time(us):
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.2f} µs" if us >= 1 else f"{us * 1e3:.0f} ns"


def fmt_number(value):
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def table(headings, rows):
    lines = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def case_rows(runs):
    """{(case, hazards): counters} from PlanCase/<case>/<hazards> runs, in run order."""
    cases = {}
    for run in runs:
        match = re.fullmatch(r"PlanCase/([^/]+)/(\w+)", run["name"])
        if match and not run.get("error_occurred"):
            cases[(match.group(1), match.group(2))] = run
    return cases


def case_section(runs):
    cases = case_rows(runs)
    if not cases:
        return "No case plans in case_plans.json.\n"
    rows = []
    for (case, hazards), run in cases.items():
        total = run["total_B"]
        row = [case, hazards]
        for key, _ in CASE_COLUMNS:
            value = run.get(key, float("nan"))
            cell = fmt_number(value)
            if key in ("free_list_B", "linear_scan_B") and value != total:
                cell += f" ({value - total:+.0f})"
            elif key == "lower_bound_B" and value == total:
                cell += " (reached)"
            row.append(cell)
        row.append(fmt_time(time_us(run, "cpu_time")))
        rows.append(row)
    summary = []
    for key, name in [("total_B", "default planner"), ("free_list_B", "free list (TVM)"),
                      ("linear_scan_B", "linear scan"), ("stack_B", "stack (nvFuser, tensors)"),
                      ("no_reuse_B", "no reuse")]:
        values = [(run[key], run["lower_bound_B"]) for run in cases.values() if key in run]
        reached = sum(1 for v, lb in values if v <= lb)
        excess = sum(v - lb for v, lb in values)
        summary.append([name, f"{reached}/{len(values)}", fmt_number(excess),
                        fmt_number(sum(v for v, _ in values))])
    return ("Bytes of shared memory per case kernel (smem_cases.md); the baselines plan the "
            "default planner's buffers under the same hazard conflicts, each plan verified; "
            "(+N) is what a baseline loses against the default planner's total; the last column "
            "is the CPU time of lowering the kernel (all passes; for the hand-built B3 and D1 "
            "kernels the planning pass alone).\n\n"
            + table(["case", "hazards"] + [h for _, h in CASE_COLUMNS] + ["lowering (CPU)"], rows)
            + "\n\nSummary over the cases (stack counts tensors only, as nvFuser does):\n\n"
            + table(["planner", "lower bound reached", "bytes above the lower bound", "total bytes"],
                    summary) + "\n")


def planning_runs(runs):
    """{planner: [(buffers, run)]} from BM_<planner>/<n> runs."""
    by_planner = {}
    for run in runs:
        match = re.fullmatch(r"(BM_\w+)/(\d+)", run["name"])
        if match and match.group(1) in PLANNERS and not run.get("error_occurred"):
            by_planner.setdefault(match.group(1), []).append((int(match.group(2)), run))
    return by_planner


def planning_section(runs):
    by_planner = planning_runs(runs)
    if not by_planner:
        return "No planning runs in alloc_plan.json.\n"
    counts = sorted({n for series in by_planner.values() for n, _ in series})
    rows = []
    for key, name in PLANNERS.items():
        series = dict(by_planner.get(key, []))
        if not series:
            continue
        cells = []
        for n in counts:
            run = series.get(n)
            if run is None:
                cells.append("")
                continue
            ratio = run.get("total/lower_bound")
            cells.append(fmt_time(time_us(run, "cpu_time")) + (f" ({ratio:.3f}×)" if ratio else ""))
        rows.append([name] + cells)
    return ("CPU time of planning by buffer count on seeded random buffer sets "
            "(bench_alloc_plan; CPU rather than wall time, as the build machines are shared); "
            "in parentheses: total bytes / lower bound.\n\n"
            + table(["planner"] + [f"{n} buffers" for n in counts], rows) + "\n")


def generic_section(runs):
    rows = []
    for run in runs:
        if run.get("error_occurred"):
            rows.append([run["name"], "skipped: " + run.get("error_message", ""), "", ""])
            continue
        known = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
                 "iterations", "real_time", "cpu_time", "time_unit", "family_index",
                 "per_family_instance_index", "aggregate_name", "aggregate_unit", "label"}
        counters = ", ".join(f"{k}={fmt_number(v)}" for k, v in run.items()
                             if k not in known and isinstance(v, (int, float)))
        rows.append([run["name"], fmt_time(time_us(run)), fmt_time(time_us(run, "cpu_time")),
                     counters])
    return table(["benchmark", "wall time", "CPU time", "counters"], rows) + "\n"


def plot_planning(by_planner, path, plt):
    fig, (ax_time, ax_ratio) = plt.subplots(1, 2, figsize=(11, 4))
    for key, name in PLANNERS.items():
        series = sorted(by_planner.get(key, []), key=lambda item: item[0])
        if not series:
            continue
        counts = [n for n, _ in series]
        ax_time.plot(counts, [time_us(run, "cpu_time") for _, run in series], marker="o",
                     label=name)
        ratios = [run.get("total/lower_bound") for _, run in series]
        if all(ratios) and key != "BM_ConflictsAndPlan":
            ax_ratio.plot(counts, ratios, marker="o", label=name)
    ax_time.set(xscale="log", yscale="log", xlabel="buffers", ylabel="planning CPU time (µs)",
                title="Planning time by buffer count")
    ax_ratio.set(xscale="log", xlabel="buffers", ylabel="total / lower bound",
                 title="Plan size (1.0 = lower bound)")
    for ax in (ax_time, ax_ratio):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cases(cases, path, plt):
    series = [("lower_bound_B", "lower bound"), ("total_B", "planned"),
              ("free_list_B", "free list (TVM)"), ("linear_scan_B", "linear scan"),
              ("stack_B", "stack (nvFuser, tensors)"), ("no_reuse_B", "no reuse")]
    modes = sorted({hazards for _, hazards in cases}, reverse=True)  # precise first
    fig, axes = plt.subplots(len(modes), 1, figsize=(14, 4 * len(modes)), squeeze=False)
    width = 0.8 / len(series)
    for ax, mode in zip(axes[:, 0], modes):
        names = [case for case, hazards in cases if hazards == mode]
        for k, (key, label) in enumerate(series):
            values = [cases[(case, mode)].get(key, 0) for case in names]
            ax.bar([i + (k - len(series) / 2 + 0.5) * width for i in range(len(names))], values,
                   width, label=label)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
        ax.set(yscale="log", ylabel="bytes", title=f"Shared memory per case ({mode} hazards)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--title", default="smelt benchmarks")
    args = parser.parse_args()
    files = sorted(args.folder.glob("*.json"))
    if not files:
        sys.exit(f"report.py: no benchmark JSON in {args.folder}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None

    out = [f"# {args.title}\n"]
    context, _ = load(files[0])
    info = args.folder / "machine.txt"
    if info.exists():
        out.append("```\n" + info.read_text().strip() + "\n```\n")
    elif context:
        out.append(f"Host {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs "
                   f"at {context.get('mhz_per_cpu', '?')} MHz, {context.get('date', '')}.\n")
    if plt is None:
        out.append("_matplotlib is not installed: no plots._\n")

    for path in files:
        _, runs = load(path)
        out.append(f"## {path.stem} (`{path.name}`)\n")
        if not runs:
            out.append("No results (the program failed; see its .txt).\n")
        elif path.stem == "case_plans":
            out.append(case_section(runs))
            if plt is not None and case_rows(runs):
                plot_cases(case_rows(runs), args.folder / "case_bytes.png", plt)
                out.append("\n![bytes per case](case_bytes.png)\n")
        elif path.stem == "alloc_plan":
            out.append(planning_section(runs))
            if plt is not None and planning_runs(runs):
                plot_planning(planning_runs(runs), args.folder / "planning_time.png", plt)
                out.append("\n![planning time](planning_time.png)\n")
            out.append("\nAll runs:\n\n" + generic_section(runs))
        else:
            out.append(generic_section(runs))
    plans = sorted((args.folder / "plans").glob("*.svg"))
    if plans:
        out.append("## Plan pictures (`plans/`)\n")
        out.append("Each case's shared-memory plan (x: program position, y: address); text and "
                   "JSON reports lie next to them.\n")
        out.append(" · ".join(f"[{p.stem}](plans/{p.name})" for p in plans) + "\n")
    (args.folder / "results.md").write_text("\n".join(out))
    print(f"report.py: wrote {args.folder / 'results.md'}")


if __name__ == "__main__":
    main()
