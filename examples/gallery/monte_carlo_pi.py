"""Monte Carlo estimate of pi: each thread draws points from its own Philox generator, counts
those inside the quarter circle with exact integer arithmetic, the counts are summed per warp
with shuffles and added to one global counter with an atomic per warp.

Source algorithm: the dart-throwing estimate of pi (the "Monte Carlo" example of the Numba-CUDA
documentation's random-number section, and of most CUDA courses), with cuRAND's per-thread
generators: ``philox(seed, uid)`` gives thread ``uid`` the subsequence ``uid`` of the seed's
Philox4x32-10 stream (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), as
``curand_init(seed, uid, 0, &state)`` does.  The NumPy reference draws exactly the same points
with ``gpu_native.simulator.philox``, the implementation the simulator runs and the GPU matches
bit for bit.

What it exercises: a ``philox`` generator per thread and its ``random_u32`` draws, ``u64``
products, ``shfl_down`` reduction, a global ``atomic_ref(0).fetch_add`` by lane 0 of every warp
(a real many-writer update: an atomic is the right tool).
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
    gpu_kernel,
    lane_id,
    philox,
    shfl_down,
    u32,
    u64,
)
from gpu_native.simulator import philox as philox_numpy

THREADS = 128
SAMPLES = 64              # samples per thread

# The count uses only integer arithmetic on the same draws: exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def monte_carlo_pi_kernel(hits: CUDASliceMut[u32], threads: u32, seed: u64):
    i = FlatLayout1D.uid()
    inside = u32(0)
    if i < threads:
        rng = philox(seed, i)
        for _ in range(SAMPLES):
            # 31-bit coordinates in [0, 2**31): inside when x^2 + y^2 < 2^62, exactly.
            x = u64(rng.random_u32() >> 1)
            y = u64(rng.random_u32() >> 1)
            if x * x + y * y < u64(1 << 62):
                inside += 1
    offset = 16
    while offset > 0:
        inside += shfl_down(inside, offset)
        offset //= 2
    if lane_id() == 0:
        hits.atomic_ref(0).fetch_add(inside)


def monte_carlo_pi(threads: int, seed: int):
    """The number of the ``threads * SAMPLES`` points that fall inside the quarter circle."""
    hits = gn.zeros(1, gn.u32)      # an accumulator: it must start at zero, not poisoned
    blocks = (threads + THREADS - 1) // THREADS
    monte_carlo_pi_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        hits, threads, seed)
    return hits


def reference(threads: int, seed: int) -> int:
    """The same points: thread i's k-th draw is the first word of block k of its subsequence."""
    subsequence = np.arange(threads, dtype=np.uint64)[:, None]
    draw = np.arange(2 * SAMPLES, dtype=np.uint64)[None, :]
    words = philox_numpy.block(seed, subsequence, draw)[0] >> np.uint32(1)
    x, y = words[:, 0::2].astype(np.uint64), words[:, 1::2].astype(np.uint64)
    return int(np.count_nonzero(x * x + y * y < np.uint64(1 << 62)))


def run(threads: int = 5000, seed=None):
    seed = 2024 if seed is None else seed
    hits = monte_carlo_pi(threads, seed)
    return hits.to_host(), np.array([float(reference(threads, seed))])


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    estimate = 4 * int(out[0]) / (5000 * SAMPLES)
    print(f"monte_carlo_pi on {gn.backend()}: pi ~ {estimate:.5f} from {5000 * SAMPLES} points")


if __name__ == "__main__":
    main()
