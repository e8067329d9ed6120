"""256-bin histogram of bytes: a private histogram per block in shared memory (updated with
shared-memory atomics), written out as one partial histogram per block, then merged by a second
kernel with one block per bin.

Source algorithm: V. Podlozhnyuk, "Histogram calculation in CUDA" (NVIDIA, 2007), the
cuda-samples ``histogram`` sample (``histogram256Kernel`` and ``mergeHistogram256Kernel``):
per-block sub-histograms in shared memory, ``partial[block * BINS + bin]`` written by a
block-stride loop over the bins, and a merge kernel in which block ``bin`` sums that bin over
all partial histograms with a shared-memory tree, thread 0 writing the result.

What it exercises: shared-memory atomics (privatisation), a block-stride loop over bins with
fewer threads than bins (192 threads, 256 bins), the store ``partial[block_idx.x * BINS + bin]``,
a merge kernel whose result is written by ``thread_idx.x == 0``.
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

BINS = 256
THREADS = 192             # six warps, as in the original: fewer threads than bins
MERGE_THREADS = 64

# Counts are exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def partial_histogram_kernel(data: CUDASlice[u8], partial: CUDASliceMut[u32]):
    assert block_dim.x == THREADS, "launch partial_histogram_kernel with THREADS threads"
    hist = shared_array(u32, (BINS,))
    tid = thread_idx.x
    for b in range(tid, BINS, THREADS):
        hist[b] = 0
    sync_threads()
    for i in FlatLayout1D.grid_stride(len(data)):
        hist.atomic_ref(data[i]).fetch_add(1)
    sync_threads()
    for b in range(tid, BINS, THREADS):
        partial[block_idx.x * BINS + b] = hist[b]


@gpu_kernel(Kernel1D)
def merge_histograms_kernel(partial: CUDASlice[u32], hist: CUDASliceMut[u32]):
    assert block_dim.x == MERGE_THREADS, "launch merge_histograms_kernel with MERGE_THREADS"
    sums = shared_array(u32, (MERGE_THREADS,))
    tid = thread_idx.x
    count = len(partial) // BINS
    total = u32(0)
    for i in range(tid, count, MERGE_THREADS):
        total += partial[i * BINS + block_idx.x]
    sums[tid] = total
    stride = MERGE_THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            sums[tid] += sums[tid + stride]
        stride //= 2
    if tid == 0:
        hist[block_idx.x] = sums[0]


def histogram(data, blocks: int = 24):
    partial = gn.empty(blocks * BINS, gn.u32)
    hist = gn.empty(BINS, gn.u32)
    poison(partial)
    poison(hist)
    partial_histogram_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        data, partial)
    merge_histograms_kernel.launch(GridDim1D(BINS), BlockDim1D(MERGE_THREADS), 0,
                                   DEFAULT_STREAM)(partial, hist)
    return hist


def run(n: int = 200_001, seed=None):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    data[: n // 5] = 200          # one hot bin: heavy contention on one shared counter
    out = histogram(gn.to_device(data)).to_host()
    return out, np.bincount(data, minlength=BINS).astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"histogram_privatized on {gn.backend()}: {int(out.sum())} bytes counted")


if __name__ == "__main__":
    main()
