#!/usr/bin/env bash
# Download what tools/device_cuda12.sh installs on the GPU machine (Python 3.12, x86-64, no
# network there): gpu_native's CUDA 12 dependencies into .whl/cu12, libcst and platformdirs
# (which that machine lacks) into .whl unless they are there already, and hypothesis for the
# tests (and the setuptools that builds the project) into .whl/test.  Run it here, from the
# project root; .whl is ignored by git and carried to the device run ("carry": [".whl"]).
#
#   bash tools/fetch_cuda12_wheels.sh
#
# A device run carries at most 64 MiB, so NVRTC is 12.6 (a 24 MB wheel): the 12.8 and 12.9 NVRTC
# wheels are 88 and 90 MB each.  cuda-bindings 12.9 works with any 12.x NVRTC (it looks functions
# up as they are called), and `pip install 'gpu-native[cu12]'` allows that pair.  Override with
# NVRTC=12.x.y RUNTIME=12.x.y BINDINGS=12.x.y PATHFINDER=1.x.y.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
NVRTC=${NVRTC:-12.6.85}
RUNTIME=${RUNTIME:-12.6.77}
BINDINGS=${BINDINGS:-12.9.10}
PATHFINDER=${PATHFINDER:-1.9.1}
get() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    "$@" 2>&1 | grep -v '^WARNING: Location' || true
}
mkdir -p .whl/cu12
rm -f .whl/cu12/*.whl
get -d .whl/cu12 "cuda-bindings==$BINDINGS" "cuda-pathfinder==$PATHFINDER" \
  "nvidia-cuda-nvrtc-cu12==$NVRTC" "nvidia-cuda-runtime-cu12==$RUNTIME"
if ! ls .whl/libcst-*.whl >/dev/null 2>&1; then
  get -d .whl libcst platformdirs
fi
# The test suite's other requirement, in case that machine's Python lacks it too: without it
# pytest cannot even collect the modules that use it (installed into the venv only).
mkdir -p .whl/test
rm -f .whl/test/*.whl
# setuptools >= 77 builds the project (its SPDX license field): the device's Python may have an
# older one, and tools/device_run.sh puts .whl/test ahead of it on PYTHONPATH.
get -d .whl/test hypothesis attrs sortedcontainers 'setuptools>=77'
for name in cuda_bindings cuda_pathfinder nvidia_cuda_nvrtc_cu12 nvidia_cuda_runtime_cu12; do
  ls .whl/cu12/"$name"-*.whl >/dev/null 2>&1 || { echo "missing: $name (no network?)" >&2; exit 1; }
done
find .whl -type f -name '*.whl' -printf '%s\t%p\n' | sort -k2
total=$(find .whl -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "total in .whl: $total bytes (a device run carries at most $((64 << 20)))"
[ "$total" -le $((64 << 20)) ] || { echo "too big to carry: drop .whl/extra, or pick a smaller NVRTC" >&2; exit 1; }
