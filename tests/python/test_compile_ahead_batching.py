"""Issue 43: the torch.compile backend hands a graph's fusions to C++ at once
(compile_for_all -> compileForAll), whose new kernels, from every fusion,
compile as one NVRTC program per compile thread: a CNN's one-kernel fusions
share programs. Counted (smelt._C.nvrtc_programs_compiled) in fresh
processes on a fresh kernel cache, not timed."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("timm")

THREADS = 2

# Compiles the zoo's resnet18, checks its first call against eager (values,
# sizes, strides) and prints what compiling cost.
SCRIPT = """
import json, sys, torch
import smelt, smelt.backend
sys.path.insert(0, sys.argv[1])
from models.zoo import CASES, output_tensors
build, make_inputs = CASES["resnet18"]
model = build()
args, kwargs = make_inputs(1)
with torch.no_grad():
    expected = output_tensors(model(*args, **kwargs))
    actual = output_tensors(torch.compile(model, backend="smelt")(*args, **kwargs))
assert len(actual) == len(expected)
for a, e in zip(actual, expected):
    torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4)
    assert a.shape == e.shape and a.stride() == e.stride(), (a.stride(), e.stride())
reports = smelt.backend.reports()
cost = {}
for report in reports:
    for key, value in report.compile_cost().items():
        cost[key] = cost.get(key, 0) + value
print(json.dumps({"programs": smelt._C.nvrtc_programs_compiled(),
                  "fusions": sum(len(r.partitions) for r in reports),
                  "errors": sum(len(r.compile_ahead_errors) for r in reports),
                  "fallbacks": sum(r.fallback_runs for r in reports),
                  "nvrtc_compiles": cost["nvrtc_compiles"],
                  "disk_cache_hits": cost["disk_cache_hits"]}))
"""


def compile_resnet18(cache_dir: Path) -> dict:
    env = dict(os.environ, SMELT_KERNEL_CACHE_DIR=str(cache_dir), SMELT_COMPILE_THREADS=str(THREADS))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_resnet18_compiles_its_kernels_in_one_program_per_compile_thread(tmp_path):
    cold = compile_resnet18(tmp_path)
    assert cold["errors"] == 0 and cold["fallbacks"] == 0, cold
    # Many one-kernel fusions (each compiled alone before: one program each).
    assert cold["fusions"] > THREADS and cold["nvrtc_compiles"] > THREADS, cold
    assert 1 <= cold["programs"] <= THREADS, cold
    warm = compile_resnet18(tmp_path)
    assert warm["programs"] == 0 and warm["nvrtc_compiles"] == 0, warm
    assert warm["disk_cache_hits"] == cold["nvrtc_compiles"], (cold, warm)
