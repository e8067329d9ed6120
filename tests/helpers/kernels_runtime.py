"""Kernels the runtime tests launch (imported as a module, so the import hook rewrites it)."""

from typing import TypeVar

from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    FlatLayout2D,
    GridDim1D,
    Kernel1D,
    Kernel2D,
    UniqueId,
    f16,
    f32,
    f64,
    gpu_kernel,
    i32,
    i64,
    u8,
    unsafe,
)

T = TypeVar("T", f32, f64)


@gpu_kernel(Kernel1D)
def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    idx: UniqueId = FlatLayout1D.uid()
    c[idx] = a[idx] + b[idx]


def add(a, b, c):
    block_dim = 128
    grid_dim = (len(c) + block_dim - 1) // block_dim
    add_kernel.launch(GridDim1D(grid_dim), BlockDim1D(block_dim), 0, DEFAULT_STREAM)(a, b, c)


@gpu_kernel(Kernel1D)
def shifted_copy(src: CUDASlice[f32], dst: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(dst):
        dst[i] = src[i + 1]


@gpu_kernel(Kernel1D)
def checked_sqrt(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    assert x[i] >= 0.0, "sqrt of a negative number"
    out[i] = x[i] ** 0.5


@gpu_kernel(Kernel1D)
def int_divide(a: CUDASlice[i32], b: CUDASlice[i32], q: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q[i] = a[i] // b[i]


@gpu_kernel(Kernel1D)
def scale_add(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    if i < n:
        c[i] = a[i] + b[i] * f32(n)


@gpu_kernel(Kernel1D)
def busy_add(a: CUDASlice[f32], c: CUDASliceMut[f32], rounds: i32):
    """Slow on purpose: keeps the GPU busy so host-side races become visible."""
    i = FlatLayout1D.uid()
    v = a[i]
    for _ in range(rounds):
        v = v * 0.999 + 0.001
    c[i] = v


@gpu_kernel(Kernel1D)
def axpy_generic(alpha: T, x: CUDASlice[T], y: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    y[i] = alpha * x[i] + y[i]


@gpu_kernel(Kernel1D)
def half_scale(x: CUDASlice[f16], y: CUDASliceMut[f16], s: f32):
    i = FlatLayout1D.uid()
    y[i] = f16(f32(x[i]) * s)


@gpu_kernel(Kernel1D, bounds_check=False)
def add_unchecked(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(c):
        c[i] = a[i] + b[i]


@gpu_kernel(Kernel1D, bounds_check=False)
def scribble(a: CUDASliceMut[f32], offset: i64):
    """Writes far outside its array: only for the lost-context test (bounds checks off)."""
    i = FlatLayout1D.uid()
    with unsafe():
        a[i + offset] = 1.0


@gpu_kernel(Kernel2D)
def stamp_2d(out: CUDASliceMut2D[u8], salt: i64):
    """Every element's value names its position (tests/emit/test_index32.py)."""
    x, y = FlatLayout2D.uid()
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = u8((y * 131 + x * 7 + salt) % 251)


@gpu_kernel(Kernel2D)
def matrix_add(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    c[y, x] = a[y, x] + b[y, x]
