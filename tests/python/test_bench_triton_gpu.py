"""bench_triton_gpu's references and Triton launches, checked without a GPU:
each eager reference against smelt's fusion for the op on the CPU simulator
(so a GPU run compares against the right function), and each Triton call's
arguments against its kernel's signature."""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
bench = pytest.importorskip("bench_triton_gpu")
quality = bench.quality

SMALL = {2: (24, 64), 3: (32, 48, 40)}


@pytest.mark.parametrize("name", sorted(quality.OPS))
def test_reference_matches_smelt_on_the_simulator(name):
    shape = SMALL[quality.OPS[name].rank]
    inputs = bench.make_inputs(name, shape, "cpu", torch.Generator().manual_seed(3))
    expected = bench.REFERENCES[name](*inputs)
    fd, _ = quality.OPS[name].smelt(shape)
    got = fd.execute(inputs)
    assert [t.shape for t in got] == [t.shape for t in expected]
    assert [t.dtype for t in got] == [t.dtype for t in expected]
    assert bench.max_error(got, expected) <= bench.tolerance(name, shape)


@pytest.mark.skipif(quality.triton is None, reason="triton is not installed")
@pytest.mark.parametrize("name", sorted(quality.OPS))
def test_triton_calls_fill_each_kernel_signature(name):
    shape = SMALL[quality.OPS[name].rank]
    inputs = bench.make_inputs(name, shape, "cpu", torch.Generator().manual_seed(3))
    outputs = bench.REFERENCES[name](*inputs)
    jobs = quality.OPS[name].triton(shape)
    calls = bench._triton_calls(name, inputs, outputs)
    assert len(calls) == len(jobs)
    for job, (grid, args) in zip(jobs, calls):
        runtime = [k for k, t in job.signature.items() if t != "constexpr"]
        assert len(args) == len(runtime), job.name
        for arg, (param, kind) in zip(args, ((k, job.signature[k]) for k in runtime)):
            assert isinstance(arg, torch.Tensor) == kind.startswith("*"), (job.name, param)
        assert all(g >= 1 for g in grid)


def test_max_error_flags_nan_and_shape_mismatch():
    a = torch.ones(4)
    assert bench.max_error([a], [a]) == 0.0
    assert bench.max_error([torch.full((4,), float("nan"))], [a]) != bench.max_error([a], [a])
    assert bench.max_error([torch.ones(3)], [a]) == float("inf")


def test_without_a_gpu_nothing_is_measured(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert bench.main(["--ops", "softmax"]) == 0
    assert "no CUDA device" in capsys.readouterr().out
