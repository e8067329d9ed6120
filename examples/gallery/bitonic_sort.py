"""Bitonic sort of short key-value arrays in shared memory, one array per block.

Source algorithm: Batcher's bitonic sorting network (K. E. Batcher, "Sorting networks and their
applications", AFIPS 1968), as NVIDIA's cuda-samples lay it out in shared memory
(``Samples/2_Concepts_and_Techniques/sortingNetworks``, ``bitonicSortShared``): each thread loads
two elements, ``s[tid]`` and ``s[tid + HALF]``, and at every step of the network compares and
swaps one pair ``(pos, pos + stride)`` with ``pos = 2 * tid - (tid & (stride - 1))``.

What it exercises: two shared-memory stores per thread through disjoint halves, the
compare-and-swap of a sorting network (each thread writes the two elements of its own pair:
``pos`` is ``tid`` with a 0 bit inserted at ``log2(stride)``, and ``pos + stride`` has it set,
which the checker proves for each power of two ``stride`` takes between two barriers), two global
stores per thread, ``u32`` bit arithmetic, nested ``while`` loops around ``sync_threads()``.
"""

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
    u32,
)

HALF = 128           # threads per block
N = 2 * HALF         # elements per array: each thread owns two

# A permutation is exact; the values must be the permutation that sorts the keys.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def bitonic_sort_kernel(keys: CUDASlice2D[u32], sorted_keys: CUDASliceMut2D[u32],
                        order: CUDASliceMut2D[u32]):
    assert block_dim.x == HALF, "launch bitonic_sort_kernel with HALF threads per block"
    s_key = shared_array(u32, (N,))
    s_val = shared_array(u32, (N,))
    tid = thread_idx.x
    row = block_idx.x
    s_key[tid] = keys[row, tid]
    s_val[tid] = u32(tid)
    s_key[tid + HALF] = keys[row, tid + HALF]
    s_val[tid + HALF] = u32(tid + HALF)
    size = 2
    while size <= N:
        # Sub-sequences alternate direction so that each pair of them forms a bitonic sequence;
        # the last merge (size == N) sorts the whole array ascending.
        ascending = (tid & (size // 2)) == 0
        stride = size // 2
        while stride > 0:
            sync_threads()
            pos = 2 * tid - (tid & (stride - 1))
            a = s_key[pos]
            b = s_key[pos + stride]
            if (a > b) == ascending:
                va = s_val[pos]
                vb = s_val[pos + stride]
                s_key[pos] = b
                s_key[pos + stride] = a
                s_val[pos] = vb
                s_val[pos + stride] = va
            stride //= 2
        size *= 2
    sync_threads()
    sorted_keys[row, tid] = s_key[tid]
    order[row, tid] = s_val[tid]
    sorted_keys[row, tid + HALF] = s_key[tid + HALF]
    order[row, tid + HALF] = s_val[tid + HALF]


def bitonic_sort(keys):
    """Sort each row of ``keys`` (a ``(rows, N)`` u32 device array); return the sorted keys and,
    per row, the permutation that sorts it."""
    rows = keys.shape[0]
    sorted_keys = gn.empty((rows, N), gn.u32)
    order = gn.empty((rows, N), gn.u32)
    poison(sorted_keys)
    poison(order)
    bitonic_sort_kernel.launch(GridDim1D(rows), BlockDim1D(HALF), 0, DEFAULT_STREAM)(
        keys, sorted_keys, order)
    return sorted_keys, order


def run(rows: int = 6, seed=None):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 1 << 32, (rows, N), dtype=np.uint32)
    keys[0, :] = keys[0, 0]          # one row of equal keys
    keys[1, : N // 2] = 7            # and one with many duplicates
    sorted_keys, order = bitonic_sort(gn.to_device(keys))
    sorted_keys, order = sorted_keys.to_host(), order.to_host()
    # The sort is not stable, so the permutation is checked by what it does: it is a permutation,
    # and it takes each row to its sorted keys.
    applied = np.take_along_axis(keys, order.astype(np.int64) % N, axis=1)
    is_perm = np.sort(order, axis=1) == np.arange(N)
    return (sorted_keys, applied, is_perm), (np.sort(keys, axis=1).astype(np.float64),
                                              np.sort(keys, axis=1).astype(np.float64),
                                              np.ones((rows, N)))


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"bitonic_sort on {gn.backend()}: {out[0].shape[0]} arrays of {N} keys sorted")


if __name__ == "__main__":
    main()
