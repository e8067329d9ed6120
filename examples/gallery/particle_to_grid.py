"""Particle-to-grid transfer: each particle spreads its mass and momentum over the 8 cells
around it with trilinear (cloud-in-cell) weights, and the bounding box of the cells it touches
grows to hold them, all by atomics into arrays of vectors.

Source algorithm: the particle-to-grid step of particle-in-cell methods (F. H. Harlow, "The
particle-in-cell computing method for fluid dynamics", 1964; Y. Zhu and R. Bridson, "Animating
Sand as a Fluid", SIGGRAPH 2005), as NVIDIA Warp programs write it: one thread per particle,
``wp.atomic_add(grid_momentum, i, j, k, w * m * v)`` on a ``wp.vec3`` grid and
``wp.atomic_add(grid_mass, i, j, k, w * m)`` on a float one; the grid is periodic.

What it exercises: ``fetch_add`` of a ``vec3f`` into a ``CUDASliceMut3D[vec3f]`` (one ``f32``
atomic per component, as Warp's) beside a scalar ``fetch_add``, ``fetch_min`` and ``fetch_max``
of ``vec3i`` into one-element arrays (the cell box), a ``vec3f`` read from an array of them, a
loop over the 8 corners, the bounds checks of indices computed from particle positions.
"""

import math

import numpy as np
from _gallery import compare

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut3D,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    f32,
    gpu_kernel,
    i32,
    vec3f,
    vec3i,
)

THREADS = 128

# f32 sums of a few dozen weighted terms per cell in any order (the GPU's atomics have none):
# a rounding per add, relative to the terms' sizes, which are about the sum's; the box is exact.
TOLERANCE = ("rel", 1e-4)


@gpu_kernel(Kernel1D)
def particle_to_grid_kernel(pos: CUDASlice[vec3f], vel: CUDASlice[vec3f], mass: CUDASlice[f32],
                            grid_mass: CUDASliceMut3D[f32],
                            grid_momentum: CUDASliceMut3D[vec3f],
                            box_lo: CUDASliceMut[vec3i], box_hi: CUDASliceMut[vec3i]):
    i = FlatLayout1D.uid()
    if i < len(pos):
        nz, ny, nx = grid_mass.shape[0], grid_mass.shape[1], grid_mass.shape[2]
        p = pos[i]               # in cell units, in [0, nx) x [0, ny) x [0, nz)
        m = mass[i]
        mv = vel[i] * m
        bx, by, bz = i32(math.floor(p.x)), i32(math.floor(p.y)), i32(math.floor(p.z))
        fx, fy, fz = p.x - f32(bx), p.y - f32(by), p.z - f32(bz)
        box_lo.atomic_ref(0).fetch_min(vec3i(bx, by, bz))
        box_hi.atomic_ref(0).fetch_max(vec3i(bx + 1, by + 1, bz + 1))
        for corner in range(8):
            dx, dy, dz = corner & 1, (corner >> 1) & 1, corner >> 2
            wx = fx if dx == 1 else 1.0 - fx
            wy = fy if dy == 1 else 1.0 - fy
            wz = fz if dz == 1 else 1.0 - fz
            w = wx * wy * wz
            x, y, z = (bx + dx) % nx, (by + dy) % ny, (bz + dz) % nz
            grid_mass.atomic_ref(z, y, x).fetch_add(w * m)
            grid_momentum.atomic_ref(z, y, x).fetch_add(mv * w)   # three f32 atomicAdds


def particle_to_grid(pos, vel, mass, grid_mass, grid_momentum, box_lo, box_hi):
    blocks = (len(pos) + THREADS - 1) // THREADS
    particle_to_grid_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        pos, vel, mass, grid_mass, grid_momentum, box_lo, box_hi)


def reference(pos, vel, mass, shape):
    """The same transfer in float64 with NumPy (``np.add.at`` for the scatter)."""
    nz, ny, nx = shape
    p = pos.astype(np.float64)
    base = np.floor(p).astype(np.int64)
    frac = p - base
    grid_mass = np.zeros(shape)
    grid_momentum = np.zeros((*shape, 3))
    mv = vel.astype(np.float64) * mass.astype(np.float64)[:, None]
    for corner in range(8):
        d = np.array([corner & 1, (corner >> 1) & 1, corner >> 2])
        w = np.prod(np.where(d == 1, frac, 1.0 - frac), axis=1)
        cell = (base + d) % np.array([nx, ny, nz])
        at = (cell[:, 2], cell[:, 1], cell[:, 0])
        np.add.at(grid_mass, at, w * mass)
        np.add.at(grid_momentum, at, mv * w[:, None])
    return grid_mass, grid_momentum, base.min(axis=0), base.max(axis=0) + 1


def run(n: int = 20_000, cells: tuple = (12, 16, 20), seed=None):
    rng = np.random.default_rng(seed)
    nz, ny, nx = cells
    # Particles in a sub-box of the grid, so that the cell box is not the whole grid.
    lo, hi = np.array([1.0, 2.0, 0.5]), np.array([nx - 3.0, ny - 1.5, nz - 2.0])
    pos = (lo + (hi - lo) * rng.random((n, 3))).astype(np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 2.0, n).astype(np.float32)
    grid_mass = gn.zeros(cells, gn.f32)          # accumulators: they start at zero
    grid_momentum = gn.zeros(cells, gn.vec3f)
    box_lo = gn.to_device(np.full((1, 3), 2 ** 31 - 1, np.int32), dtype=gn.vec3i)
    box_hi = gn.to_device(np.full((1, 3), -2 ** 31, np.int32), dtype=gn.vec3i)
    particle_to_grid(gn.to_device(pos, dtype=gn.vec3f), gn.to_device(vel, dtype=gn.vec3f),
                     gn.to_device(mass), grid_mass, grid_momentum, box_lo, box_hi)
    out = (grid_mass.to_host(), grid_momentum.to_host(), box_lo.to_host()[0],
           box_hi.to_host()[0])
    return out, reference(pos, vel, mass, cells)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"particle_to_grid on {gn.backend()}: {len(out[0].ravel())} cells, box {out[2]} to "
          f"{out[3]}")


if __name__ == "__main__":
    main()
