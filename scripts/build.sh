#!/usr/bin/env bash
# Configures (Ninja + ccache) and builds everything: libraries, tests,
# benchmarks, examples. Run scripts/setup.sh first (test.sh and demo.sh do).
# `build.sh --configure-only` stops after the configure step (to build chosen
# targets with cmake --build ... --target, as scripts/gpu_check.sh does).
#
# Env:
#   SMELT_BUILD_DIR   build directory (default: build, relative to the repo root)
#   SMELT_JOBS        parallel compile jobs (default: 2)
#   SMELT_BUILD_TYPE  CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   SMELT_CMAKE_ARGS  extra arguments for the configure step (word-split)
#   CCACHE_MAXSIZE    ccache size limit (default: 5G); CCACHE_DIR as usual
#   TORCH_CUDA_ARCH_LIST  arch list torch's CMake config uses (default: 9.0;
#                     there is no GPU to autodetect on the build machines)
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
PYTHON=${PYTHON:-python3}
BUILD_DIR=${SMELT_BUILD_DIR:-build}
JOBS=${SMELT_JOBS:-2}
BUILD_TYPE=${SMELT_BUILD_TYPE:-RelWithDebInfo}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# Paths under the repo are hashed relative to it, so clones share cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
log() { echo "[build] $*"; }

# nvcc on PATH lets CMake's FindCUDAToolkit find the toolkit.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

torch_prefix=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  log "error: cannot import torch with $PYTHON; run scripts/setup.sh first"
  exit 1
}

# A build directory made with another generator cannot be reconfigured with Ninja.
cache="$BUILD_DIR/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
  log "error: $BUILD_DIR was configured with another generator; remove it or set SMELT_BUILD_DIR"
  exit 1
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
else
  log "warning: ccache not found, building without it"
fi

log "configuring $BUILD_DIR ($BUILD_TYPE)"
# shellcheck disable=SC2086  # SMELT_CMAKE_ARGS is word-split on purpose
cmake -S . -B "$BUILD_DIR" -G Ninja --no-warn-unused-cli \
  -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DPython3_EXECUTABLE="$(command -v "$PYTHON")" \
  "${launcher[@]}" \
  ${SMELT_CMAKE_ARGS:-}
configured=$(date +%s)
if [[ "${1:-}" == --configure-only ]]; then
  log "configured in $((configured - start)) s"
  exit 0
fi

log "building with $JOBS jobs"
cmake --build "$BUILD_DIR" --parallel "$JOBS"
end=$(date +%s)

if command -v ccache >/dev/null; then
  ccache --show-stats 2>/dev/null | grep -Ei '^ *(hits|misses|cache size|cacheable calls)' | sed 's/^/[build] ccache (all builds): /' || true
fi
log "done in $((end - start)) s (configure $((configured - start)) s, build $((end - configured)) s)"
