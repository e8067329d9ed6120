"""Generic kernels that convert with their TypeVar, ``T(x)`` (Numba's ``dtype(0)``), for
tests/language/test_typevar_casts.py and the NVRTC compile test
(tests/compiler/test_nvrtc_all.py)."""

from typing import TypeVar

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    Kernel1D,
    f32,
    f64,
    gpu_device,
    gpu_kernel,
    i32,
)

T = TypeVar("T", f32, f64, i32)
S = TypeVar("S", f32, f64, i32)


@gpu_device
def doubled(x: T) -> T:
    return T(2) * x


@gpu_kernel(Kernel1D)
def axpy(a: T, x: CUDASlice[T], y: CUDASlice[T], out: CUDASliceMut[T]):
    """out = a * (2 * x) + y, with the 2 made by ``T(2)`` in a device function."""
    i = FlatLayout1D.uid()
    out[i] = a * doubled(x[i]) + y[i]


@gpu_kernel(Kernel1D)
def row_sums(x: CUDASlice[T], width: i32, out: CUDASliceMut[T]):
    """out[r] = 2 * (sum of row r of x, ``width`` wide), from ``acc = T(0)``."""
    r = FlatLayout1D.uid()
    acc = T(0)
    for j in range(width):
        acc += T(2) * x[r * width + j]
    out[r] = acc


@gpu_kernel(Kernel1D)
def converted(x: CUDASlice[S], out: CUDASliceMut[T]):
    """out = T(x) for every pair of types: the conversion ``f32(x)``, ``i32(x)`` ... is."""
    i = FlatLayout1D.uid()
    out[i] = T(x[i])


@gpu_kernel(Kernel1D)
def converted_i32(x: CUDASlice[S], out: CUDASliceMut[i32]):
    """out = i32(x), written with the concrete type (what ``converted`` is checked against)."""
    i = FlatLayout1D.uid()
    out[i] = i32(x[i])


@gpu_kernel(Kernel1D)
def literals(out: CUDASliceMut[T]):
    """Float and bool literals converted by T: ``T(0.0)`` where T is i32 is ``i32(0.0)``."""
    i = FlatLayout1D.uid()
    out[i] = T(0.0) + T(2.75) * T(i) - T(-2.75) + T(True)
