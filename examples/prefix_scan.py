"""Inclusive prefix sum: a Hillis-Steele scan inside each block, a scan of the block totals,
then a pass adding each block's offset."""

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
    UniqueId,
    block_dim,
    block_idx,
    gpu_kernel,
    i32,
    shared_array,
    sync_threads,
    thread_idx,
)

BLOCK = 256


@gpu_kernel(Kernel1D)
def block_scan_kernel(x: CUDASlice[i32], out: CUDASliceMut[i32], block_sums: CUDASliceMut[i32]):
    assert block_dim.x == BLOCK, "launch block_scan_kernel with BLOCK threads per block"
    temp = shared_array(i32, (BLOCK,))
    tid = thread_idx.x
    gid: UniqueId = FlatLayout1D.uid()
    value = 0
    if gid < len(x):
        value = x[gid]
    temp[tid] = value
    sync_threads()
    offset = 1
    while offset < BLOCK:
        addend = 0
        if tid >= offset:
            addend = temp[tid - offset]
        sync_threads()
        temp[tid] += addend
        sync_threads()
        offset *= 2
    if gid < len(out):
        out[gid] = temp[tid]
    if tid == BLOCK - 1:
        block_sums[block_idx.x] = temp[tid]


@gpu_kernel(Kernel1D)
def add_offsets_kernel(out: CUDASliceMut[i32], scanned_sums: CUDASlice[i32]):
    gid: UniqueId = FlatLayout1D.uid()
    block = block_idx.x
    if block > 0 and gid < len(out):
        out[gid] += scanned_sums[block - 1]


def inclusive_scan(x):
    """Scan up to BLOCK * BLOCK elements."""
    n = len(x)
    blocks = (n + BLOCK - 1) // BLOCK
    if blocks > BLOCK:
        raise ValueError(f"this example scans at most {BLOCK * BLOCK} elements")
    out = gn.empty(n, gn.i32)
    sums = gn.empty(blocks, gn.i32)
    scanned = gn.empty(blocks, gn.i32)
    spare = gn.empty(1, gn.i32)
    block = BlockDim1D(BLOCK)
    block_scan_kernel.launch(GridDim1D(blocks), block, 0, DEFAULT_STREAM)(x, out, sums)
    block_scan_kernel.launch(GridDim1D(1), block, 0, DEFAULT_STREAM)(sums, scanned, spare)
    add_offsets_kernel.launch(GridDim1D(blocks), block, 0, DEFAULT_STREAM)(out, scanned)
    return out


def run(n: int = 50_000, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, n, dtype=np.int32)
    return inclusive_scan(gn.to_device(x)).to_host(), np.cumsum(x.astype(np.float64))


def main():
    out, ref = run()
    print(f"prefix_scan on {gn.backend()}: {len(out)} elements, exact: {np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
