"""A fused GEMM + bias + GELU on Hopper's warpgroup tensor cores: ``c = gelu_tanh(a @ b + bias)``
(f16 or bf16 inputs, bias and output, f32 accumulation), for sm_90 GPUs (H100, H200): the
feed-forward layer of a transformer in one kernel.  A library does it in two: cuBLAS's GEMM
stores ``a @ b + bias`` and a second kernel reads it back for the GELU; here the bias and the
GELU act on the f32 accumulator in registers before the only store.

The GEMM is examples/tensor_core/hgemm_wgmma.py's, line for line (a 128 x 256 block tile, two
warpgroups of 64 x 256 ``warpgroup_mma`` accumulators, a 4-stage ring of 64-deep shared slices
filled by ``tma_load`` from thread 0 two slices ahead, Triton's grouped block order from a 3-D
grid); only the epilogue differs.  After ``warpgroup_wait(0)`` each thread adds ``bias[col]`` to
its accumulator elements and applies the tanh approximation of GELU, ``0.5 x (1 + tanh(y))``
with ``y = sqrt(2/pi) (x + 0.044715 x**3)`` (PyTorch's ``approximate="tanh"``), in f32;
``warpgroup_store`` then rounds to the output type once, through the staging region.  Thread t
of a warpgroup holds the columns ``8j + 2 * (t % 4)`` and the next of its tile in ``acc[4j]``,
``acc[4j + 1]`` (one row) and ``acc[4j + 2]``, ``acc[4j + 3]`` (the row 8 below): each pair of
bias values serves four elements.  The bias reads are proven in bounds (the column is below the
block's 256 and ``bias.shape[0] == b.shape[1]``): like the GEMM, the kernel keeps no bounds
check.

The GELU is spelled ``x / (1 + exp(-2y))``: the same function (``(1 + tanh y) / 2`` is the
logistic sigmoid of ``2y``), with no ``1 + tanh(y)`` to cancel where x is negative, and short
under ``fastmath=True``: ``exp`` on the special-function unit and an approximate division, each
within a few f32 ulps.  The accurate ``math.tanh`` spelling took 3,000 of the kernel's 4,200
SASS instructions a thread, this one 1,400 of 2,600 (the GEMM's are 1,150), yet the two ran
alike on H100s (0.227 and 0.225-0.228 ms at 4096^3, runs 51 and 52): each takes two
special-function operations an element, and those bound the epilogue (docs/benchmarks.md, "The
warpgroup GEMMs on an H200, the fused one, and a fairer timer").

Sizes as there: M a multiple of 128, N of 256, K of 64, rows a multiple of 16 bytes.  The same
kernel in CUDA C++ is tools/tma_probe.py's ``sync4gelu``.

Tolerance: the GEMM's (hgemm_wgmma.py) plus the f32 GELU's few ulps, under the one rounding of
the output (2^-11 relative in f16, 2^-8 in bf16).  The simulator computes ``exp`` and the
division exactly rounded; the GPU's fast versions differ from it by those few ulps.
"""

import math
from typing import TypeVar

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim3D,
    Kernel3D,
    bf16,
    block_dim,
    block_idx,
    f16,
    f32,
    gpu_device,
    gpu_kernel,
    grid_dim,
    local_array,
    shared_array,
    sync_threads,
    thread_idx,
    tma_load,
    tma_wait,
    warpgroup_arrive,
    warpgroup_commit,
    warpgroup_mma,
    warpgroup_store,
    warpgroup_wait,
)

T = TypeVar("T", f16, bf16)   # the element type of a, b, bias and c

BM = 128                  # block tile of C
BN = 256
BK = 64                   # depth of one shared slice
STAGES = 4                # slices in flight
THREADS = 256             # two warpgroups, each 64 rows of the tile
GROUP = 8                 # block rows walked together (Triton's GROUP_SIZE_M)
SHARED_BYTES = STAGES * (BM + BN) * BK * 2 + 1024   # the launch's dynamic shared memory
GELU_C = 0.7978845608028654                         # sqrt(2 / pi)


@gpu_device
def gelu_tanh(x: f32) -> f32:
    # 0.5 x (1 + tanh(y)) = x sigmoid(2y)
    return x / (f32(1.0) + math.exp(f32(-2.0 * GELU_C) * (x + f32(0.044715) * x * x * x)))


