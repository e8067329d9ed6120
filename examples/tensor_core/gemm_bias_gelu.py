"""A fused GEMM + bias + GELU on tensor cores: ``c = gelu_tanh(a @ b + bias)`` in f16, the
feed-forward layer of a transformer in one kernel (cuBLAS's GEMM stores ``a @ b`` and the bias and
GELU read it back; here they act on the f32 accumulator in registers before the only store).

The GEMM is examples/tensor_core/hgemm_tensor_core.py's (128 x 128 block tile, 4 warps of 64 x 64,
a 3-stage ``cp_async`` ring of XOR-swizzled shared slices, ``ldmatrix`` + ``mma_sync``); only the
epilogue differs: each accumulator element gets ``bias[col]`` added and the tanh approximation of
GELU, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))`` (PyTorch's ``approximate="tanh"``),
in f32, then ``store_matrix`` rounds to f16.  Sizes as there: M and N multiples of 128, K of 32.
The same kernel in CUDA C++ is tools/_bench_hgemm.py's ``gemm_bias_gelu_f16``.
"""

import math

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim2D,
    Kernel2D,
    block_dim,
    block_idx,
    cp_async,
    cp_async_commit,
    cp_async_wait,
    f16,
    f32,
    gpu_device,
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
GELU_C = 0.7978845608028654          # sqrt(2 / pi)


@gpu_device
def gelu_tanh(x: f32) -> f32:
    return f32(0.5) * x * (f32(1.0) + math.tanh(f32(GELU_C) * (x + f32(0.044715) * x * x * x)))


@gpu_kernel(Kernel2D)
def gemm_bias_gelu_kernel(a: CUDASlice2D[f16], b: CUDASlice2D[f16], bias: CUDASlice[f16],
                          c: CUDASliceMut2D[f16]):
    assert block_dim.x == THREADS and block_dim.y == 1, "launch with THREADS x 1 threads"
    # The launcher checks these at every launch; the bounds proofs then drop the checks of
    # every global access (a block's tile lies inside the arrays).
    assert a.shape[0] == grid_dim.y * BM and c.shape[0] == a.shape[0], "M is grid_dim.y * BM"
    assert b.shape[1] == grid_dim.x * BN and c.shape[1] == b.shape[1], "N is grid_dim.x * BN"
    assert bias.shape[0] == b.shape[1] and b.shape[0] == a.shape[1], "shapes multiply"
    # With 16-byte aligned arrays (which the launcher checks), every row of a and b starts on a
    # 16-byte boundary: no cp_async source needs a per-thread alignment check.
    assert a.shape[1] % BK == 0, "K is a multiple of BK"
    tile_a = shared_array(f16, (STAGES, BM, BK))
    tile_b = shared_array(f16, (STAGES, BK, BN))
    frag_a = local_array(f16, (MI, 8))
    frag_b = local_array(f16, (NJ, 4))
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
    # Epilogue: bias and GELU on the accumulator, in f32 registers, before the one store.
    # Accumulator element e of fragment (i, j) is column 2 * (lane % 4) + e % 2 of its 8.
    for j in range(NJ):
        # A name of its own (col is reassigned in the main loop): assigned once, its value is
        # what the bounds proofs see, inside the block's columns.
        out_col = block_col + warp_col + j * 8 + 2 * (lane % 4)
        b0 = f32(bias[out_col])
        b1 = f32(bias[out_col + 1])
        for i in range(MI):
            acc[i, j, 0] = gelu_tanh(acc[i, j, 0] + b0)
            acc[i, j, 1] = gelu_tanh(acc[i, j, 1] + b1)
            acc[i, j, 2] = gelu_tanh(acc[i, j, 2] + b0)
            acc[i, j, 3] = gelu_tanh(acc[i, j, 3] + b1)
    for i in range(MI):
        for j in range(NJ):
            # Proven unique, no unsafe block: the origin is the same in every lane of the warp
            #   (it holds tid // 32, never the lane), the 32 lanes write the 128 elements of
            #   the 16 x 8 tile, and origins step by 16 rows (i, warp // WARPS_N * WM, the
            #   block) and 8 columns (j, ...), so no two tiles meet.
            store_matrix(c, (block_row + warp_row + i * 16, block_col + warp_col + j * 8),
                         acc, (i, j))


def gemm_bias_gelu(a, b, bias, c, stream=DEFAULT_STREAM):
    """``c[...] = gelu_tanh(a @ b + bias)`` on tensor cores (a, b, bias, c: f16; bias of length
    N, added to every row)."""
    m, k = a.shape
    if b.shape[0] != k or c.shape != (m, b.shape[1]) or bias.shape != (b.shape[1],):
        raise ValueError(f"shapes do not fit: a {a.shape}, b {b.shape}, bias {bias.shape}, "
                         f"c {c.shape}")
    if m % BM or c.shape[1] % BN or k % BK:
        raise ValueError(f"gemm_bias_gelu needs M and N multiples of {BM}, K of {BK}; got "
                         f"M={m}, N={c.shape[1]}, K={k}")
    grid = GridDim2D(c.shape[1] // BN, c.shape[0] // BM)
    gemm_bias_gelu_kernel.launch(grid, BlockDim1D(THREADS), 0, stream)(a, b, bias, c)


def reference(a, b, bias):
    """The float64 NumPy ``gelu_tanh(a @ b + bias)`` of host arrays."""
    x = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def run(m: int = 128, k: int = 64, n: int = 128, seed=None):
    """``gelu_tanh(a @ b + bias)`` for random f16 inputs on the current backend, and its float64
    reference."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float16)
    c = gn.empty((m, n), f16)
    gemm_bias_gelu(gn.to_device(a), gn.to_device(b), gn.to_device(bias), c)
    return c.to_host().astype(np.float64), reference(a, b, bias)


if __name__ == "__main__":
    result, expected = run()
    err = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    print(f"gemm_bias_gelu on {gn.backend()}: relative error {err:.2e}")
