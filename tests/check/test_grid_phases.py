"""``grid_sync()`` orders the phases of a cooperative kernel for the unique-write rule.

A thread may read, after a ``grid_sync()``, an element of a global array that another thread
wrote before it, when a grid barrier separates the read from every store of that array (in a
loop, also from the stores of the next iteration).  The accepted kernel runs on the simulator
with its race detector watching every written array (and, marked ``gpu``, on the GPU); the near
misses (no barrier, a block barrier only, a store again after the read in a loop, a barrier in a
branch) stay refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from tests.simulator.support import build

COOP = "from gpu_native import grid_sync\n"

# Each block sums a grid-stride slice into partial[block]; after the grid barrier every thread
# reads all the partial sums (elements other blocks wrote) and writes its own outputs.
CENTER = COOP + """
@gpu_kernel(Kernel1D, cooperative=True)
def center(x: CUDASlice[f32], partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    tid = thread_idx.x
    n = len(x)
    s = shared_array(f32, (128,))
    acc = f32(0.0)
    for i in range(block_idx.x * 128 + tid, n, grid_dim.x * 128):
        acc += x[i]
    s[tid] = acc
    stride = 64
    while stride > 0:
        sync_threads()
        if tid < stride:
            s[tid] += s[tid + stride]
        stride //= 2
    if tid == 0:
        partial[block_idx.x] = s[0]
    grid_sync()
    total = f32(0.0)
    for b in range(grid_dim.x):
        total += partial[b]
    mean = total / f32(n)
    for i in range(block_idx.x * 128 + tid, n, grid_dim.x * 128):
        out[i] = x[i] - mean
"""


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Shadow every written array, so the race detector sees plain stores too."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def test_a_read_after_grid_sync_of_other_blocks_writes_is_accepted_and_race_free(
        backend, kernel_module):
    km = kernel_module("from gpu_native import *\n" + CENTER)
    rng = np.random.default_rng()
    host = rng.standard_normal(50_001).astype(np.float32)
    blocks = min(8, km.center.max_cooperative_grid_blocks(128))
    partial = gn.empty(blocks, gn.f32)
    out = gn.empty(len(host), gn.f32)
    out.fill(np.nan)
    km.center[blocks, 128](gn.to_device(host), partial, out)
    ref = host.astype(np.float64) - host.astype(np.float64).mean()
    np.testing.assert_allclose(out.to_host(), ref, atol=1e-4)


REFUSED = {
    "no barrier": """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        partial[block_idx.x] = 1.0
    out[FlatLayout1D.uid()] = partial[0]
""",
    "a block barrier only": """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        partial[block_idx.x] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = partial[0]
""",
    "stored again after the read in the next iteration": """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    acc = f32(0.0)
    for it in range(4):
        if thread_idx.x == 0:
            partial[block_idx.x] = acc
        grid_sync()
        acc += partial[0]
    out[FlatLayout1D.uid()] = acc
""",
    "stored after the read, no barrier": """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    v = partial[0]
    sync_threads()
    if thread_idx.x == 0:
        partial[block_idx.x] = 1.0
    out[FlatLayout1D.uid()] = v
""",
    "the barrier after the read can be skipped": """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32], stop: i32):
    acc = f32(0.0)
    for it in range(4):
        if thread_idx.x == 0:
            partial[block_idx.x] = acc
        grid_sync()
        acc += partial[0]
        if it == stop:
            continue
        grid_sync()
    out[FlatLayout1D.uid()] = acc
""",
    "a barrier in a branch": """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32], flag: bool_):
    if thread_idx.x == 0:
        partial[block_idx.x] = 1.0
    if flag:
        grid_sync()
    out[FlatLayout1D.uid()] = partial[0]
""",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_read_not_ordered_by_a_grid_barrier_is_refused(tmp_path, case):
    with pytest.raises(TranspileError, match=r"another thread may be writing|may write the same"):
        build(tmp_path, COOP + REFUSED[case])


def test_a_read_before_the_barrier_of_what_is_stored_after_it_is_accepted(tmp_path):
    build(tmp_path, COOP + """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    v = partial[0]
    grid_sync()
    if thread_idx.x == 0:
        partial[block_idx.x] = 1.0
    out[FlatLayout1D.uid()] = v
""")


def test_a_second_grid_sync_after_the_read_makes_the_loop_race_free(tmp_path):
    build(tmp_path, COOP + """
@gpu_kernel(Kernel1D, cooperative=True)
def k(partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    acc = f32(0.0)
    for it in range(4):
        if thread_idx.x == 0:
            partial[block_idx.x] = acc
        grid_sync()
        acc += partial[0]
        grid_sync()
    out[FlatLayout1D.uid()] = acc
""")
