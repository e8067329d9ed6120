"""The standard race-free CUDA idioms, written without `unsafe` (tests/test_unique_idioms.py
launches them)."""

from gpu_native import (
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout2D,
    Kernel1D,
    Kernel2D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    grid_dim,
    i32,
    shared_array,
    shfl_down,
    sync_threads,
    thread_idx,
)

HALF = 128
BX = 16
K = 4
WARPS = 4
ITERS = 3


@gpu_kernel(Kernel1D)
def reverse_pairs(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """Two stores per thread at disjoint offsets (bitonic sort, Blelloch scan): each block
    reverses its 2 * HALF elements."""
    assert block_dim.x == HALF
    s = shared_array(i32, 2 * HALF)
    tid = thread_idx.x
    base = block_idx.x * (2 * HALF)
    s[tid] = x[base + tid]
    s[tid + HALF] = x[base + tid + HALF]
    sync_threads()
    out[base + tid] = s[2 * HALF - 1 - tid]
    out[base + tid + HALF] = s[HALF - 1 - tid]


@gpu_kernel(Kernel2D)
def coarsened_double(x: CUDASlice2D[i32], out: CUDASliceMut2D[i32]):
    """Thread coarsening: K outputs per thread at stride BX, staged through a 2-D tile."""
    assert block_dim.x == BX
    tile = shared_array(i32, (8, BX * K))
    tx = thread_idx.x
    ty = thread_idx.y
    row = block_idx.y * block_dim.y + ty
    col = block_idx.x * (BX * K) + tx
    for i in range(K):
        tile[ty, tx + i * BX] = x[row, col + i * BX] * 2
    sync_threads()
    for i in range(K):
        out[row, col + i * BX] = tile[ty, tx + i * BX] + 1


@gpu_kernel(Kernel1D)
def warp_sums(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """One writer per warp: lane 0 of each warp, then the lanes of warp 0."""
    assert block_dim.x == WARPS * 32
    partial = shared_array(i32, WARPS)
    tid = thread_idx.x
    lane = tid % 32
    wid = tid // 32
    v = x[block_idx.x * (WARPS * 32) + tid]
    offset = 16
    while offset > 0:
        v += shfl_down(v, offset)
        offset //= 2
    if lane == 0:
        partial[wid] = v
    sync_threads()
    if wid == 0 and lane < WARPS:
        out[block_idx.x * WARPS + lane] = partial[lane]


@gpu_kernel(Kernel1D)
def warp_leaders(out: CUDASliceMut[i32]):
    """The bit forms: lane = tid & 31, warp = tid >> 5 (the block size from the hardware)."""
    tid = thread_idx.x
    if tid & 31 == 0:
        out[block_idx.x * 32 + (tid >> 5)] = tid


@gpu_kernel(Kernel1D)
def warp_per_row(x: CUDASlice2D[i32], y: CUDASliceMut2D[i32]):
    """A warp per row, several warps per block, each lane ITERS columns apart."""
    assert block_dim.x == WARPS * 32
    tid = thread_idx.x
    lane = tid % 32
    wid = tid // 32
    row = block_idx.x * WARPS + wid
    for it in range(ITERS):
        y[row, lane + it * 32] = x[row, lane + it * 32] * 3


@gpu_kernel(Kernel1D)
def transposed_counts(counts: CUDASliceMut[i32]):
    """Radix-sort histograms: thread t of block b owns counts[t * grid_dim.x + b]."""
    tid = thread_idx.x
    counts[tid * grid_dim.x + block_idx.x] = block_idx.x * 1000 + tid


@gpu_kernel(Kernel1D)
def single_block_stride(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """A single block strides over the whole array."""
    assert grid_dim.x == 1
    for i in range(thread_idx.x, len(out), block_dim.x):
        out[i] = x[i] + 1


@gpu_kernel(Kernel2D)
def halo_shift(x: CUDASlice2D[i32], out: CUDASliceMut2D[i32]):
    """A halo column beside the centre columns (stencils): thread 0 of each row writes tile[ty,
    0], every thread tile[ty, tx + 1] >= 1; the two ranges never meet."""
    assert block_dim.x == BX and block_dim.y == 8
    tile = shared_array(i32, (8, BX + 1))
    tx = thread_idx.x
    ty = thread_idx.y
    row = block_idx.y * block_dim.y + ty
    col = block_idx.x * BX + tx
    tile[ty, tx + 1] = x[row, col]
    if tx == 0:
        tile[ty, 0] = -7
    sync_threads()
    out[row, col] = tile[ty, tx]


@gpu_kernel(Kernel2D)
def red_black(u: CUDASliceMut2D[f32], colour: i32):
    """An in-place red-black half-sweep: the cells with (x + y) % 2 == colour are written, their
    four neighbours (the other colour) read."""
    x, y = FlatLayout2D.uid()
    if y > 0 and y < u.shape[0] - 1 and x > 0 and x < u.shape[1] - 1 and (x + y) % 2 == colour:
        u[y, x] = 0.25 * (u[y - 1, x] + u[y + 1, x] + u[y, x - 1] + u[y, x + 1])


CHUNK = 4


@gpu_kernel(Kernel1D)
def chunked(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """Thread coarsening as PMPP writes it: each thread owns the CHUNK elements from
    t * CHUNK, walked by a range whose stop is its start plus CHUNK."""
    t = block_idx.x * block_dim.x + thread_idx.x
    for j in range(t * CHUNK, (t + 1) * CHUNK):
        if j < len(out):
            out[j] = x[j] * 3


@gpu_kernel(Kernel1D)
def chunked_clamped(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """The same chunk clamped to the array's end by min(), and stepped by 2 over a chunk of
    2 * CHUNK (the odd elements stay as they were)."""
    t = block_idx.x * block_dim.x + thread_idx.x
    for j in range(t * 2 * CHUNK, min((t + 1) * 2 * CHUNK, len(out)), 2):
        out[j] = x[j] + 1


@gpu_kernel(Kernel2D)
def border_flat(src: CUDASlice2D[f32], out: CUDASliceMut[f32]):
    """An image filter on a flat output, as image code is written: the interior under one
    condition, the border under an `elif`, one index (`y * w + x`) for both."""
    x = block_idx.x * block_dim.x + thread_idx.x
    y = block_idx.y * block_dim.y + thread_idx.y
    w = src.shape[1]
    if x > 0 and x < w - 1 and y < src.shape[0]:
        out[y * w + x] = src[y, x - 1] + src[y, x + 1]
    elif x < w and y < src.shape[0]:
        out[y * w + x] = -1.0


@gpu_kernel(Kernel2D)
def border_param(out: CUDASliceMut[i32], w: i32, h: i32):
    """The same with the width a parameter: `x + 1 < w` (not `x < w - 1`, which may wrap)."""
    x = block_idx.x * block_dim.x + thread_idx.x
    y = block_idx.y * block_dim.y + thread_idx.y
    if x + 1 < w and y < h:
        out[y * w + x] = 1
    elif x < w and y < h:
        out[y * w + x] = 2


NW = 16


@gpu_kernel(Kernel1D)
def antidiagonals(out: CUDASliceMut[i32]):
    """Rodinia nw's sweep of a tile: the anti-diagonals top-left to the middle, then the rest,
    thread tx on row tx of each, a barrier after each; the second half's column is a local
    computed in the loop (the facts where it is computed keep it from wrapping)."""
    assert block_dim.x == NW
    tx = thread_idx.x
    t = shared_array(i32, (NW + 1, 2 * NW + 1))
    for m in range(NW):
        if tx <= m:
            t[m - tx + 1, tx + 1] = m + 1
        sync_threads()
    for m in range(NW - 1):
        if tx <= m:
            x = tx + NW - m
            t[NW - tx, x] = 100 + m
        sync_threads()
    for c in range(2 * NW + 1):
        if tx + 1 <= NW:
            out[block_idx.x * (NW * (2 * NW + 1)) + tx * (2 * NW + 1) + c] = t[tx + 1, c]
