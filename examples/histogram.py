"""Histogram of bytes: per-block histograms in shared memory with atomics, merged into the global
histogram with one atomic per bin per block."""

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
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
    u8,
    u32,
)

BINS = 256


@gpu_kernel(Kernel1D)
def histogram_kernel(data: CUDASlice[u8], hist: CUDASliceMut[u32]):
    assert block_dim.x == BINS, "launch histogram_kernel with BINS threads per block"
    local = shared_array(u32, (BINS,))
    tid = thread_idx.x
    local[tid] = 0
    sync_threads()
    for i in FlatLayout1D.grid_stride(len(data)):
        local.atomic_ref(data[i]).fetch_add(1)
    sync_threads()
    hist.atomic_ref(tid).fetch_add(local[tid])


def histogram(data, blocks: int = 128):
    hist = gn.zeros(BINS, gn.u32)
    histogram_kernel.launch(GridDim1D(blocks), BlockDim1D(BINS), 0, DEFAULT_STREAM)(data, hist)
    return hist


def run(n: int = 3_000_001, seed=None):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    # Skew the data so that some bins see heavy contention.
    data[: n // 4] = 7
    out = histogram(gn.to_device(data), blocks=48).to_host()
    return out, np.bincount(data, minlength=BINS).astype(np.float64)


def main():
    out, ref = run()
    print(f"histogram on {gn.backend()}: {int(out.sum())} samples, exact: "
          f"{np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
