"""The main job (scripts/demo.sh) runs build/examples/smelt_demo: it builds a
fusion, schedules it and prints it. It must work on a machine without a GPU."""
import os
import subprocess


def run_demo(demo_binary, **env):
    return subprocess.run([str(demo_binary)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_demo_runs_and_prints_the_fusion(demo_binary):
    result = run_demo(demo_binary)
    assert result.returncode == 0, (
        f"smelt_demo exited with {result.returncode}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert any("Fusion" in line for line in lines), (
        f"smelt_demo printed no line mentioning 'Fusion':\n{result.stdout}")
    # The fusion's math and schedule, not just a banner.
    assert len(lines) >= 3, f"smelt_demo printed too little:\n{result.stdout}"

