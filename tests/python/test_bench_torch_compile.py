"""benchmarks/bench_torch_compile.py in its smoke mode: eager, Inductor and
the smelt backend run the model and agree (speed is measured on a GPU only)."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_torch_compile.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_torch_compile", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_smoke_run_writes_benchmark_json(tmp_path):
    bench = _bench()
    out = tmp_path / "torch_compile.json"
    assert bench.main(["--out", str(out), "--models", "pointwise_gelu_bias", "softmax",
                       "--smoke"]) == 0
    data = json.loads(out.read_text())
    names = [r["name"] for r in data["benchmarks"]]
    assert names == [f"{m}/{mode}" for m in ("pointwise_gelu_bias", "softmax")
                     for mode in ("eager", "inductor", "smelt")]
    assert all(r["matches_eager"] and r["real_time"] > 0 for r in data["benchmarks"])
    assert data["context"]["smoke"] is True


def test_host_time_and_hotspots_of_a_call():
    """The GPU table's host figures, on a plain Python call (no device to
    drain): a median in µs, and the functions by own time, heaviest first."""
    bench = _bench()

    def busy():
        return sorted(range(20000), key=lambda v: -v)

    assert bench.host_us(busy, iters=5, synchronize=lambda: None) > 0
    rows = bench.host_hotspots(busy, iters=3, synchronize=lambda: None)
    assert rows == sorted(rows, key=lambda row: -row[1])
    assert any("sorted" in name for name, _ in rows), rows
