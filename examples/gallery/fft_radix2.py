"""Iterative radix-2 FFT of a power-of-two length: a bit-reversal permutation, then one launch
per stage, each thread computing one butterfly in place.

Source algorithm: the iterative Cooley-Tukey FFT of T. H. Cormen, C. E. Leiserson, R. L.
Rivest and C. Stein, "Introduction to Algorithms" (3rd ed., section 30.3, ``ITERATIVE-FFT``
with ``BIT-REVERSE-COPY``), one butterfly per thread as in the simple CUDA FFTs that precede
cuFFT (e.g. V. Volkov and B. Kazian, "Fitting FFT onto the G80 Architecture", 2008, for the
mapping): at the stage with half-size ``half``, thread ``t`` takes ``k = t % half`` and
``j = (t // half) * 2 * half + k``, and writes ``a[j]`` and ``a[j + half]``.  Complex numbers
are rows of two f32 (real, imaginary).

What it exercises: a gather through a bijective index function (``dst[i] = src[bitrev(i)]``),
an in-place butterfly writing two elements ``a[j]`` and ``a[j + half]`` of a 2-D array, ``//``
and ``%`` index arithmetic with a launch parameter (proven race-free, the launcher checking
``half >= 1``), ``math.sin``/``math.cos`` on ``f32``.
"""

import math

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    UniqueId,
    f32,
    gpu_kernel,
    i32,
    i64,
)

THREADS = 128

# f32 butterflies over log2(n) stages: relative error ~ log2(n) ulps in norm.
TOLERANCE = ("norm", 1e-5)


@gpu_kernel(Kernel1D)
def bit_reverse_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32], bits: i32):
    i: UniqueId = FlatLayout1D.uid()
    if i < dst.shape[0]:
        # Gather (each thread writes its own row, reads the bit-reversed one), as the coalesced
        # CUDA versions do; the scatter dst[bitrev(i)] = src[i] would need `with unsafe():`, since
        # no index rule knows bit reversal to be a permutation.
        r = i64(0)
        v = i
        for _ in range(bits):
            r = (r << 1) | (v & 1)
            v >>= 1
        dst[i, 0] = src[r, 0]
        dst[i, 1] = src[r, 1]


@gpu_kernel(Kernel1D)
def butterfly_kernel(a: CUDASliceMut2D[f32], half: i64):
    t: UniqueId = FlatLayout1D.uid()
    if t < a.shape[0] // 2:
        k = t % half
        j = (t // half) * (2 * half) + k
        angle = f32(-math.pi) * f32(k) / f32(half)
        wr = math.cos(angle)
        wi = math.sin(angle)
        ur = a[j, 0]
        ui = a[j, 1]
        xr = a[j + half, 0]
        xi = a[j + half, 1]
        vr = xr * wr - xi * wi
        vi = xr * wi + xi * wr
        # Proven unique (R6 and R1): t -> (t // half, t % half) is one-to-one for half >= 1
        #   (the launcher checks it), and t % half < half puts j and j + half in the two
        #   halves of group t // half (stride 2 * half): each element is written once.
        a[j, 0] = ur + vr
        a[j, 1] = ui + vi
        a[j + half, 0] = ur - vr
        a[j + half, 1] = ui - vi


def fft(x):
    """The discrete Fourier transform of an ``(n, 2)`` f32 device array (n a power of two)."""
    n = x.shape[0]
    bits = n.bit_length() - 1
    if n != 1 << bits:
        raise ValueError(f"fft needs a power-of-two length, not {n}")
    out = gn.empty((n, 2), gn.f32)
    poison(out)
    bit_reverse_kernel.launch(GridDim1D((n + THREADS - 1) // THREADS), BlockDim1D(THREADS), 0,
                              DEFAULT_STREAM)(x, out, bits)
    half = 1
    grid = GridDim1D(max(1, (n // 2 + THREADS - 1) // THREADS))
    while half < n:
        butterfly_kernel.launch(grid, BlockDim1D(THREADS), 0, DEFAULT_STREAM)(out, half)
        half *= 2
    return out


def run(n: int = 1024, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2)).astype(np.float32)
    out = fft(gn.to_device(x))
    ref = np.fft.fft(x[:, 0].astype(np.float64) + 1j * x[:, 1].astype(np.float64))
    return out.to_host(), np.stack([ref.real, ref.imag], axis=1)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"fft_radix2 on {gn.backend()}: {len(out)} points, relative error {rel:.2e}")


if __name__ == "__main__":
    main()
