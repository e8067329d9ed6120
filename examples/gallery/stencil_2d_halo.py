"""Five-point 2-D stencil through a shared-memory tile with a one-cell halo: every thread loads
its own cell, and the threads on the tile's edges also load the halo cells next to them.

Source algorithm: the tiled stencil with halo cells of D. Kirk and W. Hwu, "Programming Massively
Parallel Processors" (chapter 8, "Stencil"), and of J. Sanders and E. Kandrot, "CUDA by
Example" (the heat-transfer example): a ``BX x BY`` block computes a ``BX x BY`` output tile
from a ``(BY + 2) x (BX + 2)`` shared tile; threads with ``tx == 0`` / ``tx == BX - 1`` load the
left and right halo columns, threads with ``ty == 0`` / ``ty == BY - 1`` the top and bottom
rows (a star stencil needs no corners).  Cells outside the grid count as zero.

What it exercises: five shared stores per thread through five different indices, each of the
halo stores guarded by a test of the thread index (``if tx == 0: tile[ty + 1, 0] = ...``), reads
of neighbours from shared memory after one barrier, a 2-D uid for the output.
"""

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim2D,
    Kernel2D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

BX = 32
BY = 8
CENTRE = 0.5
SIDE = 0.125

# Five f32 products and sums per cell: a few ulps of values of size ~1.
TOLERANCE = ("abs", 1e-6)


@gpu_kernel(Kernel2D)
def stencil_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == BX and block_dim.y == BY, "launch stencil_kernel with BX x BY threads"
    tile = shared_array(f32, (BY + 2, BX + 2))
    tx = thread_idx.x
    ty = thread_idx.y
    x = block_idx.x * BX + tx
    y = block_idx.y * BY + ty
    h = src.shape[0]
    w = src.shape[1]
    v = f32(0.0)
    if y < h and x < w:
        v = src[y, x]
    tile[ty + 1, tx + 1] = v
    if tx == 0:
        v = f32(0.0)
        if y < h and x > 0 and x - 1 < w:
            v = src[y, x - 1]
        tile[ty + 1, 0] = v
    if tx == BX - 1:
        v = f32(0.0)
        if y < h and x + 1 < w:
            v = src[y, x + 1]
        tile[ty + 1, BX + 1] = v
    if ty == 0:
        v = f32(0.0)
        if y > 0 and y - 1 < h and x < w:
            v = src[y - 1, x]
        tile[0, tx + 1] = v
    if ty == BY - 1:
        v = f32(0.0)
        if y + 1 < h and x < w:
            v = src[y + 1, x]
        tile[BY + 1, tx + 1] = v
    sync_threads()
    if y < h and x < w:
        around = tile[ty, tx + 1] + tile[ty + 2, tx + 1] + tile[ty + 1, tx] + tile[ty + 1, tx + 2]
        dst[y, x] = CENTRE * tile[ty + 1, tx + 1] + SIDE * around


def stencil(src, dst):
    h, w = src.shape
    grid = GridDim2D((w + BX - 1) // BX, (h + BY - 1) // BY)
    stencil_kernel.launch(grid, BlockDim2D(BX, BY), 0, DEFAULT_STREAM)(src, dst)


def reference(u):
    p = np.pad(u.astype(np.float64), 1)
    return CENTRE * p[1:-1, 1:-1] + SIDE * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2]
                                            + p[1:-1, 2:])


def run(h: int = 50, w: int = 75, seed=None):
    rng = np.random.default_rng(seed)
    src = rng.uniform(-1, 1, (h, w)).astype(np.float32)
    dst = gn.empty((h, w), gn.f32)
    poison(dst)
    stencil(gn.to_device(src), dst)
    return dst.to_host(), reference(src)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"stencil_2d_halo on {gn.backend()}: {out.shape}, max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
