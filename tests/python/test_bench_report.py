"""benchmarks/report.py: the tables it writes from Google Benchmark JSON (the
case table with the baselines' losses and the summary, the planning-time
table) and its handling of a program that died before writing its JSON."""
import json
import subprocess
import sys


def _case(name, total, lower_bound, free_list, linear_scan):
    return {"name": name, "run_type": "iteration", "real_time": 100.0, "cpu_time": 50.0,
            "time_unit": "us", "tensors_B": total, "total_B": total,
            "lower_bound_B": lower_bound, "free_list_B": free_list,
            "linear_scan_B": linear_scan, "stack_B": 52, "no_reuse_B": 56, "barriers": 0}


def _plan(name, cpu_us, ratio):
    return {"name": name, "run_type": "iteration", "real_time": 3 * cpu_us * 1000,
            "cpu_time": cpu_us * 1000, "time_unit": "ns", "total/lower_bound": ratio}


def _write(folder, stem, runs):
    (folder / f"{stem}.json").write_text(json.dumps({"context": {}, "benchmarks": runs}))


def _report(repo_root, folder):
    subprocess.run([sys.executable, str(repo_root / "benchmarks" / "report.py"), str(folder)],
                   check=True, capture_output=True)
    return (folder / "results.md").read_text()


def test_case_table_shows_losses_and_summary(repo_root, tmp_path):
    _write(tmp_path, "case_plans", [
        _case("PlanCase/A1/precise", 24, 24, 24, 24),
        _case("PlanCase/A1/conservative", 52, 44, 56, 56),
        {"name": "PlanCase_mean", "run_type": "aggregate", "real_time": 1, "cpu_time": 1},
    ])
    text = _report(repo_root, tmp_path)
    assert "| A1 | precise | 24 | 24 | 24 (reached) | 24 | 24 | 52 | 56 | 0 | 50.00 µs |" in text
    assert "| A1 | conservative | 52 | 52 | 44 | 56 (+4) | 56 (+4) | 52 | 56 | 0 | 50.00 µs |" in text
    # planner | lower bound reached | bytes above it | total
    assert "| default planner | 1/2 | 8 | 76 |" in text
    assert "| free list (TVM) | 1/2 | 12 | 80 |" in text
    assert "aggregate" not in text and "PlanCase_mean" not in text


def test_planning_table_uses_cpu_time_by_buffer_count(repo_root, tmp_path):
    _write(tmp_path, "alloc_plan", [
        _plan("BM_PlanAddresses/8", 5.5, 1.0), _plan("BM_PlanAddresses/512", 4300, 1.06),
        _plan("BM_LinearScan/8", 3.0, 1.0377),
    ])
    text = _report(repo_root, tmp_path)
    assert "| planner | 8 buffers | 512 buffers |" in text
    assert "| default planner | 5.50 µs (1.000×) | 4.30 ms (1.060×) |" in text
    assert "| linear scan | 3.00 µs (1.038×) |  |" in text


def test_a_failed_program_is_reported_not_fatal(repo_root, tmp_path):
    (tmp_path / "simulator.json").write_text('{"context": {}, "benchmarks": [')  # cut short
    _write(tmp_path, "scheduler", [_plan("BM_InputSignature", 0.6, None)])
    text = _report(repo_root, tmp_path)
    assert "No results (the program failed; see its .txt)." in text
    assert "| BM_InputSignature | 1.80 µs | 600 ns |" in text
