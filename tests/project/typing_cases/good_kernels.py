"""Kernels and launches that type-check clean, with the types checkers must infer.

tests/project/test_typing.py runs mypy and pyright over this file and expects no error: each
``assert_type`` holds only while the expression has exactly that type (``Any`` fails it too).
Never imported.
"""

import math
from typing import TypeVar

import numpy as np
from typing_extensions import assert_type

import gpu_native as gn
from gpu_native import (
    Const,
    CUDASlice,
    CUDASlice2D,
    CUDASlice3D,
    CUDASliceMut,
    CUDASliceMut2D,
    CUDASliceMut3D,
    FlatLayout1D,
    FlatLayout2D,
    FlatLayout3D,
    Kernel1D,
    Kernel2D,
    Kernel3D,
    MemoryOrder,
    Strided,
    bool_,
    complex64,
    dot,
    f16,
    f32,
    f64,
    fma,
    gpu_device,
    gpu_kernel,
    gpu_struct,
    i32,
    i64,
    load_vec2,
    local_array,
    normalize,
    philox,
    shared_array,
    shfl_down,
    sync_threads,
    thread_idx,
    u32,
    unsafe,
    vec2f,
    vec2h,
    vec3f,
    vec3i,
    vec4f,
)

T = TypeVar("T", f32, i32)


@gpu_device
def scaled(x: f32, k: Const) -> f32:
    return x * k


@gpu_device
def clamp(x: T, lo: T, hi: T) -> T:
    return min(max(x, lo), hi)


@gpu_kernel(Kernel1D)
def generic(a: CUDASlice[T], out: CUDASliceMut[T], lo: T, hi: T):
    i = FlatLayout1D.uid()
    out[i] = clamp(a[i], lo, hi)


@gpu_kernel(Kernel1D)
def many(a: CUDASlice[f32], out: CUDASliceMut[f32], counts: CUDASliceMut[u32],
         flags: CUDASliceMut[bool_], n: i32, s: f64, p: vec3f):
    i = FlatLayout1D.uid()
    assert_type(i, int)
    assert_type(a[i] + a[i], float)
    assert_type(a[i] + 1.0, float)
    assert_type(a[i] * 2, float)
    assert_type(n + 1, int)
    assert_type(len(a), int)
    assert_type(thread_idx.x, int)
    out[i] = a[i] + 1.0
    out[i] = math.sqrt(a[i]) + f32(n) * s
    out[i] = scaled(a[i], 2.0)
    flags[i] = a[i] > 0.0
    assert_type(counts.atomic_ref(0).fetch_add(1), int)
    assert_type(out.atomic_ref(0).fetch_max(a[i], MemoryOrder.RELAXED), float)
    tile = shared_array(f32, (8, 8))
    assert_type(tile, CUDASliceMut2D[float])
    row = shared_array(f32, 8)
    assert_type(row, CUDASliceMut[float])
    cube = local_array(i32, (2, 2, 2))
    assert_type(cube, CUDASliceMut3D[int])
    sync_threads()
    rng = philox(1234, i)
    assert_type(rng.uniform(), float)
    assert_type(rng.normal(f64), float)
    assert_type(rng.randint(6), int)
    assert_type(rng.random_u32(), int)
    q = p * a[i] + vec3f(1.0) - 2.0 * p
    assert_type(q, vec3f)
    assert_type(q.x, float)
    assert_type(dot(q, p), float)
    assert_type(normalize(q), vec3f)
    assert_type(shfl_down(a[i], 1), float)
    for j in FlatLayout1D.grid_stride(n):
        assert_type(j, int)
    with unsafe():
        out[0] = 0.0


@gpu_kernel(Kernel2D)
def strided_views(a: CUDASliceMut2D[f32, Strided], s: CUDASlice[f32, Strided]):
    x, y = FlatLayout2D.uid()
    assert_type(a[y, x] * s[x], float)
    a[y, x] = a[y, x] * s[x]


@gpu_kernel(Kernel1D)
def pairs(a: CUDASlice[vec2h], x: CUDASlice[f16], s: f16, out: CUDASliceMut[vec2h]):
    i = FlatLayout1D.uid()
    v = fma(a[i], vec2h(s), a[i]) * 0.5 - a[i]
    assert_type(v, vec2h)
    assert_type(v.y, float)
    assert_type(vec2f(v), vec2f)
    # load_vec2, like load_vec4, is Any to checkers: f16 and bf16 arrays both index to float.
    v += load_vec2(x, 2 * i)
    out[i] = v


@gpu_kernel(Kernel1D)
def sizes(a: CUDASlice[f32], b: CUDASlice2D[f32, Strided], out: CUDASliceMut3D[i64]):
    i = FlatLayout1D.uid()
    assert_type(a.size, int)
    assert_type(b.size, int)
    assert_type(out.size, int)
    if i < a.size:
        out[0, 0, i] = a.size + b.size


