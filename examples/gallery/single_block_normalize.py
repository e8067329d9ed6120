"""Normalise a vector to unit length in one launch of a single block: a block-stride loop sums
the squares, a shared-memory tree reduces them, and a second block-stride loop writes the
scaled vector.

Source algorithm: the single-block "persistent" kernel pattern, used where the data is too small
for a grid and a second launch would cost more than it saves (CUB's ``BlockReduce`` followed by
a block-strided map; the final pass of the two-pass reductions in M. Harris, "Optimizing
Parallel Reduction in CUDA", 2007): ``assert grid_dim.x == 1``, then
``for i in range(tid, n, THREADS)`` in every phase.

What it exercises: ``assert grid_dim.x == 1`` (checked by the launcher), the block-stride store
``out[i]`` for ``i in range(thread_idx.x, n, THREADS)``, ``math.sqrt`` of a reduced value read
back from shared memory by every thread.
"""

import math

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
    f32,
    gpu_kernel,
    grid_dim,
    shared_array,
    sync_threads,
    thread_idx,
)

THREADS = 256

# Each element is x[i] / ||x||, with ||x|| summed in f32 over a few thousand terms.
TOLERANCE = ("abs", 1e-6)


@gpu_kernel(Kernel1D)
def normalize_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert grid_dim.x == 1, "normalize_kernel runs as a single block"
    assert block_dim.x == THREADS, "launch normalize_kernel with THREADS threads per block"
    sums = shared_array(f32, (THREADS,))
    tid = thread_idx.x
    n = len(x)
    total = f32(0.0)
    for i in range(tid, n, THREADS):
        total += x[i] * x[i]
    sums[tid] = total
    stride = THREADS // 2
    while stride > 0:
        sync_threads()
        if tid < stride:
            sums[tid] += sums[tid + stride]
        stride //= 2
    sync_threads()
    scale = 1.0 / math.sqrt(sums[0])
    for i in range(tid, n, THREADS):
        out[i] = x[i] * scale


def normalize(x, out):
    normalize_kernel.launch(GridDim1D(1), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, out)


def run(n: int = 5_003, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    out = gn.empty(n, gn.f32)
    poison(out)
    normalize(gn.to_device(x), out)
    x64 = x.astype(np.float64)
    return out.to_host(), x64 / np.linalg.norm(x64)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"single_block_normalize on {gn.backend()}: norm of the result "
          f"{np.linalg.norm(out.astype(np.float64)):.6f}")


if __name__ == "__main__":
    main()
