#!/usr/bin/env bash
# Installs a built smelt into a scratch prefix, then configures, builds and runs
# the stand-alone project in consumer/ against it (find_package(smelt)).
#
# usage: run_test.sh <smelt build dir> <cmake> <c++ compiler> <prefix path> <work dir>
#   prefix path: extra package prefixes (e.g. torch's), ':'-separated
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
cmake=${2:-cmake}
cxx=${3:-c++}
extra_prefix=${4:-}
work=${5:-$build/external_project_test}

rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

echo "== install $build -> $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"
  exit 1
}
config=$(find "$prefix" -name smeltConfig.cmake -print -quit)
[[ -n "$config" ]] || { echo "no smeltConfig.cmake under $prefix"; exit 1; }
[[ -f "$prefix/include/smelt/fusion/int_expr.h" ]] || { echo "headers not installed under include/smelt/"; exit 1; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

echo "== configure consumer"
export CMAKE_PREFIX_PATH="$extra_prefix"
# Only the scratch prefix (and torch's, for later dependencies) is searchable:
# nothing may leak in from the source or build tree.
"$cmake" -S "$here/consumer" -B "$work/build" "${generator[@]}" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
found=$(sed -n 's/^smelt_DIR:PATH=//p' "$work/build/CMakeCache.txt")
if [[ "$found" != "$prefix"/* ]]; then
  echo "find_package(smelt) used $found, not the scratch prefix $prefix"
  exit 1
fi

echo "== build consumer"
"$cmake" --build "$work/build"

echo "== run consumer"
"$work/build/consumer"
