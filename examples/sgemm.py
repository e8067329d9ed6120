"""Tiled SGEMM: C = A @ B with 32x32 tiles staged through shared memory."""

import numpy as np

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

TILE = 32


@gpu_kernel(Kernel2D)
def sgemm_kernel(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    tile_a = shared_array(f32, (TILE, TILE))
    tile_b = shared_array(f32, (TILE, TILE))
    tx = thread_idx.x
    ty = thread_idx.y
    row = block_idx.y * TILE + ty
    col = block_idx.x * TILE + tx
    n = a.shape[1]
    acc = f32(0.0)
    for t in range(0, n, TILE):
        if row < a.shape[0] and t + tx < n:
            tile_a[ty, tx] = a[row, t + tx]
        else:
            tile_a[ty, tx] = 0.0
        if t + ty < b.shape[0] and col < b.shape[1]:
            tile_b[ty, tx] = b[t + ty, col]
        else:
            tile_b[ty, tx] = 0.0
        sync_threads()
        for k in range(TILE):
            acc += tile_a[ty, k] * tile_b[k, tx]
        sync_threads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


def sgemm(a, b, c):
    m, n = c.shape
    grid = GridDim2D((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    sgemm_kernel.launch(grid, BlockDim2D(TILE, TILE), 0, DEFAULT_STREAM)(a, b, c)


def run(m: int = 256, k: int = 192, n: int = 160, seed=None):
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal((m, k), dtype=np.float32)
    b_host = rng.standard_normal((k, n), dtype=np.float32)
    c = gn.empty((m, n), gn.f32)
    c.fill(np.nan)
    sgemm(gn.to_device(a_host), gn.to_device(b_host), c)
    return c.to_host(), a_host.astype(np.float64) @ b_host.astype(np.float64)


def main():
    out, ref = run()
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"sgemm on {gn.backend()}: {out.shape}, relative error {rel:.2e}")
    assert rel < 1e-5


if __name__ == "__main__":
    main()
