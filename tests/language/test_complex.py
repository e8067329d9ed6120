"""The complex types (complex64, complex128): kernels on the simulator and (GPU-marked) on the GPU
against NumPy complex128 references from fresh random inputs, outputs poisoned before each run
(the inverse cmath functions also around their branch points and on and beside their cuts);
the simulator's complex64 arithmetic bit for bit against NumPy float32 in the prelude's order of
operations; device arrays of complex to and from NumPy; launch argument checks; bounds checks
and unique-write proofs over arrays of complex numbers; and the type errors.

Tolerances (documented in docs/language.md, "Complex numbers"): ``+ - * /`` are the same
sequence of correctly rounded operations on the simulator and the GPU, so against the complex128
reference they are within a few float32 (float64) roundings: rtol 1e-5 (1e-13) relative to the
modulus.  The cmath functions call each side's sin, exp, hypot ...: rtol 1e-5 for complex64 and
1e-12 for complex128, relative to the modulus of the result.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelIndexError, TranspileError
from gpu_native.rewrite import rewrite_module


@pytest.fixture(scope="module")
def kc():
    from tests.helpers import kernels_complex

    return kernels_complex


def run(kernel, n, *args, block=64):
    kernel.launch(gn.GridDim1D((n + block - 1) // block), gn.BlockDim1D(block), 0,
                  gn.DEFAULT_STREAM)(*args)


def random_complex(rng, n, dtype=np.complex64, scale=1.0):
    return (scale * (rng.standard_normal(n) + 1j * rng.standard_normal(n))).astype(dtype)


def poisoned(shape, dtype):
    """A device array full of NaN (or -7 for integers), so an unwritten element shows."""
    out = gn.empty(shape, dtype)
    out.fill(complex(np.nan, np.nan) if np.dtype(out.scalar_info.dtype).kind == "c"
             else (np.nan if np.dtype(out.scalar_info.dtype).kind == "f" else -7))
    return out


def assert_close(got, want, rtol):
    """Each element within ``rtol`` of the reference's modulus (a complex number's parts are
    not each accurate to rtol where they cancel: (a*d + b*c) may be tiny)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    err = np.abs(got.astype(np.complex128) - want)
    scale = np.maximum(np.abs(want), np.finfo(np.float64).tiny)
    worst = np.nanmax(err / scale)
    assert np.all(np.isfinite(got) == np.isfinite(want))
    assert worst <= rtol, f"worst relative error {worst:.3g} > {rtol}"


# ---- kernels against NumPy ----------------------------------------------------------------------


