"""Properties of the build and environment that hold before the Python
frontend exists (issue 2)."""
import shutil
import subprocess
from pathlib import Path

import pytest


def _elf_files(build_dir: Path):
    """Executables and shared libraries the project built (not CMake's probes)."""
    for path in sorted(build_dir.rglob("*")):
        if "CMakeFiles" in path.parts or "_deps" in path.parts or "external_project" in path.parts:
            continue
        if not path.is_file() or path.is_symlink():
            continue
        if not (path.suffix == ".so" or path.stat().st_mode & 0o111):
            continue
        with open(path, "rb") as f:
            if f.read(4) == b"\x7fELF":
                yield path


def test_no_binary_links_libcuda(build_dir):
    """The driver is dlopen'ed at run time, so every binary starts without a GPU."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.fail("readelf (binutils) not found")
    binaries = list(_elf_files(build_dir))
    assert binaries, f"no executables or shared libraries found in {build_dir}"
    offenders = []
    for binary in binaries:
        dynamic = subprocess.run([readelf, "-d", str(binary)], capture_output=True,
                                 text=True, check=True).stdout
        needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
        if any("[libcuda.so" in line for line in needed):
            offenders.append(str(binary.relative_to(build_dir)))
    assert not offenders, f"these link libcuda directly (must dlopen it): {offenders}"


def test_torch_is_the_pinned_cuda13_build():
    import torch  # installed by scripts/setup.sh; missing is a failure, not a skip
    assert torch.__version__.startswith("2.11."), torch.__version__
    assert (torch.version.cuda or "").startswith("13"), f"torch CUDA version {torch.version.cuda}"
    assert Path(torch.utils.cmake_prefix_path, "Torch", "TorchConfig.cmake").is_file()
