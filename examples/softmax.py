"""Row softmax: one block per row; block-wide max and sum through shared memory."""

import math

import numpy as np

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
    shared_array,
    sync_threads,
    thread_idx,
)

THREADS = 256


@gpu_kernel(Kernel1D)
def softmax_kernel(x: CUDASlice2D[f32], y: CUDASliceMut2D[f32]):
    assert block_dim.x == THREADS, "launch softmax_kernel with THREADS threads per block"
    scratch = shared_array(f32, (THREADS,))
    row = block_idx.x
    tid = thread_idx.x
    cols = x.shape[1]
    # Row maximum.
    m = f32(-math.inf)
    for j in range(tid, cols, THREADS):
        m = max(m, x[row, j])
    scratch[tid] = m
    sync_threads()
    s = THREADS // 2
    while s > 0:
        if tid < s:
            scratch[tid] = max(scratch[tid], scratch[tid + s])
        sync_threads()
        s //= 2
    m = scratch[0]
    sync_threads()
    # Sum of exponentials.
    total = f32(0.0)
    for j in range(tid, cols, THREADS):
        total += math.exp(x[row, j] - m)
    scratch[tid] = total
    sync_threads()
    s = THREADS // 2
    while s > 0:
        if tid < s:
            scratch[tid] += scratch[tid + s]
        sync_threads()
        s //= 2
    total = scratch[0]
    for j in range(tid, cols, THREADS):
        y[row, j] = math.exp(x[row, j] - m) / total


def softmax(x, y):
    softmax_kernel.launch(GridDim1D(x.shape[0]), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, y)


def run(rows: int = 64, cols: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    y = gn.empty((rows, cols), gn.f32)
    y.fill(np.nan)
    softmax(gn.to_device(x), y)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return y.to_host(), e / e.sum(axis=1, keepdims=True)


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"softmax on {gn.backend()}: {out.shape}, max |error| {err:.2e}")
    assert err < 1e-6


if __name__ == "__main__":
    main()
