"""Odd-even transposition sort of short arrays in shared memory, one array per block.

Source algorithm: the odd-even transposition sort (N. Habermann, "Parallel neighbor-sort",
Carnegie Mellon report, 1972; D. E. Knuth, "The Art of Computer Programming", vol. 3, section
5.3.4), as the CUDA teaching codes lay it out in a block: ``N`` rounds, each comparing and
swapping the neighbours ``(i, i + 1)`` with ``i`` of the round's parity, one pair per thread and
a ``__syncthreads()`` closing each round.

What it exercises: a pair of shared-memory stores per thread whose offset is chosen by the loop
round (``i = 2 * t + (phase & 1)``, then ``s[i]`` and ``s[i + 1]``): ``sync_threads()`` at the end
of every round keeps two threads in one round while they write, where both see the same
``phase``, so the pairs of one round are apart (the checker proves it: ``gpu_native/check/
phases.py``, ``round_digits``, no ``unsafe``); two elements per thread loaded and stored through
disjoint halves; a 2-D array, one row per block.
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
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

HALF = 64            # threads per block
N = 2 * HALF         # elements per array: each thread owns two

# A sort only moves values: the output is exactly the sorted input.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def odd_even_sort_kernel(rows: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    assert block_dim.x == HALF, "launch odd_even_sort_kernel with HALF threads per block"
    s = shared_array(f32, N)
    t = thread_idx.x
    row = block_idx.x
    s[t] = rows[row, t]
    s[t + HALF] = rows[row, t + HALF]
    sync_threads()
    for phase in range(N):
        # Even rounds compare (0, 1), (2, 3), ...; odd rounds (1, 2), (3, 4), ...
        i = 2 * t + (phase & 1)
        if i + 1 < N and s[i] > s[i + 1]:
            s[i], s[i + 1] = s[i + 1], s[i]
        sync_threads()
    out[row, t] = s[t]
    out[row, t + HALF] = s[t + HALF]


def odd_even_sort(rows):
    """Sort each row of ``rows`` (a ``(count, N)`` f32 device array) into a new array."""
    out = gn.empty((rows.shape[0], N), gn.f32)
    poison(out)
    odd_even_sort_kernel.launch(GridDim1D(rows.shape[0]), BlockDim1D(HALF), 0,
                                DEFAULT_STREAM)(rows, out)
    return out


def run(count: int = 8, seed=None):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((count, N)).astype(np.float32)
    rows[0, :] = rows[0, 0]               # one row of equal keys
    rows[1, :] = np.sort(rows[1, :])[::-1]  # and one in descending order: N rounds are needed
    out = odd_even_sort(gn.to_device(rows)).to_host()
    return out, np.sort(rows, axis=1).astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"odd_even_sort on {gn.backend()}: {out.shape[0]} arrays of {N} values sorted")


if __name__ == "__main__":
    main()
