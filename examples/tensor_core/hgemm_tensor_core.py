"""Half-precision GEMM on tensor cores: C = A @ B (f16 or bf16 inputs, f32 accumulation).  Its
fused GEMM + bias + GELU sibling, which no library routine offers in one kernel, is
examples/tensor_core/gemm_bias_gelu.py.

Algorithm (the classic sm_80 "multistage" GEMM, as CUTLASS's and the Triton tutorial's kernels
do it with mma.sync): a block of 4 warps computes a 128 x 128 tile of C; each warp a 64 x 64
sub-tile, as 4 x 8 accumulators of the 16 x 8 ``mma.m16n8k16`` shape (128 f32 registers).  The
K dimension is walked in 32-wide slices; a 3-stage ring of shared-memory slices of A (128 x 32)
and B (32 x 128) is filled by ``cp_async`` 16-byte copies two slices ahead of the one being
multiplied (48 KiB of shared memory).  Each 16-deep step loads the warp's A fragments with
``ldmatrix`` (x4) and its B fragments with ``ldmatrix(..., trans=True)`` (x4: two 8-column
fragments), then issues 32 ``mma_sync``.

Shared layout: rows of 16-byte chunks, the chunk index XOR-swizzled by the row (A: ``chunk ^
((row >> 1) & 3)``, rows of 4 chunks; B: ``chunk ^ (row & 7)``, rows of 16 chunks), so the 8
rows one ``ldmatrix`` matrix reads fall in 8 different 16-byte bank groups (no bank conflicts)
without padding, which would not fit 3 stages in the 48 KiB of static shared memory.

Sizes: M and N multiples of 128, K a multiple of 32 (the wrappers raise ValueError otherwise);
every access is still bounds checked unless ``bounds_check=False``.  The same algorithm in CUDA
C++ is tools/_bench_hgemm.py's ``HGEMM_CUDA`` (the benchmark's hand-written comparison).

Tolerance: the products of f16/bf16 inputs are exact in f32 and accumulate in f32; against a
float64 reference the relative Frobenius error is a few f32 ulps times sqrt(K) for an f32
output, and the output rounding for f16 (2**-11) or bf16 (2**-8) outputs.
"""

from typing import TypeVar

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim2D,
    Kernel2D,
    bf16,
    block_dim,
    block_idx,
    cp_async,
    cp_async_commit,
    cp_async_wait,
    f16,
    f32,
    gpu_kernel,
    grid_dim,
    lane_id,
    ldmatrix,
    local_array,
    mma_sync,
    shared_array,
    store_matrix,
    sync_threads,
    thread_idx,
)

T = TypeVar("T", f16, bf16)   # the input element type
Out = TypeVar("Out", f16, bf16, f32)   # the output element type

