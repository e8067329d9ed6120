"""Padded indices (``s[t + (t >> 5)]``, GPU Gems 3's ``CONFLICT_FREE_OFFSET``) written the way
CUDA programmers write them (tests/check/test_padded_indices.py launches them): no ``unsafe``."""

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    Kernel1D,
    block_dim,
    block_idx,
    gpu_kernel,
    i32,
    i64,
    shared_array,
    sync_threads,
    thread_idx,
)

HALF = 64
SPAN = 2 * HALF
PADDED = SPAN + SPAN // 32


@gpu_kernel(Kernel1D)
def padded_pair(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """GPU Gems 3's load: two elements per thread into a padded shared array, ``ai = tid`` and
    ``bi = tid + HALF``, read back reversed after a barrier."""
    assert block_dim.x == HALF
    temp = shared_array(i32, (PADDED,))
    tid = thread_idx.x
    base = block_idx.x * SPAN
    ai = tid
    bi = tid + HALF
    temp[ai + (ai >> 5)] = x[base + ai]
    temp[bi + (bi >> 5)] = x[base + bi]
    sync_threads()
    ra = SPAN - 1 - ai
    rb = SPAN - 1 - bi
    out[base + ai] = temp[ra + (ra >> 5)]
    out[base + bi] = temp[rb + (rb >> 5)]


@gpu_kernel(Kernel1D)
def padded_pair_div(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """The same padding written with ``// 32``, and the two offsets the other way round."""
    assert block_dim.x == HALF
    temp = shared_array(i32, (PADDED,))
    tid = thread_idx.x
    base = block_idx.x * SPAN
    bi = tid + HALF
    temp[bi + bi // 32] = x[base + bi] * 2
    temp[tid + tid // 32] = x[base + tid] * 2
    sync_threads()
    out[base + tid] = temp[tid + tid // 32] + temp[bi + bi // 32]


@gpu_kernel(Kernel1D)
def padded_launch_offset(out: CUDASliceMut[i32]):
    """``u = block_dim.x + tid``: an offset from the launch, padded by two shifts at once
    (``u + (u >> 4) + 2 * (u >> 6)``, strictly increasing)."""
    assert block_dim.x == HALF
    temp = shared_array(i32, (4 * HALF,))
    u = block_dim.x + thread_idx.x
    temp[u + (u >> 4) + 2 * (u >> 6)] = u
    sync_threads()
    out[block_idx.x * HALF + thread_idx.x] = temp[u + (u >> 4) + 2 * (u >> 6)]


@gpu_kernel(Kernel1D)
def padded_global(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    """A padded global array: the grid uid in i64 (``u + (u >> 5)`` of an i32 uid may wrap)."""
    u = i64(block_idx.x) * block_dim.x + thread_idx.x
    if u < len(x):
        out[u + (u >> 5)] = x[u] + 1
