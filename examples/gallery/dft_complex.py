"""Naive discrete Fourier transform in complex64: each thread computes one output bin.

Source algorithm: the definition of the DFT as the ``numpy.fft`` module documentation writes
it, A[k] = sum_m a[m] exp(-2 pi i m k / n), evaluated directly with one output bin per thread;
O(n^2) work, checked against ``numpy.fft.fft``.

What it exercises: ``CUDASlice[complex64]`` arrays taken from and given back as NumPy complex64
arrays, a complex64 accumulator with ``+=`` and ``*``, ``cmath.exp`` of an imaginary
``complex64(0, angle)``, and integer phase reduction ``(k * j) % n`` so the f32 angle stays in
[-2 pi, 0] (the product k * j itself would lose the angle's precision in f32).
"""

import cmath
import math

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
    complex64,
    f32,
    gpu_kernel,
)

THREADS = 128

# n f32 products summed in order per bin, twiddles from f32 sin/cos of angles in [-2 pi, 0]:
# relative error ~ sqrt(n) ulps in norm, well below 1e-5 up to n = 2**14.
TOLERANCE = ("norm", 1e-5)


@gpu_kernel(Kernel1D)
def dft_kernel(x: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    k: UniqueId = FlatLayout1D.uid()
    n = len(x)
    if k < len(out):
        acc = complex64()
        for j in range(n):
            m = (k * j) % n
            angle = f32(-2.0 * math.pi) * f32(m) / f32(n)
            acc += x[j] * cmath.exp(complex64(0, angle))
        out[k] = acc


def dft(x):
    """The discrete Fourier transform of a complex64 device array."""
    n = len(x)
    out = gn.empty(n, gn.complex64)
    poison(out)
    dft_kernel.launch(GridDim1D((n + THREADS - 1) // THREADS), BlockDim1D(THREADS), 0,
                      DEFAULT_STREAM)(x, out)
    return out


def run(n: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    out = dft(gn.to_device(x)).to_host()
    ref = np.fft.fft(x.astype(np.complex128))
    # compare() works on real arrays: the parts side by side.
    return (np.stack([np.real(out), np.imag(out)], axis=1),
            np.stack([np.real(ref), np.imag(ref)], axis=1))


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"dft_complex on {gn.backend()}: {len(out)} bins, relative error {rel:.2e}")


if __name__ == "__main__":
    main()
