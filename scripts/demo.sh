#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs `smelt demo` (the
# gallery of example kernels: shared-memory plans, bytes against the lower
# bound / no reuse / nvFuser-style stack allocation, ptxas figures, results
# checked against torch on the GPU or in the CPU simulator, SVG plans and an
# index.html in $SMELT_BUILD_DIR/demo). Arguments are passed to `smelt demo`.
#
# Env: SMELT_BUILD_DIR (default build), SMELT_JOBS (default 2),
#      SMELT_SKIP_SETUP=1 skips scripts/setup.sh, PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

export SMELT_BUILD_DIR=${SMELT_BUILD_DIR:-build}
PYTHON=${PYTHON:-python3}
if [[ "${SMELT_SKIP_SETUP:-0}" != 1 ]]; then
  bash scripts/setup.sh
fi
bash scripts/build.sh

echo "[demo] smelt demo --out $SMELT_BUILD_DIR/demo $*"
PYTHONPATH="$SMELT_BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$PYTHON" -m smelt demo --out "$SMELT_BUILD_DIR/demo" "$@"
