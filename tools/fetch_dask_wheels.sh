#!/usr/bin/env bash
# Download dask, distributed and what they need (Python 3.12, x86-64) into .whl/dask, for a GPU
# machine without network: tools/device_run.sh installs them beside the project, so that
# tests/examples/test_dask_example.py runs there.  Run from the project root.  NumPy is left out:
# the GPU machine has its own.
#
# .whl/daskcuda: dask-cuda (one worker per GPU), its rapids-dask-dependency, and the dask and
# distributed versions that pins.  Install it apart (pip install --target /tmp/dcsite) and put it
# first on PYTHONPATH for the Dask tests only; the GPU machine has the rest of what it needs
# (pynvml, cuda-core, pandas).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .whl/dask
rm -f .whl/dask/*.whl
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl/dask "dask[array]" distributed 2>&1 | grep -v '^WARNING: Location' || true
rm -f .whl/dask/numpy-*.whl
# hypothesis's wheels in .whl/test carry sortedcontainers too; one copy installs.
[ -e .whl/test/sortedcontainers-*.whl ] 2>/dev/null && rm -f .whl/dask/sortedcontainers-*.whl
for w in .whl/test/*.whl; do rm -f ".whl/dask/$(basename "$w")"; done
mkdir -p .whl/daskcuda
rm -f .whl/daskcuda/*.whl
fetch() { python3 -m pip download -q --no-deps -d .whl/daskcuda "$@" 2>&1 | grep -v '^WARNING: Location' || true; }
requires() {  # the Requires-Dist lines of wheel $1 that name one of the packages in $2 (a regex)
  unzip -p "$1" '*.dist-info/METADATA' | sed -n "s/^Requires-Dist: \\($2\\)\\([^;]*\\)$/\\1\\2/p"
}
fetch dask-cuda
fetch "$(requires .whl/daskcuda/dask_cuda-*.whl rapids-dask-dependency)"
mapfile -t pins < <(requires .whl/daskcuda/rapids_dask_dependency-*.whl 'dask\|distributed')
fetch "${pins[@]}"
ls .whl/dask .whl/daskcuda
