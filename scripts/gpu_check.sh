#!/usr/bin/env bash
# The checks only a GPU can make, in one run sized for a short GPU lease (about
# 8 minutes on a 16-core H100/H200 machine; never past SMELT_GPU_DEADLINE_S):
# builds the Python extension and the GPU-labelled C++ tests (Release), then runs
#                                                        expected  limit
#   1. ctest -L gpu           the C++ launches against        30 s   120 s
#                             torch's CUDA results
#   2. pytest -k cuda         the Python tests' CUDA cases    30 s   150 s
#   3. smelt demo             the gallery on the GPU           5 s    60 s
#   4. compute-sanitizer      racecheck, memcheck and         35 s   5 x 90-120 s
#                             synccheck over the demo, racecheck and synccheck
#                             over the outer reductions' shuffle forms (pytest)
#   5. bench_models real_size  issue 41's four real-size    120 s   200 s
#                             bf16 models: eager / Inductor / smelt, each also with
#                             mode="reduce-overhead"; kernel µs, launches, wall µs,
#                             first-call s; smelt's kernels' waves and roofline floors
#   6. bench_triton_gpu       the Triton-comparison ops and   90 s   180 s
#                             the six matmul shapes: values against eager, then
#                             kernel and wall times of smelt / Triton / Inductor /
#                             eager / cuBLAS (torch.mm)
#      (SMELT_GPU_CHECKS naming sweep: its --sweep of the outer-reduction
#      block shapes, SMELT_SWEEP, default col_sum and layer_norm_bwd)
#   7. bench_models zoo       the six public zoo models, as 5   120 s   180 s
#   8. torch_fuzz (only when SMELT_GPU_CHECKS names fuzz) the torch-level
#      differential fuzzer on CPU tensors, one process per core, for
#      SMELT_FUZZ_SECONDS (default 240) over seeds from SMELT_FUZZ_START
#      (default 2000000): the lent machine's cores run the fuzz count up
# Before them: the machine's versions (~7 s) and the build (~40 s, limit 420 s).
# Each step has its own time limit, cut to what is left before the deadline
# (a step with under 15 s left is skipped), and the run goes on after a failing
# step. Results go to $OUT/gpu_<kind>/run_<UTC time>/ (kind from the GPU's name:
# gpu_h200, gpu_h100; OUT defaults to benchmarks/results, so a run lands where it
# is committed): gpu_check.log, and JSON + Markdown of each benchmark
# (bench_models_real_size, bench_models_zoo, triton_gpu). Exit status: the
# number of failed or skipped steps.
#
# Env: SMELT_BUILD_DIR (default build-gpu), SMELT_JOBS (default: all cores),
#      GTEST_SOURCE  a googletest source tree (e.g. a copy of /usr/src/googletest)
#                    to build first where GoogleTest is not installed,
#      SMELT_GPU_CHECKS  which of ctest pytest triton sweep demo sanitizers bench fuzz to run
#                    (default: all but sweep and fuzz),
#      SMELT_BENCH_MODELS  the zoo models bench_models times (default: zoo, all six),
#      SMELT_BENCH_REAL_MODELS  the real-size ones (default: real_size, all four),
#      SMELT_GPU_DEADLINE_S  seconds after which no step runs (default 540: under
#                    a 10-minute lease command, with the results written),
#      SMELT_CXX (default /usr/bin/g++ where it exists), PYTHON (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${SMELT_BUILD_DIR:-build-gpu}
OUT=${OUT:-benchmarks/results}
PYTHON=${PYTHON:-python3}
JOBS=${SMELT_JOBS:-$(nproc)}
DEADLINE=${SMELT_GPU_DEADLINE_S:-540}
# The kind names the results' folder: gpu_h200 from "NVIDIA H200", gpu_h100 from
# "NVIDIA H100 80GB HBM3", gpu_gh200, gpu_l40s.
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
kind=$(grep -oE '\b[A-Z]+[0-9]{2,4}[A-Z]?\b' <<<"$gpu_name" | head -1 | tr '[:upper:]' '[:lower:]')
RESULTS="$OUT/gpu_${kind:-unknown}/run_$(date -u +%Y%m%d_%H%M%S)"
mkdir -p "$RESULTS" "$BUILD_DIR"
exec > >(tee -a "$RESULTS/gpu_check.log") 2>&1
echo "===== results in $RESULTS"
export PYTHONUNBUFFERED=1 SMELT_BUILD_DIR="$BUILD_DIR"
export PYTHONPATH="$PWD/$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

# The system compiler: the GPU image's CXX (/opt/gcc) links libstdc++ statically
# into shared objects, and smelt._C then crashed at its first stream output
# (cmake/check_shared_libstdcxx.cmake now refuses such a build).
if [[ -z "${SMELT_CXX:-}" && -x /usr/bin/g++ ]]; then SMELT_CXX=/usr/bin/g++; fi
[[ -n "${SMELT_CXX:-}" ]] && export CXX=$SMELT_CXX

CHECKS=" ${SMELT_GPU_CHECKS:-ctest pytest triton demo sanitizers bench} "
want() { [[ "$CHECKS" == *" $1 "* ]]; }

