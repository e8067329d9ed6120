"""All-pairs n-body step with vec3f bodies: the tiled kernel of ``nbody_tiled`` written with the
small vector type, positions and velocities as arrays of ``vec3f`` (NumPy ``(n, 3)`` arrays on
the host) and the masses in an array of their own.

Source algorithm: L. Nyland, M. Harris and J. Prins, "Fast N-Body Simulation with CUDA", GPU Gems
3, chapter 31 (``bodyBodyInteraction`` and ``tile_calculation``, which use ``float3`` and
``float4``): one thread per body; the block loads a tile of ``TILE`` bodies into shared memory,
each thread accumulates the tile's pull on its body, then writes its new velocity (in place) and
its new position (into the other buffer of a pair).

What it exercises: ``vec3f`` locals, arithmetic (``d * s``, ``acc += ...``), ``length_sq``,
kernel parameters ``CUDASlice[vec3f]`` bound by ``gn.to_device(a, dtype=gn.vec3f)``, a shared
array of ``vec3f`` beside one of ``f32``, whole-element loads and stores of vectors, the bounds
proof of ``pos[i]`` under ``i < n``.
"""

import math

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    UniqueId,
    block_dim,
    f32,
    gpu_kernel,
    length_sq,
    shared_array,
    sync_threads,
    thread_idx,
    vec3f,
)

TILE = 64                 # bodies per shared tile, and threads per block

# f32 sums of n pairwise forces that can be large for close pairs (softening 0.05): the error
# is relative to the largest terms, so compare with a norm.
TOLERANCE = ("norm", 2e-5)


@gpu_kernel(Kernel1D)
def nbody_vec3_kernel(pos: CUDASlice[vec3f], mass: CUDASlice[f32], vel: CUDASliceMut[vec3f],
                      pos_out: CUDASliceMut[vec3f], dt: f32, softening: f32):
    assert block_dim.x == TILE, "launch nbody_vec3_kernel with TILE threads per block"
    tile_pos = shared_array(vec3f, TILE)
    tile_mass = shared_array(f32, TILE)
    tid = thread_idx.x
    i: UniqueId = FlatLayout1D.uid()
    n = len(pos)
    p = vec3f()
    if i < n:
        p = pos[i]
    acc = vec3f()
    eps2 = softening * softening
    for start in range(0, n, TILE):
        j = start + tid
        if j < n:
            tile_pos[tid] = pos[j]
            tile_mass[tid] = mass[j]
        else:
            tile_pos[tid] = vec3f()
            tile_mass[tid] = 0.0      # zero mass: no pull
        sync_threads()
        for t in range(TILE):
            d = tile_pos[t] - p
            inv = 1.0 / math.sqrt(length_sq(d) + eps2)
            acc += d * (tile_mass[t] * inv * inv * inv)
        sync_threads()
    if i < n:
        v = vel[i] + acc * dt
        vel[i] = v
        pos_out[i] = p + v * dt


def nbody_step(pos, mass, vel, pos_out, dt: float = 0.01, softening: float = 0.05):
    blocks = (len(pos) + TILE - 1) // TILE
    nbody_vec3_kernel.launch(GridDim1D(blocks), BlockDim1D(TILE), 0, DEFAULT_STREAM)(
        pos, mass, vel, pos_out, dt, softening)


def reference(pos, mass, vel, dt=0.01, softening=0.05):
    p = pos.astype(np.float64)
    d = p[None, :, :] - p[:, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + softening * softening)
    acc = (d * (mass.astype(np.float64)[None, :] * inv**3)[:, :, None]).sum(axis=1)
    v = vel.astype(np.float64) + acc * dt
    return v, p + v * dt


def run(n: int = 300, seed=None):
    rng = np.random.default_rng(seed)
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.uniform(0.1, 1, n).astype(np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32) * np.float32(0.1)
    vel_dev = gn.to_device(vel, dtype=gn.vec3f)
    pos_out = gn.empty(n, gn.vec3f)
    poison(pos_out)
    nbody_step(gn.to_device(pos, dtype=gn.vec3f), gn.to_device(mass), vel_dev, pos_out)
    return (vel_dev.to_host(), pos_out.to_host()), reference(pos, mass, vel)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"nbody_vec3 on {gn.backend()}: {len(out[1])} bodies advanced one step")


if __name__ == "__main__":
    main()
