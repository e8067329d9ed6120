"""Stream compaction (filter): copy the elements above a threshold into a dense output, each
thread taking its output slot from a global atomic counter (the output order is unspecified).

Source algorithm: the atomic-counter filter of A. Adinets, "CUDA Pro Tip: Optimized Filtering
with Warp-Aggregated Atomics" (NVIDIA developer blog, 2014), its first version ``filter_k``:
``if (src[i] > 0) dst[atomicAdd(nres, 1)] = src[i];``.  (The blog goes on to aggregate the
atomics per warp: ``ballot``, ``popc``, one ``fetch_add`` by the warp's leader, ``shfl_idx`` of
its result.  Each lane's slot is then the warp's ticket plus its rank among the warp's passing
lanes, a store the unique-write proofs do not follow: it needs ``with unsafe():``.)

What it exercises: a store through an index returned by ``atomic_ref(0).fetch_add(1)``, which
is unique because every ``fetch_add`` returns a different old value; the guard ``i < n`` of the
original, with the load in the same condition.
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
    UniqueId,
    f32,
    gpu_kernel,
    u32,
)

THREADS = 256

# A copy of selected elements (compared after sorting, since the order is unspecified): exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def compact_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], count: CUDASliceMut[u32],
                   threshold: f32):
    i: UniqueId = FlatLayout1D.uid()
    if i < len(x) and x[i] > threshold:
        # A ticket: fetch_add(1) on a counter nothing else in the kernel changes returns
        # another value to every thread, so no two threads write the same slot.
        slot = count.atomic_ref(0).fetch_add(1)
        out[slot] = x[i]


def compact(x, threshold: float):
    """The elements of ``x`` above ``threshold``, in some order, and how many there are."""
    n = len(x)
    out = gn.empty(n, gn.f32)
    poison(out)
    count = gn.zeros(1, gn.u32)     # the slot counter must start at zero
    compact_kernel.launch(GridDim1D((n + THREADS - 1) // THREADS), BlockDim1D(THREADS), 0,
                          DEFAULT_STREAM)(x, out, count, threshold)
    return out, count


def run(n: int = 30_001, threshold: float = 0.5, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    out, count = compact(gn.to_device(x), threshold)
    k = int(count.to_host()[0])
    kept = x[x > np.float32(threshold)].astype(np.float64)
    got = np.sort(out.to_host()[:k]) if k <= n else np.full(len(kept) + 1, np.nan)
    return (np.array([k]), got), (np.array([float(len(kept))]), np.sort(kept))


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"stream_compaction on {gn.backend()}: kept {int(out[0][0])} elements")


if __name__ == "__main__":
    main()
