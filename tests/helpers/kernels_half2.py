"""Kernels over the packed 16-bit pairs (vec2h, vec2bf), for tests/language/test_half2.py and
the NVRTC compile test (tests/compiler/test_nvrtc_all.py)."""

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    bf16,
    f16,
    fma,
    gpu_device,
    gpu_kernel,
    load_vec2,
    shared_array,
    sync_threads,
    thread_idx,
    vec2bf,
    vec2f,
    vec2h,
)

TILE = 64


@gpu_device
def axpy2(a: vec2h, x: vec2h, y: vec2h) -> vec2h:
    return fma(a, x, y)


@gpu_kernel(Kernel1D)
def ops_vec2h(a: CUDASlice[vec2h], b: CUDASlice[vec2h], c: CUDASlice[vec2h], s: f16,
              out: CUDASliceMut2D[vec2h]):
    """Each lane against NumPy float16: + - * / fma, unary -, a scalar broadcast, min/max."""
    i = FlatLayout1D.uid()
    if i < len(a):
        x, y, z = a[i], b[i], c[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = fma(x, y, z)
        out[i, 5] = -x
        out[i, 6] = x * s
        out[i, 7] = 2.0 * x
        out[i, 8] = min(x, y)
        out[i, 9] = max(x, y)
        out[i, 10] = axpy2(x, y, z)


@gpu_kernel(Kernel1D)
def ops_vec2bf(a: CUDASlice[vec2bf], b: CUDASlice[vec2bf], c: CUDASlice[vec2bf], s: bf16,
               out: CUDASliceMut2D[vec2bf]):
    """ops_vec2h for bf16 lanes."""
    i = FlatLayout1D.uid()
    if i < len(a):
        x, y, z = a[i], b[i], c[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = fma(x, y, z)
        out[i, 5] = -x
        out[i, 6] = x * s
        out[i, 7] = 2.0 * x
        out[i, 8] = min(x, y)
        out[i, 9] = max(x, y)


@gpu_kernel(Kernel1D)
def components_vec2h(a: CUDASlice[vec2h], p: vec2h, out: CUDASliceMut[vec2h],
                     wide: CUDASliceMut[vec2f]):
    """Construction, components (read and assigned), a parameter, conversions to and from vec2f."""
    i = FlatLayout1D.uid()
    if i < len(a):
        v = a[i]
        w = vec2h(v.y, v.x)
        w.x += p.y
        u = vec2h(f16(0.5))
        out[i] = w + u + vec2h(vec2f(v) * 2.0)
        wide[i] = vec2f(v) + vec2f(vec2h())


@gpu_kernel(Kernel1D)
def pairs_of_halves(x: CUDASlice[f16], y: CUDASlice[bf16], out: CUDASliceMut[vec2h],
                    outb: CUDASliceMut[vec2bf]):
    """load_vec2 of two adjacent f16 (bf16) elements, global and shared."""
    tile = shared_array(f16, TILE * 2)
    t = thread_idx.x
    i = FlatLayout1D.uid()
    assert len(x) == len(out) * 2
    if i < len(out):
        tile[2 * t] = x[2 * i]
        tile[2 * t + 1] = x[2 * i + 1]
    sync_threads()
    if i < len(out):
        out[i] = load_vec2(x, 2 * i) + load_vec2(tile, 2 * t)
        outb[i] = load_vec2(y, 2 * i)


@gpu_kernel(Kernel1D)
def axpy_half2(a: f16, x: CUDASlice[vec2h], y: CUDASliceMut[vec2h]):
    """y = a * x + y on pairs: one __hfma2 per pair."""
    i = FlatLayout1D.uid()
    if i < len(y):
        y[i] = fma(vec2h(a), x[i], y[i])


@gpu_kernel(Kernel1D)
def scale_vec2bf(a: CUDASlice[vec2bf], p: vec2bf, out: CUDASliceMut[vec2bf]):
    """A vec2bf parameter by value (its slots hold bf16 bits, packed by the checked path)."""
    i = FlatLayout1D.uid()
    if i < len(a):
        out[i] = a[i] * p
