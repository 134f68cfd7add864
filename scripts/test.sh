#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, then runs the C++ tests
# (ctest: GoogleTest suites and the external CMake consumer) and the Python
# tests (pytest). Exits non-zero if anything fails; both suites always run.
#
# Env: SMELT_BUILD_DIR (default build), SMELT_JOBS (default 2; build and ctest),
#      SMELT_SKIP_SETUP=1 skips scripts/setup.sh, extra args go to pytest,
#      SMELT_KERNEL_CACHE_DIR (default \$SMELT_BUILD_DIR/kernel-cache; "off": none),
#      SMELT_SANITIZE_SUBSET: test executables for the sanitizer step (default
#      "all", every suite; or executables; "none" skips it), see scripts/sanitize.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
PYTHON=${PYTHON:-python3}
export SMELT_BUILD_DIR=${SMELT_BUILD_DIR:-build}
JOBS=${SMELT_JOBS:-2}
# Kernels compiled by the tests go to a cache of this build (not the user's):
# the run starts from what this tree compiled before, and the sanitizer step
# reads what the normal one compiled.
export SMELT_KERNEL_CACHE_DIR=${SMELT_KERNEL_CACHE_DIR-$SMELT_BUILD_DIR/kernel-cache}
log() { echo "[test] $*"; }

if [[ "${SMELT_SKIP_SETUP:-0}" != 1 ]]; then
  bash scripts/setup.sh
fi
bash scripts/build.sh
built=$(date +%s)

status=0
log "ctest"
ctest --test-dir "$SMELT_BUILD_DIR" --output-on-failure --no-tests=error -j "$JOBS" || {
  status=1
  log "ctest FAILED"
}
tested_cpp=$(date +%s)

log "pytest"
"$PYTHON" -m pytest -q tests/python "$@" || {
  status=1
  log "pytest FAILED"
}
end=$(date +%s)

# ASan+UBSan over every C++ suite (a separate build tree, build-sanitize/).
# Measured on a 2-core machine: a cold sanitized build is 1414 CPU-s (the
# normal one 937), the sanitized ctest 251 s; the whole CI stays near half an
# hour from a fresh machine. SMELT_SANITIZE_SUBSET lists executables to run
# fewer (e.g. the torch-free ones: test_fusion_ir test_fusion_clone
# test_lowering test_kernel_plan test_alloc_plan test_planner_fuzz
# test_case_kernels test_cuda_codegen test_runtime); none skips the step.
SANITIZE_SUBSET=${SMELT_SANITIZE_SUBSET:-all}
if [[ "$SANITIZE_SUBSET" != none ]]; then
  log "sanitizers (ASan+UBSan): ${SANITIZE_SUBSET}"
  targets=$SANITIZE_SUBSET
  [[ "$SANITIZE_SUBSET" == all ]] && targets=""
  SMELT_SKIP_SETUP=1 SMELT_SANITIZE_TARGETS="$targets" bash scripts/sanitize.sh || {
    status=1
    log "sanitizers FAILED"
  }
fi
sanitized=$(date +%s)

log "setup+build $((built - start)) s, ctest $((tested_cpp - built)) s, pytest $((end - tested_cpp)) s, sanitizers $((sanitized - end)) s, total $((sanitized - start)) s"
if ((status)); then
  log "FAILED"
else
  log "all passed"
fi
exit "$status"
