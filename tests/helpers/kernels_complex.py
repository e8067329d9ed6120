"""Kernels over the complex types (complex64, complex128), for tests/language/test_complex.py
and the NVRTC compile test (tests/compiler/test_nvrtc_all.py)."""

import cmath

from gpu_native import (
    BlockLayout1D,
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    complex64,
    complex128,
    f32,
    f64,
    gpu_device,
    gpu_kernel,
    i16,
    i32,
    local_array,
    shared_array,
    sync_threads,
    thread_idx,
)

TILE = 64


@gpu_device
def mul_add(a: complex64, b: complex64, c: complex64) -> complex64:
    return a * b + c


@gpu_kernel(Kernel1D)
def arith_c64(a: CUDASlice[complex64], b: CUDASlice[complex64], s: CUDASlice[f32],
              k: CUDASlice[i16], c: complex64, out: CUDASliceMut2D[complex64],
              real: CUDASliceMut2D[f32], flags: CUDASliceMut2D[i32]):
    """Every operator on complex64, with f32, i16 and literal operands promoted."""
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        w = b[i]
        x = s[i]
        out[i, 0] = z + w
        out[i, 1] = z - w
        out[i, 2] = z * w
        out[i, 3] = z / w
        out[i, 4] = -z
        out[i, 5] = z.conjugate()
        out[i, 6] = z * x
        out[i, 7] = x / z
        out[i, 8] = z + 2
        out[i, 9] = complex64(x, z.imag)
        out[i, 10] = mul_add(z, c, w)
        out[i, 11] = k[i] - z
        out[i, 12] = complex64(x)
        out[i, 13] = z if x > 0 else w
        out[i, 14] = complex64()
        acc = complex64(1, 0)
        acc *= z
        acc += 0.5
        out[i, 15] = acc
        real[i, 0] = abs(z)
        real[i, 1] = z.real
        real[i, 2] = z.imag
        real[i, 3] = cmath.phase(z)
        r, phi = cmath.polar(w)
        real[i, 4] = r
        real[i, 5] = phi
        flags[i, 0] = i32(z == w)
        flags[i, 1] = i32(z != w)
        flags[i, 2] = i32(z == z)
        flags[i, 3] = i32(complex64(x) == x)
        flags[i, 4] = i32(z != 1)


@gpu_kernel(Kernel1D)
def mixed_c128(a: CUDASlice[complex64], d: CUDASlice[f64], n: CUDASlice[i32],
               c: complex128, out: CUDASliceMut2D[complex128]):
    """complex64 meets f64, i32 and complex128: the results are complex128."""
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        out[i, 0] = z * d[i]
        out[i, 1] = z + n[i]
        out[i, 2] = z / c
        out[i, 3] = z
        out[i, 4] = complex128(z) - cmath.pi


@gpu_kernel(Kernel1D)
def cmath_c64(a: CUDASlice[complex64], out: CUDASliceMut2D[complex64],
              flags: CUDASliceMut2D[i32]):
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        out[i, 0] = cmath.exp(z)
        out[i, 1] = cmath.log(z)
        out[i, 2] = cmath.log10(z)
        out[i, 3] = cmath.sqrt(z)
        out[i, 4] = cmath.sin(z)
        out[i, 5] = cmath.cos(z)
        out[i, 6] = cmath.tan(z)
        out[i, 7] = cmath.sinh(z)
        out[i, 8] = cmath.cosh(z)
        out[i, 9] = cmath.tanh(z)
        out[i, 10] = cmath.rect(abs(z), cmath.phase(z))
        flags[i, 0] = i32(cmath.isnan(z))
        flags[i, 1] = i32(cmath.isinf(z))
        flags[i, 2] = i32(cmath.isfinite(z))


