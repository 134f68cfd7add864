#!/usr/bin/env bash
# Builds the C++ libraries and tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DSMELT_SANITIZE=ON) into their own build
# directory and runs the C++ tests there; any sanitizer report fails the run.
# The Python extension, benchmarks and examples are not built (a sanitized
# extension would need libasan preloaded into python).
#
# Env:
#   SMELT_SANITIZE_BUILD_DIR  build directory (default: build-sanitize)
#   SMELT_SANITIZE_TARGETS    test executables to build and run (space-separated;
#                             default: all of them). scripts/test.sh passes a
#                             subset (SMELT_SANITIZE_SUBSET there).
#   SMELT_JOBS                parallel compile jobs and ctest jobs (default: 2)
#   SMELT_SKIP_SETUP=1        skips scripts/setup.sh
#
# ASAN_OPTIONS: detect_leaks=0 because libtorch and NVRTC keep process-lifetime
# allocations (operator registries, the CUDA runtime's caches) that
# LeakSanitizer reports as leaks at exit, none of them smelt's; every other
# ASan check stays on and aborts on the first error.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
BUILD_DIR=${SMELT_SANITIZE_BUILD_DIR:-build-sanitize}
JOBS=${SMELT_JOBS:-2}
log() { echo "[sanitize] $*"; }

if [[ "${SMELT_SKIP_SETUP:-0}" != 1 ]]; then
  bash scripts/setup.sh
fi

torch_prefix=$(${PYTHON:-python3} -c 'import torch; print(torch.utils.cmake_prefix_path)')
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
log "configuring $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja --no-warn-unused-cli -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$torch_prefix" -DPython3_EXECUTABLE="$(command -v "${PYTHON:-python3}")" \
  -DSMELT_SANITIZE=ON -DSMELT_BUILD_PYTHON=OFF -DSMELT_BUILD_BENCHMARKS=OFF -DSMELT_BUILD_EXAMPLES=OFF \
  ${SMELT_CMAKE_ARGS:-} >/dev/null
names=()
targets=()
if [[ -n "${SMELT_SANITIZE_TARGETS:-}" ]]; then
  read -r -a names <<<"$SMELT_SANITIZE_TARGETS"
  targets=(--target "${names[@]}")
fi
log "building ${SMELT_SANITIZE_TARGETS:-everything} with $JOBS jobs"
cmake --build "$BUILD_DIR" --parallel "$JOBS" "${targets[@]}"
built=$(date +%s)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
if ((${#names[@]})); then
  # The subset's executables directly (ctest names tests Suite.Test, not by executable).
  for name in "${names[@]}"; do
    exe=$(find "$BUILD_DIR/tests" -type f -executable -name "$name" | head -1)
    [[ -n "$exe" ]] || { log "no executable $name"; status=1; continue; }
    log "running $name"
    "$exe" --gtest_brief=1 || { status=1; log "$name FAILED"; }
  done
else
  # The external CMake consumer builds its own unsanitized project: not here.
  ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j "$JOBS" -E external_cmake_consumer ||
    status=1
fi
end=$(date +%s)
log "build $((built - start)) s, ctest $((end - built)) s, total $((end - start)) s"
if ((status)); then
  log "FAILED"
else
  log "all passed"
fi
exit "$status"
