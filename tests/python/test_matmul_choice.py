"""Who computes each matmul (csrc/scheduler/matmul/matmul_choice.h): on a
GPU a library (cuBLAS through ATen) by default, its epilogue fused into
smelt's kernels around it; smelt's generated kernel in the CPU simulator.
Decided here without a GPU (compile_for on meta inputs for a CUDA device)
and checked in values by forcing the library on CPU tensors (ATen's CPU
matmul), for fusion definitions and the zoo's models."""
from collections import Counter

import pytest
import torch

import smelt.backend
from smelt import DataType, FusionDefinition, SmeltError
from models.zoo import CASES, output_tensors


TORCH_DTYPES = {DataType.Float: torch.float32, DataType.Half: torch.float16,
                DataType.BFloat16: torch.bfloat16}


def linear_relu(dtype: DataType) -> FusionDefinition:
    """relu(x @ w_t + bias), w_t an nn.Linear's weight passed as the view
    w.t() (K contiguous) and declared in that layout, as the torch.compile
    backend passes it."""
    w_t = torch.empty(5, 3, dtype=TORCH_DTYPES[dtype]).t()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
        w_t = fd.from_pytorch(w_t, in_memory_order=False)
        bias = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        y = fd.ops.add(fd.ops.matmul(x, w_t), fd.ops.broadcast(bias, [True, False]))
        fd.add_output(fd.ops.relu(y))
    return fd


def segments(report: str):
    return [line.split()[1] for line in report.splitlines() if line[:1].isdigit()]


def test_a_gpu_gives_the_matmul_to_the_library_and_fuses_the_epilogue():
    fd = linear_relu(DataType.Half)
    meta = [torch.empty(512, 256, dtype=torch.float16, device="meta"),
            torch.empty(384, 256, dtype=torch.float16, device="meta").t(),
            torch.empty(384, dtype=torch.float16, device="meta")]
    out, = fd.compile_for(meta, device="cuda")
    assert out.shape == (512, 384) and out.dtype == torch.float16
    report = fd.last_run_report()
    assert segments(report) == ["library_matmul", "pointwise"], report
    assert "LibraryMatmul{aten::mm half -> half; library: on sm_" in report, report
    # The simulator's target keeps smelt's kernel, the epilogue inside it.
    fd.compile_for(meta, device="cpu")
    assert segments(fd.last_run_report()) == ["matmul"], fd.last_run_report()
    # Forced: the generated kernel on a GPU too.
    fd.compile_for(meta, device="cuda", matmul="generated")
    assert segments(fd.last_run_report()) == ["matmul"], fd.last_run_report()


@pytest.mark.parametrize("dtype,torch_dtype", [(DataType.Float, torch.float32),
                                               (DataType.Half, torch.float16),
                                               (DataType.BFloat16, torch.bfloat16)])
def test_forced_library_matches_torch_on_cpu(dtype, torch_dtype):
    fd = linear_relu(dtype)
    g = torch.Generator().manual_seed(3)
    x, w, bias = (torch.randn(*shape, generator=g).to(torch_dtype) for shape in ([37, 24], [20, 24], [20]))
    out, = fd.execute([x, w.t(), bias], matmul="library")
    expected = torch.relu(torch.nn.functional.linear(x.float(), w.float(), bias.float()))
    tolerance = 1e-5 if torch_dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out.float(), expected, rtol=tolerance, atol=tolerance)
    assert out.dtype == torch_dtype and out.stride() == (20, 1)
    if dtype == DataType.Float:
        # The bias add and the ReLU after the matmul's sum: one call of
        # cuBLASLt's RELU_BIAS epilogue, no kernel of smelt's.
        assert segments(fd.last_run_report()) == ["library_matmul"], fd.last_run_report()
        assert "aten::_addmm_activation(relu) float -> float" in fd.last_run_report()
        assert len(fd.last_kernels()) == 0
    else:
        # matmul() rounds the 16-bit result before the bias add: the add and
        # the ReLU run in smelt's kernel.
        assert segments(fd.last_run_report()) == ["library_matmul", "pointwise"], fd.last_run_report()
        assert len(fd.last_kernels()) == 1


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("activation,call", [
    (torch.nn.ReLU(), "_addmm_activation(relu)"),
    (torch.nn.GELU(approximate="tanh"), "_addmm_activation(gelu_tanh)"),
    (torch.nn.GELU(), "addmm"),  # cuBLASLt's GELU epilogue is the tanh form only
], ids=["relu", "gelu_tanh", "gelu_erf"])
def test_compiled_linear_activation_is_one_library_call(dtype, activation, call):
    """nn.Linear and its activation through torch.compile with the library
    forced on CPU tensors: ReLU and tanh-GELU join addmm in one library call
    (at::_addmm_activation), the erf GELU runs in smelt's kernel after it;
    values and strides as eager's."""
    g = torch.Generator().manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(24, 20), activation).to(dtype)
    x = torch.randn(37, 24, generator=g).to(dtype)
    compiled = torch.compile(model, backend="smelt", options={"matmul": "library"})
    with torch.no_grad():
        expected, actual = model(x), compiled(x)
    assert actual.dtype == expected.dtype and actual.stride() == expected.stride() == (20, 1)
    tolerance = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance)
    runs = [p.last_run for r in smelt.backend.reports() for p in r.partitions]
    name = {torch.float32: "float", torch.bfloat16: "bfloat16"}[dtype]
    assert sum(f"LibraryMatmul{{aten::{call} {name} -> {name};" in run for run in runs) == 1, runs
    kernels = sum(r.smelt_kernels() for r in smelt.backend.reports())
    assert kernels == (1 if call == "addmm" else 0), runs


