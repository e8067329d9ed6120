"""f32 GEMM on tensor cores in TF32: C = A @ B with f32 inputs and output, each product taken of
the inputs rounded to tf32 (10 fraction bits, as cuBLAS's TF32 mode and PyTorch's
``allow_tf32`` do), accumulated in f32.

Algorithm (the sm_80 TF32 GEMM of CUTLASS's ``16x8x8`` TF32 kernels, with mma.sync): a block of
4 warps computes a 128 x 128 tile of C; each warp a 64 x 64 sub-tile, as 4 x 8 accumulators of
the 16 x 8 ``mma.m16n8k8`` shape (128 f32 registers).  K is walked in slices of 8 (one
``mma_sync`` deep); a 4-stage ring of shared slices of A (128 x 8) and B (8 x 128) is filled by
``cp_async`` 16-byte copies three slices ahead of the one being multiplied.  ``ldmatrix`` moves
16-bit elements, so each lane loads its tf32 fragments element by element, in the layout
``mma_sync`` documents: A rows g and g + 8 at columns t and t + 4, B column g at rows t and
t + 4 (lane 4g + t).  The shared rows are padded (A: 12 floats, B: 136) so that the 32 lanes of
each such load fall in 32 different banks: 12g + t and 8t + g (mod 32) are distinct.

Sizes: M and N multiples of 128, K a multiple of 8 (the wrapper raises ValueError otherwise);
every access is still bounds checked unless ``bounds_check=False``.  The same algorithm in CUDA
C++ is tools/_bench_hgemm.py's ``SGEMM_TF32_CUDA`` (the benchmark's hand-written comparison).

Tolerance: against a float64 product of the tf32-rounded inputs, f32 accumulation of exact
products (a few f32 ulps times sqrt(K)); against the f32 inputs themselves, tf32 rounding of
each input (relative 2**-11), which is what TF32 mode trades for speed.
"""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim2D,
    Kernel2D,
    block_dim,
    block_idx,
    cp_async,
    cp_async_commit,
    cp_async_wait,
    f32,
    gpu_kernel,
    grid_dim,
    lane_id,
    local_array,
    mma_sync,
    shared_array,
    store_matrix,
    sync_threads,
    thread_idx,
)

