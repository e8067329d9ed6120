"""Row-major stores whose column a condition bounds, written the way CUDA programmers write
them (tests/check/test_guarded_indices.py launches them): no ``unsafe``, and no launch check
that the row length covers the grid."""

from gpu_native import (
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    Kernel2D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    i32,
    thread_idx,
)


@gpu_kernel(Kernel2D)
def square_rows(a: CUDASlice[f32], c: CUDASliceMut[f32], n: i32):
    """The naive matrix kernel's indexing: an n x n matrix, any grid that covers it."""
    col = block_idx.x * block_dim.x + thread_idx.x
    row = block_idx.y * block_dim.y + thread_idx.y
    if row < n and col < n:
        c[row * n + col] = a[row * n + col] * 2.0 + 1.0


@gpu_kernel(Kernel2D)
def flatten(a: CUDASlice2D[f32], b: CUDASliceMut[f32]):
    """A 2-D array written out row-major, its width from its shape."""
    h, w = a.shape
    x = block_idx.x * block_dim.x + thread_idx.x
    y = block_idx.y * block_dim.y + thread_idx.y
    if x < w and y < h:
        b[y * w + x] = a[y, x]


@gpu_kernel(Kernel1D)
def block_per_row(a: CUDASlice[f32], b: CUDASliceMut[f32], cols: i32):
    """A block per row, its threads striding along the row."""
    row = block_idx.x
    for j in range(thread_idx.x, cols, block_dim.x):
        b[row * cols + j] = a[row * cols + j] + 1.0


@gpu_kernel(Kernel1D)
def thread_per_row(a: CUDASlice2D[f32], out: CUDASliceMut[f32]):
    """A thread per row, walking its row."""
    i = FlatLayout1D.uid()
    if i < a.shape[0]:
        for j in range(a.shape[1]):
            out[i * a.shape[1] + j] = a[i, j] * 3.0


@gpu_kernel(Kernel1D)
def thread_per_row_k(a: CUDASlice[f32], out: CUDASliceMut[f32], k: i32):
    """A thread per row of k elements, the row length a parameter."""
    i = FlatLayout1D.uid()
    for j in range(k):
        out[i * k + j] = a[i * k + j] - 1.0


@gpu_kernel(Kernel1D)
def warp_rows(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    """A warp per row, its lane 0 writing; the warps per block from the asserted block size."""
    assert block_dim.x == 128
    row = block_idx.x * (block_dim.x // 32) + thread_idx.x // 32
    if thread_idx.x % 32 == 0 and row < len(y):
        y[row] = x[row] * 2.0


@gpu_kernel(Kernel1D)
def warp_rows_whole_warps(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    """A warp per row with any block of whole warps: ``block_dim.x // 32`` warps per block."""
    assert block_dim.x % 32 == 0
    warps = block_dim.x // 32
    row = block_idx.x * warps + (thread_idx.x >> 5)
    if thread_idx.x & 31 == 0 and row < len(y):
        y[row] = x[row] * 2.0


@gpu_kernel(Kernel1D)
def warp_pairs_whole_warps(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    """Two outputs per warp, ``2 * (block_dim.x // 32)`` per block: a multiple of the
    quotient the assert names (``block_dim.x // 16`` under ``% 64 == 0``)."""
    assert block_dim.x % 64 == 0
    slot = block_idx.x * (block_dim.x // 16) + (thread_idx.x // 32) * 2
    if thread_idx.x % 32 == 0 and slot + 1 < len(y):
        y[slot] = x[slot] * 2.0
        y[slot + 1] = x[slot + 1] * 2.0


@gpu_kernel(Kernel1D)
def flatten_grid_stride(a: CUDASlice2D[f32], b: CUDASliceMut2D[f32]):
    """A grid-stride loop over the elements of a 2-D array, split into row and column."""
    h, w = a.shape
    for idx in FlatLayout1D.grid_stride(h * w):
        b[idx // w, idx % w] = a[idx // w, idx % w] + 1.0
