"""Kernels over the small vector types (vec2f ... vec4i), for tests/language/test_vectors.py and
the NVRTC compile test (tests/compiler/test_nvrtc_all.py)."""

import math

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    cross,
    dot,
    f32,
    f64,
    gpu_device,
    gpu_kernel,
    i32,
    length,
    length_sq,
    local_array,
    normalize,
    shared_array,
    sync_threads,
    thread_idx,
    vec2d,
    vec2f,
    vec3d,
    vec3f,
    vec3i,
    vec4f,
    vec4i,
)

TILE = 64


@gpu_device
def scaled_sum(a: vec3f, b: vec3f, s: f32) -> vec3f:
    return (a + b) * s


@gpu_device
def x_of(v: vec3f) -> f32:
    return v.x


@gpu_kernel(Kernel1D)
def ops_vec3f(a: CUDASlice[vec3f], b: CUDASlice[vec3f], p: vec3f, s: f32,
              vout: CUDASliceMut2D[vec3f], sout: CUDASliceMut2D[f32]):
    """Every operation on vec3f, one output row of vectors and one of scalars per element."""
    i = FlatLayout1D.uid()
    if i < len(a):
        u = a[i]
        v = b[i]
        vout[i, 0] = u + v
        vout[i, 1] = (u - v) * 2.0 - p
        vout[i, 2] = s * u / 3.0 + (-v)
        vout[i, 3] = cross(u, v)
        vout[i, 4] = normalize(u)
        vout[i, 5] = scaled_sum(u, p, s)
        w = vec3f(s)
        w.y = u.z
        w.z += 1.0
        vout[i, 6] = w + vec3f()
        vout[i, 7] = min(u, v) + max(u, v) * vec3f(1.0, 2.0, 3.0)
        sout[i, 0] = dot(u, v)
        sout[i, 1] = length(u)
        sout[i, 2] = length_sq(v)
        sout[i, 3] = u.x + u.y * u[2]
        sout[i, 4] = x_of(v)
        sout[i, 5] = dot(u, v) if s > 0 else -dot(u, v)
        sout[i, 6] = (u * v).y
        sout[i, 7] = p.z


@gpu_kernel(Kernel1D)
def ops_vec3d(a: CUDASlice[vec3d], b: CUDASlice[vec3d], s: f64,
              vout: CUDASliceMut2D[vec3d], sout: CUDASliceMut2D[f64]):
    i = FlatLayout1D.uid()
    if i < len(a):
        u = a[i]
        v = b[i]
        vout[i, 0] = u * s - v / 2.0
        vout[i, 1] = cross(u, v)
        vout[i, 2] = normalize(u)
        vout[i, 3] = -u + vec3d(f64(u.x), 0.5, 2)
        sout[i, 0] = dot(u, v)
        sout[i, 1] = length(v)
        sout[i, 2] = length_sq(u)
        sout[i, 3] = v.z


@gpu_kernel(Kernel1D)
def ops_wide(a: CUDASlice[vec4f], b: CUDASlice[vec2d], c: CUDASlice[vec2f],
             aout: CUDASliceMut[vec4f], bout: CUDASliceMut[vec2d], cout: CUDASliceMut[vec2f],
             sout: CUDASliceMut[f32]):
    """The 16-byte (vec4f, vec2d) and 8-byte (vec2f) element types."""
    i = FlatLayout1D.uid()
    if i < len(a):
        u = a[i]
        aout[i] = normalize(u) * 2.0 + vec4f(u.w, u.z, u.y, u.x)
        bout[i] = b[i] * b[i] - vec2d(1.0, 2.0)
        cout[i] = c[i] / length(c[i])
        sout[i] = dot(u, u) + u.w


@gpu_kernel(Kernel1D)
def ops_vec3i(a: CUDASlice[vec3i], b: CUDASlice[vec3i], vout: CUDASliceMut2D[vec3i],
              sout: CUDASliceMut2D[i32]):
    """Integer vectors wrap as i32 does."""
    i = FlatLayout1D.uid()
    if i < len(a):
        u = a[i]
        v = b[i]
        vout[i, 0] = u + v * 3
        vout[i, 1] = cross(u, v)
        vout[i, 2] = min(u, v) - max(u, v)
        vout[i, 3] = -u
        sout[i, 0] = dot(u, v)
        sout[i, 1] = length_sq(u)
        sout[i, 2] = u.y
        sout[i, 3] = vec3i(7).z


@gpu_kernel(Kernel1D)
def convert(a: CUDASlice[vec3f], iout: CUDASliceMut[vec3i], dout: CUDASliceMut[vec3d],
            fout: CUDASliceMut[vec4i]):
    i = FlatLayout1D.uid()
    if i < len(a):
        iout[i] = vec3i(a[i])
        dout[i] = vec3d(a[i]) * 0.1
        fout[i] = vec4i(i32(i))


@gpu_kernel(Kernel1D)
def reverse_tiles(a: CUDASlice[vec3f], out: CUDASliceMut[vec3f]):
    """A shared array of vectors: each block reverses its tile; a local array of vectors."""
    tile = shared_array(vec3f, TILE)
    history = local_array(vec3f, 2)
    tid = thread_idx.x
    i = FlatLayout1D.uid()
    n = len(a)
    tile[tid] = a[i] if i < n else vec3f(0.0)
    sync_threads()
    history[0] = tile[TILE - 1 - tid]
    history[1] = history[0] * 2.0
    if i < n:
        out[i] = history[1] - history[0]


@gpu_kernel(Kernel1D)
def gather(a: CUDASlice[vec3f], index: CUDASlice[i32], out: CUDASliceMut[vec3f]):
    """A checked index into an array of vectors (the index counts elements)."""
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = a[index[i]]


@gpu_kernel(Kernel1D)
def shift(a: CUDASlice[vec3f], d: vec3f, out: CUDASliceMut[vec3f]):
    """Depends on nothing but its uid: it also gets the uid-stride entry point, whose
    parameters carry the vector's components too."""
    i = FlatLayout1D.uid()
    out[i] = a[i] + d


@gpu_kernel(Kernel1D)
def sqrt_length(a: CUDASlice[vec3f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(a):
        out[i] = math.sqrt(length(a[i]))
