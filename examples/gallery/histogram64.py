"""64-bin histogram of bytes without atomics: every thread counts into its own column of byte
counters in shared memory, the columns of a block are summed into one partial histogram per
block, and a second kernel merges the partial histograms.

Source algorithm: V. Podlozhnyuk, "Histogram calculation in CUDA" (NVIDIA, 2007), the
cuda-samples ``histogram`` sample (``histogram64Kernel`` and ``mergeHistogram64Kernel``): a
table ``s_Hist[bin * THREADS + threadPos]`` of ``u8`` counters, one column per thread, so that
no two threads ever touch one counter and no atomic is needed; ``threadPos``, a permutation of
the bits of ``thread_idx.x``, spreads the columns over the shared-memory banks; each thread
counts at most 252 bytes, so a byte counter cannot overflow; the top six bits of each byte pick
its bin.

What it exercises: a store ``hist[bin * THREADS + pos]`` whose row is loaded from the data,
proven race-free by its column alone (``0 <= pos < THREADS`` and ``pos`` unique: each thread
owns a residue class modulo ``THREADS``, whatever the row); ``pos`` written with masks and
shifts as the sample writes it, proven a permutation of the thread's bits; a read-modify-write
``+= 1`` of the thread's own counter; the input read as ``u32`` words through a host-side
``view``.  (The sample clears the table and sums the columns four bytes at a time through a
``uint`` pointer into the same shared memory; shared arrays have no such views, so this port
clears and sums byte by byte.)
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
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
    u8,
    u32,
)

BINS = 64
BANKS = 16                # the sample's SHARED_MEMORY_BANKS
THREADS = 4 * BANKS       # HISTOGRAM64_THREADBLOCK_SIZE
WORDS_PER_THREAD = 63     # 252 bytes: below 256, so a u8 counter never wraps
MERGE_THREADS = 256

# Counts are exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def histogram64_kernel(data: CUDASlice[u32], partial: CUDASliceMut[u32]):
    assert block_dim.x == THREADS, "launch histogram64_kernel with THREADS threads"
    hist = shared_array(u8, (BINS * THREADS,))
    tid = thread_idx.x
    # Thread tid's column: its low four bits moved up by two, its next two bits moved down, so
    # that sixteen consecutive threads reach sixteen banks and the same byte within each.
    pos = (tid & ~(BANKS * 4 - 1)) | ((tid & (BANKS - 1)) << 2) | ((tid & (BANKS * 3)) >> 4)
    for i in range(BINS):
        hist[i * THREADS + tid] = 0
    sync_threads()
    for k in FlatLayout1D.grid_stride(len(data)):
        word = data[k]
        hist[((word >> 2) & 63) * THREADS + pos] += 1
        hist[((word >> 10) & 63) * THREADS + pos] += 1
        hist[((word >> 18) & 63) * THREADS + pos] += 1
        hist[((word >> 26) & 63) * THREADS + pos] += 1
    sync_threads()
    if tid < BINS:
        # Bin tid's row, four counters at a time, each thread starting at another bank.
        row = tid * THREADS
        total = u32(0)
        col = 4 * (tid & (BANKS - 1))
        for _ in range(THREADS // 4):
            total += (u32(hist[row + col]) + u32(hist[row + col + 1])
                      + u32(hist[row + col + 2]) + u32(hist[row + col + 3]))
            col = (col + 4) & (THREADS - 1)
        partial[block_idx.x * BINS + tid] = total


@gpu_kernel(Kernel1D)
def merge_histogram64_kernel(partial: CUDASlice[u32], hist: CUDASliceMut[u32]):
    assert block_dim.x == MERGE_THREADS, "launch merge_histogram64_kernel with MERGE_THREADS"
    sums = shared_array(u32, (MERGE_THREADS,))
    tid = thread_idx.x
    count = len(partial) // BINS
    total = u32(0)
    for i in range(tid, count, MERGE_THREADS):
        total += partial[block_idx.x + i * BINS]
    sums[tid] = total
    stride = MERGE_THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            sums[tid] += sums[tid + stride]
        stride //= 2
    if tid == 0:
        hist[block_idx.x] = sums[0]


def histogram64(words):
    """The 64-bin histogram of the bytes of ``words`` (a ``u32`` device array)."""
    blocks = max(1, -(-len(words) // (THREADS * WORDS_PER_THREAD)))
    partial = gn.empty(blocks * BINS, gn.u32)
    hist = gn.empty(BINS, gn.u32)
    poison(partial)
    poison(hist)
    histogram64_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        words, partial)
    merge_histogram64_kernel.launch(GridDim1D(BINS), BlockDim1D(MERGE_THREADS), 0,
                                    DEFAULT_STREAM)(partial, hist)
    return hist


def run(n: int = 200_000, seed=None):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, n - n % 4, dtype=np.uint8)
    data[: len(data) // 5] = 200  # one hot bin: many counts in each thread's counter
    out = histogram64(gn.to_device(data).view(gn.u32)).to_host()
    return out, np.bincount(data >> 2, minlength=BINS).astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"histogram64 on {gn.backend()}: {int(out.sum())} bytes counted")


if __name__ == "__main__":
    main()
