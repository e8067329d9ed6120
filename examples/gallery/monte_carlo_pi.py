"""Monte Carlo estimate of pi: points drawn from a counter-based hash, counted inside the quarter
circle with exact integer arithmetic, summed per warp with shuffles and added to one global
counter with an atomic per warp.

Source algorithm: the dart-throwing estimate of pi (the "Monte Carlo" example of the Numba-CUDA
documentation's random-number section, and of most CUDA courses), with the random numbers drawn
from the PCG hash of M. Jarzynski and M. Olano, "Hash Functions for GPU Rendering" (JCGT 9(3),
2020): ``hash(counter)`` of a per-sample counter, so every sample is reproducible and the NumPy
reference draws exactly the same points.  (A proper RNG belongs in the library later; this one
is written by hand in the kernel language.)

What it exercises: ``u32`` wrap-around multiplication, shifts and xor in a ``@gpu_device``
function, ``u64`` products, ``shfl_down`` reduction, a global ``atomic_ref(0).fetch_add`` by lane
0 of every warp (a real many-writer update: an atomic is the right tool).
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
    gpu_device,
    gpu_kernel,
    lane_id,
    shfl_down,
    u32,
    u64,
)

THREADS = 128
SAMPLES = 64              # samples per thread

# The count uses only integer arithmetic on the same hash: exact.
TOLERANCE = ("exact", 0)


@gpu_device
def pcg_hash(v: u32) -> u32:
    state = v * u32(747796405) + u32(2891336453)
    word = ((state >> ((state >> 28) + 4)) ^ state) * u32(277803737)
    return (word >> 22) ^ word


@gpu_kernel(Kernel1D)
def monte_carlo_pi_kernel(hits: CUDASliceMut[u32], threads: u32):
    i = FlatLayout1D.uid()
    inside = u32(0)
    if i < threads:
        for s in range(SAMPLES):
            counter = (u32(i) * SAMPLES + u32(s)) * 2
            # 16-bit coordinates in [0, 65536): inside when x^2 + y^2 < 2^32, exactly.
            x = u64(pcg_hash(counter) >> 16)
            y = u64(pcg_hash(counter + 1) >> 16)
            if x * x + y * y < u64(1 << 32):
                inside += 1
    offset = 16
    while offset > 0:
        inside += shfl_down(inside, offset)
        offset //= 2
    if lane_id() == 0:
        hits.atomic_ref(0).fetch_add(inside)


def monte_carlo_pi(threads: int):
    """The number of the ``threads * SAMPLES`` points that fall inside the quarter circle."""
    hits = gn.zeros(1, gn.u32)      # an accumulator: it must start at zero, not poisoned
    blocks = (threads + THREADS - 1) // THREADS
    monte_carlo_pi_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        hits, threads)
    return hits


def reference(threads: int) -> int:
    """The same points, drawn by the same hash in NumPy ``uint32`` arithmetic."""
    with np.errstate(over="ignore"):
        counter = (np.arange(threads * SAMPLES, dtype=np.uint32) * np.uint32(2))

        def pcg(v):
            state = v * np.uint32(747796405) + np.uint32(2891336453)
            word = ((state >> ((state >> np.uint32(28)) + np.uint32(4))) ^ state) \
                * np.uint32(277803737)
            return (word >> np.uint32(22)) ^ word

        x = (pcg(counter) >> np.uint32(16)).astype(np.uint64)
        y = (pcg(counter + np.uint32(1)) >> np.uint32(16)).astype(np.uint64)
    return int(np.count_nonzero(x * x + y * y < np.uint64(1 << 32)))


def run(threads: int = 5000, seed=None):
    # The hash is deterministic; a seed moves the thread count so that runs differ.
    if seed is not None:
        threads += int(np.random.default_rng(seed).integers(0, 1000))
    hits = monte_carlo_pi(threads)
    return hits.to_host(), np.array([float(reference(threads))])


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    estimate = 4 * int(out[0]) / (5000 * SAMPLES)
    print(f"monte_carlo_pi on {gn.backend()}: pi ~ {estimate:.5f} from {5000 * SAMPLES} points")


if __name__ == "__main__":
    main()
