"""Deliberate type errors, one on each line marked ``# error:``.

tests/project/test_typing.py runs mypy and pyright over this file and checks that each marked
line is reported and no other is: were the typing of gpu_native to become ``Any`` somewhere
(an array element, a launcher, a device function), a marked line would go unreported.  Never
imported: the kernels are wrong on purpose.
"""

import numpy as np

import gpu_native as gn
from gpu_native import (
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    FlatLayout2D,
    Kernel1D,
    Kernel2D,
    Strided,
    bool_,
    f32,
    gpu_device,
    gpu_kernel,
    gpu_struct,
    i32,
    philox,
    vec3f,
    vec3i,
    vec4f,
)


@gpu_device
def twice(x: f32) -> f32:
    return x * 2


@gpu_kernel(Kernel1D)
def scale(a: CUDASlice[f32], out: CUDASliceMut[i32], n: i32):
    i = FlatLayout1D.uid()
    out[i] = a[i] * 2.0  # error: a float stored into an i32 element
    out[i] = int(twice(a[i], 2.0))  # error: twice takes one argument
    a[i] = 1.0  # error: a read-only array takes no stores
    out[i, 0] = 1  # error: a 1-D array takes one index
    v = vec3f(1.0) + vec3i(1)  # error: vectors of two types
    rng = philox(n, i)
    out[i] = rng.uniform()  # error: a float draw stored into an i32 element
    out[i] = twice("x")  # error: a str for an f32 parameter


@gpu_kernel(Kernel2D)
def copy2d(a: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    x, y, z = FlatLayout2D.uid()  # error: a 2-D uid has two components
    out[y, x] = a[y, z]
    u = FlatLayout2D.uid()
    out[u.y, u.x] = a[u.x]  # error: a 2-D array takes two indices


@gpu_kernel(Kernel1D)
def strided(a: CUDASliceMut[i32, Strided]):
    i = FlatLayout1D.uid()
    a[i] = 0.5  # error: a float stored into an i32 element of a strided view


@gpu_kernel(Kernel1D)
def sizes(a: CUDASlice[f32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    out[i] = a.size / 2  # error: a float (true division of the size) stored into an i32 element
    a.size = 4  # error: an array's size is read-only


@gpu_kernel(Kernel1D)
def components(out: CUDASliceMut[vec4f]):
    i = FlatLayout1D.uid()
    v = vec3i(i)
    v[0] = 0.5  # error: a float stored into an i32 component
    c = vec4f(0.0)
    c[1] = vec3f(1.0)  # error: a vector stored into a component
    out[i] = c


@gpu_kernel(Kernel1D)
def numpy_scalars(x: CUDASlice[f32], q: CUDASliceMut[i32], flags: CUDASliceMut[bool_]):
    i = FlatLayout1D.uid()
    h: np.float32 = np.float32(x[i])
    q[i] = h  # error: a NumPy float stored into an i32 element
    n: np.int32 = np.int32(i)
    flags[i] = n  # error: a NumPy int stored into a bool_ element


@gpu_struct
class Body:
    pos: vec3f
    mass: f32


@gpu_kernel(Kernel1D)
def struct_fields(bodies: CUDASliceMut[Body], q: CUDASliceMut[i32], b0: Body):
    i = FlatLayout1D.uid()
    bodies[i].mass = vec3f(1.0)  # error: a vector stored into an f32 field
    b = bodies[i]
    b.pos = 2.5  # error: a float stored into a vec3f field
    q[i] = b0.mass  # error: an f32 field stored into an i32 element


d = gn.to_device(np.zeros(4, np.float32))
scale[1, 32](d, d)  # error: n is missing
scale[1, 32](d, 3, 4)  # error: an int where an array goes
scale.forall(4)(d, d, 2.5)  # error: a float for an i32 parameter
scale.launch(1, 32)(d, d, "4")  # error: a str for an i32 parameter
scale[1](d, d, 4)  # error: kernel[grid, block] takes both
copy2d[(1, 1), (8, 8)](d, d, d)  # error: one argument too many
strided[1, 32](4)  # error: an int where a strided array goes
struct_fields[1, 32](d, d, 3.0)  # error: a float for a struct parameter
