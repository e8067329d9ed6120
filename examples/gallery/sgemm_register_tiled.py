"""SGEMM C = A @ B with shared-memory block tiles and a TM x TN register tile per thread.

Source algorithm: the "2D blocktiling" kernel of S. Boehm, "How to Optimize a CUDA Matmul Kernel
for cuBLAS-like Performance: a Worklog" (2022, kernel 5), after V. Volkov and J. Demmel,
"Benchmarking GPUs to Tune Dense Linear Algebra" (SC 2008): a block computes a BM x BN tile of
C, staging BM x BK slices of A and BK x BN slices of B in shared memory (each thread loading
several elements, spread over the tile by its flat thread index), and each thread accumulates
a TM x TN sub-tile of C in registers from TM values of A and TN values of B per k.

What it exercises: several outputs per thread ``c[row0 + i, col0 + j]`` with
``row0 = block_idx.y * BM + ty * TM``, shared tile loads through a flat index split with ``//``
and ``%`` (proven unique: the flat index is one value per thread and load), 2-D
``local_array`` accumulators, bounds guards for sizes that are not multiples of the tile.
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
    local_array,
    shared_array,
    sync_threads,
    thread_idx,
)

BM = 64                   # block tile of C: BM x BN
BN = 64
BK = 8                    # depth of the shared slices of A and B
TM = 4                    # register tile of C per thread: TM x TN
TN = 4
TX = BN // TN             # threads per block: TX x TY
TY = BM // TM
THREADS = TX * TY

# f32 dot products of length k: relative Frobenius error of a few ulps times sqrt(k).
TOLERANCE = ("norm", 1e-5)


@gpu_kernel(Kernel2D)
def sgemm_register_tiled_kernel(a: CUDASlice2D[f32], b: CUDASlice2D[f32],
                                c: CUDASliceMut2D[f32]):
    assert block_dim.x == TX and block_dim.y == TY, "launch with TX x TY threads per block"
    # The shape contract, checked by the launcher once per launch: with it, the guards below
    # (against c's extents and a's depth) bound the loads of a and b as well.
    assert a.shape[0] == c.shape[0] and b.shape[1] == c.shape[1], "a @ b has c's shape"
    assert b.shape[0] == a.shape[1], "a's columns are b's rows"
    # The grid covers c's columns (as the wrapper launches it): the launcher then keeps
    # grid_dim.x * BN within i32, so no column index block_idx.x * BN + col can wrap.
    assert grid_dim.x * BN >= c.shape[1], "the grid covers c's columns"
    tile_a = shared_array(f32, (BM, BK))
    tile_b = shared_array(f32, (BK, BN))
    tx = thread_idx.x
    ty = thread_idx.y
    tid = ty * TX + tx
    m = c.shape[0]
    n = c.shape[1]
    depth = a.shape[1]
    block_row = block_idx.y * BM
    block_col = block_idx.x * BN
    acc = local_array(f32, (TM, TN))
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = 0.0
    reg_a = local_array(f32, (TM,))
    reg_b = local_array(f32, (TN,))
    for k0 in range(0, depth, BK):
        # Each thread loads BM * BK / THREADS elements of A and as many of B.
        for load in range(BM * BK // THREADS):
            flat_a = tid + load * THREADS
            r = flat_a // BK
            ka = flat_a % BK
            v = f32(0.0)
            if block_row + r < m and k0 + ka < depth:
                v = a[block_row + r, k0 + ka]
            # Proven unique (R6): flat_a = ty * TX + tx + load * THREADS is one value per
            #   (thread, load), since tid = ty * TX + tx < THREADS (the assert), and
            #   (flat_a // BK, flat_a % BK) is one element per flat_a.
            tile_a[r, ka] = v
        for load in range(BK * BN // THREADS):
            flat_b = tid + load * THREADS
            kb = flat_b // BN
            col = flat_b % BN
            v = f32(0.0)
            if k0 + kb < depth and block_col + col < n:
                v = b[k0 + kb, block_col + col]
            # Proven unique as for tile_a: one flat_b per (thread, load), split by BN.
            tile_b[kb, col] = v
        sync_threads()
        for k in range(BK):
            for i in range(TM):
                reg_a[i] = tile_a[ty * TM + i, k]
            for j in range(TN):
                reg_b[j] = tile_b[k, tx * TN + j]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += reg_a[i] * reg_b[j]
        sync_threads()
    row0 = block_row + ty * TM
    col0 = block_col + tx * TN
    for i in range(TM):
        for j in range(TN):
            if row0 + i < m and col0 + j < n:
                c[row0 + i, col0 + j] = acc[i, j]


def sgemm_register_tiled(a, b, c):
    m, n = c.shape
    grid = GridDim2D((n + BN - 1) // BN, (m + BM - 1) // BM)
    sgemm_register_tiled_kernel.launch(grid, BlockDim2D(TX, TY), 0, DEFAULT_STREAM)(a, b, c)


def run(m: int = 100, k: int = 70, n: int = 90, seed=None):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = gn.empty((m, n), gn.f32)
    poison(c)
    sgemm_register_tiled(gn.to_device(a), gn.to_device(b), c)
    return c.to_host(), a.astype(np.float64) @ b.astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"sgemm_register_tiled on {gn.backend()}: {out.shape}, relative error {rel:.2e}")


if __name__ == "__main__":
    main()