@pytest.mark.slow
def test_complex64_operators_match_numpy(backend, kc, rng):
    n = 300
    a, b = random_complex(rng, n), random_complex(rng, n)
    s = rng.standard_normal(n).astype(np.float32)
    k = rng.integers(-100, 100, n).astype(np.int16)
    c = gn.complex64(0.75, -1.25)
    out = poisoned((n, 16), gn.complex64)
    real = poisoned((n, 6), gn.f32)
    flags = poisoned((n, 5), gn.i32)
    b[::7] = a[::7]  # some equal pairs for == and !=
    run(kc.arith_c64, n, gn.to_device(a), gn.to_device(b), gn.to_device(s), gn.to_device(k),
        c, out, real, flags)
    z, w, x, cc = a.astype(np.complex128), b.astype(np.complex128), s.astype(np.float64), \
        complex(c)
    acc = z * 1 + 0.5
    want = np.stack([z + w, z - w, z * w, z / w, -z, np.conj(z), z * x, x / z, z + 2,
                     x + 1j * z.imag, z * cc + w, k - z, x + 0j, np.where(x > 0, z, w),
                     np.zeros(n), acc], axis=1)
    got = out.to_host()
    assert got.dtype == np.complex64 and got.shape == (n, 16)
    single = [j for j in range(16) if j != 10]
    assert_close(got[:, single], want[:, single], 1e-5)
    # mul_add(z, c, w) rounds z * c before it adds w: where the sum cancels, its error is a
    # few roundings of |z * c| + |w|, not of the (small) result.
    err = np.abs(got[:, 10].astype(np.complex128) - want[:, 10])
    assert np.max(err / (np.abs(z * cc) + np.abs(w))) <= 1e-5
    np.testing.assert_allclose(real.to_host(), np.stack(
        [np.abs(z), z.real, z.imag, np.angle(z), np.abs(w), np.angle(w)], axis=1),
        rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(flags.to_host(), np.stack(
        [z == w, z != w, np.ones(n, bool), np.ones(n, bool), z != 1], axis=1).astype(np.int32))


def test_complex128_operators_match_numpy(backend, kc, rng):
    n = 200
    a, b = random_complex(rng, n, np.complex128), random_complex(rng, n, np.complex128, 1e3)
    out = poisoned((n, 3), gn.complex128)
    run(kc.arith_c128, n, gn.to_device(a), gn.to_device(b), out)
    assert_close(out.to_host(), np.stack([a * b, a / b, a + b - 1.5], axis=1), 1e-13)


def test_mixing_with_f64_and_i32_gives_complex128(backend, kc, rng):
    n = 150
    a = random_complex(rng, n)
    d = rng.standard_normal(n)
    m = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    c = complex(rng.standard_normal(), rng.standard_normal())
    out = poisoned((n, 5), gn.complex128)
    run(kc.mixed_c128, n, gn.to_device(a), gn.to_device(d), gn.to_device(m), c, out)
    z = a.astype(np.complex128)
    # NumPy's promotions: complex64 * float64 and complex64 + int32 are complex128, computed
    # in double (an i32 is exact there, as it would not be in complex64's f32 parts).
    np.testing.assert_equal(np.result_type(np.complex64, np.float64), np.complex128)
    assert_close(out.to_host(), np.stack([z * d, z + m, z / c, z, z - np.pi], axis=1), 1e-13)


@pytest.mark.parametrize("dtype, rtol", [(np.complex64, 1e-5), (np.complex128, 1e-12)])
def test_cmath_functions_match_numpy(backend, kc, rng, dtype, rtol):
    n = 400
    # |im| <= 1.2 keeps tanh off its poles (cos(2 im) + cosh(2 re) stays >= 0.26), where any
    # formula loses the relative accuracy the test asks for; tan's are left out below.
    a = (rng.uniform(-4, 4, n) + 1j * rng.uniform(-1.2, 1.2, n)).astype(dtype)
    a[:4] = [0, 1, -1, 1j]
    kernel = kc.cmath_c64 if dtype == np.complex64 else kc.cmath_c128
    out = poisoned((n, 11), dtype)
    flags = poisoned((n, 3), gn.i32)
    run(kernel, n, gn.to_device(a), out, flags)
    z = a.astype(np.complex128)
    with np.errstate(divide="ignore"):
        want = np.stack([np.exp(z), np.log(z), np.log10(z), np.sqrt(z), np.sin(z), np.cos(z),
                         np.tan(z), np.sinh(z), np.cosh(z), np.tanh(z), z], axis=1)
    got = out.to_host()
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite)  # log(0) is -inf on both
    # tan(z) has poles at re = pi/2 + k pi, im = 0, where its denominator cos(2 re) + cosh(2 im)
    # vanishes and cancels: left out there (the formula is conditioned as the function is).
    compared = finite.copy()
    compared[:, 6] &= np.cos(2 * z.real) + np.cosh(2 * z.imag) >= 0.25
    assert_close(got[compared], want[compared], rtol)
    np.testing.assert_array_equal(flags.to_host(), np.zeros((n, 3), np.int32) + [0, 0, 1])


