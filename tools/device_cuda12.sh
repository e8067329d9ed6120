#!/usr/bin/env bash
# The GPU tests, and the NVRTC compile tests, with gpu_native's CUDA 12 dependencies (what
# `pip install 'gpu-native[cu12]'` installs for an R525-R575 driver), on the GPU machine, whose
# Python 3.12 has the CUDA 13 ones (cuda-bindings 13.x, NVRTC 13) preinstalled.  Carry ".whl",
# filled here by tools/fetch_cuda12_wheels.sh.
#
#   bash tools/device_cuda12.sh              # pytest -m gpu, then the NVRTC tests (not gpu)
#   bash tools/device_cuda12.sh -x -k twice  # extra arguments go to both pytest runs
#   STEPS=gpu bash tools/device_cuda12.sh    # only the first (STEPS=nvrtc: only the second)
#
# The CUDA 12 wheels are unpacked into a fresh venv without the system site-packages: then
# cuda.pathfinder, which searches site-packages (and nvidia/cu13 first), sees only them.  A .pth
# file appends the system site-packages to sys.path after the venv's, for numpy, pytest, cupy and
# torch; `cuda` and `nvidia` are namespace packages, so cuda.bindings and the NVIDIA libraries
# come from the venv's copies.  Before any test, the CUDA versions in use are printed and checked
# (CUDA 12 bindings and NVRTC, else nothing runs); logs go to $OUT (default ./out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
shopt -s nullglob
cu12=(.whl/cu12/*.whl)
base=(.whl/*.whl .whl/test/*.whl)
if [ ${#cu12[@]} -eq 0 ]; then
  echo "no wheels in .whl/cu12: run tools/fetch_cuda12_wheels.sh here first, and carry .whl" >&2
  exit 2
fi
VENV=${VENV:-/tmp/gpu_native-cu12}
rm -rf "$VENV"
python3 -m venv --without-pip "$VENV" || exit 1
PY="$VENV/bin/python"
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
for wheel in "${base[@]}" "${cu12[@]}"; do
  # A wheel is a zip of its files laid out for site-packages (these have no .data directory).
  python3 -m zipfile -e "$wheel" "$SITE" || exit 1
done
# Older CUDA 12 wheels ship an empty nvidia/__init__.py, which would hide the system's nvidia/*
# packages (that PyTorch and CuPy import) behind the venv's; newer ones, as pip installs them
# for gpu-native[cu12], leave `nvidia` a namespace package.
rm -f "$SITE/nvidia/__init__.py"
python3 - "$SITE" <<'PY' || exit 1
import os, site, sys
dirs = list(site.getsitepackages())
if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
    dirs.append(site.getusersitepackages())
# Plain sys.path entries, after the venv's site-packages: not site directories, so their .pth
# files do not run and cuda.pathfinder does not search them.
with open(os.path.join(sys.argv[1], "zz_system_site_packages.pth"), "w") as f:
    f.write("\n".join(dirs) + "\n")
PY
cp gpu_native.pth "$SITE/"  # the import hook at interpreter start-up, as an install puts it
export PYTHONPATH="$PWD:$PWD/tools"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"

"$PY" - <<'PY' 2>&1 | tee "$OUT/cuda-versions.txt"
import sys
import cuda.bindings
from cuda.bindings import driver
from gpu_native import toolkit
from gpu_native.compiler import nvrtc

try:
    err, version = driver.cuDriverGetVersion()
    shown = f"CUDA {version // 1000}.{version % 1000 // 10}"
except Exception as exc:  # no driver: the GPU tests will skip, the NVRTC ones still run
    shown = f"none ({exc})"
lines = [
    f"python          {sys.version.split()[0]} ({sys.executable})",
    f"cuda-bindings   {cuda.bindings.__version__} ({cuda.bindings.__file__}), "
    f"built for CUDA {driver.CUDA_VERSION // 1000}.{driver.CUDA_VERSION % 1000 // 10}",
    f"driver          {shown}",
    "NVRTC           {}.{} ({})".format(*nvrtc.nvrtc_version(), nvrtc.library_path()),
    f"cuda_fp16.h     {nvrtc.half_include_dir()}",
]
print("\n".join(lines))
if toolkit.bindings_major() != 12 or nvrtc.nvrtc_version()[0] != 12:
    sys.exit("not the CUDA 12 stack: see the lines above")
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1

status=0
for step in ${STEPS:-gpu nvrtc}; do
  case "$step" in
    gpu)
      "$PY" -m pytest -m gpu -q -p no:cacheprovider -p pytest_cuda_versions -rfEs "$@" 2>&1 \
        | tee "$OUT/gpu-tests-cuda12.log" | tail -40
      status=$((status | ${PIPESTATUS[0]})) ;;
    nvrtc)
      "$PY" -m pytest -m "not gpu" -q -p no:cacheprovider -p pytest_cuda_versions -rfE "$@" \
        tests/compiler/test_nvrtc_all.py tests/compiler/test_compiler.py \
        tests/emit/test_nvrtc_bugs.py tests/compiler/test_toolkit.py \
        tests/compiler/test_cuda_versions.py 2>&1 \
        | tee "$OUT/nvrtc-tests-cuda12.log" | tail -20
      status=$((status | ${PIPESTATUS[0]})) ;;
    *) echo "unknown step: $step" >&2; exit 2 ;;
  esac
done
exit $status
