"""Matrix transpose with the tiles visited along the grid's diagonals, so that blocks running
at once read and write different memory partitions.

Source algorithm: G. Ruetsch and P. Micikevicius, "Optimizing Matrix Transpose in CUDA" (NVIDIA,
2009), the cuda-samples ``transpose`` sample's ``transposeDiagonal``, its form for any grid: the
blocks are numbered row by row (``bid = x + grid_dim.x * y``), and block ``bid`` takes tile row
``bid % grid_dim.y`` and tile column ``(bid // grid_dim.y + bid % grid_dim.y) % grid_dim.x``;
the tile then moves as in ``transposeNoBankConflicts``, through a shared tile padded by one
column, ``TILE x BLOCK_ROWS`` threads each moving ``TILE / BLOCK_ROWS`` elements.  (The sample
takes a simpler order, ``((x + y) % grid_dim.x, x)``, on a square grid, chosen by ``if width ==
height``; this form covers both.)

What it exercises: a block order made of ``//`` and ``%`` of a flat block number and a
rotation modulo ``grid_dim.x``, whose stores are proven unique by R11 (equal ``(q + r) %
grid_dim.x`` with ``r`` equal means equal ``q``, which is below ``grid_dim.x``: the largest
block number plus one is ``grid_dim.x * grid_dim.y``) and then R6 (quotient and remainder equal:
the block number is); the block number in ``i32``, as the sample's ``int bid``, which a launch
check keeps from wrapping (``grid_dim.x * grid_dim.y`` blocks may pass ``2**31``); shared
stores ``tile[ty + j, tx]`` and global stores in a loop stepping by the block's height, bounds
guards for shapes that are not multiples of the tile.
"""

from _gallery import compare

# The tile, block, launch and check of transpose_padded: only the order of the tiles differs.
from transpose_padded import BLOCK_ROWS, TILE, launch_tiles, transposed_by

import gpu_native as gn
from gpu_native import (
    CUDASlice2D,
    CUDASliceMut2D,
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

# A copy: exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel2D)
def transpose_diagonal_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == TILE and block_dim.y == BLOCK_ROWS, "launch with TILE x BLOCK_ROWS"
    tile = shared_array(f32, (TILE, TILE + 1))
    tx = thread_idx.x
    ty = thread_idx.y
    rows = src.shape[0]
    cols = src.shape[1]
    assert dst.shape[0] == cols and dst.shape[1] == rows, "dst is src transposed"
    # Consecutive blocks walk a diagonal of tiles instead of a row of them.
    bid = block_idx.x + grid_dim.x * block_idx.y
    tile_row = bid % grid_dim.y
    tile_col = (bid // grid_dim.y + tile_row) % grid_dim.x
    x = tile_col * TILE + tx
    y = tile_row * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < rows and x < cols:
            tile[ty + j, tx] = src[y + j, x]
    sync_threads()
    out_x = tile_row * TILE + tx
    out_y = tile_col * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if out_y + j < cols and out_x < rows:
            dst[out_y + j, out_x] = tile[tx, ty + j]


def transpose(src, dst):
    launch_tiles(transpose_diagonal_kernel, src, dst)


def run(rows: int = 100, cols: int = 70, seed=None):
    return transposed_by(transpose, rows, cols, seed)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"transpose_diagonal on {gn.backend()}: {ref.shape[::-1]} -> {out.shape}")


if __name__ == "__main__":
    main()