def test_cmath_predicates_on_special_values(backend, kc):
    inf, nan = np.inf, np.nan
    a = np.array([complex(inf, 0), complex(0, -inf), complex(nan, 1), complex(1, nan), 1 + 1j],
                 np.complex128)
    out = poisoned((5, 11), gn.complex128)
    flags = poisoned((5, 3), gn.i32)
    run(kc.cmath_c128, 5, gn.to_device(a), out, flags)
    np.testing.assert_array_equal(flags.to_host(), [[0, 1, 0], [0, 1, 0], [1, 0, 0], [1, 0, 0],
                                                    [0, 0, 1]])
    got = out.to_host()
    assert got[0, 0] == complex(inf, 0)  # exp(inf + 0j): the imaginary part stays 0
    assert got[1, 3] == complex(inf, -inf)  # sqrt(0 - inf j)


INVERSES = (np.arcsin, np.arccos, np.arctan, np.arcsinh, np.arccosh, np.arctanh)


def complex_array(re, im, dtype):
    """``re + im j`` with the signs of zero parts kept (``re + 1j * im`` loses ``-0.0``)."""
    z = np.empty(np.broadcast(re, im).shape, dtype)
    z.real, z.imag = re, im
    return z


def inverse_arguments(rng, dtype):
    """Arguments for the inverse functions: random ones of every decade of normal numbers the
    part type holds (1e-30 to 1e38 for complex64, 1e-300 to 1e308 for complex128: a subnormal
    part is left out, see docs/language.md) in all four quadrants, with parts of one magnitude
    and of unrelated ones (near the axes, so near the cuts); a grid around 0 and the branch
    points ±1 and ±1j down to the type's epsilon; and points on the axes (on and off the cuts,
    both signs of zero), each near the cut (a part of 1e-20, 1e-200) and beyond the threshold
    where the functions take their form at infinity (1e18, 1e150)."""
    is_single = dtype == np.complex64
    lo, hi = (-30, 38) if is_single else (-300, 308)
    n = 500

    def signed_decades():
        return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(lo, hi, n)

    angles = rng.uniform(-np.pi, np.pi, n)
    modulus = 10.0 ** rng.uniform(lo, hi, n)
    parts = [(modulus * np.cos(angles), modulus * np.sin(angles)),
             (signed_decades(), signed_decades()),
             (rng.uniform(-3, 3, n), rng.uniform(-3, 3, n))]
    steps = [0.0] + [10.0 ** -k for k in range(1, 8 if is_single else 16, 2)]
    offsets = np.array([s * d for d in steps for s in (1.0, -1.0)])
    re, im = np.meshgrid(offsets, offsets)
    for centre in (0, 1, -1, 1j, -1j):
        parts.append((centre.real + re.ravel(), centre.imag + im.ravel()))
    tiny = 1e-20 if is_single else 1e-200
    axis = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 1e3, 1e10, 1e17, 1e19, 1e30] if is_single
                    else [0.25, 0.5, 1.0, 1.5, 2.0, 1e3, 1e10, 1e100, 1e149, 1e151, 1e300])
    on_axis = np.concatenate([axis, -axis])
    for side in (0.0, -0.0, tiny, -tiny):
        parts += [(on_axis, np.full_like(on_axis, side)), (np.full_like(on_axis, side), on_axis)]
    return np.concatenate([complex_array(r, i, dtype) for r, i in parts])


def cmath_reference(f, z):
    """Python's cmath ``f`` of each element (NaN where it raises, at the singular points)."""
    def value(v):
        try:
            return f(v)
        except ValueError:
            return complex(np.nan, np.nan)
    return np.array([value(complex(v)) for v in z])


