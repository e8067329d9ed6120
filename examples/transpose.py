"""Matrix transpose through a padded shared-memory tile (the padding avoids bank conflicts)."""

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
def transpose_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    tile = shared_array(f32, (TILE, TILE + 1))
    tx = thread_idx.x
    ty = thread_idx.y
    x = block_idx.x * TILE + tx
    y = block_idx.y * TILE + ty
    if y < src.shape[0] and x < src.shape[1]:
        tile[ty, tx] = src[y, x]
    sync_threads()
    out_x = block_idx.y * TILE + tx
    out_y = block_idx.x * TILE + ty
    if out_y < dst.shape[0] and out_x < dst.shape[1]:
        dst[out_y, out_x] = tile[tx, ty]


def transpose(src, dst):
    rows, cols = src.shape
    grid = GridDim2D((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    transpose_kernel.launch(grid, BlockDim2D(TILE, TILE), 0, DEFAULT_STREAM)(src, dst)


def run(rows: int = 300, cols: int = 170, seed=None):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    dst = gn.empty((cols, rows), gn.f32)
    dst.fill(np.nan)
    transpose(gn.to_device(src), dst)
    return dst.to_host(), src.T.astype(np.float64)


def main():
    out, ref = run()
    print(f"transpose on {gn.backend()}: {ref.shape[::-1]} -> {out.shape}, "
          f"exact: {np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
