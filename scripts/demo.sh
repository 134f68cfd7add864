#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs the demo
# (build/examples/smelt_demo: builds a fusion, schedules it and prints it).
# Arguments are passed to the demo.
#
# Env: SMELT_BUILD_DIR (default build), SMELT_JOBS (default 2),
#      SMELT_SKIP_SETUP=1 skips scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

export SMELT_BUILD_DIR=${SMELT_BUILD_DIR:-build}
if [[ "${SMELT_SKIP_SETUP:-0}" != 1 ]]; then
  bash scripts/setup.sh
fi
bash scripts/build.sh

demo="$SMELT_BUILD_DIR/examples/smelt_demo"
if [[ ! -x "$demo" ]]; then
  echo "[demo] error: $demo was not built (examples/CMakeLists.txt should define the smelt_demo target from examples/demo.cpp)" >&2
  exit 1
fi
echo "[demo] running $demo $*"
exec "$demo" "$@"