@pytest.mark.parametrize("dtype, rtol", [(np.complex64, 1e-5), (np.complex128, 1e-12)])
def test_cmath_inverse_functions_match_numpy(backend, kc, rng, dtype, rtol):
    """asin, acos, atan, asinh, acosh, atanh (and acos of a real argument, promoted) against
    NumPy's complex128 of the same arguments, within rtol of the result's modulus; on the axes,
    where the branch cuts are, each part's sign (of zero too) is Python's cmath's."""
    import cmath

    a = inverse_arguments(rng, dtype)
    n = len(a)
    kernel = kc.cmath_inverse_c64 if dtype == np.complex64 else kc.cmath_inverse_c128
    out = poisoned((n, 7), dtype)
    run(kernel, n, gn.to_device(a), out)
    z = a.astype(np.complex128)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.stack([f(z) for f in INVERSES] + [np.arccos(z.real + 0j)], axis=1)
    got = out.to_host()
    finite = np.isfinite(want)
    # atanh(±1) and atan(±1j) are infinite, the same infinity on both
    np.testing.assert_array_equal(np.isfinite(got), finite)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    assert_close(got[finite], want[finite], rtol)
    on_axes = (z.real == 0) | (z.imag == 0)
    for column, name in enumerate(("asin", "acos", "atan", "asinh", "acosh", "atanh")):
        ref = cmath_reference(getattr(cmath, name), z[on_axes])
        mine = got[on_axes, column]
        for part in ("real", "imag"):
            ours, python = getattr(mine, part), getattr(ref, part)
            known = ~np.isnan(python)
            np.testing.assert_array_equal(np.signbit(ours[known]), np.signbit(python[known]),
                                          err_msg=f"cmath.{name}: the sign of the {part} part")


def test_shared_and_local_arrays_of_complex(backend, kc, rng):
    n = 200  # four tiles, the last one partial
    a = random_complex(rng, n)
    out = poisoned(n, gn.complex64)
    run(kc.reverse_tiles, n, gn.to_device(a), out, block=kc.TILE)
    padded = np.concatenate([a, np.zeros(256 - n, np.complex64)]).reshape(-1, kc.TILE)
    want = (padded[:, ::-1].reshape(-1)[:n]).astype(np.complex128) * 1j
    np.testing.assert_array_equal(out.to_host(), want.astype(np.complex64))


def test_out_of_range_read_of_a_complex_array_raises(backend, kc, rng):
    n = 64
    a = random_complex(rng, n)
    idx = np.arange(n, dtype=np.int32)[::-1].copy()
    out = poisoned(n, gn.complex64)
    run(kc.gather, n, gn.to_device(a), gn.to_device(idx), out)
    np.testing.assert_array_equal(out.to_host(), a[::-1])
    idx[5] = n
    with pytest.raises(KernelIndexError, match=r"index 64 .*length 64|64.*out of range"):
        run(kc.gather, n, gn.to_device(a), gn.to_device(idx), out)
        gn.synchronize()


# ---- the simulator computes complex64 in float32, as the prelude does -------------------------


def test_simulator_complex64_mul_div_are_float32_bit_for_bit(sim, kc, rng):
    n = 4000
    a, b = random_complex(rng, n, scale=3.0), random_complex(rng, n, scale=3.0)
    b[:3] = [0, 1e-30 + 0j, 2j]
    out = poisoned((n, 16), gn.complex64)
    real, flags = poisoned((n, 6), gn.f32), poisoned((n, 5), gn.i32)
    s = np.ones(n, np.float32)
    run(kc.arith_c64, n, gn.to_device(a), gn.to_device(b), gn.to_device(s),
        gn.to_device(np.zeros(n, np.int16)), gn.complex64(1, 0), out, real, flags)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag  # float32 arrays: float32 arithmetic
    mul = (ar * br - ai * bi) + 1j * (ar * bi + ai * br)
    with np.errstate(all="ignore"):
        one = np.float32(1)
        rat1 = bi / br
        scl1 = one / (br + bi * rat1)
        rat2 = br / bi
        scl2 = one / (bi + br * rat2)
        first = np.abs(br) >= np.abs(bi)
        zero = (br == 0) & (bi == 0)
        re = np.where(first, np.where(zero, ar / np.abs(br), (ar + ai * rat1) * scl1),
                      (ar * rat2 + ai) * scl2)
        im = np.where(first, np.where(zero, ai / np.abs(bi), (ai - ar * rat1) * scl1),
                      (ai * rat2 - ar) * scl2)
    got = out.to_host()
    assert re.dtype == np.float32
    np.testing.assert_array_equal(got[:, 2].real, mul.real.astype(np.float32))
    np.testing.assert_array_equal(got[:, 2].imag, mul.imag.astype(np.float32))
    np.testing.assert_array_equal(got[:, 3].real, re)
    np.testing.assert_array_equal(got[:, 3].imag, im)
    # Computing in float64 and rounding once would differ from float32 step by step somewhere.
    wide = (a.astype(np.complex128) * b.astype(np.complex128)).astype(np.complex64)
    assert np.any(wide != got[:, 2])


