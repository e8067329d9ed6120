"""A long polynomial evaluated on f16 data two elements at a time: ``vec2h`` pairs and ``fma``,
one ``__hfma2`` per Horner step for two elements, beside the same kernel on scalar ``f16``.

The polynomial is the Taylor series of ``log1p(x) / x`` to ``DEGREE`` terms, evaluated by
Horner's rule, ``acc = acc * x + c`` once per coefficient: ``DEGREE`` multiply-adds per element
for 4 bytes of memory traffic, enough arithmetic that the scalar kernel is bound by its HFMA
instructions and the packed one, with half of them, by memory (where packing pays; a kernel that
loads, computes once and stores is bound by memory either way).  ``tools/bench_suite.py --only
horner_half2`` times both beside hand-written CUDA ``__half2`` and torch.

Source algorithm: Horner's rule (Knuth, TAOCP vol. 2, 4.6.4) on CUDA's packed half arithmetic
(``__hfma2``, CUDA Math API "Half2 Arithmetic Functions"; the "Mixed-Precision Programming with
CUDA 8" post's use of ``half2`` to double f16 throughput).

What it exercises: ``CUDASlice[vec2h]`` parameters bound by ``gn.to_device(a, dtype=gn.vec2h)``
(``(n, 2)`` float16 arrays on the host), ``load_vec2`` of two adjacent ``f16`` elements, ``fma``
of pairs, ``vec2h(c)`` broadcasts of constants from a module-level tuple, a loop unrolled over
that tuple.
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
    f16,
    fma,
    gpu_kernel,
    load_vec2,
    vec2h,
)

DEGREE = 32
# log1p(x) / x = sum_k (-1)^k x^k / (k + 1), k < DEGREE, highest power first for Horner's
# rule: (-1) ** k / (k + 1) for k in reversed(range(DEGREE)).
COEFFS = (-0.03125, 0.03225806451612903, -0.03333333333333333, 0.034482758620689655,
          -0.03571428571428571, 0.037037037037037035, -0.038461538461538464, 0.04,
          -0.041666666666666664, 0.043478260869565216, -0.045454545454545456,
          0.047619047619047616, -0.05, 0.05263157894736842, -0.05555555555555555,
          0.058823529411764705, -0.0625, 0.06666666666666667, -0.07142857142857142,
          0.07692307692307693, -0.08333333333333333, 0.09090909090909091, -0.1,
          0.1111111111111111, -0.125, 0.14285714285714285, -0.16666666666666666, 0.2, -0.25,
          0.3333333333333333, -0.5, 1.0)
THREADS = 256

# Each Horner step is one fma rounded once to f16 on both backends (the packed kernel has no
# product and sum for the device compiler to contract), and the reference rounds each step as
# they do, so the results are equal bit for bit.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel1D)
def horner_half2(x: CUDASlice[vec2h], out: CUDASliceMut[vec2h]):
    i = FlatLayout1D.uid()
    if i < len(out):
        v = x[i]
        acc = vec2h(0.0)
        for c in COEFFS:
            acc = fma(acc, v, vec2h(c))
        out[i] = acc


@gpu_kernel(Kernel1D)
def horner_half2_from_f16(x: CUDASlice[f16], out: CUDASliceMut[vec2h]):
    """The packed kernel reading a plain f16 array: two adjacent elements in one 4-byte load."""
    i = FlatLayout1D.uid()
    if i < len(out):
        v = load_vec2(x, 2 * i)
        acc = vec2h(0.0)
        for c in COEFFS:
            acc = fma(acc, v, vec2h(c))
        out[i] = acc


@gpu_kernel(Kernel1D)
def horner_f16(x: CUDASlice[f16], out: CUDASliceMut[f16]):
    """The same polynomial on scalar f16, for comparison: the device compiler contracts each
    step into one HFMA (the simulator rounds the product and the sum apart: compare with a
    tolerance)."""
    i = FlatLayout1D.uid()
    if i < len(out):
        v = x[i]
        acc = f16(0.0)
        for c in COEFFS:
            acc = acc * v + c
        out[i] = acc


def evaluate(x, out) -> None:
    """``out[i] = p(x[i])`` for device arrays of ``vec2h`` (or ``x`` of ``f16``, twice as long)."""
    blocks = (len(out) + THREADS - 1) // THREADS
    kernel = horner_half2 if x.dtype == out.dtype else horner_half2_from_f16
    kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, out)


def evaluate_scalar(x, out) -> None:
    blocks = (len(out) + THREADS - 1) // THREADS
    horner_f16.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, out)


def reference(x: np.ndarray) -> np.ndarray:
    """Horner's rule with every step rounded once to f16: the product of two f16 numbers is
    exact in f64 and, for f16, the f64 sum with an f16 rounds to f16 as the exact sum does."""
    x64 = x.astype(np.float64)
    acc = np.zeros_like(x, dtype=np.float16)
    for c in COEFFS:
        acc = (acc.astype(np.float64) * x64 + float(np.float16(c))).astype(np.float16)
    return acc


def run(n: int = 100_000, seed=None):
    """``n`` pairs; returns both packed kernels' results (pairs, and from a plain f16 array)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.9, 0.9, (n, 2)).astype(np.float16)
    out, out_flat = gn.empty(n, gn.vec2h), gn.empty(n, gn.vec2h)
    poison(out)
    poison(out_flat)
    evaluate(gn.to_device(x, dtype=gn.vec2h), out)
    evaluate(gn.to_device(x.reshape(-1)), out_flat)
    ref = reference(x)
    return (out.to_host(), out_flat.to_host()), (ref, ref)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    x = np.linspace(-0.9, 0.9, 7)
    print(f"horner_half2 on {gn.backend()}: {len(out[0])} pairs; "
          f"max |p(x) - log1p(x)/x| {np.abs(reference(x.astype(np.float16)) - np.log1p(x) / x).max():.1e}")


if __name__ == "__main__":
    main()
