"""Stable LSD radix sort of u32 keys (with their original positions as values), 8 bits a pass:
per-block digit histograms, one exclusive scan of all the histograms, a stable scatter.

Source algorithm: the split/scatter radix sort of N. Satish, M. Harris and M. Garland,
"Designing Efficient Sorting Algorithms for Manycore GPUs" (IPDPS 2009), and the reduce-then-scan
layout of D. Merrill and A. Grimshaw, "High Performance and Scalable Radix Sorting" (Parallel
Processing Letters, 2011): each block counts the digits of its tile, the counts are stored
*digit-major* (``counts[digit * blocks + block]``, so that one exclusive scan of the whole table
gives every (digit, block) pair its first output position), and each block scatters its keys to
``offset[digit, block] + rank``, where ``rank`` counts the earlier keys of the tile with the same
digit (which keeps the sort stable).

What it exercises: the transposed-ownership store ``counts[tid * grid_dim.x + block_idx.x]``,
shared-memory atomics, a single-block scan with a block-stride loop (``assert grid_dim.x == 1``),
and a data-dependent scatter ``out[offsets[...] + rank]`` that is a permutation only because of
what the earlier passes computed.
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
    UniqueId,
    block_dim,
    block_idx,
    gpu_kernel,
    grid_dim,
    i32,
    shared_array,
    sync_threads,
    thread_idx,
    u32,
    unsafe,
)

RADIX_BITS = 8
RADIX = 1 << RADIX_BITS   # digits per pass, and threads per block (one digit per thread)
BLOCK = RADIX             # keys per tile: one per thread

# A sort is exact, and the values must show it stable.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def digit_histogram_kernel(keys: CUDASlice[u32], counts: CUDASliceMut[u32], shift: i32):
    assert block_dim.x == BLOCK, "launch digit_histogram_kernel with BLOCK threads per block"
    hist = shared_array(u32, (RADIX,))
    tid = thread_idx.x
    gid: UniqueId = FlatLayout1D.uid()
    hist[tid] = 0
    sync_threads()
    if gid < len(keys):
        digit = (keys[gid] >> shift) & (RADIX - 1)
        hist.atomic_ref(digit).fetch_add(1)
    sync_threads()
    # Digit-major: the scan of the whole table puts digit d of block b after every smaller
    # digit of every block and after digit d of the blocks before b.
    counts[tid * grid_dim.x + block_idx.x] = hist[tid]


@gpu_kernel(Kernel1D)
def exclusive_scan_kernel(counts: CUDASlice[u32], offsets: CUDASliceMut[u32]):
    assert grid_dim.x == 1, "exclusive_scan_kernel runs as a single block"
    assert block_dim.x == BLOCK, "launch exclusive_scan_kernel with BLOCK threads per block"
    partial = shared_array(u32, (BLOCK,))
    tid = thread_idx.x
    n = len(counts)
    carry = u32(0)
    for base in range(0, n, BLOCK):
        i = base + tid
        v = u32(0)
        if i < n:
            v = counts[i]
        partial[tid] = v
        offset = 1
        while offset < BLOCK:
            sync_threads()
            add = u32(0)
            if tid >= offset:
                add = partial[tid - offset]
            sync_threads()
            partial[tid] += add
            offset *= 2
        sync_threads()
        if i < n:
            offsets[i] = carry + partial[tid] - v
        carry += partial[BLOCK - 1]
        sync_threads()


@gpu_kernel(Kernel1D)
def scatter_kernel(keys: CUDASlice[u32], values: CUDASlice[u32], offsets: CUDASlice[u32],
                   keys_out: CUDASliceMut[u32], values_out: CUDASliceMut[u32], shift: i32):
    assert block_dim.x == BLOCK, "launch scatter_kernel with BLOCK threads per block"
    digits = shared_array(i32, (BLOCK,))
    tid = thread_idx.x
    gid: UniqueId = FlatLayout1D.uid()
    key = u32(0)
    digit = RADIX             # past every digit: a thread with no key
    if gid < len(keys):
        key = keys[gid]
        digit = i32((key >> shift) & (RADIX - 1))
    digits[tid] = digit
    sync_threads()
    if digit < RADIX:
        rank = 0
        for j in range(tid):
            if digits[j] == digit:
                rank += 1
        dst = offsets[digit * grid_dim.x + block_idx.x] + u32(rank)
        # unsafe: a data-dependent scatter (dst is loaded from memory), which no index rule can
        #   prove; race-free by construction: offsets is the exclusive scan of this pass's digit
        #   counts and rank < this tile's count of the digit, so the destinations form a
        #   permutation (the simulator's race detector checks it on every run).
        with unsafe():
            keys_out[dst] = key
            values_out[dst] = values[gid]


def radix_sort(keys):
    """Sort a u32 device array; return the sorted keys and the original position of each."""
    n = len(keys)
    blocks = max(1, (n + BLOCK - 1) // BLOCK)
    grid, block = GridDim1D(blocks), BlockDim1D(BLOCK)
    values = gn.to_device(np.arange(n, dtype=np.uint32))
    keys_b = gn.empty(n, gn.u32)
    values_b = gn.empty(n, gn.u32)
    counts = gn.empty(RADIX * blocks, gn.u32)
    offsets = gn.empty(RADIX * blocks, gn.u32)
    src, dst = (keys.copy(), values), (keys_b, values_b)
    for shift in range(0, 32, RADIX_BITS):
        for array in (counts, offsets, *dst):
            poison(array)
        digit_histogram_kernel.launch(grid, block, 0, DEFAULT_STREAM)(src[0], counts, shift)
        exclusive_scan_kernel.launch(GridDim1D(1), block, 0, DEFAULT_STREAM)(counts, offsets)
        scatter_kernel.launch(grid, block, 0, DEFAULT_STREAM)(src[0], src[1], offsets, dst[0],
                                                              dst[1], shift)
        src, dst = dst, src
    return src


def run(n: int = 3000, seed=None):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    keys[: n // 3] = rng.integers(0, 8, n // 3, dtype=np.uint32)   # duplicates: stability shows
    sorted_keys, order = radix_sort(gn.to_device(keys))
    ref_order = np.argsort(keys, kind="stable")
    return ((sorted_keys.to_host(), order.to_host()),
            (keys[ref_order].astype(np.float64), ref_order.astype(np.float64)))


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"radix_sort on {gn.backend()}: {len(out[0])} keys sorted, stable")


if __name__ == "__main__":
    main()