@gpu_kernel(Kernel1D)
def cmath_c128(a: CUDASlice[complex128], out: CUDASliceMut2D[complex128],
               flags: CUDASliceMut2D[i32]):
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        out[i, 0] = cmath.exp(z)
        out[i, 1] = cmath.log(z)
        out[i, 2] = cmath.log10(z)
        out[i, 3] = cmath.sqrt(z)
        out[i, 4] = cmath.sin(z)
        out[i, 5] = cmath.cos(z)
        out[i, 6] = cmath.tan(z)
        out[i, 7] = cmath.sinh(z)
        out[i, 8] = cmath.cosh(z)
        out[i, 9] = cmath.tanh(z)
        out[i, 10] = cmath.rect(abs(z), cmath.phase(z))
        flags[i, 0] = i32(cmath.isnan(z))
        flags[i, 1] = i32(cmath.isinf(z))
        flags[i, 2] = i32(cmath.isfinite(z))


@gpu_kernel(Kernel1D)
def cmath_inverse_c64(a: CUDASlice[complex64], out: CUDASliceMut2D[complex64]):
    """The inverse functions, and one of a real argument (an f32, promoted to complex64)."""
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        out[i, 0] = cmath.asin(z)
        out[i, 1] = cmath.acos(z)
        out[i, 2] = cmath.atan(z)
        out[i, 3] = cmath.asinh(z)
        out[i, 4] = cmath.acosh(z)
        out[i, 5] = cmath.atanh(z)
        out[i, 6] = cmath.acos(z.real)


# The same for complex128 (a kernel's TypeVar lists scalar types only, so each complex type has
# a kernel of its own, as cmath_c64 and cmath_c128 have).
@gpu_kernel(Kernel1D)
def cmath_inverse_c128(a: CUDASlice[complex128], out: CUDASliceMut2D[complex128]):
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        out[i, 0] = cmath.asin(z)
        out[i, 1] = cmath.acos(z)
        out[i, 2] = cmath.atan(z)
        out[i, 3] = cmath.asinh(z)
        out[i, 4] = cmath.acosh(z)
        out[i, 5] = cmath.atanh(z)
        out[i, 6] = cmath.acos(z.real)


@gpu_kernel(Kernel1D)
def arith_c128(a: CUDASlice[complex128], b: CUDASlice[complex128],
               out: CUDASliceMut2D[complex128]):
    i = FlatLayout1D.uid()
    if i < len(a):
        z = a[i]
        w = b[i]
        out[i, 0] = z * w
        out[i, 1] = z / w
        out[i, 2] = z + w - 1.5


@gpu_kernel(Kernel1D)
def reverse_tiles(a: CUDASlice[complex64], out: CUDASliceMut[complex64]):
    """Shared and per-thread arrays of complex64: each block reverses its tile, times 1j."""
    tile = shared_array(complex64, TILE)
    scratch = local_array(complex64, 2)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    tile[t] = a[i] if i < len(a) else complex64()
    sync_threads()
    scratch[0] = tile[TILE - 1 - thread_idx.x]
    scratch[1] = complex64(0, 1)
    if i < len(out):
        out[i] = scratch[0] * scratch[1]


@gpu_kernel(Kernel1D)
def gather(a: CUDASlice[complex64], idx: CUDASlice[i32], out: CUDASliceMut[complex64]):
    """A read at an index from data: bounds checked like any element type."""
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = a[idx[i]]


@gpu_device
def squared_modulus(z: complex) -> f64:
    """Python's `complex` as an annotation: a complex128."""
    return z.real * z.real + z.imag * z.imag


@gpu_kernel(Kernel1D)
def python_complex(re: CUDASlice[f64], im: CUDASlice[f64], out: CUDASliceMut[f64]):
    """`complex(re, im)` is complex128(re, im), as Python's complex is."""
    i = FlatLayout1D.uid()
    if i < len(out):
        z = complex(re[i], im[i])
        w: complex = z * z
        out[i] = squared_modulus(w) + f64(cmath.phase(z))
