"""Kernels using tuples (tests/test_tuples.py launches them; tests/test_nvrtc_all.py compiles
them): device functions returning tuples, unpacking, constant tuples and loops over them,
``a.shape``, ``divmod``, ``enumerate``, ``zip``, ``Const`` parameters, defaults and keywords."""

import math
from typing import TypeVar

from gpu_native import (
    Const,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    FlatLayout2D,
    Kernel1D,
    Kernel2D,
    f32,
    f64,
    gpu_device,
    gpu_kernel,
    i32,
    i64,
    lane_id,
    shfl_down,
)

T = TypeVar("T", f32, f64)

OFFSETS = (16, 8, 4, 2, 1)
WEIGHTS = (0.25, 0.5, 0.25)
PAIRS = ((1, 10), (2, 20), (3, 30))


@gpu_device
def floor_divmod(a: i32, b: i32) -> tuple[i32, i32]:
    q = a // b
    return q, a - q * b


@gpu_device
def min_max(x: T, y: T) -> tuple[T, T]:
    if x < y:
        return x, y
    return y, x


@gpu_device
def polar(x: f32, y: f32) -> tuple[f32, f32, bool]:
    return math.sqrt(x * x + y * y), math.atan2(y, x), x >= 0


@gpu_device
def swap_sum(pair: tuple[i32, i32]) -> tuple[i32, i32, i32]:
    a, b = pair
    return b, a, a + b


@gpu_device
def scaled(x: f32, scale: f32 = 2.0, shift: f32 = 0.0) -> f32:
    return x * scale + shift


@gpu_device
def warp_sum(v: f32, offsets: Const = OFFSETS) -> f32:
    for off in offsets:
        v += shfl_down(v, off)
    return v


@gpu_device
def weighted(a: CUDASlice[f32], i: i64, weights: Const) -> f32:
    acc = f32(0)
    for k, w in enumerate(weights):
        acc += w * a[i + k]
    return acc


@gpu_kernel(Kernel1D)
def divmods(a: CUDASlice[i32], b: CUDASlice[i32], q: CUDASliceMut[i32], r: CUDASliceMut[i32],
            pq: CUDASliceMut[i32], pr: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q[i], r[i] = floor_divmod(a[i], b[i])
    pq[i], pr[i] = divmod(a[i], b[i])


@gpu_kernel(Kernel1D)
def float_divmod(a: CUDASlice[f64], b: CUDASlice[f64], q: CUDASliceMut[f64],
                 r: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    t = divmod(a[i], b[i])
    q[i] = t[0]
    r[i] = t[1]


@gpu_kernel(Kernel1D)
def sort_pairs(x: CUDASlice[T], y: CUDASlice[T], lo: CUDASliceMut[T], hi: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    lo[i] = min_max(x[i], y[i])[0]
    hi[i] = min_max(x[i], y[i])[-1]


@gpu_kernel(Kernel1D)
def to_polar(x: CUDASlice[f32], y: CUDASlice[f32], r: CUDASliceMut[f32], phi: CUDASliceMut[f32],
             right: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    p = polar(x[i], y[i])
    radius, angle, is_right = p
    r[i] = radius
    phi[i] = angle
    right[i] = i32(is_right)


@gpu_kernel(Kernel1D)
def tuple_params(a: CUDASlice[i32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    x, y, s = swap_sum((a[i], 3))
    out[i] = x * 100 + y * 10 + s


@gpu_kernel(Kernel1D)
def defaults_and_keywords(a: CUDASlice[f32], out: CUDASliceMut2D[f32]):
    i = FlatLayout1D.uid()
    out[i, 0] = scaled(a[i])
    out[i, 1] = scaled(a[i], 3.0)
    out[i, 2] = scaled(a[i], shift=1.0)
    out[i, 3] = scaled(shift=-1.0, x=a[i], scale=0.5)


@gpu_kernel(Kernel1D)
def warp_sums(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = a[i]
    total = warp_sum(v)
    upper = warp_sum(v, (8, 4, 2, 1))
    if lane_id() == 0:
        out[i] = total
    elif lane_id() == 16:
        out[i] = upper
    else:
        out[i] = 0.0


@gpu_kernel(Kernel1D)
def smooth(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i + 2 < len(a):
        out[i] = weighted(a, i, WEIGHTS)
    else:
        out[i] = a[i]


@gpu_kernel(Kernel2D)
def transpose_add(a: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    h, w = a.shape
    x, y = FlatLayout2D.uid()
    if y < h and x < w:
        out[y, x] = a[y, x] + f32(h * 1000 + w)


@gpu_kernel(Kernel1D)
def loops(out: CUDASliceMut2D[i64]):
    i = FlatLayout1D.uid()
    if i < out.shape[0]:
        total = i64(0)
        for k, (p, q) in enumerate(PAIRS, start=1):
            total += k * p * q
        out[i, 0] = total
        acc = i64(0)
        for j, x in enumerate(range(i, i + 5, 2)):
            acc += j * 100 + x
        out[i, 1] = acc
        s = i64(0)
        for p, q in zip((1, 2, 3), (4, 5, 6, 7)):
            s += p * q
        out[i, 2] = s
        a, b = i, i64(7)
        a, b = b, a
        out[i, 3] = a * 1000 + b
        rows, cols = out.shape
        out[i, 4] = rows * 10 + cols


@gpu_kernel(Kernel1D)
def lengths(a: CUDASlice[f32], out: CUDASliceMut[i64]):
    i = FlatLayout1D.uid()
    n, = a.shape
    (m,) = out.shape
    if i < m:
        out[i] = n * 10 + m


@gpu_kernel(Kernel1D)
def reassigned_loop_variable(out: CUDASliceMut[i64]):
    i = FlatLayout1D.uid()
    total = i64(0)
    for off in (1, 2, 3):
        while off < 10:
            total += off
            off = off + 4
        if i > 5:
            off = 100
        total += off * 1000
    for off in (1, 2):
        off = off * 10
        total += off * 100000
    off = 7
    out[i] = total + off + len(PAIRS)


@gpu_device
def successor_pair(x: i64) -> tuple[i64, i64]:
    return x, x + 1


@gpu_kernel(Kernel1D)
def evaluated_once(out: CUDASliceMut[i64]):
    i = FlatLayout1D.uid()
    x = i
    y = i64(100)
    total = i64(0)
    for v in (x, y):
        x = x + 1000
        y = y + 1000
        total = total * 10000 + v
    t = successor_pair(i)
    for w in t:
        t = successor_pair(w * 2)
        total += w
    for p, q in zip((x, 5), t):
        total += p * q
    out[i] = total
