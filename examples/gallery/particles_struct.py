"""A particle system with one struct per particle: gravity and drag integrated with the
semi-implicit Euler step, and bounces off the walls of a box.

Source algorithm: the particle update of NVIDIA Warp's ``example_particles``-style integrators
and "CUDA by Example"'s struct-of-fields particles: each particle is one record (position,
velocity, mass, how often it bounced, how many steps it lived); one thread per particle reads its
record, computes ``v += (g - k v / m) dt``, ``x += v dt`` (semi-implicit Euler), reflects the
position and velocity at each wall it crossed (losing energy by a restitution factor), and
writes the record back.  The host runs several steps, one launch each.

What it exercises: a ``@gpu_struct`` with ``vec3f``, ``f32`` and ``i32`` fields; an array of them
(``CUDASliceMut[Particle]``, a NumPy structured array of ``Particle.dtype`` on the host); a whole
element read into a local, field updates on the local (``p.vel += ...``, ``q.pos.x = ...``), a
device function taking and returning the struct, the element stored whole and one field of it
written in place (``ps[i].age += 1``); a ``vec3f`` parameter; the grid tail under ``i <
len(ps)``.
"""

import numpy as np
from _gallery import compare

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    UniqueId,
    f32,
    gpu_device,
    gpu_kernel,
    gpu_struct,
    i32,
    vec3f,
)

WALL = 1.0            # the box is [-WALL, WALL] along each axis
RESTITUTION = 0.8     # the share of the normal speed a bounce keeps
DRAG = 0.1            # linear drag coefficient
BLOCK = 128

# f32 Euler steps against a float64 reference: a few roundings per step, for a few steps,
# on values of order one.  (Particles whose float64 path comes within 1e-4 of a wall, where f32
# and f64 may decide a bounce differently, are left out of the comparison by run().)
TOLERANCE = ("abs", 2e-5)


@gpu_struct
class Particle:
    pos: vec3f
    vel: vec3f
    mass: f32
    bounces: i32
    age: i32


@gpu_device
def reflect(x: f32, v: f32) -> tuple[f32, f32, i32]:
    """A coordinate and its speed after the walls at -WALL and WALL, and whether it bounced."""
    if x > WALL:
        return 2.0 * WALL - x, -v * RESTITUTION, 1
    if x < -WALL:
        return -2.0 * WALL - x, -v * RESTITUTION, 1
    return x, v, 0


@gpu_device
def bounce(p: Particle) -> Particle:
    q = p
    x, vx, hx = reflect(p.pos.x, p.vel.x)
    y, vy, hy = reflect(p.pos.y, p.vel.y)
    z, vz, hz = reflect(p.pos.z, p.vel.z)
    q.pos = vec3f(x, y, z)
    q.vel = vec3f(vx, vy, vz)
    q.bounces += hx + hy + hz
    return q


@gpu_kernel(Kernel1D)
def particles_step(ps: CUDASliceMut[Particle], gravity: vec3f, dt: f32):
    i: UniqueId = FlatLayout1D.uid()
    if i < len(ps):
        p = ps[i]
        p.vel += (gravity - p.vel * (DRAG / p.mass)) * dt
        p.pos += p.vel * dt
        ps[i] = bounce(p)
        ps[i].age += 1


def step(ps, gravity, dt: float) -> None:
    blocks = (len(ps) + BLOCK - 1) // BLOCK
    particles_step.launch(GridDim1D(blocks), BlockDim1D(BLOCK), 0, DEFAULT_STREAM)(
        ps, gravity, dt)


def reference(start: np.ndarray, gravity, dt: float, steps: int):
    """The same steps in float64; also the particles that came within 1e-4 of a wall."""
    pos = start["pos"].astype(np.float64)
    vel = start["vel"].astype(np.float64)
    mass = start["mass"].astype(np.float64)[:, None]
    bounces = start["bounces"].astype(np.int64)
    near = np.zeros(len(start), bool)
    g = np.asarray(gravity, np.float64)
    for _ in range(steps):
        vel = vel + (g - vel * (DRAG / mass)) * dt
        pos = pos + vel * dt
        near |= (np.abs(np.abs(pos) - WALL) < 1e-4).any(axis=1)
        high, low = pos > WALL, pos < -WALL
        pos = np.where(high, 2 * WALL - pos, np.where(low, -2 * WALL - pos, pos))
        vel = np.where(high | low, -vel * RESTITUTION, vel)
        bounces = bounces + (high | low).sum(axis=1)
    return pos, vel, bounces, start["age"] + steps, near


def run(n: int = 1000, steps: int = 6, seed=None):
    rng = np.random.default_rng(seed)
    start = gn.zeros(n, Particle).to_host()  # a NumPy array of Particle.dtype, zeroed
    start["pos"] = rng.uniform(-0.95, 0.95, (n, 3))
    start["vel"] = rng.standard_normal((n, 3)) * 2.0
    start["mass"] = rng.uniform(0.5, 2.0, n)
    start["bounces"] = rng.integers(0, 5, n)
    start["age"] = rng.integers(0, 100, n)
    gravity, dt = gn.vec3f(0.0, -9.8, 0.0), 0.02
    ps = gn.to_device(start)    # updated in place: an element never written keeps its start
    for _ in range(steps):
        step(ps, gravity, dt)
    out = ps.to_host()
    pos, vel, bounces, age, near = reference(start, gravity, dt, steps)
    keep = ~near
    got = (out["pos"][keep], out["vel"][keep], out["bounces"][keep], out["age"][keep])
    return got, (pos[keep], vel[keep], bounces[keep], age[keep])


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"particles_struct on {gn.backend()}: {len(out[0])} particles, "
          f"{int(out[2].sum())} bounces in all")


if __name__ == "__main__":
    main()
