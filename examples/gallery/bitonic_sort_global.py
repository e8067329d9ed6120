"""Bitonic sort of one power-of-two array in global memory: one launch per step of the network,
each thread comparing and swapping one pair.

Source algorithm: Batcher's bitonic sorting network (K. E. Batcher, "Sorting networks and their
applications", AFIPS 1968), in the form the CUDA tutorials give it (the ``bitonic_sort_step(
dev_values, j, k)`` kernel of the widely copied ``bitonic_sort.cu``, after the sorting-network
chapters of the GPU texts): the host loops ``k = 2, 4, ..., n`` and ``j = k / 2, ..., 1`` and
launches one step for each; thread ``i`` takes the pair ``(i, i ^ j)`` when ``i ^ j > i`` and
puts it in ascending order where ``i & k == 0``, descending elsewhere.

What it exercises: two global stores per thread, ``a[i]`` and ``a[i ^ j]``, with ``j`` a launch
parameter: ``x -> x ^ j`` is an involution, so under ``if ixj > i:`` only the lower of two
partners writes, both elements (the checker proves the pair apart: ``gpu_native/check/
xorpairs.py``, no ``unsafe``); the reads of both elements inside that condition; ``i32`` bit
arithmetic; a host loop of ``log2(n) * (log2(n) + 1) / 2`` launches on one stream.
"""

import numpy as np
from _gallery import compare

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    f32,
    gpu_kernel,
    i32,
)

THREADS = 256

# A sort only moves values: the output is exactly the sorted input.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def bitonic_sort_step(dev_values: CUDASliceMut[f32], j: i32, k: i32):
    i = FlatLayout1D.uid()
    ixj = i ^ j
    if ixj > i and ixj < len(dev_values):
        a = dev_values[i]
        b = dev_values[ixj]
        if ((i & k) == 0) == (a > b):
            dev_values[i] = b
            dev_values[ixj] = a


def bitonic_sort(values) -> None:
    """Sort ``values`` (a device ``f32`` array of a power-of-two length) in place."""
    n = len(values)
    assert n & (n - 1) == 0, "bitonic_sort needs a power-of-two length"
    launch = bitonic_sort_step.launch(GridDim1D((n + THREADS - 1) // THREADS),
                                      BlockDim1D(THREADS), 0, DEFAULT_STREAM)
    k = 2
    while k <= n:
        j = k // 2
        while j > 0:
            launch(values, j, k)
            j //= 2
        k *= 2


def run(n: int = 1 << 12, seed=None):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(n).astype(np.float32)
    values[: n // 8] = values[0]     # a run of equal keys
    values = rng.permutation(values)
    out = gn.to_device(values)
    bitonic_sort(out)
    return out.to_host(), np.sort(values).astype(np.float64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"bitonic_sort_global on {gn.backend()}: {len(out)} values sorted in "
          f"{int(np.log2(len(out)) * (np.log2(len(out)) + 1) / 2)} launches")


if __name__ == "__main__":
    main()
