"""Sum reduction: a shared-memory tree inside each block, then warp shuffles, then one partial
sum per block (written by a single thread).  The host adds the partial sums."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    shfl_down,
    sync_threads,
    thread_idx,
)

THREADS = 256


@gpu_kernel(Kernel1D)
def block_sum_kernel(x: CUDASlice[f32], partial: CUDASliceMut[f32]):
    assert block_dim.x == THREADS, "launch block_sum_kernel with THREADS threads per block"
    cache = shared_array(f32, (THREADS,))
    tid = thread_idx.x
    total = f32(0.0)
    for i in FlatLayout1D.grid_stride(len(x)):
        total += x[i]
    cache[tid] = total
    sync_threads()
    s = THREADS // 2
    while s > 32:
        if tid < s:
            cache[tid] += cache[tid + s]
        sync_threads()
        s //= 2
    if tid < 32:
        v = cache[tid] + cache[tid + 32]
        offset = 16
        while offset > 0:
            v += shfl_down(v, offset)
            offset //= 2
        if tid == 0:
            partial[block_idx.x] = v


def device_sum(x, blocks: int = 264) -> float:
    partial = gn.empty(blocks, gn.f32)
    block_sum_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, partial)
    return float(partial.to_host().astype(np.float64).sum())


def run(n: int = 1 << 20, seed=None):
    rng = np.random.default_rng(seed)
    x_host = rng.standard_normal(n, dtype=np.float32)
    return device_sum(gn.to_device(x_host), blocks=64), float(x_host.astype(np.float64).sum())


def main():
    total, ref = run()
    print(f"block_reduce on {gn.backend()}: sum = {total:.4f}, reference = {ref:.4f}")
    assert abs(total - ref) <= 1e-3 * (1 + abs(ref))


if __name__ == "__main__":
    main()