@gpu_kernel(Kernel3D, fastmath=True)
def gemm_bias_gelu_wgmma_kernel(a: CUDASlice2D[T], b: CUDASlice2D[T], bias: CUDASlice[T],
                                c: CUDASliceMut2D[T]):
    assert block_dim.x == THREADS and block_dim.y == 1 and block_dim.z == 1, "THREADS threads"
    assert a.shape[0] == grid_dim.z * grid_dim.x * BM and c.shape[0] == a.shape[0], "M tiles"
    assert b.shape[1] == grid_dim.y * BN and c.shape[1] == b.shape[1], "N is grid_dim.y * BN"
    assert b.shape[0] == a.shape[1] and bias.shape[0] == b.shape[1], "shapes multiply"
    assert a.shape[1] % BK == 0, "K is a multiple of BK"
    tile_a = shared_array(T, (STAGES, BM, BK), swizzle=128)  # type: ignore[misc]  # a TypeVar
    tile_b = shared_array(T, (STAGES, BK, BN), swizzle=128)  # type: ignore[misc]  # a TypeVar
    acc = local_array(f32, (BN // 2,))
    tid = thread_idx.x
    wg = tid // 128
    block_row = (block_idx.z * grid_dim.x + block_idx.x) * BM
    block_col = block_idx.y * BN
    ktiles = a.shape[1] // BK
    for i in range(BN // 2):
        acc[i] = 0.0
    if tid == 0:
        for s in range(STAGES - 2):
            if s < ktiles:
                tma_load(tile_a, (s,), a, (block_row, s * BK))
                tma_load(tile_b, (s,), b, (s * BK, block_col))
    for kt in range(ktiles):
        st = kt % STAGES
        tma_wait(tile_a, (st,))
        tma_wait(tile_b, (st,))
        sync_threads()
        nxt = kt + (STAGES - 2)
        if tid == 0 and nxt < ktiles:
            sn = nxt % STAGES
            tma_load(tile_a, (sn,), a, (block_row, nxt * BK))
            tma_load(tile_b, (sn,), b, (nxt * BK, block_col))
        warpgroup_arrive()
        for kk in range(BK // 16):
            warpgroup_mma(acc, tile_a, (st, wg * 64, kk * 16), tile_b, (st, kk * 16, 0), BN)
        warpgroup_commit()
        warpgroup_wait(1)
    warpgroup_wait(0)
    # The epilogue, in f32 registers: acc[4j + e] is column 8j + 2 * (t % 4) + e % 2 of the
    # warpgroup's tile (e < 2 one row, e >= 2 the row 8 below), t the thread's place in it.
    lane4 = 2 * (tid % 4)
    for j in range(BN // 8):
        col = block_col + 8 * j + lane4
        b0 = f32(bias[col])
        b1 = f32(bias[col + 1])
        acc[4 * j] = gelu_tanh(acc[4 * j] + b0)
        acc[4 * j + 1] = gelu_tanh(acc[4 * j + 1] + b1)
        acc[4 * j + 2] = gelu_tanh(acc[4 * j + 2] + b0)
        acc[4 * j + 3] = gelu_tanh(acc[4 * j + 3] + b1)
    # Past this barrier no warpgroup_mma reads the ring: stage wg of tile_b stages warpgroup
    # wg's output (as in hgemm_wgmma.py).
    sync_threads()
    warpgroup_store(c, (block_row + wg * 64, block_col), acc, tile_b, (wg, 0, 0))


def gemm_bias_gelu_wgmma(a, b, bias, c, stream=DEFAULT_STREAM):
    """``c[...] = gelu_tanh(a @ b + bias)`` on Hopper tensor cores (a, b, bias and c all f16 or
    all bf16; bias of length N, added to every row)."""
    m, k = a.shape
    if b.shape[0] != k or c.shape != (m, b.shape[1]) or bias.shape != (b.shape[1],):
        raise ValueError(f"shapes do not fit: a {a.shape}, b {b.shape}, bias {bias.shape}, "
                         f"c {c.shape}")
    if m % BM or c.shape[1] % BN or k % BK:
        raise ValueError(f"gemm_bias_gelu_wgmma needs M a multiple of {BM}, N of {BN}, K of "
                         f"{BK}; got M={m}, N={c.shape[1]}, K={k}")
    rows = m // BM
    group = next(g for g in (GROUP, 4, 2, 1) if rows % g == 0)
    grid = GridDim3D(group, c.shape[1] // BN, rows // group)
    gemm_bias_gelu_wgmma_kernel.launch(grid, BlockDim1D(THREADS), SHARED_BYTES, stream)(
        a, b, bias, c)


def reference(a, b, bias):
    """The float64 NumPy ``gelu_tanh(a @ b + bias)`` of float64 host arrays."""
    x = a @ b + bias
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def run(m: int = 128, k: int = 128, n: int = 256, dtype=f16, seed=None):
    """``gelu_tanh(a @ b + bias)`` for random inputs on the current backend, and its float64
    reference (of the inputs as the kernel sees them, rounded to ``dtype``)."""
    rng = np.random.default_rng(seed)
    host = np.float16 if dtype is f16 else np.float32
    # b scaled by 1/sqrt(K): pre-activations of order 1, where GELU is far from linear.
    a = rng.standard_normal((m, k)).astype(host)
    b = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(host)
    bias = rng.standard_normal(n).astype(host)
    da, db, dbias = (gn.to_device(x, dtype=dtype) for x in (a, b, bias))
    c = gn.empty((m, n), dtype)
    gemm_bias_gelu_wgmma(da, db, dbias, c)
    a64, b64, bias64 = (x.to_host().astype(np.float64) for x in (da, db, dbias))
    return c.to_host().astype(np.float64), reference(a64, b64, bias64)


if __name__ == "__main__":
    result, expected = run()
    err = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    print(f"gemm_bias_gelu_wgmma on {gn.backend()}: relative error {err:.2e}")
