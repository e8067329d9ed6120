"""Host time per launch of a kernel with tensor copies, on the launcher's fast path (the map of
its source found in the cache by address and shape) and its checked path, beside a kernel of the
same parameters without them: what ``tma_load``'s hidden tensor-map parameter costs a launch.

Method as tools/bench_launch.py's (bursts of 100 launches, the launchers taking turns, medians in
microseconds per launch); needs an sm_90 GPU::

    python3 tools/tma_launch.py [--bursts 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_launch

import gpu_native as gn
from gpu_native import (
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim1D,
    Kernel1D,
    f16,
    gpu_kernel,
    grid_dim,
    shared_array,
    thread_idx,
    tma_load,
    tma_wait,
)


@gpu_kernel(Kernel1D)
def with_copy(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], row: int):
    assert grid_dim.x == 1
    tile = shared_array(f16, (8, 64), swizzle=128)
    if thread_idx.x == 0:
        tma_load(tile, (), a, (row, 0))
    tma_wait(tile, ())
    if thread_idx.x == 0:
        out[0, 0] = tile[0, 0]


@gpu_kernel(Kernel1D)
def without(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], row: int):
    assert grid_dim.x == 1
    if thread_idx.x == 0:
        out[0, 0] = a[row, 0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bursts", type=int, default=200)
    opts = ap.parse_args(argv)
    a = gn.to_device(np.arange(64 * 64, dtype=np.float16).reshape(64, 64))
    out = gn.empty((1, 1), f16)
    shape = (GridDim1D(1), BlockDim1D(32))
    copy = with_copy.launch(*shape, 8 * 64 * 2 + 1024)
    plain = without.launch(*shape)
    launchers = {
        "no tensor copy": lambda: plain(a, out, 8),
        "tma_load kernel, fast path": lambda: copy(a, out, 8),
        "tma_load kernel, checked path (a NumPy int argument)": lambda: copy(a, out, np.int64(8)),
    }
    copy(a, out, 8)
    gn.synchronize()
    assert out.to_host()[0, 0] == 8 * 64, "the copy did not land"
    data = bench_launch.interleaved(launchers, gn.synchronize, opts.bursts)
    base = statistics.median(data["no tensor copy"])
    print(f"backend: {gn.backend()}")
    for name, samples in data.items():
        us = statistics.median(samples)
        print(f"{name:56s} {us:6.2f} us/launch  {us / base:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
