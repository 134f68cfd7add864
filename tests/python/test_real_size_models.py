"""Issue 41's real-size bf16 models (tests/python/models/real_size.py) are
timed only on a GPU; here their definitions are kept from rotting: each
builds at full size on the meta device with the parameter count its
configuration gives by hand, and runs an eager forward at its tiny size."""
import importlib.util
import json
from pathlib import Path

import pytest
import torch

from models.real_size import CASES, TINY_CASES
from models.zoo import output_tensors

REPO = Path(__file__).resolve().parents[2]

# Parameters of each model at full size, counted from its configuration.
PARAMETERS = {
    # wte 32000 x 1024 (tied to the LM head) + wpe 512 x 1024 + ln_f 2 x 1024
    # + 4 layers of (2 layer norms 4096, qkv 1024 x 3072 + 3072, proj
    # 1024 x 1024 + 1024, fc 1024 x 4096 + 4096, fc proj 4096 x 1024 + 1024).
    "gpt2_1024x4_bf16": 32000 * 1024 + 512 * 1024 + 2 * 1024 + 4 * (
        4096 + 1024 * 3072 + 3072 + 1024 * 1024 + 1024 + 1024 * 4096 + 4096 + 4096 * 1024 + 1024),
    # embeddings and an untied LM head 2 x 32000 x 2048, final norm 2048, and
    # 2 layers of (q, o 2048 x 2048; k, v 2048 x 8 heads x 128; gate, up,
    # down 2048 x 5632; two RMS norms 2048).
    "llama_2048x2_bf16": 2 * 32000 * 2048 + 2048 + 2 * (
        2 * 2048 * 2048 + 2 * 2048 * 1024 + 3 * 2048 * 5632 + 2 * 2048),
    "resnet50_bf16": 25_557_032,  # torchvision's and timm's resnet50
    # LayerNorm(4096), Linear 4096 -> 11008, Linear 11008 -> 4096.
    "mlp_4096_bf16": 2 * 4096 + 4096 * 11008 + 11008 + 11008 * 4096 + 4096,
}
# Each full-size input: (shape, dtype).
INPUTS = {"gpt2_1024x4_bf16": ((8, 512), torch.int64),
          "llama_2048x2_bf16": ((4, 512), torch.int64),
          "resnet50_bf16": ((32, 3, 224, 224), torch.bfloat16),
          "mlp_4096_bf16": ((8, 512, 4096), torch.bfloat16)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_full_size_on_meta(name):
    build, make_inputs = CASES[name]
    with torch.device("meta"):
        model = build()
    params = list(model.parameters())
    assert sum(p.numel() for p in params) == PARAMETERS[name]
    assert {p.dtype for p in params} == {torch.bfloat16}
    assert not model.training
    (x,), kwargs = make_inputs(1)
    assert (tuple(x.shape), x.dtype, kwargs) == (*INPUTS[name], {})


@pytest.mark.parametrize("name", sorted(TINY_CASES))
def test_tiny_size_runs_eager_in_bf16(name):
    build, make_inputs = TINY_CASES[name]
    model = build()
    args, kwargs = make_inputs(1)
    with torch.no_grad():
        out = output_tensors(model(*args, **kwargs))
    assert [t.dtype for t in out] == [torch.bfloat16]
    assert all(torch.isfinite(t.float()).all() for t in out)
    expected = {"gpt2_1024x4_bf16": (2, 8, 64), "llama_2048x2_bf16": (2, 8, 64),
                "resnet50_bf16": (1, 1000), "mlp_4096_bf16": (2, 8, 32)}[name]
    assert tuple(out[0].shape) == expected


def test_tiny_mlp_block_is_its_formula():
    build, make_inputs = TINY_CASES["mlp_4096_bf16"]
    block = build()
    (x,), _ = make_inputs(2)
    with torch.no_grad():
        y = x + block.fc2(torch.nn.functional.gelu(block.fc1(block.norm(x))))
        torch.testing.assert_close(block(x), y, rtol=0, atol=0)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_models", REPO / "benchmarks" / "bench_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU run's skip")
def test_bench_models_plans_them_without_a_gpu(tmp_path, capsys, monkeypatch):
    """Without a GPU, bench_models compiles each real-size model for CUDA
    without running it (here at its tiny size, so the test is quick) and
    reports its kernels' fills, its matmuls' implementation and what torch keeps."""
    bench = _bench()
    assert set(CASES) <= set(bench.MODELS) and bench.GPU_ONLY == set(CASES)
    names = ["mlp_4096_bf16", "resnet50_bf16"]
    monkeypatch.setattr(bench, "MODELS", {**bench.MODELS, **{n: TINY_CASES[n] for n in names}})
    out = tmp_path / "rows.json"
    assert bench.main(["--models", ",".join(names), "--json", str(out),
                       "--md", str(tmp_path / "rows.md")]) == 0
    rows = {r["model"]: r for r in json.loads(out.read_text())}
    assert list(rows) == names
    mlp, resnet = rows["mlp_4096_bf16"], rows["resnet50_bf16"]
    # LayerNorm, GELU, residual: smelt kernels around the two Linear layers, which cuBLAS runs.
    assert mlp["planned_matmuls"] == {"aten::addmm bfloat16 -> bfloat16": 2}, mlp["planned_matmuls"]
    assert mlp["planned_kernels"] == len(mlp["kernel_fill"]) >= 2
    assert all(f["waves"] > 0 and f["grid"] for f in mlp["kernel_fill"])
    assert resnet["left_to_torch"].get("convolution.default", 0) > 0
    assert "Planned for a GPU" in capsys.readouterr().out
    assert "resnet50_bf16: smelt's kernels on" in (tmp_path / "rows.md").read_text()


def test_gpu_tolerance_is_relative_for_bf16_models():
    within = _bench().within_tolerance
    bf16 = {"model": "mlp_4096_bf16", "gpu_max_abs_expected": 10.0}
    assert within({**bf16, "gpu_max_abs_error": 0.2})  # 2% of the largest value
    assert not within({**bf16, "gpu_max_abs_error": 0.21})
    assert within({"model": "gpt2", "gpu_max_abs_error": 1e-3})
    assert not within({"model": "gpt2", "gpu_max_abs_error": 2e-3})
