"""Sum reduction in two levels: warp shuffles, then one partial per warp in shared memory, then
the first warp reduces the partials; a second launch of one block adds the per-block sums.

Source algorithm: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007), with the
warp-shuffle form of J. Luitjens, "Faster Parallel Reductions on Kepler" (NVIDIA developer blog,
2014): ``lane = tid % 32; wid = tid // 32``, each warp reduces with ``shfl_down``,
``if lane == 0: partial[wid] = v``, and after a barrier the first warp reduces the partials
and thread 0 writes the block's sum (``if threadIdx.x == 0: out[blockIdx.x] = sum``).

What it exercises: the per-warp partial store ``partial[wid]`` by lane 0, the block's result
written by ``thread_idx.x == 0``, a ``@gpu_device`` warp reduction, a grid-stride loop, and the
same kernel launched again as a single block over the partial sums.
"""

import numpy as np
from _gallery import compare, poison

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
    gpu_device,
    gpu_kernel,
    shared_array,
    shfl_down,
    sync_threads,
    thread_idx,
)

THREADS = 256
WARPS = THREADS // 32

# A sum of n standard normal f32 values, added in f32 in tree order: relative to 1 + |sum|.
TOLERANCE = ("rel", 1e-4)


@gpu_device
def warp_sum(v: f32) -> f32:
    offset = 16
    while offset > 0:
        v += shfl_down(v, offset)
        offset //= 2
    return v


@gpu_kernel(Kernel1D)
def block_sum_kernel(x: CUDASlice[f32], sums: CUDASliceMut[f32]):
    assert block_dim.x == THREADS, "launch block_sum_kernel with THREADS threads per block"
    partial = shared_array(f32, (WARPS,))
    tid = thread_idx.x
    lane = tid % 32
    wid = tid // 32
    v = f32(0.0)
    for i in FlatLayout1D.grid_stride(len(x)):
        v += x[i]
    v = warp_sum(v)
    if lane == 0:
        partial[wid] = v
    sync_threads()
    v = f32(0.0)
    if tid < WARPS:
        v = partial[lane]
    if wid == 0:
        v = warp_sum(v)
    if tid == 0:
        sums[block_idx.x] = v


def device_sum(x, blocks: int = 40):
    """The sum of an f32 device array, as a one-element device array."""
    partial = gn.empty(blocks, gn.f32)
    total = gn.empty(1, gn.f32)
    poison(partial)
    poison(total)
    block_sum_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, partial)
    block_sum_kernel.launch(GridDim1D(1), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(partial, total)
    return total


def run(n: int = 100_003, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    total = device_sum(gn.to_device(x))
    return total.to_host(), np.array([x.astype(np.float64).sum()])


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"reduce_warp_partials on {gn.backend()}: sum {out[0]:.4f}, reference {ref[0]:.4f}")


if __name__ == "__main__":
    main()
