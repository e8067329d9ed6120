"""Argmax of a large f32 array: the maximum and the first index where it occurs, by a
grid-stride scan per thread, a (value, index) tree in shared memory per block, and a second
kernel of one block over the block results.

Source algorithm: the two-pass tree reduction of M. Harris, "Optimizing Parallel Reduction in
CUDA" (NVIDIA, 2007), carrying a (value, index) pair with the tie-break of ``numpy.argmax`` and
``torch.argmax`` (the smallest index among equal maxima), as in the key-value reductions of
CUB's ``DeviceReduce::ArgMax``.

What it exercises: two shared arrays updated together, a comparison with a tie-break, the block
result written by ``thread_idx.x == 0`` into ``partial_value[block_idx.x]`` and
``partial_index[block_idx.x]``, ``i64`` indices, two kernels chained on the host.
"""

import math

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
    gpu_kernel,
    grid_dim,
    i64,
    shared_array,
    sync_threads,
    thread_idx,
)

THREADS = 256
NO_INDEX = (1 << 62)      # larger than any index: loses every tie

# The maximum is one of the inputs and the index is an integer: exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def argmax_blocks_kernel(x: CUDASlice[f32], partial_value: CUDASliceMut[f32],
                         partial_index: CUDASliceMut[i64]):
    assert block_dim.x == THREADS, "launch argmax_blocks_kernel with THREADS threads per block"
    s_value = shared_array(f32, (THREADS,))
    s_index = shared_array(i64, (THREADS,))
    tid = thread_idx.x
    best = f32(-math.inf)
    best_index = i64(NO_INDEX)
    for i in FlatLayout1D.grid_stride(len(x)):
        if x[i] > best:             # strictly greater: the first index of a tie stays
            best = x[i]
            best_index = i
    s_value[tid] = best
    s_index[tid] = best_index
    stride = THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            v = s_value[tid + stride]
            j = s_index[tid + stride]
            if v > s_value[tid] or (v == s_value[tid] and j < s_index[tid]):
                s_value[tid] = v
                s_index[tid] = j
        stride //= 2
    if tid == 0:
        partial_value[block_idx.x] = s_value[0]
        partial_index[block_idx.x] = s_index[0]


@gpu_kernel(Kernel1D)
def argmax_final_kernel(partial_value: CUDASlice[f32], partial_index: CUDASlice[i64],
                        value: CUDASliceMut[f32], index: CUDASliceMut[i64]):
    assert grid_dim.x == 1, "argmax_final_kernel runs as a single block"
    assert block_dim.x == THREADS, "launch argmax_final_kernel with THREADS threads per block"
    s_value = shared_array(f32, (THREADS,))
    s_index = shared_array(i64, (THREADS,))
    tid = thread_idx.x
    best = f32(-math.inf)
    best_index = i64(NO_INDEX)
    for k in range(tid, len(partial_value), THREADS):
        v = partial_value[k]
        j = partial_index[k]
        if v > best or (v == best and j < best_index):
            best = v
            best_index = j
    s_value[tid] = best
    s_index[tid] = best_index
    stride = THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            v = s_value[tid + stride]
            j = s_index[tid + stride]
            if v > s_value[tid] or (v == s_value[tid] and j < s_index[tid]):
                s_value[tid] = v
                s_index[tid] = j
        stride //= 2
    if tid == 0:
        value[0] = s_value[0]
        index[0] = s_index[0]


def argmax(x, blocks: int = 30):
    partial_value = gn.empty(blocks, gn.f32)
    partial_index = gn.empty(blocks, gn.i64)
    value = gn.empty(1, gn.f32)
    index = gn.empty(1, gn.i64)
    for array in (partial_value, partial_index, value, index):
        poison(array)
    argmax_blocks_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        x, partial_value, partial_index)
    argmax_final_kernel.launch(GridDim1D(1), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        partial_value, partial_index, value, index)
    return value, index


def run(n: int = 123_457, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    # The maximum three times, far apart: the first one must win.
    top = np.float32(x.max() + 1)
    x[rng.choice(n, 3, replace=False)] = top
    value, index = argmax(gn.to_device(x))
    return ((value.to_host(), index.to_host()),
            (np.array([float(x.max())]), np.array([float(np.argmax(x))])))


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"argmax on {gn.backend()}: x[{int(out[1][0])}] = {out[0][0]:.4f}")


if __name__ == "__main__":
    main()
