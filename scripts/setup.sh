#!/usr/bin/env bash
# Installs everything smelt needs on a fresh Debian 12 machine; fast and silent
# about it when everything is already there (each dependency is checked first).
#
#   apt (Debian): ninja-build ccache libgtest-dev libbenchmark-dev
#   pip (PyPI):   torch==2.11.* (the default PyPI wheel is the CUDA 13 build;
#                 it brings libtorch, its CMake config and pybind11),
#                 pytest, scikit-build-core, numpy, hypothesis, expecttest
#                 (torch.testing's op database, tests/python/test_opinfo.py);
#                 transformers, timm, torchvision (the model zoo's tests),
#                 pinned with torch held at the installed version
#
# The CUDA 13 toolkit (nvcc, NVRTC, headers, driver stub) is expected to be on
# the machine already (/usr/local/cuda); this script only checks for it.
# Env: PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
PYTHON=${PYTHON:-python3}
log() { echo "[setup] $*"; }

# ---------------------------------------------------------------- apt packages
apt_packages=(ninja-build ccache libgtest-dev libbenchmark-dev)
missing_apt=()
for pkg in "${apt_packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing_apt+=("$pkg")
  fi
done
if ((${#missing_apt[@]})); then
  log "apt: installing ${missing_apt[*]}"
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { log "error: not root and no sudo; install ${missing_apt[*]} by hand"; exit 1; }
    SUDO=(sudo -n)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing_apt[@]}" </dev/null
else
  log "apt: ${apt_packages[*]} already installed"
fi

# ---------------------------------------------------------------- pip packages
# One interpreter start checks all of them (importing torch takes a second or two).
missing_pip=$("$PYTHON" - <<'EOF'
import importlib, sys
missing = []
try:
    import torch
    if not torch.__version__.startswith("2.11."):
        print(f"[setup] torch {torch.__version__} found, 2.11.x required", file=sys.stderr)
        missing.append("torch==2.11.*")
    elif not (torch.version.cuda or "").startswith("13"):
        print(f"[setup] warning: torch {torch.__version__} is not a CUDA 13 build", file=sys.stderr)
except Exception:
    missing.append("torch==2.11.*")
for module, requirement in [("pytest", "pytest"), ("scikit_build_core", "scikit-build-core"),
                            ("numpy", "numpy"), ("hypothesis", "hypothesis"),
                            ("expecttest", "expecttest")]:
    try:
        importlib.import_module(module)
    except Exception:
        missing.append(requirement)
print(" ".join(missing))
EOF
)
if [[ -n "$missing_pip" ]]; then
  log "pip: installing $missing_pip"
  # shellcheck disable=SC2086  # word splitting intended: one requirement per word
  "$PYTHON" -m pip install --no-input --progress-bar off $missing_pip
  command -v pyenv >/dev/null && pyenv rehash || true
else
  log "pip: torch 2.11, pytest, scikit-build-core, numpy, hypothesis, expecttest already installed"
fi

# ------------------------------------------------- test models (the model zoo)
# transformers and timm build the zoo's small random models from configs
# (nothing is downloaded). timm needs torchvision, which would replace torch
# with its own pin: the installed torch is held as a constraint, so pip picks
# the torchvision built for it or fails rather than swapping torch.
zoo_packages=("transformers==5.23.0" "timm==1.0.31" "torchvision==0.26.*")
if ! "$PYTHON" -c 'import transformers, timm, torchvision' 2>/dev/null; then
  torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__.split("+")[0])')
  constraints=$(mktemp)
  echo "torch==$torch_version" >"$constraints"
  log "pip: installing ${zoo_packages[*]} (torch held at $torch_version)"
  "$PYTHON" -m pip install --no-input --progress-bar off -c "$constraints" "${zoo_packages[@]}"
  rm -f "$constraints"
else
  log "pip: transformers, timm, torchvision already installed"
fi

# ---------------------------------------------------------------- CUDA toolkit
if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  log "error: the CUDA 13 toolkit (nvcc) was not found on PATH or in /usr/local/cuda"
  exit 1
fi

log "done in $(($(date +%s) - start)) s"
