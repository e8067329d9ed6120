#!/usr/bin/env bash
# One full run on a GPU machine that lacks libcst/platformdirs: install the carried wheels and the
# project, then run what the arguments name, each with its log under $OUT (default ./out).
#
#   bash tools/device_run.sh tests          # pytest -m gpu (the GPU half of the suite)
#   bash tools/device_run.sh tests bench    # ... then tools/bench_suite.py (with Numba if carried)
#   bash tools/device_run.sh quick          # pytest -m gpu -x, a smoke run
#   bash tools/device_run.sh fuzzraces      # tools/fuzz_races.py: unique-write proofs, GPU vs sim
#                                           # (the indices family, then guarded, ranges, warps,
#                                           # reads, calls)
#
# The wheels come from ../shared/tools/fetch-device-wheels.sh (carry ".whl"; .whl/test and .whl/dask
# from tools/fetch_cuda12_wheels.sh and tools/fetch_dask_wheels.sh, .whl/daskcuda from the
# latter too); .whl/extra holds
# numpy<2.3 for the Numba-CUDA comparison, installed apart and put on its PYTHONPATH only.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  # .whl/test (hypothesis) and .whl/dask (dask, distributed and what they need) are optional.
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    $(ls .whl/test/*.whl .whl/dask/*.whl 2>/dev/null) || exit 1
  export PYTHONPATH=/tmp/site
fi
if ls .whl/daskcuda/*.whl >/dev/null 2>&1; then
  # dask-cuda pins older dask and distributed: installed apart, and first on the path.
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/dcsite \
    .whl/daskcuda/*.whl || exit 1
  export PYTHONPATH=/tmp/dcsite${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-deps --no-build-isolation . >"$OUT/install.log" 2>&1 || {
  cat "$OUT/install.log"; exit 1; }
numba_path=""
if ls .whl/extra/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/extra .whl/extra/*.whl && numba_path=/tmp/extra
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
for what in "$@"; do
  case "$what" in
    tests)
      python3 -m pytest -m gpu -q -p no:cacheprovider -rfEs 2>&1 | tee "$OUT/gpu-tests.log" | tail -40
      status=$((status | ${PIPESTATUS[0]})) ;;
    quick)
      python3 -m pytest -m gpu -q -x -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -40
      status=$((status | ${PIPESTATUS[0]})) ;;
    bench)
      args=(--out "$OUT/bench")
      [ -n "$numba_path" ] && args+=(--numba-pythonpath "$numba_path")
      python3 tools/bench_suite.py "${args[@]}" 2>&1 | tee "$OUT/bench.log" | tail -60
      status=$((status | ${PIPESTATUS[0]})) ;;
    fuzzraces)
      python3 -m tools.fuzz_races --out "$OUT/fuzz_races.json" 2>&1 | tee "$OUT/fuzz_races.log" | tail -30
      status=$((status | ${PIPESTATUS[0]}))
      for family in guarded ranges warps reads calls; do
        python3 -m tools.fuzz_races --family $family --seeds 5000 --time-limit 60 \
          --out "$OUT/fuzz_$family.json" 2>&1 | tee "$OUT/fuzz_$family.log" | tail -30
        status=$((status | ${PIPESTATUS[0]}))
      done ;;
    *) echo "unknown step: $what"; exit 2 ;;
  esac
done
exit $status
