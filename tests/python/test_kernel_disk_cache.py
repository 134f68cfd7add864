"""The persistent kernel cache across processes (csrc/runtime/disk_kernel_cache.h):
a second process compiling the same fusions runs no NVRTC, a changed fusion
compiles, a corrupt entry is ignored with a warning and replaced, and
processes writing the same entries at once leave whole ones. Plus the
torch.compile backend compiling a graph's fusions ahead of its first call."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import smelt.backend  # noqa: F401 - registers the backend
from smelt.backend import last_report

# Runs a softmax-like fusion (its scale from argv) on CPU and prints the
# fusion's compile cost and the output's sum.
SCRIPT = """
import json, sys, torch
from smelt import DataType, FusionDefinition
scale = float(sys.argv[1])
fd = FusionDefinition()
with fd:
    x = fd.define_tensor([-1, -1], [True, True], DataType.Float)
    xs = fd.ops.mul(x, scale)
    e = fd.ops.exp(fd.ops.sub(xs, fd.ops.max(xs, [1], True)))
    fd.add_output(fd.ops.div(e, fd.ops.sum(e, [1], True)))
    fd.add_output(fd.ops.sum(fd.ops.relu(x), [0]))
x = torch.randn(24, 40, generator=torch.Generator().manual_seed(0))
out = fd.execute([x])
torch.testing.assert_close(out[0], torch.softmax(x * scale, -1))
torch.testing.assert_close(out[1], torch.relu(x).sum(0))
print(json.dumps(fd.compile_cost()))
"""


def run_process(cache_dir, scale: float = 0.5):
    env = dict(os.environ, SMELT_KERNEL_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(scale)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def entries(cache_dir: Path):
    return sorted(cache_dir.glob("*.kernel"))


def test_a_second_process_runs_no_nvrtc(tmp_path):
    first, _ = run_process(tmp_path)
    assert first["nvrtc_compiles"] >= 2 and first["disk_cache_hits"] == 0
    assert len(entries(tmp_path)) == first["nvrtc_compiles"]
    second, _ = run_process(tmp_path)
    assert second["nvrtc_compiles"] == 0
    assert second["disk_cache_hits"] == first["nvrtc_compiles"]
    assert second["nvrtc_ms"] < first["nvrtc_ms"] / 5


def test_a_changed_fusion_compiles_and_adds_entries(tmp_path):
    first, _ = run_process(tmp_path, scale=0.5)
    changed, _ = run_process(tmp_path, scale=0.25)  # another constant in the kernel source
    assert changed["nvrtc_compiles"] >= 1
    assert len(entries(tmp_path)) == first["nvrtc_compiles"] + changed["nvrtc_compiles"]


def test_a_corrupt_entry_is_ignored_with_a_warning_and_replaced(tmp_path):
    first, _ = run_process(tmp_path)
    victim = entries(tmp_path)[0]
    victim.write_bytes(victim.read_bytes()[:100])
    again, stderr = run_process(tmp_path)
    assert f"ignoring the corrupt kernel cache entry {victim}" in stderr
    assert again["nvrtc_compiles"] == 1
    assert again["disk_cache_hits"] == first["nvrtc_compiles"] - 1
    third, stderr = run_process(tmp_path)
    assert third["nvrtc_compiles"] == 0 and "corrupt" not in stderr


def test_processes_writing_at_once_leave_whole_entries(tmp_path):
    env = dict(os.environ, SMELT_KERNEL_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, "0.5"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert "corrupt" not in err
    assert not list(tmp_path.glob("*.tmp.*"))  # no temporary file left behind
    after, stderr = run_process(tmp_path)
    assert after["nvrtc_compiles"] == 0 and "corrupt" not in stderr


# Compiles the same fusion for a shape (meta inputs, nothing runs), then runs
# it on CPU; prints the compile's cost, then the run's.
COMPILE_SCRIPT = """
import json, sys, torch
from smelt import DataType, FusionDefinition
fd = FusionDefinition()
with fd:
    x = fd.define_tensor([-1, -1], [True, True], DataType.Float)
    s = fd.ops.sum(x, [1], True)
    fd.add_output(fd.ops.sum(fd.ops.mul(x, s), [0]))
    fd.add_output(fd.ops.relu(fd.ops.sub(x, s)))
x = torch.randn(24, 40, generator=torch.Generator().manual_seed(0))
fd.compile_for([x.to("meta")], device="cpu")
ahead = fd.compile_cost()
out = fd.execute([x])
s = x.sum(1, keepdim=True)
torch.testing.assert_close(out[0], (x * s).sum(0))
torch.testing.assert_close(out[1], torch.relu(x - s))
print(json.dumps({"ahead": ahead, "run_lower_ms": fd.compile_cost()["lower_ms"] - ahead["lower_ms"],
                  "segments": fd.last_run_report().count("compiled")}))
