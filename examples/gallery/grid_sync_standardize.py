"""Standardise a vector, ``(x - mean) / std``, in one cooperative launch: two grid-wide
reductions and a map, with ``grid_sync()`` between the phases.

Source algorithm: the grid-synchronised reduction of NVIDIA's cuda-samples
``reductionMultiBlockCG`` (cooperative groups, ``grid.sync()`` between the per-block partial sums
and the final sum, which replaces the second launch of the classic two-pass reduction), applied
twice as in a one-pass ``BatchNorm``-style statistics kernel: each block sums a grid-stride slice
in shared memory and writes ``partial[block]``; after a ``grid_sync()`` every thread adds the
partial sums (elements other blocks wrote) to get the mean; the same again for the sum of squared
deviations; then every thread writes its standardised elements.

What it exercises: ``@gpu_kernel(..., cooperative=True)``, a grid sized with
``max_cooperative_grid_blocks``, and the unique-write rule's grid phases: a read of
``partial[b]``, which other blocks wrote, is race-free because a ``grid_sync()`` separates it
from every store of ``partial``.  The second reduction writes ``partial`` again, so it needs the
``grid_sync()`` *before* its store too (without it a fast block could overwrite a partial sum
that a slow block has not read yet; the checker refuses the kernel then).
"""

import math

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    grid_dim,
    grid_sync,
    shared_array,
    sync_threads,
    thread_idx,
)

THREADS = 256

# Each element is (x - mean) / std with the sums accumulated in f32 over ~10^5 terms.
TOLERANCE = ("abs", 2e-4)


@gpu_kernel(Kernel1D, cooperative=True)
def standardize_kernel(x: CUDASlice[f32], partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == THREADS, "launch standardize_kernel with THREADS threads per block"
    tid = thread_idx.x
    n = len(x)
    first = block_idx.x * THREADS + tid
    step = grid_dim.x * THREADS
    s = shared_array(f32, (THREADS,))

    # Phase 1: each block's sum of its grid-stride slice.
    acc = f32(0.0)
    for i in range(first, n, step):
        acc += x[i]
    s[tid] = acc
    stride = THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            s[tid] += s[tid + stride]
        stride //= 2
    if tid == 0:
        partial[block_idx.x] = s[0]
    grid_sync()

    # Phase 2: every thread adds the blocks' sums; then each block sums its squared deviations.
    total = f32(0.0)
    for b in range(grid_dim.x):
        total += partial[b]
    mean = total / f32(n)
    acc = f32(0.0)  # (the grid_sync() above also ordered tid 0's read of s[0] before this)
    for i in range(first, n, step):
        d = x[i] - mean
        acc += d * d
    s[tid] = acc
    stride = THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            s[tid] += s[tid + stride]
        stride //= 2
    grid_sync()  # every block has read the phase-1 partial sums before any overwrites them
    if tid == 0:
        partial[block_idx.x] = s[0]
    grid_sync()

    # Phase 3: the standard deviation, and the map.
    squares = f32(0.0)
    for b in range(grid_dim.x):
        squares += partial[b]
    scale = 1.0 / math.sqrt(squares / f32(n))
    for i in range(first, n, step):
        out[i] = (x[i] - mean) * scale


def standardize(x, out, blocks=None):
    """Launch the cooperative kernel with as many blocks as can be resident (at most 132)."""
    if blocks is None:
        blocks = min(132, standardize_kernel.max_cooperative_grid_blocks(THREADS))
    partial = gn.empty(blocks, gn.f32)
    standardize_kernel[blocks, THREADS](x, partial, out)


def run(n: int = 100_003, seed=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3.0 + 1.5).astype(np.float32)
    out = gn.empty(n, gn.f32)
    poison(out)
    standardize(gn.to_device(x), out)
    x64 = x.astype(np.float64)
    return out.to_host(), (x64 - x64.mean()) / x64.std()


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"grid_sync_standardize on {gn.backend()}: mean {out.astype(np.float64).mean():+.2e}, "
          f"std {out.astype(np.float64).std():.6f}")


if __name__ == "__main__":
    main()