BM = 128                  # block tile of C
BN = 128
BK = 32                   # depth of one shared-memory slice
STAGES = 3                # slices in flight
WM = 64                   # warp tile of C
WN = 64
WARPS_N = BN // WN        # 2 x 2 warps
THREADS = (BM // WM) * WARPS_N * 32
MI = WM // 16             # 16 x 8 accumulators per warp: MI x NJ
NJ = WN // 8
A_CHUNKS = BM * BK // 8 // THREADS   # 16-byte copies per thread per slice of A
B_CHUNKS = BK * BN // 8 // THREADS


@gpu_kernel(Kernel2D)
def hgemm_tc_kernel(a: CUDASlice2D[T], b: CUDASlice2D[T], c: CUDASliceMut2D[Out]):
    assert block_dim.x == THREADS and block_dim.y == 1, "launch with THREADS x 1 threads"
    # The launcher checks these at every launch; the bounds proofs then drop the checks of
    # every global access (a block's tile lies inside the arrays).
    assert a.shape[0] == grid_dim.y * BM and c.shape[0] == a.shape[0], "M is grid_dim.y * BM"
    assert b.shape[1] == grid_dim.x * BN and c.shape[1] == b.shape[1], "N is grid_dim.x * BN"
    assert b.shape[0] == a.shape[1], "a's columns are b's rows"
    # With 16-byte aligned arrays (which the launcher checks), every row of a and b then starts
    # on a 16-byte boundary and no cp_async source needs a per-thread alignment check.
    assert a.shape[1] % BK == 0, "K is a multiple of BK"
    tile_a = shared_array(T, (STAGES, BM, BK))  # type: ignore[misc]  # a TypeVar as a dtype
    tile_b = shared_array(T, (STAGES, BK, BN))  # type: ignore[misc]  # a TypeVar as a dtype
    frag_a = local_array(T, (MI, 8))  # type: ignore[misc]  # a TypeVar as a dtype
    frag_b = local_array(T, (NJ, 4))  # type: ignore[misc]  # a TypeVar as a dtype
    acc = local_array(f32, (MI, NJ, 4))
    tid = thread_idx.x
    lane = lane_id()
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
        if s < ktiles:   # K may be a single slice
            for q in range(A_CHUNKS):
                ca = tid + q * THREADS
                ra = ca // 4
                ka = ca % 4
                # Proven unique, no unsafe block: (ra, ka) splits tid + q * THREADS (one value
                #   per (thread, q)), and XOR with (ra >> 1) & 3 permutes row ra's 4 chunks.
                cp_async(tile_a, (s, ra, (ka ^ ((ra >> 1) & 3)) * 8),
                         a, (block_row + ra, s * BK + ka * 8), 16)
            for q in range(B_CHUNKS):
                cb = tid + q * THREADS
                rb = cb // 16
                nb = cb % 16
                cp_async(tile_b, (s, rb, (nb ^ (rb & 7)) * 8),
                         b, (s * BK + rb, block_col + nb * 8), 16)
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
                ra = ca // 4
                ka = ca % 4
                cp_async(tile_a, (sn, ra, (ka ^ ((ra >> 1) & 3)) * 8),
                         a, (block_row + ra, nxt * BK + ka * 8), 16)
            for q in range(B_CHUNKS):
                cb = tid + q * THREADS
                rb = cb // 16
                nb = cb % 16
                cp_async(tile_b, (sn, rb, (nb ^ (rb & 7)) * 8),
                         b, (nxt * BK + rb, block_col + nb * 8), 16)
        cp_async_commit()
        st = kt % STAGES
        for kk in range(BK // 16):
            for i in range(MI):
                r = warp_row + i * 16 + lane % 16
                ch = kk * 2 + lane // 16
                col = (ch ^ ((r >> 1) & 3)) * 8
                ldmatrix(frag_a, i, tile_a, (st, r, col))
            for j in range(NJ // 2):
                rk = kk * 16 + lane % 16
                ch = (warp_col + j * 16) // 8 + lane // 16
                col = (ch ^ (rk & 7)) * 8
                ldmatrix(frag_b, j * 2, tile_b, (st, rk, col), trans=True)
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


def _check_shapes(a, b, c) -> None:
    m, k = a.shape
    if b.shape[0] != k or c.shape != (m, b.shape[1]):
        raise ValueError(f"shapes do not multiply: a {a.shape}, b {b.shape}, c {c.shape}")
    if m % BM or c.shape[1] % BN or k % BK:
        raise ValueError(f"hgemm_tc needs M and N multiples of {BM}, K of {BK}; got "
                         f"M={m}, N={c.shape[1]}, K={k}")


def hgemm_tc(a, b, c, stream=DEFAULT_STREAM):
    """``c[...] = a @ b`` on tensor cores (a, b: f16 or bf16; c: f16, bf16 or f32)."""
    _check_shapes(a, b, c)
    grid = GridDim2D(c.shape[1] // BN, c.shape[0] // BM)
    hgemm_tc_kernel.launch(grid, BlockDim1D(THREADS), 0, stream)(a, b, c)


def run(m: int = 128, k: int = 64, n: int = 128, dtype=f16, out=f32, seed=None):
    """``a @ b`` for random inputs on the current backend, and its float64 reference."""
    rng = np.random.default_rng(seed)
    host = np.float16 if dtype is f16 else np.float32
    a = rng.standard_normal((m, k)).astype(host)
    b = rng.standard_normal((k, n)).astype(host)
    da, db = gn.to_device(a, dtype=dtype), gn.to_device(b, dtype=dtype)
    c = gn.empty((m, n), out)
    hgemm_tc(da, db, c)
    # The reference multiplies the inputs as the kernel sees them (bf16-rounded).
    a64 = da.to_host().astype(np.float64)
    b64 = db.to_host().astype(np.float64)
    return c.to_host().astype(np.float64), a64 @ b64


if __name__ == "__main__":
    result, reference = run()
    err = np.linalg.norm(result - reference) / np.linalg.norm(reference)
    print(f"hgemm_tc on {gn.backend()}: relative error {err:.2e}")
