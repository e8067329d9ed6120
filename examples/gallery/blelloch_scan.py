"""Work-efficient exclusive prefix sum (Blelloch scan) of any length, in three launches.

Source algorithm: G. E. Blelloch, "Prefix sums and their applications" (CMU-CS-90-190, 1990), as
M. Harris, S. Sengupta and J. D. Owens lay it out for CUDA in GPU Gems 3, chapter 39 ("Parallel
Prefix Sum (Scan) with CUDA"): each block scans ``2 * BLOCK`` elements in shared memory with an
up-sweep (reduce) and a down-sweep, each thread loading and storing two elements ``tid`` and
``tid + BLOCK``; the block totals are scanned by one more block, and a third kernel adds each
block's offset.

What it exercises: two global stores per thread (``out[base + tid]`` and
``out[base + tid + BLOCK]``), the tree-indexed shared stores of the up- and down-sweep
(``temp[offset * (2 * tid + 2) - 1]``, proven per barrier interval with the value ``offset``
takes there: a scale the whole block shares, and ``ai`` and ``bi`` apart by the parity of
their cofactors), a store by one thread (``tid == 0``, after the last up-sweep step, which only
thread 0 runs), a multi-kernel pipeline on the host.
"""

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    gpu_kernel,
    i32,
    shared_array,
    sync_threads,
    thread_idx,
)

BLOCK = 128              # threads per block
SPAN = 2 * BLOCK         # elements scanned by one block

# Integer sums are exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def block_scan_kernel(x: CUDASlice[i32], out: CUDASliceMut[i32], block_sums: CUDASliceMut[i32]):
    assert block_dim.x == BLOCK, "launch block_scan_kernel with BLOCK threads per block"
    temp = shared_array(i32, (SPAN,))
    tid = thread_idx.x
    base = block_idx.x * SPAN
    n = len(x)
    a = 0
    b = 0
    if base + tid < n:
        a = x[base + tid]
    if base + tid + BLOCK < n:
        b = x[base + tid + BLOCK]
    temp[tid] = a
    temp[tid + BLOCK] = b
    # Up-sweep: build partial sums in place up the tree.
    offset = 1
    d = SPAN // 2
    while d > 0:
        sync_threads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d //= 2
    if tid == 0:
        block_sums[block_idx.x] = temp[SPAN - 1]
        temp[SPAN - 1] = 0
    # Down-sweep: push the prefixes back down the tree.
    d = 1
    while d < SPAN:
        offset //= 2
        sync_threads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    sync_threads()
    if base + tid < len(out):
        out[base + tid] = temp[tid]
    if base + tid + BLOCK < len(out):
        out[base + tid + BLOCK] = temp[tid + BLOCK]


@gpu_kernel(Kernel1D)
def add_block_offsets_kernel(out: CUDASliceMut[i32], offsets: CUDASlice[i32]):
    assert block_dim.x == BLOCK, "launch add_block_offsets_kernel with BLOCK threads per block"
    tid = thread_idx.x
    base = block_idx.x * SPAN
    add = offsets[block_idx.x]
    if base + tid < len(out):
        out[base + tid] += add
    if base + tid + BLOCK < len(out):
        out[base + tid + BLOCK] += add


def exclusive_scan(x):
    """Exclusive prefix sum of an i32 device array of up to ``SPAN * SPAN`` elements."""
    n = len(x)
    blocks = max(1, (n + SPAN - 1) // SPAN)
    if blocks > SPAN:
        raise ValueError(f"this example scans at most {SPAN * SPAN} elements, not {n}")
    out = gn.empty(n, gn.i32)
    sums = gn.empty(blocks, gn.i32)
    offsets = gn.empty(blocks, gn.i32)
    total = gn.empty(1, gn.i32)
    for array in (out, sums, offsets, total):
        poison(array)
    block = BlockDim1D(BLOCK)
    block_scan_kernel.launch(GridDim1D(blocks), block, 0, DEFAULT_STREAM)(x, out, sums)
    block_scan_kernel.launch(GridDim1D(1), block, 0, DEFAULT_STREAM)(sums, offsets, total)
    add_block_offsets_kernel.launch(GridDim1D(blocks), block, 0, DEFAULT_STREAM)(out, offsets)
    return out, total


def run(n: int = 20_000, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    out, total = exclusive_scan(gn.to_device(x))
    ref = np.concatenate([[0], np.cumsum(x.astype(np.float64))[:-1]])
    return (out.to_host(), total.to_host()), (ref, np.array([x.astype(np.float64).sum()]))


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"blelloch_scan on {gn.backend()}: {len(out[0])} elements, total {int(out[1][0])}")


if __name__ == "__main__":
    main()
