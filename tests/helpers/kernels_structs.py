"""Kernels over @gpu_struct types, for tests/language/test_structs.py."""

from __future__ import annotations

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    Kernel1D,
    UniqueId,
    bool_,
    dot,
    f32,
    f64,
    gpu_device,
    gpu_kernel,
    gpu_struct,
    i32,
    local_array,
    u32,
    u64,
    vec2f,
    vec3f,
)


@gpu_struct
class Particle:
    pos: vec3f
    vel: vec3f
    mass: f32


@gpu_struct
class Mixed:
    """Padding after the bool, before the f64, after the i32 and at the end."""

    flag: bool_
    big: f64
    small: i32
    count: u64
    half: u32


@gpu_struct
class Inner:
    a: i32
    b: f64


@gpu_struct
class Outer:
    tag: u32
    inner: Inner
    w: vec2f


@gpu_device
def kinetic(p: Particle) -> f32:
    return 0.5 * p.mass * dot(p.vel, p.vel)


@gpu_device
def moved(p: Particle, dt: f32) -> Particle:
    q = p
    q.pos = p.pos + p.vel * dt
    return q


@gpu_kernel(Kernel1D)
def step(ps: CUDASliceMut[Particle], dt: f32, energy: CUDASliceMut[f32]):
    i: UniqueId = FlatLayout1D.uid()
    p = ps[i]
    energy[i] = kinetic(p)
    ps[i] = moved(p, dt)


@gpu_kernel(Kernel1D)
def field_writes(ps: CUDASliceMut[Particle], g: Particle, out: CUDASliceMut[f32]):
    i: UniqueId = FlatLayout1D.uid()
    ps[i].mass = ps[i].mass * 2.0 + g.mass
    ps[i].vel.y = g.vel.z
    ps[i].pos = ps[i].pos + g.pos
    ps[i].vel.x += 1.0
    out[i] = ps[i].pos.x


@gpu_kernel(Kernel1D)
def build_locals(xs: CUDASlice[f32], out: CUDASliceMut[Particle]):
    i: UniqueId = FlatLayout1D.uid()
    z = Particle()
    p = Particle(vec3f(xs[i]), mass=xs[i] * 3.0)
    p.vel.x = 1.0
    p.vel = p.vel + z.pos
    p.mass += 0.5
    q: Particle = Particle(mass=2.0)
    if xs[i] > 0.0:
        q = p
    out[i] = q


@gpu_kernel(Kernel1D)
def mixed(ms: CUDASliceMut[Mixed], m: Mixed, os: CUDASliceMut[Outer], o: Outer):
    i: UniqueId = FlatLayout1D.uid()
    x = ms[i]
    x.big = x.big * m.big + f64(x.small)
    x.small = x.small ^ m.small
    x.count = x.count + m.count
    x.half = x.half * m.half
    x.flag = not x.flag
    ms[i] = x
    y = os[i]
    y.inner.a = y.inner.a + o.inner.a
    y.inner.b = y.inner.b - o.inner.b
    y.w = y.w * o.w.x
    y.tag = y.tag + o.tag
    os[i] = y


@gpu_kernel(Kernel1D)
def local_structs(xs: CUDASlice[f32], out: CUDASliceMut[f32]):
    i: UniqueId = FlatLayout1D.uid()
    buf = local_array(Inner, 4)
    for k in range(4):
        buf[k] = Inner(k, f64(xs[i]) * f64(k))
    buf[2].a = 10
    s: f64 = 0.0
    for k in range(4):
        s += buf[k].b + f64(buf[k].a)
    out[i] = f32(s)


@gpu_kernel(Kernel1D)
def shifted_write(ps: CUDASliceMut[Particle]):
    i: UniqueId = FlatLayout1D.uid()
    ps[i + 1].mass = 1.0