def test_matmul_policy_is_checked(monkeypatch):
    fd = linear_relu(DataType.Float)
    args = [torch.randn(4, 3), torch.randn(5, 3).t(), torch.randn(5)]
    with pytest.raises(SmeltError, match="matmul must be one of auto, library, generated, got 'cublas'"):
        fd.execute(args, matmul="cublas")
    monkeypatch.setenv("SMELT_MATMUL", "library")
    fd.execute(args)
    assert segments(fd.last_run_report())[0] == "library_matmul"
    with pytest.raises(Exception, match="matmul must be one of"):
        torch.compile(torch.nn.Linear(3, 5), backend="smelt", options={"matmul": "x"})(args[0])


def _matmul_nodes(reports) -> int:
    return sum(r.fused_ops()[op] for r in reports for op in ("mm.default", "bmm.default"))


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_matmuls_run_in_the_library_on_a_gpu(name):
    """Every matmul of every zoo model goes to the library on a GPU (the
    compile for a CUDA device, decided here without one), and forced on CPU
    tensors the library's segments give eager's values and strides."""
    build, make_inputs = CASES[name]
    model = build()
    compiled = torch.compile(model, backend="smelt", options={"matmul": "library"})
    with torch.no_grad():
        args, kwargs = make_inputs(1)
        expected = output_tensors(model(*args, **kwargs))
        actual = output_tensors(compiled(*args, **kwargs))
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4)
        assert a.shape == e.shape and (a.dim() == 0 or a.stride() == e.stride())
    reports = smelt.backend.reports()
    assert all(r.fallback_runs == 0 for r in reports), "\n".join(map(str, reports))
    matmuls = _matmul_nodes(reports)
    ran = sum(p.last_run.count(" library_matmul ") for r in reports for p in r.partitions)
    assert ran == matmuls, "\n".join(p.last_run for r in reports for p in r.partitions)
    on_gpu = sum((r.matmul_segments("cuda") for r in reports), start=Counter())
    assert sum(on_gpu.values()) == matmuls and all(k.startswith("library_matmul ") for k in on_gpu), on_gpu


def test_autotune_keeps_the_faster_policy_on_disk(tmp_path, monkeypatch):
    """The autotuner measures each candidate once per fusion, inputs and GPU
    (here a stand-in measure: no GPU on this machine), keeps the faster in
    the disk cache, and a later choice reads it without measuring."""
    from smelt.backend import autotune
    monkeypatch.setenv("SMELT_KERNEL_CACHE_DIR", str(tmp_path))
    fd = linear_relu(DataType.Half)
    meta = [torch.empty(64, 32, dtype=torch.float16, device="meta"),
            torch.empty(48, 32, dtype=torch.float16, device="meta").t(),
            torch.empty(48, dtype=torch.float16, device="meta")]
    measured = []

    def measure(fd_, inputs, device, policy):
        measured.append((tuple(inputs[0].shape), policy))
        return {"library": 5.0, "generated": 3.0}[policy]

    assert autotune.choose(fd, meta, "cuda", measure) == "generated"
    assert measured == [((64, 32), "library"), ((64, 32), "generated")]
    assert autotune.choose(fd, meta, "cuda", measure) == "generated"
    assert len(measured) == 2  # read from the disk cache
    other = [torch.empty(16, 32, dtype=torch.float16, device="meta")] + meta[1:]
    assert autotune.choose(fd, other, "cuda", measure) == "generated" and len(measured) == 4
    # Only fusions with a matmul, on a GPU, are tuned.
    with FusionDefinition() as pointwise:
        x = pointwise.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        pointwise.add_output(pointwise.ops.relu(x))
    jobs = [(fd, meta, "cuda"), (fd, other, "cpu"), (pointwise, [torch.empty(4, device="meta")], "cuda")]
    assert autotune.tuned_policies(jobs, measure) == {id(fd): "generated"}
    assert len(measured) == 4


@pytest.mark.usefixtures("fresh_dynamo")
def test_max_autotune_mode_on_cpu_tensors_keeps_the_rules():
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(6, 12)
    with torch.no_grad():
        out = torch.compile(model, backend="smelt", mode="max-autotune-no-cudagraphs")(x)
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
    report = smelt.backend.last_report()
    assert report.matmul_policies and set(report.matmul_policies.values()) == {"auto"}, report
