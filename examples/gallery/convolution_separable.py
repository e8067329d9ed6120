"""Separable 2-D convolution: a row pass, then a column pass, both through shared memory with
thread coarsening (each thread computes several outputs).

Source algorithm: V. Podlozhnyuk, "Image Convolution with CUDA" (NVIDIA, 2007), the
cuda-samples ``convolutionSeparable`` sample: a block of ``BX x BY`` threads stages a strip of
``(STEPS + 2 * HALO) * BX`` pixels per row (its ``STEPS`` output tiles and one halo tile on each
side) in shared memory, each thread loading and storing ``STEPS`` pixels ``BX`` apart; the column
pass is the same with the roles of x and y exchanged.  The filter is an odd-length array of
weights in constant memory, as the sample's ``__constant__ float c_Kernel[KERNEL_LENGTH]``
(which it sets once with ``cudaMemcpyToSymbol``): here the module-level ``WEIGHTS =
const_array(...)``, copied at import and set in each kernel's constant memory when it loads.
Every thread of a warp reads the same tap at once, which constant memory serves as a broadcast.
Pixels outside the image count as zero.

What it exercises: shared stores ``tile[ty, tx + i * BX]`` in a loop (one row of the tile per
thread row, ``STEPS + 2`` elements per thread), global stores of a coarsened thread
``dst[row, x]`` with ``x = col + (i - HALO) * BX`` (``x`` assigned in two loops: each store
sees the assignment that reaches it), a 2-D launch with a ``block_dim`` assert,
zero-padded halos, a filter read from constant memory (a module-level ``const_array``).
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
    const_array,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

RADIUS = 4               # filter half-width: 2 * RADIUS + 1 taps
STEPS = 4                # outputs per thread
HALO = 1                 # halo tiles on each side (HALO * BX >= RADIUS)
ROW_BX = 16              # row pass block: ROW_BX x ROW_BY threads
ROW_BY = 4
COL_BX = 16              # column pass block: COL_BX x COL_BY threads
COL_BY = 8

# f32 sums of 9 products of values in [-1, 1): a few ulps of the largest partial sum.
TOLERANCE = ("abs", 1e-5)


def _filter(radius: int) -> np.ndarray:
    """Random weights summing to 1, as the sample's random taps (its ``rand() % 16``), fixed."""
    weights = np.random.default_rng(2007).uniform(0, 1, 2 * radius + 1)
    return weights / weights.sum()


# The taps in constant memory (f32); both passes read WEIGHTS[RADIUS - j].
WEIGHTS = const_array(_filter(RADIUS), f32, 2 * RADIUS + 1)


@gpu_kernel(Kernel2D)
def convolve_rows_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == ROW_BX and block_dim.y == ROW_BY, "launch with ROW_BX x ROW_BY threads"
    tile = shared_array(f32, (ROW_BY, (STEPS + 2 * HALO) * ROW_BX))
    tx = thread_idx.x
    ty = thread_idx.y
    row = block_idx.y * ROW_BY + ty
    col = block_idx.x * (STEPS * ROW_BX) + tx
    h = src.shape[0]
    w = src.shape[1]
    # Load this thread's pixels of the strip, halo tiles included (zero outside the image).
    for i in range(STEPS + 2 * HALO):
        x = col + (i - HALO) * ROW_BX
        v = f32(0.0)
        if row < h and x >= 0 and x < w:
            v = src[row, x]
        tile[ty, tx + i * ROW_BX] = v
    sync_threads()
    for i in range(HALO, HALO + STEPS):
        total = f32(0.0)
        for j in range(-RADIUS, RADIUS + 1):
            total += WEIGHTS[RADIUS - j] * tile[ty, tx + i * ROW_BX + j]
        x = col + (i - HALO) * ROW_BX
        # x is assigned in both loops: here it holds this loop's value, block_idx.x * (STEPS *
        # ROW_BX) + (i - HALO) * ROW_BX + tx, a mixed-radix number, one per (block, i, tx).
        if row < h and x < w:
            dst[row, x] = total


@gpu_kernel(Kernel2D)
def convolve_columns_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == COL_BX and block_dim.y == COL_BY, "launch with COL_BX x COL_BY threads"
    # One padding column keeps the column walk free of bank conflicts.
    tile = shared_array(f32, (COL_BX, (STEPS + 2 * HALO) * COL_BY + 1))
    tx = thread_idx.x
    ty = thread_idx.y
    col = block_idx.x * COL_BX + tx
    row = block_idx.y * (STEPS * COL_BY) + ty
    h = src.shape[0]
    w = src.shape[1]
    for i in range(STEPS + 2 * HALO):
        y = row + (i - HALO) * COL_BY
        v = f32(0.0)
        if col < w and y >= 0 and y < h:
            v = src[y, col]
        tile[tx, ty + i * COL_BY] = v
    sync_threads()
    for i in range(HALO, HALO + STEPS):
        total = f32(0.0)
        for j in range(-RADIUS, RADIUS + 1):
            total += WEIGHTS[RADIUS - j] * tile[tx, ty + i * COL_BY + j]
        y = row + (i - HALO) * COL_BY
        if col < w and y < h:
            dst[y, col] = total


def convolve_separable(image):
    """Convolve a 2-D f32 device image with ``WEIGHTS`` along rows, then along columns."""
    h, w = image.shape
    tmp = gn.empty((h, w), gn.f32)
    out = gn.empty((h, w), gn.f32)
    poison(tmp)
    poison(out)
    rows_grid = GridDim2D((w + STEPS * ROW_BX - 1) // (STEPS * ROW_BX), (h + ROW_BY - 1) // ROW_BY)
    convolve_rows_kernel.launch(rows_grid, BlockDim2D(ROW_BX, ROW_BY), 0, DEFAULT_STREAM)(
        image, tmp)
    cols_grid = GridDim2D((w + COL_BX - 1) // COL_BX, (h + STEPS * COL_BY - 1) // (STEPS * COL_BY))
    convolve_columns_kernel.launch(cols_grid, BlockDim2D(COL_BX, COL_BY), 0, DEFAULT_STREAM)(
        tmp, out)
    return out


def reference(image: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The same zero-padded separable convolution in float64."""
    img = image.astype(np.float64)
    k = weights.astype(np.float64)
    rows = np.stack([np.convolve(r, k, mode="same") for r in img])
    return np.stack([np.convolve(c, k, mode="same") for c in rows.T]).T


def run(h: int = 45, w: int = 150, seed=None):
    rng = np.random.default_rng(seed)
    image = rng.uniform(-1, 1, (h, w)).astype(np.float32)
    out = convolve_separable(gn.to_device(image))
    return out.to_host(), reference(image, WEIGHTS)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"convolution_separable on {gn.backend()}: {out.shape} image, "
          f"max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
