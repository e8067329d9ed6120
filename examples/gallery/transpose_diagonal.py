"""Matrix transpose with the tiles visited along the grid's diagonals, so that blocks running
at once read and write different memory partitions.

Source algorithm: G. Ruetsch and P. Micikevicius, "Optimizing Matrix Transpose in CUDA" (NVIDIA,
2009), the cuda-samples ``transpose`` sample's ``transposeDiagonal``: block ``(x, y)`` of a square
grid of tiles takes the tile ``((x + y) % grid_dim.x, x)``, and otherwise moves it as
``transposeNoBankConflicts`` does, through a shared tile padded by one column, ``TILE x
BLOCK_ROWS`` threads each moving ``TILE / BLOCK_ROWS`` elements.  (The sample's form for a
rectangular grid renumbers the blocks first; this is its square case.)

What it exercises: the diagonal block order, whose stores are proven unique by R11 (equal
``(block_idx.x + block_idx.y) % grid_dim.x`` in two blocks of the same ``block_idx.x`` means
the same ``block_idx.y``, which is below ``grid_dim.y == grid_dim.x``, asserted and checked at
launch), shared stores ``tile[ty + j, tx]`` and global stores in a loop stepping by the block's
height, bounds guards for a matrix that is not a multiple of the tile.
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
    grid_dim,
    shared_array,
    sync_threads,
    thread_idx,
)

TILE = 32
BLOCK_ROWS = 8

# A copy: exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel2D)
def transpose_diagonal_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == TILE and block_dim.y == BLOCK_ROWS, "launch with TILE x BLOCK_ROWS"
    assert grid_dim.x == grid_dim.y, "the diagonal order needs a square grid of tiles"
    tile = shared_array(f32, (TILE, TILE + 1))
    tx = thread_idx.x
    ty = thread_idx.y
    n = src.shape[0]
    # Block (x, y) takes tile row x and tile column (x + y) % grid_dim.x: consecutive blocks
    # walk a diagonal instead of a row of tiles.
    tile_row = block_idx.x
    tile_col = (block_idx.x + block_idx.y) % grid_dim.x
    x = tile_col * TILE + tx
    y = tile_row * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < n and x < n:
            tile[ty + j, tx] = src[y + j, x]
    sync_threads()
    out_x = tile_row * TILE + tx
    out_y = tile_col * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if out_y + j < n and out_x < n:
            dst[out_y + j, out_x] = tile[tx, ty + j]


def transpose(src, dst):
    n = src.shape[0]
    tiles = (n + TILE - 1) // TILE
    grid = GridDim2D(tiles, tiles)
    transpose_diagonal_kernel.launch(grid, BlockDim2D(TILE, BLOCK_ROWS), 0,
                                     DEFAULT_STREAM)(src, dst)


def run(n: int = 100, seed=None):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((n, n), dtype=np.float32)
    dst = gn.empty((n, n), gn.f32)
    poison(dst)
    transpose(gn.to_device(src), dst)
    return dst.to_host(), src.T.astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"transpose_diagonal on {gn.backend()}: {ref.shape} -> {out.shape}")


if __name__ == "__main__":
    main()
