"""How the package is put together: the build tree holds an importable smelt
(the sources of python/smelt plus the extension scripts/build.sh built), the
extension converts tensors through libtorch_python, and pip builds the same
CMake project (pyproject.toml)."""
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import smelt

INSTALLED = os.environ.get("SMELT_TEST_INSTALLED") == "1"


@pytest.mark.skipif(INSTALLED, reason="testing the installed package")
def test_tests_import_the_build_tree_package(build_dir, repo_root):
    package = Path(smelt.__file__).parent
    assert package == build_dir / "python" / "smelt"
    sources = {p.name for p in (repo_root / "python" / "smelt").iterdir() if p.name != "__pycache__"}
    linked = {p.name for p in package.iterdir() if p.is_symlink()}
    assert sources <= linked, f"not linked into the build tree: {sorted(sources - linked)}"
    assert Path(smelt._C.__file__).parent == package


def test_extension_links_torch_python():
    readelf = shutil.which("readelf")
    assert readelf, "readelf (binutils) not found"
    dynamic = subprocess.run([readelf, "-d", smelt._C.__file__], capture_output=True, text=True,
                             check=True).stdout
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert any("libtorch_python.so" in line for line in needed), needed


def test_pyproject_builds_the_cmake_project(repo_root):
    with open(repo_root / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)
    assert config["build-system"]["build-backend"] == "scikit_build_core.build"
    build = config["tool"]["scikit-build"]
    assert build["wheel"]["packages"] == ["python/smelt"]
    assert build["install"]["components"] == ["smelt_python"]
    defines = build["cmake"]["define"]
    assert defines["SMELT_BUILD_TESTS"] == "OFF"


def test_public_names():
    for name in ["FusionDefinition", "DataType", "MemoryType", "ParallelType", "SmeltError",
                 "fusion_cache", "SmemPlan", "Kernel"]:
        assert hasattr(smelt, name), name
