#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, then runs the C++ tests
# (ctest: GoogleTest suites and the external CMake consumer) and the Python
# tests (pytest). Exits non-zero if anything fails; both suites always run.
#
# Env: SMELT_BUILD_DIR (default build), SMELT_JOBS (default 2; build and ctest),
#      SMELT_SKIP_SETUP=1 skips scripts/setup.sh, extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
PYTHON=${PYTHON:-python3}
export SMELT_BUILD_DIR=${SMELT_BUILD_DIR:-build}
JOBS=${SMELT_JOBS:-2}
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

log "setup+build $((built - start)) s, ctest $((tested_cpp - built)) s, pytest $((end - tested_cpp)) s, total $((end - start)) s"
if ((status)); then
  log "FAILED"
else
  log "all passed"
fi
exit "$status"
