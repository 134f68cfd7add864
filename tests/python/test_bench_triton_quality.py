"""benchmarks/bench_triton_quality.py on one small op and shape: both sides
compile (smelt through meta tensors, Triton with triton.compile for sm_90, no
GPU needed), the JSON has both sides' machine-code figures and the ratios."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_triton_quality.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_triton_quality", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_plan_gives_each_op_the_shapes_of_its_rank(bench):
    assert bench.plan(["softmax", "matmul_bias_relu"], [(64, 256), (32, 32, 64)]) == [
        ("softmax", (64, 256)), ("matmul_bias_relu", (32, 32, 64))]
    assert bench.plan(["row_sum"], None) == [("row_sum", s) for s in bench.ROW_SHAPES]
    assert bench.plan(["matmul_bias_relu"], [(64, 256)]) == [
        ("matmul_bias_relu", s) for s in bench.MATMUL_SHAPES]


def test_softmax_small_shape_has_both_sides_and_ratios(bench, tmp_path):
    assert bench.main(["--ops", "softmax", "--shapes", "64x256", "--archs", "80,90",
                       "--repeats", "1", "--in-process", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "triton_quality.json").read_text())
    (entry,) = report["results"]
    assert entry["op"] == "softmax" and entry["shape"] == [64, 256]
    for arch in ("sm_80", "sm_90"):
        smelt, triton = entry["smelt"][arch], entry["triton"][arch]
        assert "error" not in smelt, smelt.get("error")
        assert "error" not in triton, triton.get("error")
        for side in (smelt["summary"], triton["summary"]):
            assert side["kernels"] >= 1
            assert side["sass_instructions"] > 0 and side["registers"] > 0
            assert side["widest_global_load_bits"] >= 16
            assert 0 < side["occupancy"] <= 1
        assert smelt["compile_s"]["median"] > 0 and triton["compile_s"]["median"] > 0
        ratios = entry["ratios"][arch]
        assert ratios["sass_instructions"] > 0 and ratios["registers"] > 0
        assert ratios["compile_time"] > 0 and ratios["occupancy"] > 0
    # smelt compiled a kernel of its own for each architecture.
    names = {arch: [k["name"] for k in entry["smelt"][arch]["kernels"]] for arch in ("sm_80", "sm_90")}
    assert names["sm_80"] != names["sm_90"]
    markdown = (tmp_path / "triton_quality.md").read_text()
    assert "## sm_80" in markdown and "## sm_90" in markdown
    assert markdown.count("| softmax | 64x256 |") == 3  # two architectures' tables and compile times
