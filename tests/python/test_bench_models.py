"""benchmarks/bench_models.py's per-model figures (issue 23): kernels per
forward (smelt's, and the ATen ops left in torch that launch one), the
machine code of smelt's kernels, and Inductor's figures beside them. On a
small MLP block, not the zoo (test_model_zoo runs the zoo)."""
import importlib.util
import json
from pathlib import Path

import pytest
import torch

import smelt.backend

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_models", REPO / "benchmarks" / "bench_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        y = self.norm(x).view(4, 8, 32)   # a view: launches nothing in torch
        return torch.sort(y, 1).values * 2  # sort stays in torch and launches a kernel


def test_launches_and_machine_code_per_forward():
    model = Block().eval()
    x = torch.randn(32, 32)
    with torch.no_grad():
        compiled = torch.compile(model, backend="smelt")
        compiled(x)
        torch.testing.assert_close(compiled(x), model(x))
    reports = smelt.backend.reports()
    kernels = [k for r in reports for p in r.partitions for k in p.kernels]
    assert sum(r.smelt_kernels() for r in reports) == len(kernels) > 0
    torch_ops = sum((r.torch_ops for r in reports), start=type(reports[0].torch_ops)())
    assert torch_ops["sort.default"] == 1, torch_ops
    # Only sort launches a kernel in torch (views and getitems do not).
    assert sum(r.torch_launches() for r in reports) == 1, torch_ops
    code = _bench().machine_code(reports)
    assert code["sass_non_matmul"] == code["sass_non_matmul_per_launch"] == \
        sum(k.quality.sass.instructions for k in kernels)
    assert code["distinct_kernels"] == len(kernels)
    assert code["sass_matmul"] == 0
    assert code["stack_frame_bytes"] == 0
    assert code["max_registers"] == max(k.quality.registers for k in kernels)


class TwoNorms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norms = torch.nn.ModuleList([torch.nn.LayerNorm(32), torch.nn.LayerNorm(32)])

    def forward(self, x):
        for norm in self.norms:  # sort (in torch) between: one fusion each
            x = torch.sort(norm(x), 1).values
        return x


def test_a_kernel_launched_twice_counts_its_machine_code_once():
    # As the peer tool counts Inductor's kernels: the two layer norms are
    # one compiled kernel, launched twice.
    model = TwoNorms().eval()
    x = torch.randn(8, 32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="smelt")(x), model(x))
    reports = smelt.backend.reports()
    kernels = [k for r in reports for p in r.partitions for k in p.kernels]
    assert len(kernels) == 2 and kernels[0].cuda == kernels[1].cuda
    code = _bench().machine_code(reports)
    assert code["distinct_kernels"] == 1
    assert code["sass_non_matmul"] == kernels[0].quality.sass.instructions
    assert code["sass_non_matmul_per_launch"] == 2 * code["sass_non_matmul"]


def test_markdown_puts_inductor_beside_smelt(tmp_path):
    bench = _bench()
    (tmp_path / "mlp.json").write_text(json.dumps({"launches_per_forward": 5,
                                                   "total_sass_instructions": 232}))
    row = {"model": "mlp", "nodes_fused": 10, "nodes_total": 12, "library_nodes": 2, "fusions": 2,
           "fallback_partitions": 0, "max_abs_error": 1e-7, "first_call_s": 1.0,
           "second_call_s": 0.01, "smelt_kernels_per_forward": 4,
           "torch_launches_per_forward": 3, "sass_non_matmul": 900, "stack_frame_bytes": 0}
    table = bench.markdown([row], bench.load_peers(tmp_path))
    assert "| 4 + 3 (5) | 900 (232) | 0 B |" in table, table
    assert "| mlp | 10 / 12 | 100.0% | 2 |" in table, table  # 2 library nodes are not candidates


