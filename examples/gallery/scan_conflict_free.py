"""Work-efficient exclusive prefix sum with bank-conflict-free shared indices, in three launches.

Source algorithm: M. Harris, S. Sengupta and J. D. Owens, "Parallel Prefix Sum (Scan) with
CUDA", GPU Gems 3, chapter 39, the version of Example 39-2 with the conflict-free offsets of
section 39.2.3: every shared index ``n`` is padded by ``CONFLICT_FREE_OFFSET(n) = n >>
LOG_NUM_BANKS`` (one spare element every 32), so that the tree's strided accesses fall in
different banks.  Each block scans ``2 * BLOCK`` elements with an up-sweep and a down-sweep,
each thread loading and storing the two elements ``ai = tid`` and ``bi = tid + BLOCK``; the
block totals are scanned by one more block, and a third kernel adds each block's offset (as
:mod:`blelloch_scan` does, without the padding).

What it exercises: padded shared stores ``temp[ai + (ai >> LOG_NUM_BANKS)]`` and ``temp[bi +
(bi >> LOG_NUM_BANKS)]`` with no ``unsafe`` (R10: ``x + (x >> 5)`` is strictly increasing, so
the two stores of a thread are apart where ``ai`` and ``bi`` are); the padded up- and
down-sweep stores with ``ai = offset * (2 * tid + 1) - 1`` reassigned as ``ai += ai >>
LOG_NUM_BANKS`` as the chapter writes it (proven per barrier interval with the value ``offset``
takes there, R3 with R10, and the index shown not to wrap for those values); the padded last
element cleared by thread 0; a multi-kernel pipeline on the host.
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

LOG_NUM_BANKS = 5        # 32 banks of shared memory
BLOCK = 128              # threads per block
SPAN = 2 * BLOCK         # elements scanned by one block
PADDED = SPAN + (SPAN >> LOG_NUM_BANKS)  # one spare element per 32

# Integer sums are exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def block_scan_kernel(x: CUDASlice[i32], out: CUDASliceMut[i32], block_sums: CUDASliceMut[i32]):
    assert block_dim.x == BLOCK, "launch block_scan_kernel with BLOCK threads per block"
    temp = shared_array(i32, (PADDED,))
    tid = thread_idx.x
    base = block_idx.x * SPAN
    n = len(x)
    ai = tid
    bi = tid + BLOCK
    bank_offset_a = ai >> LOG_NUM_BANKS
    bank_offset_b = bi >> LOG_NUM_BANKS
    a = 0
    b = 0
    if base + ai < n:
        a = x[base + ai]
    if base + bi < n:
        b = x[base + bi]
    temp[ai + bank_offset_a] = a
    temp[bi + bank_offset_b] = b
    # Up-sweep: build partial sums in place up the tree.
    offset = 1
    d = SPAN >> 1
    while d > 0:
        sync_threads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            ai += ai >> LOG_NUM_BANKS
            bi += bi >> LOG_NUM_BANKS
            temp[bi] += temp[ai]
        offset *= 2
        d >>= 1
    last = SPAN - 1 + ((SPAN - 1) >> LOG_NUM_BANKS)
    if tid == 0:
        block_sums[block_idx.x] = temp[last]
        temp[last] = 0
    # Down-sweep: push the prefixes back down the tree.
    d = 1
    while d < SPAN:
        offset >>= 1
        sync_threads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            ai += ai >> LOG_NUM_BANKS
            bi += bi >> LOG_NUM_BANKS
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    sync_threads()
    if base + tid < len(out):
        out[base + tid] = temp[tid + bank_offset_a]
    if base + tid + BLOCK < len(out):
        out[base + tid + BLOCK] = temp[tid + BLOCK + bank_offset_b]


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
    print(f"scan_conflict_free on {gn.backend()}: {len(out[0])} elements, total {int(out[1][0])}")


if __name__ == "__main__":
    main()