failed=0
t0=$(date +%s)
# step NAME LIMIT_S COMMAND...: runs one step under a time limit (cut to what
# is left before the deadline), logs its status.
step() {
  local name=$1 limit=$2 start rc left
  shift 2
  start=$(date +%s)
  left=$((DEADLINE - (start - t0)))
  if ((left < 15)); then
    echo "===== [$name] skipped: ${left}s left before the ${DEADLINE}s deadline"
    failed=$((failed + 1))
    return 1
  fi
  ((limit > left - 10)) && limit=$((left - 10))
  echo "===== [$name] $* (limit ${limit}s)"
  timeout --kill-after=5 "$limit" "$@"
  rc=$?
  echo "===== [$name] rc=$rc in $(($(date +%s) - start)) s (at $(($(date +%s) - t0)) s)"
  [[ $rc == 0 ]] || failed=$((failed + 1))
  return $rc
}

step machine 30 bash -c 'nvidia-smi -L; nvcc --version | tail -2; g++ --version | head -1;
  cmake --version | head -1; '"$PYTHON"' -c "import torch, triton; print(torch.__version__,
  torch.version.cuda, torch.cuda.get_device_name(), \"triton\", triton.__version__)"'

cmake_args="-DSMELT_BUILD_BENCHMARKS=OFF -DSMELT_BUILD_EXAMPLES=OFF"
want ctest || cmake_args+=" -DSMELT_BUILD_TESTS=OFF"
if want ctest && [[ -n "${GTEST_SOURCE:-}" ]]; then
  gtest_prefix="$PWD/$BUILD_DIR/_gtest"
  step gtest 120 bash -c "cmake -S '$GTEST_SOURCE' -B '$BUILD_DIR/_gtest-build' -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX='$gtest_prefix' >/dev/null &&
    cmake --build '$BUILD_DIR/_gtest-build' --parallel $JOBS >/dev/null &&
    cmake --install '$BUILD_DIR/_gtest-build' >/dev/null"
  cmake_args+=" -DGTest_ROOT=$gtest_prefix -DGTEST_ROOT=$gtest_prefix"
fi

gpu_tests=()
want ctest && gpu_tests=(test_gpu_launch test_executor_gpu test_fusion_executor_cache_gpu
                         test_tensor_core_gpu test_matmul_gpu test_hopper_gpu)
# Configure only (build.sh's configure step), then build just what the checks run.
if step build 420 bash -c "set -o pipefail; SMELT_BUILD_TYPE=Release SMELT_JOBS=$JOBS \
      SMELT_CMAKE_ARGS='$cmake_args' bash scripts/build.sh --configure-only 2>&1 | tail -5 &&
    cmake --build '$BUILD_DIR' --parallel $JOBS --target smelt_python ${gpu_tests[*]} 2>&1 | tail -15"; then
  want ctest && step ctest_gpu 120 ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -j 4 --timeout 100
  want pytest && step pytest_cuda 150 "$PYTHON" -m pytest -q --maxfail=30 --no-header -p no:cacheprovider \
    tests/python -k cuda -n 8
  want demo && step demo 60 "$PYTHON" -m smelt demo --out "$BUILD_DIR/demo"
  sanitize() {
    step "sanitizer_$1" 90 compute-sanitizer --tool "$1" --error-exitcode 7 --print-limit 20 \
      "$PYTHON" -m smelt demo --out "$BUILD_DIR/demo-$1"
  }
  # The block reductions' shuffle forms (warp, strided, grouped) at every
  # block shape the heuristics give, beyond the demo's kernels.
  sanitize_reductions() {
    step "sanitizer_reductions_$1" 120 compute-sanitizer --tool "$1" --error-exitcode 7 \
      --print-limit 20 "$PYTHON" -m pytest -q --no-header -p no:cacheprovider \
      tests/python/test_codegen_quality.py -k "strided_shuffle_form and cuda"
  }
  if want sanitizers; then
    sanitize racecheck
    sanitize memcheck
    sanitize synccheck
    sanitize_reductions racecheck
    sanitize_reductions synccheck
  fi
  bench_models() {  # bench_models NAME MODELS LIMIT_S
    step "bench_models_$1" "$3" "$PYTHON" benchmarks/bench_models.py --gpu-only --models "$2" \
      --json "$RESULTS/bench_models_$1.json" --md "$RESULTS/bench_models_$1.md"
  }
  want bench && bench_models real_size "${SMELT_BENCH_REAL_MODELS:-real_size}" 200
  want triton && step triton_gpu 180 "$PYTHON" benchmarks/bench_triton_gpu.py \
    --json "$RESULTS/triton_gpu.json" --md "$RESULTS/triton_gpu.md"
  want sweep && step reduction_sweep 150 "$PYTHON" benchmarks/bench_triton_gpu.py \
    --sweep "${SMELT_SWEEP:-col_sum:8192x4096,col_sum:16384x1024,layer_norm_bwd:8192x4096}" \
    --json "$RESULTS/reduction_sweep.json"
  want bench && bench_models zoo "${SMELT_BENCH_MODELS:-zoo}" 180
  fuzz_seconds=${SMELT_FUZZ_SECONDS:-240}
  want fuzz && step torch_fuzz $((fuzz_seconds + 90)) "$PYTHON" scripts/torch_fuzz.py \
    --start "${SMELT_FUZZ_START:-2000000}" --count 100000 --jobs "$JOBS" \
    --seconds "$fuzz_seconds" --out "$RESULTS/torch_fuzz"
fi
echo "===== gpu_check: $failed failed steps in $(($(date +%s) - t0)) s"
exit "$failed"
