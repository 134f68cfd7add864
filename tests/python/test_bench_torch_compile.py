"""benchmarks/bench_torch_compile.py in its smoke mode: eager, Inductor and
the smelt backend run the model and agree (speed is measured on a GPU only)."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_torch_compile.py"


def test_smoke_run_writes_benchmark_json(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_torch_compile", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "torch_compile.json"
    assert bench.main(["--out", str(out), "--models", "pointwise_gelu_bias", "softmax",
                       "--smoke"]) == 0
    data = json.loads(out.read_text())
    names = [r["name"] for r in data["benchmarks"]]
    assert names == [f"{m}/{mode}" for m in ("pointwise_gelu_bias", "softmax")
                     for mode in ("eager", "inductor", "smelt")]
    assert all(r["matches_eager"] and r["real_time"] > 0 for r in data["benchmarks"])
    assert data["context"]["smoke"] is True