# ---- arrays and arguments ----------------------------------------------------------------------


def test_device_arrays_of_complex_round_trip(backend, rng):
    for dtype in (np.complex64, np.complex128):
        host = random_complex(rng, (4, 5), dtype)
        arr = gn.to_device(host)
        assert arr.shape == (4, 5) and arr.scalar_type is getattr(gn, np.dtype(dtype).name)
        back = arr.to_host()
        assert back.dtype == dtype
        np.testing.assert_array_equal(back, host)
    z = gn.zeros(3, gn.complex128)
    np.testing.assert_array_equal(z.to_host(), np.zeros(3, np.complex128))
    e = gn.to_device(np.arange(3, dtype=np.float64), dtype=gn.complex64)
    np.testing.assert_array_equal(e.to_host(), np.arange(3, dtype=np.complex64))


def test_launch_checks_complex_arguments(backend, kc, rng):
    n = 8
    a = gn.to_device(random_complex(rng, n, np.complex128))  # complex128, not complex64
    out = gn.empty(n, gn.complex64)
    with pytest.raises(TypeError, match=r"argument 'a' of gather must be an array of "
                                        r"complex64 .* its elements are complex128"):
        run(kc.gather, n, a, gn.to_device(np.zeros(n, np.int32)), out)
    with pytest.raises(TypeError, match=r"argument 'b' of arith_c128 is a NumPy array in host "
                                        r"memory"):
        run(kc.arith_c128, n, gn.to_device(random_complex(rng, n, np.complex128)),
            random_complex(rng, n, np.complex128), gn.empty((n, 3), gn.complex128))
    outs = (gn.empty((n, 16), gn.complex64), gn.empty((n, 6), gn.f32), gn.empty((n, 5), gn.i32))
    args = [gn.to_device(random_complex(rng, n)), gn.to_device(random_complex(rng, n)),
            gn.to_device(np.ones(n, np.float32)), gn.to_device(np.ones(n, np.int16))]
    with pytest.raises(TypeError, match=r"argument 'c' of arith_c64 must be a complex "
                                        r"number \(complex64\), not str"):
        run(kc.arith_c64, n, *args, "1+2j", *outs)
    with pytest.raises(ValueError, match=r"argument 'c' of arith_c64, real part, "):
        run(kc.arith_c64, n, *args, complex(1e300, 0), *outs)
    with pytest.raises(ValueError, match=r"argument 'c' of arith_c64 is an integer of 2001 "
                                         r"bits, out of range for complex64"):
        run(kc.arith_c64, n, *args, 2**2000, *outs)  # was complex()'s OverflowError
    for value in (1 + 2j, 3.0, 2, np.complex64(1 - 1j), gn.complex64(0.5, 2)):
        run(kc.arith_c64, n, *args, value, *outs)  # any number converts


def test_host_complex_classes():
    z = gn.complex64(0.1, 2)
    assert isinstance(z, complex) and z.real == float(np.float32(0.1)) and z.imag == 2.0
    assert gn.complex128(3) == 3 + 0j and gn.complex64(1 + 2j) == 1 + 2j
    assert gn.complex64.dtype == np.complex64 and gn.complex128.dtype == np.complex128
    assert repr(gn.complex64) == "gpu_native.complex64"


# ---- type errors --------------------------------------------------------------------------------

HEADER = """\
import math
import cmath
from gpu_native import *
"""

ERRORS = {
    "complex64 with i64": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], n: i64, out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = a[i] * n  # <-
