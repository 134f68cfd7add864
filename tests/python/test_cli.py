"""The `smelt` command line: demo over the gallery, plan over a user's file,
and its exit codes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smelt import cli


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "smelt", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


def test_demo_plans_checks_and_draws_the_gallery(tmp_path):
    out = tmp_path / "demo"
    result = run_cli("demo", "--out", str(out), "--device", "cpu")
    assert result.returncode == 0, result.stderr
    summary = (out / "summary.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")
            for line in summary.splitlines()[2:]}
    assert set(rows) == {"B1", "B2", "B3", "D1", "softmax", "layer_norm"}
    # B1: Csub takes an operand tile's bytes (planned, lower bound, no reuse).
    assert rows["B1"][1:4] == ["8192", "8192", "12288"]
    # B2: one barrier on the batch loop's back edge; nvFuser's stack allocator
    # keeps all three tiles live across the batch loop.
    assert rows["B2"][1:6] == ["8192", "8192", "12288", "12288", "1"]
    # B3: the three phases overlap; nothing needs an extra barrier.
    assert rows["B3"][1:3] == ["8192", "8192"] and rows["B3"][5] == "0"
    # D1: promoting the 3-stage operand tiles inserts the barrier(s) the
    # conservative rule needs, and the epilogue tile fits in their bytes.
    assert int(rows["D1"][1]) == 24576 < int(rows["D1"][3]) and int(rows["D1"][5]) >= 1
    assert all(r[-1].startswith("ok (simulator") for r in rows.values()), summary
    for name in rows:
        assert (out / f"{name}.svg").read_text().startswith("<svg")
    index = (out / "index.html").read_text()
    assert 'src="B3.svg"' in index
    assert "[6/6] layer_norm" in result.stderr  # progress


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "transpose_plan.py"


def test_plan_reports_a_users_file_as_json(tmp_path):
    result = run_cli("plan", str(EXAMPLE), "--json", "--cuda", "--svg", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)
    assert report["name"] == "transpose"
    assert report["block"] == [32, 32, 1]
    assert [b["name"] for b in report["smem_plan"]["buffers"]] == ["tile"]
    assert report["smem_plan"]["total_bytes"] == 4096
    assert report["ptxas"]["static_smem_bytes"] == 4096
    assert "__syncthreads()" in report["cuda"]
    assert (tmp_path / "transpose.svg").exists()


def test_plan_text_report_and_options():
    result = run_cli("plan", str(EXAMPLE), "--hazards", "conservative", "--allocator", "stack",
                     "--arch", "sm_80")
    assert result.returncode == 0, result.stderr
    assert "=== transpose:" in result.stdout and "tile" in result.stdout
    assert "| transpose | 4096 |" in result.stdout


@pytest.mark.parametrize("source, code, message", [
    (None, cli.EXIT_USAGE, "no such file"),
    ("x = 1\n", cli.EXIT_USAGE, "defines no FusionDefinition"),
    ("raise ValueError('boom')\n", cli.EXIT_USAGE, "ValueError: boom"),
    ("from smelt import FusionDefinition\n"
     "with FusionDefinition() as fd:\n"
     "    t = fd.define_tensor([4])\n"
     "    fd.add_output(fd.ops.sum(t, [3]))\n", cli.EXIT_SMELT_ERROR, "out of range"),
])
def test_plan_errors_have_a_code_and_a_message(tmp_path, source, code, message):
    path = tmp_path / "user.py"
    if source is not None:
        path.write_text(source)
    result = run_cli("plan", str(path))
    assert result.returncode == code
    assert message in result.stderr


def test_bad_arguments_exit_2():
    assert run_cli("plan", str(EXAMPLE), "--arch", "sm_70").returncode == cli.EXIT_USAGE
    assert run_cli("frobnicate").returncode == cli.EXIT_USAGE


QUALITY_FILE = """
from smelt import FusionDefinition, DataType
softmax = FusionDefinition()
with softmax:
    x = softmax.define_tensor([-1, -1], [True, True], DataType.Half)
    xf = softmax.ops.cast(x, DataType.Float)
    e = softmax.ops.exp(softmax.ops.sub(xf, softmax.ops.max(xf, [1], True)))
    softmax.add_output(softmax.ops.cast(softmax.ops.div(e, softmax.ops.sum(e, [1], True)),
                                        DataType.Half))
"""


def test_quality_compiles_for_given_sizes_without_running(tmp_path):
    source = tmp_path / "softmax.py"
    source.write_text(QUALITY_FILE)
    result = run_cli("quality", str(source), "--sizes", "8192x4096", "--json")
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)
    assert report["fusion"] == "softmax" and report["threads_per_block"] > 0
    assert report["sass"]["instructions"] > 0 and set(report["occupancy"]) == {"sm_80", "sm_90"}
    text = run_cli("quality", str(source), "--sizes", "64x256")
    assert text.returncode == 0 and "SASS instructions" in text.stdout, text.stderr
    missing = run_cli("quality", str(source))
    assert missing.returncode == 3 and "give its sizes with --sizes" in missing.stderr
