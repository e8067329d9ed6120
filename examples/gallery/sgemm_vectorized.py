"""SGEMM C = A @ B with 16-byte loads, a transposed A tile, 8 x 8 outputs per thread and
double-buffered shared tiles.

Source algorithm: the later kernels of S. Boehm, "How to Optimize a CUDA Matmul Kernel for
cuBLAS-like Performance: a Worklog" (2022): kernel 6 (vectorised global and shared accesses,
the A tile stored transposed so that a thread's column of A is contiguous in shared memory), with
the 128 x 128 x 8 block tile and 256 threads of his kernels 6 to 9, and the prefetch of his
kernel 12 (double buffering): each thread reads the next slices of A and B into registers before
it multiplies the current ones, and stores them into the other half of each shared array, so one
barrier per step suffices.  As in V. Volkov and J. Demmel, "Benchmarking GPUs to Tune Dense
Linear Algebra" (SC 2008), a thread's 8 x 8 outputs are four 4 x 4 quadrants 64 rows and 64
columns apart, so the 16 threads of a half-warp read 16 consecutive ``vec4f`` of the B tile
(no bank conflicts) and the 4 x 4 quadrants of C they write are contiguous rows of 64 floats.

What it exercises: ``load_vec4`` from global arrays (proven: the first element by its guard,
all four and the 16-byte alignment by the shape contract, N and K multiples of 4, with the
launcher checking the arrays' addresses; the columns' sums with ``block_idx.x * BN`` by the
assert that the grid covers c, which keeps ``grid_dim.x * BN`` within i32) and from a shared ``f32`` array (proven: rows of 128, an index ``ty * 4 +
64 * h``), a shared array of ``vec4f``, per-thread register arrays under constant-trip loops,
shared stores through ``tid // 2`` / ``tid % 2`` and ``tid // 32`` / ``tid % 32`` (one thread
coordinate split by a constant), a buffer index that alternates with the loop, coarsened
stores ``c[row0 + i, col0 + j]``, all proven without ``unsafe``, and an ``unroll(range(BK))``
inner product (straight-line code, as the hand-written CUDA's ``#pragma unroll``).

Shapes: any M; N and K multiples of 4 (the rows of A and B are read 16 bytes at a time: with
other widths their starts are not 16-byte aligned).  Out-of-range rows and columns of the last
tiles read as zero and are not written.
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
    load_vec4,
    local_array,
    shared_array,
    sync_threads,
    thread_idx,
    unroll,
    vec4f,
)

BM = 128                  # block tile of C: BM x BN
BN = 128
BK = 8                    # depth of the shared slices of A and B
THREADS = 256             # 16 x 16 threads, each with 8 x 8 outputs
TX = 16                   # threads along a row of the block tile
HALF = 64                 # the distance between a thread's two row (and column) quadrants

# f32 dot products of length k: relative Frobenius error of a few ulps times sqrt(k).
TOLERANCE = ("norm", 1e-5)


# 128 registers: two blocks of 256 threads fit on a multiprocessor (65536 registers).
@gpu_kernel(Kernel2D, max_registers=128)
def sgemm_vectorized_kernel(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    assert block_dim.x == THREADS and block_dim.y == 1, "launch with 256 x 1 threads per block"
    # The launcher checks these at every launch (any M; N and K multiples of 4, see the
    # wrapper). With them, and 16-byte aligned a and b (which it checks too), every vec4f load
    # of a row is proven aligned and, once its first element is in bounds, all four are.
    assert a.shape[0] == c.shape[0] and b.shape[1] == c.shape[1], "a and b fit c"
    assert b.shape[0] == a.shape[1], "a's columns are b's rows"
    # The grid covers c (as the wrapper launches it); the launcher then also keeps
    # grid_dim.x * BN within int32, so no column index below wraps.
    assert grid_dim.x * BN >= c.shape[1], "the grid covers c's columns"
    assert a.shape[1] % 4 == 0 and b.shape[1] % 4 == 0, "N and K are multiples of 4"
    # Two buffers of each tile: A transposed (k, row), B as rows of vec4f (k, column / 4).
    tile_a = shared_array(f32, (2, BK, BM))
    tile_b = shared_array(vec4f, (2, BK, BN // 4))
    tid = thread_idx.x
    tx = tid % TX
    ty = tid // TX
    m = c.shape[0]
    n = c.shape[1]
    depth = a.shape[1]
    block_row = block_idx.y * BM
    block_col = block_idx.x * BN
    # What this thread loads of each slice: one vec4f of A (row a_row, columns a_k .. a_k + 3)
    # and one of B (row b_k, columns b_col .. b_col + 3).
    a_row = tid // 2
    a_k = (tid % 2) * 4
    b_k = tid // 32
    b_c4 = tid % 32
    b_col = b_c4 * 4
    acc = local_array(f32, (8, 8))
    for i in range(8):
        for j in range(8):
            acc[i, j] = 0.0
    reg_a = local_array(f32, (8,))
    reg_b = local_array(f32, (8,))
    steps = (depth + BK - 1) // BK
    # Step s loads slice s into buffer s % 2 (while s < steps) and multiplies slice s - 1 from
    # the other buffer (from s = 1); two steps per turn, so the buffer is a loop counter.
    for turn in range(0, steps + 1, 2):
        for buf in range(2):
            step = turn + buf
            k0 = step * BK
            va = vec4f()
            vb = vec4f()
            if step < steps:
                # Each guard against the extents of the array it reads (equal to c's, by the
                # asserts above): what the bounds proofs compare with.
                if block_row + a_row < a.shape[0] and k0 + a_k < depth:
                    va = load_vec4(a, block_row + a_row, k0 + a_k)
                if k0 + b_k < b.shape[0] and block_col + b_col < b.shape[1]:
                    vb = load_vec4(b, k0 + b_k, block_col + b_col)
            if step > 0 and step <= steps:
                prev = 1 - buf
                # Unrolled, as the hand-written CUDA's `#pragma unroll`: straight-line loads and
                # 512 FMAs (the device compiler leaves the 8 steps rolled otherwise).
                for k in unroll(range(BK)):
                    a_lo = load_vec4(tile_a, prev, k, ty * 4)
                    a_hi = load_vec4(tile_a, prev, k, ty * 4 + HALF)
                    b_lo = tile_b[prev, k, tx]
                    b_hi = tile_b[prev, k, tx + TX]
                    reg_a[0] = a_lo.x
                    reg_a[1] = a_lo.y
                    reg_a[2] = a_lo.z
                    reg_a[3] = a_lo.w
                    reg_a[4] = a_hi.x
                    reg_a[5] = a_hi.y
                    reg_a[6] = a_hi.z
                    reg_a[7] = a_hi.w
                    reg_b[0] = b_lo.x
                    reg_b[1] = b_lo.y
                    reg_b[2] = b_lo.z
                    reg_b[3] = b_lo.w
                    reg_b[4] = b_hi.x
                    reg_b[5] = b_hi.y
                    reg_b[6] = b_hi.z
                    reg_b[7] = b_hi.w
                    for i in range(8):
                        for j in range(8):
                            acc[i, j] += reg_a[i] * reg_b[j]
            if step < steps:
                # Into the other buffer than the one just read: no barrier between the two.
                tile_a[buf, a_k, a_row] = va.x
                tile_a[buf, a_k + 1, a_row] = va.y
                tile_a[buf, a_k + 2, a_row] = va.z
                tile_a[buf, a_k + 3, a_row] = va.w
                tile_b[buf, b_k, b_c4] = vb
            sync_threads()
    for hi in range(2):
        for i in range(4):
            row = block_row + ty * 4 + hi * HALF + i
            for hj in range(2):
                for j in range(4):
                    col = block_col + tx * 4 + hj * HALF + j
                    if row < m and col < n:
                        c[row, col] = acc[hi * 4 + i, hj * 4 + j]


def sgemm_vectorized(a, b, c):
    """``c = a @ b`` for ``(m, k)``, ``(k, n)`` and ``(m, n)`` f32 arrays, ``n`` and ``k``
    multiples of 4."""
    m, n = c.shape
    depth = a.shape[1]
    if n % 4 or depth % 4:
        raise ValueError(f"sgemm_vectorized needs n and k multiples of 4, not n={n}, k={depth}")
    grid = GridDim2D((n + BN - 1) // BN, (m + BM - 1) // BM)
    sgemm_vectorized_kernel.launch(grid, BlockDim2D(THREADS, 1), 0, DEFAULT_STREAM)(a, b, c)


def run(m: int = 200, k: int = 52, n: int = 136, seed=None):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = gn.empty((m, n), gn.f32)
    poison(c)
    sgemm_vectorized(gn.to_device(a), gn.to_device(b), c)
    return c.to_host(), a.astype(np.float64) @ b.astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"sgemm_vectorized on {gn.backend()}: {out.shape}, relative error {rel:.2e}")


if __name__ == "__main__":
    main()
