"""Row softmax with one warp per row and several rows (warps) per block.

Source algorithm: the warp-per-row forward softmax of PyTorch
(``aten/src/ATen/native/cuda/PersistentSoftmax.cuh``, ``softmax_warp_forward``) and of
OneFlow's ``SoftmaxWarpImpl``: each warp owns a row, its lanes stride through the row, the
maximum and the sum of exponentials are all-reduced across the warp with butterfly shuffles
(``shfl_xor``), and each lane writes the elements it read.

What it exercises: the warp-per-row mapping ``row = block_idx.x * WARPS + tid // 32`` with a
lane-strided loop ``for j in range(lane, cols, 32): y[row, j] = ...``, ``shfl_xor``
all-reductions, ``math.exp`` on ``f32``.
"""

import math

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shfl_xor,
    thread_idx,
)

WARPS = 4                 # rows per block
THREADS = 32 * WARPS

# Each probability (at most 1) is an f32 exponential (a few ulps) over a row sum of f32 terms,
# 32 lane sums of cols / 32 terms each: at 3000 columns that sum is off by up to ~1e-6 relative
# (8e-7 in a NumPy float32 model of the same order), so an absolute bound with room for that.
TOLERANCE = ("abs", 3e-6)


@gpu_kernel(Kernel1D)
def softmax_warp_kernel(x: CUDASlice2D[f32], y: CUDASliceMut2D[f32]):
    assert block_dim.x == THREADS, "launch softmax_warp_kernel with THREADS threads per block"
    tid = thread_idx.x
    lane = tid % 32
    row = block_idx.x * WARPS + tid // 32
    rows = x.shape[0]
    cols = x.shape[1]
    m = f32(-math.inf)
    if row < rows:
        for j in range(lane, cols, 32):
            m = max(m, x[row, j])
    mask = 16
    while mask > 0:
        m = max(m, shfl_xor(m, mask))
        mask //= 2
    total = f32(0.0)
    if row < rows:
        for j in range(lane, cols, 32):
            total += math.exp(x[row, j] - m)
    mask = 16
    while mask > 0:
        total += shfl_xor(total, mask)
        mask //= 2
    if row < rows:
        for j in range(lane, cols, 32):
            y[row, j] = math.exp(x[row, j] - m) / total


def softmax_warp(x, y):
    rows = x.shape[0]
    blocks = (rows + WARPS - 1) // WARPS
    softmax_warp_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, y)


def run(rows: int = 37, cols: int = 200, seed=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    y = gn.empty((rows, cols), gn.f32)
    poison(y)
    softmax_warp(gn.to_device(x), y)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return y.to_host(), e / e.sum(axis=1, keepdims=True)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"softmax_warp on {gn.backend()}: {out.shape}, max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