"""


def test_a_second_process_neither_searches_nor_compiles(tmp_path):
    """The segmentation and each kernel's launch description are on disk
    too: a second process compiling for a shape neither searches segments
    nor runs NVRTC; compiling for CPU lowers each kernel for the simulator
    (on the compile pool), and the run then lowers nothing."""
    env = dict(os.environ, SMELT_KERNEL_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)

    def compile_in_a_process():
        done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "corrupt" not in done.stderr
        printed = json.loads(done.stdout.strip().splitlines()[-1])
        assert printed["run_lower_ms"] == 0
        return printed["ahead"]

    cold = compile_in_a_process()
    assert cold["segmentations_from_disk"] == 0 and cold["lower_ms"] > 0
    assert cold["nvrtc_compiles"] >= 2
    assert len(list(tmp_path.glob("*.segments"))) == 1
    assert len(list(tmp_path.glob("*.launch"))) == cold["nvrtc_compiles"]
    warm = compile_in_a_process()
    assert warm["segmentations_from_disk"] == 1
    assert warm["nvrtc_compiles"] == 0 and warm["pool_compiles"] == cold["pool_compiles"]
    assert warm["disk_cache_hits"] == cold["nvrtc_compiles"]


def test_cache_off_writes_nothing(tmp_path):
    cost, _ = run_process("off")
    assert cost["disk_cache_hits"] == 0 and cost["nvrtc_compiles"] >= 2
    assert not Path("off").exists()


# The backend compiles a graph's fusions when torch.compile hands it the
# graph, on threads; the first call then compiles nothing.

def _two_fusions(x, w):
    a = torch.exp(x * 0.375) + 1.0          # fusion 1
    s = torch.sort(a, dim=-1).values        # left to torch: splits the graph
    return torch.tanh(s * w).sum(-1)        # fusion 2


def test_backend_compiles_every_fusion_before_the_first_call(monkeypatch):
    monkeypatch.setenv("SMELT_COMPILE_THREADS", "2")
    torch._dynamo.reset()
    compiled = torch.compile(_two_fusions, backend="smelt")
    x, w = torch.randn(6, 10), torch.randn(10)
    out = compiled(x, w)
    torch.testing.assert_close(out, _two_fusions(x, w))
    report = last_report()
    assert len(report.partitions) == 2 and report.compile_ahead_errors == []
    assert report.compile_ahead_ms > 0 and report.partition_ms > 0
    for part in report.partitions:
        assert "compiled" not in part.last_run, part.last_run  # the call reused every kernel
    cost = report.compile_cost()
    assert cost["nvrtc_compiles"] + cost["disk_cache_hits"] >= 2
    assert cost["segment_ms"] > 0 and cost["lower_ms"] > 0


def _pooled_fusions(x, w):
    a = torch.softmax(x * 0.6875, -1) + 0.4375   # fusion 1: a reduction and a pointwise part
    s = torch.sort(a, dim=-1).values             # left to torch: splits the graph
    return (torch.sigmoid(s * w) - 0.1875).amax(-1)  # fusion 2


def test_backend_compiles_every_kernel_of_the_graph_on_the_compile_pool(monkeypatch, tmp_path):
    # Issue 43: each fusion's new kernels are lowered and compiled on the C++
    # CompilePool (compile_for waits once for them), none on the way.
    monkeypatch.setenv("SMELT_COMPILE_THREADS", "2")
    monkeypatch.setenv("SMELT_KERNEL_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    compiled = torch.compile(_pooled_fusions, backend="smelt")
    x, w = torch.randn(7, 24), torch.randn(24)
    torch.testing.assert_close(compiled(x, w), _pooled_fusions(x, w))
    report = last_report()
    assert len(report.partitions) == 2 and report.compile_ahead_errors == []
    for part in report.partitions:
        assert "compiled" not in part.last_run, part.last_run
    cost = report.compile_cost()
    assert cost["nvrtc_compiles"] >= 2 and cost["disk_cache_hits"] == 0
    assert cost["pool_compiles"] == cost["nvrtc_compiles"]  # every kernel, on the pool


_COS = torch.randn(8, 8, generator=torch.Generator().manual_seed(1))


def _rope_like(q, w):
    # A captured constant (_COS), a cat of slices and a segment computing
    # only iota masks: compiled ahead on meta stand-ins made outside the
    # graph's fake-tensor mode, the mask segment's outputs on meta too.
    q = (q @ w).view(2, 8, 2, 8).transpose(1, 2)
    rotated = torch.cat((-q[..., 4:], q[..., :4]), dim=-1)
    return (q * _COS + rotated * _COS).transpose(1, 2).reshape(16, 16).softmax(-1)


def test_backend_compiles_ahead_a_segmented_fusion_with_a_constant(monkeypatch):
    monkeypatch.setenv("SMELT_COMPILE_THREADS", "2")
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(0)
    q, w = torch.randn(16, 16, generator=g), torch.randn(16, 16, generator=g)
    torch.testing.assert_close(torch.compile(_rope_like, backend="smelt")(q, w), _rope_like(q, w))
    report = last_report()
    assert report.compile_ahead_errors == [] and report.fallback_runs == 0
    (part,) = report.partitions
    assert "compiled" not in part.last_run, part.last_run


def test_backend_without_compile_threads_compiles_at_the_first_call(monkeypatch):
    monkeypatch.setenv("SMELT_COMPILE_THREADS", "0")
    torch._dynamo.reset()
    compiled = torch.compile(_two_fusions, backend="smelt")
    x, w = torch.randn(5, 12), torch.randn(12)
    torch.testing.assert_close(compiled(x, w), _two_fusions(x, w))
    report = last_report()
    assert report.compile_ahead_ms == 0
    assert all("compiled" in part.last_run for part in report.partitions)


def test_compile_threads_must_be_a_number(monkeypatch):
    from smelt import SmeltError
    from smelt.backend.compile_ahead import compile_threads
    monkeypatch.setenv("SMELT_COMPILE_THREADS", "many")
    with pytest.raises(SmeltError, match="SMELT_COMPILE_THREADS"):
        compile_threads()
