"""Shared fixtures: where the repository and its CMake build live.

The build directory is $SMELT_BUILD_DIR (as used by scripts/build.sh and
scripts/test.sh), default <repo>/build. Tests that need built programs fail,
rather than skip, when they are missing: scripts/test.sh always builds first.

`import smelt` finds the package of the build tree (<build>/python/smelt: the
sources of python/smelt plus the built extension), so the tests run what
scripts/build.sh built. SMELT_TEST_INSTALLED=1 tests the installed package
(pip install) instead.
"""
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _build_dir() -> Path:
    path = Path(os.environ.get("SMELT_BUILD_DIR", "build"))
    return path if path.is_absolute() else REPO_ROOT / path


if os.environ.get("SMELT_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(_build_dir() / "python"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def build_dir() -> Path:
    path = _build_dir()
    if not (path / "CMakeCache.txt").is_file():
        pytest.fail(f"no CMake build in {path}; run scripts/build.sh (or scripts/test.sh) first")
    return path


@pytest.fixture(scope="session")
def demo_binary(build_dir: Path) -> Path:
    path = build_dir / "examples" / "smelt_demo"
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} was not built: examples/CMakeLists.txt must define the "
                    "smelt_demo target (examples/demo.cpp)")
    return path


@pytest.fixture
def fresh_dynamo():
    """A clean torch.compile state and empty smelt partition reports around a
    test (modules using torch.compile request it with pytestmark)."""
    import torch
    import smelt.backend
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    yield
    torch._dynamo.reset()