@gpu_kernel(Kernel1D)
def components(out: CUDASliceMut[vec4f], ids: CUDASliceMut[vec3i]):
    i = FlatLayout1D.uid()
    c = vec4f(0.5)
    c[3] = 1.0
    for k in (0, 1, 2):
        c[k] = c[k] * 2.0
    n = vec3i(0)
    n[0] = i
    n[1] += 1
    out[i] = c
    ids[i] = n


@gpu_kernel(Kernel1D)
def numpy_scalars(x: CUDASlice[f32], out: CUDASliceMut[f32], q: CUDASliceMut2D[i32],
                  flags: CUDASliceMut[bool_], zs: CUDASliceMut3D[complex64]):
    i = FlatLayout1D.uid()
    out[i] = np.float32(x[i] * 2.0)
    q[i, 0] = np.int32(x[i])
    flags[i] = np.bool_(x[i] > 0.0)
    zs[0, 0, i] = np.complex64(x[i])
    # Under python_version 3.10 mypy takes NumPy's scalar constructors to return Any: typed
    # locals put these stores to it too.
    h: np.float32 = np.float32(x[i])
    n: np.int16 = np.int16(i)
    b: np.bool_ = np.bool_(h > 0.0)
    out[i] = h
    out[i] = n  # an integer into a float element, as an int goes
    q[i, 1] = n
    flags[i] = b
    zs[0, 0, i] = h


@gpu_struct
class Body:
    pos: vec3f
    mass: f32


@gpu_device
def pushed(b: Body, dv: vec3f) -> Body:
    out = b
    out.pos += dv
    return out


@gpu_kernel(Kernel1D)
def bodies_step(bodies: CUDASliceMut[Body], b0: Body, masses: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    b = pushed(bodies[i], b0.pos)
    assert_type(b, Body)
    assert_type(b.mass, float)
    assert_type(bodies[i].pos, vec3f)
    b.mass = b.mass * 0.5
    b.pos.x = 0.0
    bodies[i] = b
    bodies[i].mass = b0.mass
    masses[i] = bodies[i].pos.y
    q = Body()
    q.mass = 1.0
    # Both checkers see the class as written, with no constructor of its own (docs/typing.md).
    r = Body(mass=2.0)  # type: ignore[call-arg]
    masses[i] = q.mass + r.mass


@gpu_kernel(Kernel2D)
def plane(out: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    u = FlatLayout2D.uid()
    assert_type(u.x, int)
    out[y, x] = f32(u.y)
    assert_type(out.shape[0], int)


@gpu_kernel(Kernel3D)
def volume(a: CUDASlice3D[f32], out: CUDASliceMut3D[f32]):
    x, y, z = FlatLayout3D.uid()
    out[z, y, x] = a[z, y, x] * 0.5


def launch(n: int) -> None:
    a = gn.to_device(np.ones(n, np.float32))
    out = gn.empty(n, gn.f32)
    counts = gn.zeros(1, gn.u32)
    flags = gn.empty(n, gn.bool_)
    p = gn.vec3f(1.0, 2.0, 3.0)
    many[(n + 127) // 128, 128](a, out, counts, flags, n, 0.5, p)
    many[1, 128, gn.DEFAULT_STREAM, 0](a, out, counts, flags, n, 2, p)
    many.forall(n)(a, out, counts, flags, n, 0.5, p)
    many.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)(
        a, out, counts, flags, n, 0.5, p)
    grid = gn.empty((16, 32), gn.f32)
    plane[(1, 1), (32, 16)](grid)
    plane.forall(grid.shape)(grid)
    generic[1, 128](a, out, 0.0, 1.0)
    generic.forall(n)(gn.zeros(n, gn.i32), gn.empty(n, gn.i32), 0, 10)
    vol = gn.empty((4, 4, 4), gn.f32)
    volume.launch(gn.GridDim3D(1, 1, 1), gn.BlockDim3D(4, 4, 4))(vol, vol)
    # A device array, contiguous or a view, is an argument for a Strided parameter.
    strided_views[(1, 1), (32, 16)](grid, a)
    strided_views[(1, 1), (16, 32)](grid.T, a[::2])
    sizes.forall(n)(a, grid.T, gn.empty((1, 1, n), gn.i64))
    host = np.zeros(n, Body)  # NumPy reads the class's dtype attribute (docs/typing.md)
    host["mass"] = 1.0
    assert_type(gn.zeros(n, Body).to_host(), np.ndarray)
    b0 = Body()
    b0.pos = gn.vec3f(0.0, 0.0, 1.0)
    bodies_step[1, 32](gn.to_device(host), b0, gn.empty(n, gn.f32))
    # mypy ignores what a class decorator returns, pyright reads it: neither sees `dtype`.
    # Should one come to see it, mypy's warn_unused_ignores says so here.
    host = np.zeros(n, Body.dtype)  # type: ignore[attr-defined]