def test_gpu_timings_table(monkeypatch):
    """The GPU rows (eager, Inductor and smelt, then both compiled backends
    replaying CUDA graphs: µs per forward, CUDA events)
    print as their own table, a failed model's error beside it; rows without
    the simulator's figures (--gpu-only) print no first table."""
    bench = _bench()
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "TestGPU")
    modes = ("eager", "inductor", "smelt", "smelt-generated", "inductor-graphs", "smelt-graphs")
    rows = [{"model": "gpt2",
             "gpu_us": dict(zip(modes, (1694.8, 997.4, 7436.7, 9000.0, 120.0, 100.0))),
             "gpu_kernel_us": dict(zip(modes, (900.0, 400.4, 650.6, 820.0, 401.0, 640.0))),
             "gpu_kernels": dict(zip(modes, (60.0, 24.0, 22.0, 20.0, 24.0, 22.0))),
             "gpu_host_us": dict(zip(modes, (1500.2, 900.0, 6000.4, 6100.0, 30.0, 25.0))),
             "gpu_max_abs_error": 8.9e-08},
            {"model": "vit", "gpu_us": {"eager": 900.0, "smelt": 450.0}, "gpu_max_abs_error": 0.0,
             "gpu_mode_errors": {"inductor": "RuntimeError: no"}},
            {"model": "bert", "gpu_error": "SmeltError: boom"}]
    table = bench.markdown(rows, {})
    assert "nodes fused" not in table, table
    assert "GPU (TestGPU), median µs per forward" in table, table
    # smelt-nchw runs only for models with convolutions: a dash for gpt2.
    assert ("| gpt2 | 1694.8 | 997.4 | 7436.7 | 9000.0 | — | 120.0 | 100.0 | ×0.13 | ×1.20 | "
            "900 (60) / 400 (24) / 651 (22) / 820 (20) / — / 401 (24) / 640 (22) | "
            "1500 / 900 / 6000 / 6100 / — / 30 / 25 | 8.9e-08 |") in table, table
    assert "| vit | 900.0 | — | 450.0 | — | — | — | — | — | — |" in table, table
    assert "vit inductor failed: RuntimeError: no" in table, table
    assert "GPU run of bert failed: SmeltError: boom" in table, table


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_gpu_only_needs_a_gpu(capsys):
    assert _bench().main(["--gpu-only", "--models", "gpt2"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_gpu_check_script_parses():
    """scripts/gpu_check.sh runs only where a GPU is; CI at least parses it."""
    import subprocess
    subprocess.run(["bash", "-n", str(REPO / "scripts" / "gpu_check.sh")], check=True)


def test_compile_cost_cold_then_warm_process():
    """benchmarks/bench_compile_cost.py on GPT-2: smelt's second process
    reads every kernel from the disk cache the first one filled; aot_eager
    is timed beside it, and the tables show both."""
    spec = importlib.util.spec_from_file_location("bench_compile_cost",
                                                  REPO / "benchmarks" / "bench_compile_cost.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = bench.measure("gpt2", inductor=False)
    cold, warm = row["smelt"]["cold"], row["smelt"]["warm"]
    assert cold["fallbacks"] == warm["fallbacks"] == 0
    assert cold["compile_ahead_errors"] == warm["compile_ahead_errors"] == 0
    assert cold["nvrtc_compiles"] > 0 and cold["disk_cache_hits"] == 0
    assert warm["nvrtc_compiles"] == 0 and warm["disk_cache_hits"] == cold["nvrtc_compiles"]
    assert cold["segment_candidates"] > 0 and warm["segment_candidates"] == 0  # segmentation from disk
    assert warm["compile_ahead_ms"] < cold["compile_ahead_ms"]
    assert row["aot_eager"]["cold"]["first_call_s"] > 0 and row["inductor_cold_s"] is None
    table = bench.markdown([row])
    assert "| gpt2 | cold |" in table and "| — | " in table, table


def test_gpu_table_has_first_calls_and_each_kernels_fill(monkeypatch):
    """The GPU rows' first-call seconds per mode, and smelt's kernels on the
    GPU: waves, floor and measured µs, a kernel under one wave flagged."""
    bench = _bench()
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    fill = {"name": "smelt_kernel_1", "scheduler": "matmul", "grid": [4, 2, 1],
            "block": [128, 1, 1], "registers": 64, "smem_bytes": 32768, "blocks_per_sm": 4,
            "limited_by": "registers", "waves": 8 / 528, "bytes_moved": 3_000_000,
            "flops": 2_000_000_000, "floor_us": 2.02, "underfilled": True, "measured_us": 51.25}
    rows = [{"model": "mlp_4096_bf16", "gpu_us": {"eager": 1058.0, "smelt": 2430.0},
             "gpu_first_call_s": {"eager": 0.25, "smelt": 12.34}, "gpu_max_abs_error": 0.01,
             "gpu_kernel_fill": [fill, {**fill, "name": "smelt_kernel_2", "underfilled": False}]}]
    table = bench.markdown(rows, {})
    assert "| 0.01 | 0.2 / — / 12.3 / — / — / — / — | 1 of 2 |" in table, table
    assert "mlp_4096_bf16: smelt's kernels on NVIDIA H200 (132 SMs" in table, table
    assert ("| smelt_kernel_1 | matmul | 4×2×1 | 128×1×1 | 64 | 32768 | 4 (registers) | 0.0152 | "
            "3 | 2 | 2.02 | 51.2 | **FLAG** |") in table, table
    assert "| smelt_kernel_2 | matmul |" in table and table.count("**FLAG**") == 1, table