BM = 128                  # block tile of C
BN = 128
BK = 8                    # depth of one shared-memory slice: one mma_sync
STAGES = 4                # slices in flight
WM = 64                   # warp tile of C
WN = 64
WARPS_N = BN // WN        # 2 x 2 warps
THREADS = (BM // WM) * WARPS_N * 32
MI = WM // 16             # 16 x 8 accumulators per warp: MI x NJ
NJ = WN // 8
A_ROW = BK + 4            # padded shared rows: conflict-free fragment loads
B_ROW = BN + 8
A_CHUNKS = BM * BK // 4 // THREADS   # 16-byte copies per thread per slice of A
B_CHUNKS = BK * BN // 4 // THREADS


@gpu_kernel(Kernel2D)
def sgemm_tf32_kernel(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    assert block_dim.x == THREADS and block_dim.y == 1, "launch with THREADS x 1 threads"
    # The launcher checks these at every launch; the bounds proofs then drop the checks of
    # every global access (a block's tile lies inside the arrays).
    assert a.shape[0] == grid_dim.y * BM and c.shape[0] == a.shape[0], "M is grid_dim.y * BM"
    assert b.shape[1] == grid_dim.x * BN and c.shape[1] == b.shape[1], "N is grid_dim.x * BN"
    assert b.shape[0] == a.shape[1], "a's columns are b's rows"
    assert a.shape[1] % BK == 0, "K is a multiple of BK"
    tile_a = shared_array(f32, (STAGES, BM, A_ROW))
    tile_b = shared_array(f32, (STAGES, BK, B_ROW))
    frag_a = local_array(f32, (MI, 4))
    frag_b = local_array(f32, (NJ, 2))
    acc = local_array(f32, (MI, NJ, 4))
    tid = thread_idx.x
    lane = lane_id()
    g = lane // 4
    t = lane % 4
    warp = tid // 32
    warp_row = (warp // WARPS_N) * WM
    warp_col = (warp % WARPS_N) * WN
    block_row = block_idx.y * BM
    block_col = block_idx.x * BN
    ktiles = a.shape[1] // BK
    for i in range(MI):
        for j in range(NJ):
            for e in range(4):
                acc[i, j, e] = 0.0
    # Prologue: the first STAGES - 1 slices in flight, one commit group each.
    for s in range(STAGES - 1):
        if s < ktiles:   # K may be shorter than the ring
            for q in range(A_CHUNKS):
                ca = tid + q * THREADS
                ra = ca // 2
                ka = ca % 2
                cp_async(tile_a, (s, ra, ka * 4), a, (block_row + ra, s * BK + ka * 4), 16)
            for q in range(B_CHUNKS):
                cb = tid + q * THREADS
                rb = cb // 32
                nb = cb % 32
                cp_async(tile_b, (s, rb, nb * 4), b, (s * BK + rb, block_col + nb * 4), 16)
        cp_async_commit()
    for kt in range(ktiles):
        cp_async_wait(STAGES - 2)
        sync_threads()
        # Refill the stage every warp finished with in the previous iteration.
        nxt = kt + (STAGES - 1)
        if nxt < ktiles:
            sn = nxt % STAGES
            for q in range(A_CHUNKS):
                ca = tid + q * THREADS
                ra = ca // 2
                ka = ca % 2
                cp_async(tile_a, (sn, ra, ka * 4), a, (block_row + ra, nxt * BK + ka * 4),
                         16)
            for q in range(B_CHUNKS):
                cb = tid + q * THREADS
                rb = cb // 32
                nb = cb % 32
                cp_async(tile_b, (sn, rb, nb * 4), b, (nxt * BK + rb, block_col + nb * 4),
                         16)
        cp_async_commit()
        st = kt % STAGES
        for i in range(MI):
            r = warp_row + i * 16 + g
            frag_a[i, 0] = tile_a[st, r, t]
            frag_a[i, 1] = tile_a[st, r + 8, t]
            frag_a[i, 2] = tile_a[st, r, t + 4]
            frag_a[i, 3] = tile_a[st, r + 8, t + 4]
        for j in range(NJ):
            col = warp_col + j * 8 + g
            frag_b[j, 0] = tile_b[st, t, col]
            frag_b[j, 1] = tile_b[st, t + 4, col]
        for i in range(MI):
            for j in range(NJ):
                mma_sync(acc, (i, j), frag_a, i, frag_b, j)
    for i in range(MI):
        for j in range(NJ):
            # Proven unique, no unsafe block: the origin is the same in every lane of the warp
            #   (it holds tid // 32, never the lane), the 32 lanes write the 128 elements of
            #   the 16 x 8 tile, and origins step by 16 rows (i, warp // WARPS_N * WM, the
            #   block) and 8 columns (j, ...), so no two tiles meet.
            store_matrix(c, (block_row + warp_row + i * 16, block_col + warp_col + j * 8),
                         acc, (i, j))


def sgemm_tf32(a, b, c, stream=DEFAULT_STREAM):
    """``c[...] = a @ b`` for f32 arrays, on tensor cores in TF32."""
    m, k = a.shape
    if b.shape[0] != k or c.shape != (m, b.shape[1]):
        raise ValueError(f"shapes do not multiply: a {a.shape}, b {b.shape}, c {c.shape}")
    if m % BM or c.shape[1] % BN or k % BK:
        raise ValueError(f"sgemm_tf32 needs M and N multiples of {BM}, K of {BK}; got "
                         f"M={m}, N={c.shape[1]}, K={k}")
    grid = GridDim2D(c.shape[1] // BN, m // BM)
    sgemm_tf32_kernel.launch(grid, BlockDim1D(THREADS), 0, stream)(a, b, c)


def run(m: int = 128, k: int = 48, n: int = 128, seed=None):
    """``a @ b`` for random f32 inputs on the current backend, and the float64 product of the
    tf32-rounded inputs (what the tensor cores multiply)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = gn.to_device(np.full((m, n), np.nan, np.float32))
    sgemm_tf32(gn.to_device(a), gn.to_device(b), c)
    return c.to_host().astype(np.float64), tf32_round(a) @ tf32_round(b)


def tf32_round(x: np.ndarray) -> np.ndarray:
    """``x`` (f32) rounded to tf32 as float64: to nearest with 10 fraction bits, ties away from
    zero (``cvt.rna.tf32.f32``; finite inputs far from the f32 limit)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32).astype(
        np.float64)


if __name__ == "__main__":
    result, reference = run()
    err = np.linalg.norm(result - reference) / np.linalg.norm(reference)
    print(f"sgemm_tf32 on {gn.backend()}: relative error {err:.2e} against the tf32 inputs' "
          "product")