""", r"operator \*: a i64 operand does not promote to a complex number"),
    "complex128 into complex64": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex128], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = a[i]  # <-
""", r"a complex128 value does not fit a complex64 without rounding"),
    "f64 into complex64": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f64], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = a[i]  # <-
""", r"a f64 value does not fit a complex64 without rounding"),
    "mixed product stored narrow": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], d: f64, out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = a[i] * d  # <-
""", r"a complex128 value does not fit a complex64"),
    "complex into a real array": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i]  # <-
""", r"must be a scalar f32, not complex64"),
    "ordering": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if a[i] < a[i]:  # <-
        out[i] = 1.0
""", r"complex numbers are not ordered \(<\)"),
    "assigning a part": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    z = a[i]
    z.real = 1.0  # <-
    out[i] = z
""", r"the parts of a complex number cannot be assigned"),
    "unknown attribute": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i].x  # <-
""", r"a complex64 has no attribute \.x; it has \.real and \.imag"),
    "math on complex": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = math.sqrt(a[i])  # <-
""", r"(?s)math\.sqrt\(\) does not take a complex number .*use cmath\.sqrt\(\)"),
    "power": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = a[i] ** 2  # <-
""", r"operator \*\* is not defined on complex numbers"),
    "atomics on complex": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[complex64]):
    out.atomic_ref(0).fetch_add(complex64(1, 0))  # <-
""", r"atomic add is not available for complex64 arrays"),
    "complex condition": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if a[i]:  # <-
        out[i] = 1.0
""", r"must be a bool or a number, not complex64"),
    "min of complex": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = min(a[i], a[i])  # <-
""", r"complex numbers are not ordered"),
    "cast to a real type": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = f32(a[i])  # <-
""", r"f32\(\) must be a scalar f32, not complex64"),
    "complex part of a constructor": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = complex64(a[i], 1.0)  # <-
""", r"complex64\(\)'s real part does not take a complex number"),
    "vector with complex": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], v: vec2f, out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[i] = a[i] + v  # <-
""", r"a vector \(vec2f\) and a complex number do not mix"),
    "unique writes": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    i = FlatLayout1D.uid()
    out[0] = a[i]  # <-
""", r"unique"),
}


def _expect_error(source: str, pattern: str, path: str = "/tmp/complex_errors.py") -> None:
    source = textwrap.dedent(source)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, path, "complex_errors")
    err = info.value
    text = str(err)
    assert err.span.line == line, text
    assert f"{path}:{line}:" in text
    assert "^" in text  # the source line, with a caret under the construct
    assert re.search(pattern, text), text


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_type_errors(case):
    body, pattern = ERRORS[case]
    _expect_error(HEADER + body, pattern)


def test_cmath_must_be_imported():
    source = textwrap.dedent("""\
        from gpu_native import *

        @gpu_kernel(Kernel1D)
        def k(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
            i = FlatLayout1D.uid()
            out[i] = cmath.exp(a[i])  # <-
        """)
    _expect_error(source, r"name 'cmath' is not defined in .*: it is not imported there")


# ---- the docs ----------------------------------------------------------------------------------


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib

    from tests.helpers import ROOT

    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n## Complex numbers\n"):text.index("\n## Structs\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"complex_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Its asserts compare with np.allclose, loose enough for CUDA's sinf/cosf (a few ulps).
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_abi_complex_slots_follow_the_complex_types():
    from gpu_native import abi
    from gpu_native.lang.types import COMPLEXES

    assert {name: (c.elem.name, c.n) for name, c in COMPLEXES.items()} == abi.COMPLEX_SLOTS


def test_python_complex_is_complex128(backend, kc, rng):
    re, im = rng.standard_normal(100), rng.standard_normal(100)
    out = poisoned(100, gn.f64)
    run(kc.python_complex, 100, gn.to_device(re), gn.to_device(im), out)
    z = re + 1j * im
    want = np.abs(z * z) ** 2 + np.angle(z)
    np.testing.assert_allclose(out.to_host(), want, rtol=1e-12, atol=1e-12)
