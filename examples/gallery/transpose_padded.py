"""Matrix transpose through a padded shared-memory tile, with 32 x 8 threads moving a 32 x 32
tile (each thread moves four elements).

Source algorithm: G. Ruetsch and P. Micikevicius, "Optimizing Matrix Transpose in CUDA" (NVIDIA,
2009), the cuda-samples ``transpose`` sample's ``transposeNoBankConflicts``: a block of
``TILE x BLOCK_ROWS`` threads reads a ``TILE x TILE`` tile with coalesced loads, row
``ty + j`` for ``j`` in ``0, BLOCK_ROWS, 2 * BLOCK_ROWS, ...``, into a shared tile padded by one
column (so that the column reads do not conflict on a bank), and writes it out transposed, again
coalesced.

What it exercises: shared stores ``tile[ty + j, tx]`` and global stores ``dst[y + j, x]`` in a
loop whose counter steps by the block's height, a padded shared array, swapped block
coordinates for the output, bounds guards for shapes that are not multiples of the tile.
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

TILE = 32
BLOCK_ROWS = 8

# A copy: exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel2D)
def transpose_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == TILE and block_dim.y == BLOCK_ROWS, "launch with TILE x BLOCK_ROWS"
    tile = shared_array(f32, (TILE, TILE + 1))
    tx = thread_idx.x
    ty = thread_idx.y
    rows = src.shape[0]
    cols = src.shape[1]
    assert dst.shape[0] == cols and dst.shape[1] == rows, "dst is src transposed"
    x = block_idx.x * TILE + tx
    y = block_idx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < rows and x < cols:
            tile[ty + j, tx] = src[y + j, x]
    sync_threads()
    out_x = block_idx.y * TILE + tx
    out_y = block_idx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if out_y + j < cols and out_x < rows:
            dst[out_y + j, out_x] = tile[tx, ty + j]


def launch_tiles(kernel, src, dst):
    """``kernel(src, dst)`` on one block of ``TILE x BLOCK_ROWS`` threads per tile of ``src``."""
    rows, cols = src.shape
    grid = GridDim2D((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    kernel.launch(grid, BlockDim2D(TILE, BLOCK_ROWS), 0, DEFAULT_STREAM)(src, dst)


def transpose(src, dst):
    launch_tiles(transpose_kernel, src, dst)


def transposed_by(transpose, rows: int, cols: int, seed=None):
    """``transpose(src, dst)`` of a fresh ``rows x cols`` matrix into a poisoned ``dst``: what it
    wrote, and the float64 reference."""
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    dst = gn.empty((cols, rows), gn.f32)
    poison(dst)
    transpose(gn.to_device(src), dst)
    return dst.to_host(), src.T.astype(np.float64)


def run(rows: int = 100, cols: int = 70, seed=None):
    return transposed_by(transpose, rows, cols, seed)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"transpose_padded on {gn.backend()}: {ref.shape[::-1]} -> {out.shape}")


if __name__ == "__main__":
    main()
