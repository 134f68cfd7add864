#!/usr/bin/env python3
"""Runs the torch-level differential fuzzer (tests/python/torch_program_fuzz.py)
over a range of seeds: each random program runs under
torch.compile(backend="smelt") and in eager, and must agree on values, sizes
and strides, with no run-time fallback of a fused partition.

    scripts/torch_fuzz.py --start 0 --count 500 [--dynamic-share 0.15]
                          [--stop-on-failure] [--out DIR] [--jobs N] [--seconds S]

Prints a summary (counts by class, programs/s, failures grouped by root-cause
signature) and writes each failing program's reproducer and error into DIR
(default build/torch_fuzz): seed_N.py (paste-and-run source), seed_N.txt (the
error, the mismatch or the partition report), summary.json. Exit status 1
when a program failed. --jobs N splits the seed range into N processes (one
per core; their reproducers in DIR/job_K) and sums their summaries;
--seconds S stops each process after S seconds, at the end of a program. Like the tests, it imports smelt from
$SMELT_BUILD_DIR/python (default build/python) unless SMELT_TEST_INSTALLED=1.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "python"))
if os.environ.get("SMELT_TEST_INSTALLED") != "1":
    _build = Path(os.environ.get("SMELT_BUILD_DIR", "build"))
    sys.path.insert(0, str((_build if _build.is_absolute() else REPO_ROOT / _build) / "python"))

import torch_program_fuzz as fuzz  # noqa: E402


def _run_one(seed, args, counts, dynamic_counts, groups, skeletons, ran) -> int:
    """Runs one seed, records its outcome; returns the new count of programs run."""
    try:
        program, outcome = fuzz.run_seed(seed, args.dynamic_share, args.profile)
    except Exception as e:  # noqa: BLE001 - the harness itself failed: record it, go on
        program = fuzz.generate(seed, args.profile)
        outcome = fuzz.Outcome(seed, False, "harness error")
        outcome.signature = f"harness error: {fuzz.error_signature(e)}"
        outcome.detail = traceback.format_exc()
    ran += 1
    counts[outcome.kind] += 1
    if outcome.dynamic:
        dynamic_counts[outcome.kind] += 1
    if outcome.ok:
        return ran
    stem = f"seed_{seed}{'_dynamic' if outcome.dynamic else ''}"
    (args.out / f"{stem}.py").write_text(program.source(outcome.dynamic))
    (args.out / f"{stem}.txt").write_text(
        f"{outcome.kind}: {outcome.signature}\n\n{outcome.detail}\n")
    if args.minimize == "all" or (args.minimize and outcome.signature not in groups):
        small = fuzz.minimize(program, outcome)
        (args.out / f"{stem}.min.py").write_text(small.source(outcome.dynamic))
        skeletons.setdefault(outcome.signature, {}).setdefault(fuzz.skeleton(small), seed)
    groups.setdefault(outcome.signature, []).append(seed)
    if not args.quiet:
        print(f"seed {seed}{' (dynamic)' if outcome.dynamic else ''}: "
              f"{outcome.signature}", flush=True)
    if args.stop_on_failure:
        print(program.source(outcome.dynamic))
        print(outcome.detail)
    return ran


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--dynamic-share", type=float, default=0.15,
                        help="share of seeds compiled with dynamic=True (default 0.15)")
    parser.add_argument("--seeds", type=lambda t: [int(x) for x in t.split(",")],
                        help="comma-separated seeds to run instead of a range")
    parser.add_argument("--stop-on-failure", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "torch_fuzz")
    parser.add_argument("--profile", default="default", choices=sorted(fuzz.PROFILES),
                        help="generator profile (default: the one the CI seeds use)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no line per failure")
    parser.add_argument("--minimize", nargs="?", const="first", choices=["first", "all"],
                        help="also write a minimized reproducer (seed_N.min.py): for the first "
                             "failure of each signature, or for every failure (all: failures "
                             "are then grouped by signature and minimized program skeleton)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes, each running a contiguous part of the seed range")
    parser.add_argument("--seconds", type=float, help="stop after this long (each process)")
    args = parser.parse_args(argv)
    if args.jobs > 1:
        if args.seeds:
            parser.error("--jobs takes a --start/--count range, not --seeds")
        return _run_jobs(args, argv if argv is not None else sys.argv[1:])

    warnings.filterwarnings("ignore")
    import torch
    torch.set_num_threads(args.threads)
    import smelt.backend  # noqa: F401 - registers the backend

    args.out.mkdir(parents=True, exist_ok=True)
    counts: collections.Counter = collections.Counter()
    dynamic_counts: collections.Counter = collections.Counter()
    groups: dict = collections.OrderedDict()   # signature -> seeds
    skeletons: dict = {}   # signature -> {minimized program skeleton: first seed}
    start = time.perf_counter()
    ran = 0
    seeds = args.seeds or range(args.start, args.start + args.count)
    # Ctrl-C (SIGINT) ends the run early with the summary of what ran; every
    # 100 programs the counts so far are written to progress.json.
    try:
        for seed in seeds:
            ran = _run_one(seed, args, counts, dynamic_counts, groups, skeletons, ran)
            if ran % 100 == 0:
                (args.out / "progress.json").write_text(json.dumps(
                    {"ran": ran, "last_seed": seed, "seconds": time.perf_counter() - start,
                     "counts": dict(counts)}))
            if args.stop_on_failure and groups:
                break
            if args.seconds is not None and time.perf_counter() - start > args.seconds:
                break
    except KeyboardInterrupt:
        print(f"\ninterrupted after {ran} programs", flush=True)
    elapsed = time.perf_counter() - start

    what = f"seeds {args.seeds}" if args.seeds else f"seeds {args.start}..{args.start + ran - 1}"
    print(f"\n{ran} programs ({what}) in {elapsed:.1f} s: "
          f"{ran / elapsed:.2f} programs/s")
    print("by class: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    if dynamic_counts:
        print("dynamic=True: " + ", ".join(f"{k} {v}" for k, v in dynamic_counts.most_common()))
    if groups:
        print(f"\nfailures by signature ({len(groups)}):")
        for sig, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(map(str, seeds[:8])) + (", ..." if len(seeds) > 8 else "")
            print(f"  {len(seeds):4d}  {sig}\n        seeds: {shown}")
            for skel, seed in list(skeletons.get(sig, {}).items())[:6]:
                print(f"        minimized (seed {seed}): {skel}")
        print(f"\nreproducers in {args.out}")
    summary = {"profile": args.profile, "start": args.start, "count": ran, "seconds": elapsed,
               "dynamic_share": args.dynamic_share, "counts": dict(counts),
               "dynamic_counts": dict(dynamic_counts), "groups": groups,
               "minimized": skeletons}
    (args.out / f"summary_{args.start}_{ran}.json").write_text(json.dumps(summary, indent=1))
    return 1 if groups else 0


def _run_jobs(args, argv) -> int:
    """Runs the range in args.jobs processes and prints their summed summary."""
    import subprocess
    args.out.mkdir(parents=True, exist_ok=True)
    passed = []  # the arguments every process shares
    skip = {"--start", "--count", "--out", "--jobs"}
    it = iter(argv)
    for a in it:
        name = a.split("=", 1)[0]
        if name in skip:
            if "=" not in a:
                next(it, None)
            continue
        passed.append(a)
    size = -(-args.count // args.jobs)
    procs = []
    for k in range(args.jobs):
        first = args.start + k * size
        count = min(size, args.start + args.count - first)
        if count <= 0:
            break
        out = args.out / f"job_{k}"
        procs.append((out, first, subprocess.Popen(
            [sys.executable, __file__, "--start", str(first), "--count", str(count),
             "--out", str(out), "--quiet", *passed],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    counts: collections.Counter = collections.Counter()
    groups: dict = {}
    ran = seconds = 0
    for out, first, proc in procs:
        proc.wait()
        summaries = sorted(out.glob(f"summary_{first}_*.json"))
        if not summaries:
            print(f"job for seeds from {first} wrote no summary (exit status {proc.returncode})")
            counts["job crashed"] += 1
            continue
        summary = json.loads(summaries[-1].read_text())
        ran += summary["count"]
        seconds = max(seconds, summary["seconds"])
        counts.update(summary["counts"])
        for sig, seeds in summary["groups"].items():
            groups.setdefault(sig, []).extend(seeds)
    print(f"{ran} programs (seeds from {args.start}, {len(procs)} processes) in {seconds:.1f} s: "
          f"{ran / max(seconds, 1e-9):.2f} programs/s")
    print("by class: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    for sig, seeds in groups.items():
        print(f"  {len(seeds):4d}  {sig}\n        seeds: {', '.join(map(str, seeds[:8]))}")
    (args.out / f"summary_jobs_{args.start}_{ran}.json").write_text(json.dumps(
        {"start": args.start, "count": ran, "seconds": seconds, "processes": len(procs),
         "counts": dict(counts), "groups": groups}, indent=1))
    return 1 if groups or counts["job crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
