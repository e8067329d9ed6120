"""All-pairs n-body step: softened gravitational accelerations computed tile by tile through
shared memory, then one Euler step of every body's velocity and position.

Source algorithm: L. Nyland, M. Harris and J. Prins, "Fast N-Body Simulation with CUDA", GPU Gems
3, chapter 31 (and the cuda-samples ``nbody`` sample's ``integrateBodies``): one thread per
body; the block loads a tile of ``TILE`` bodies (position and mass) into shared memory, each
thread accumulates the tile's pull on its body, and after all tiles it writes its new velocity
(in place) and its new position (into the other buffer of a pair).

What it exercises: a 2-D shared tile written by rows (``tile[tid, k]``), several stores into
the thread's own row (``pos_out[i, 0]``, ``pos_out[i, 1]``, ...), an in-place read-modify-write
of the thread's own row (``vel[i, k] += ...``), ``math.sqrt`` on ``f32``, a grid tail handled
with an explicit guard (the kernel uses barriers).
"""

import math

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    UniqueId,
    block_dim,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

TILE = 64                 # bodies per shared tile, and threads per block

# f32 sums of n pairwise forces that can be large for close pairs (softening 0.05): the error
# is relative to the largest terms, so compare with a norm.
TOLERANCE = ("norm", 2e-5)


@gpu_kernel(Kernel1D)
def nbody_step_kernel(pos: CUDASlice2D[f32], vel: CUDASliceMut2D[f32],
                      pos_out: CUDASliceMut2D[f32], dt: f32, softening: f32):
    assert block_dim.x == TILE, "launch nbody_step_kernel with TILE threads per block"
    tile = shared_array(f32, (TILE, 4))
    tid = thread_idx.x
    i: UniqueId = FlatLayout1D.uid()
    n = pos.shape[0]
    xi = f32(0.0)
    yi = f32(0.0)
    zi = f32(0.0)
    if i < n:
        xi = pos[i, 0]
        yi = pos[i, 1]
        zi = pos[i, 2]
    ax = f32(0.0)
    ay = f32(0.0)
    az = f32(0.0)
    eps2 = softening * softening
    for start in range(0, n, TILE):
        j = start + tid
        if j < n:
            for k in range(4):
                tile[tid, k] = pos[j, k]
        else:
            for k in range(4):
                tile[tid, k] = 0.0      # zero mass: no pull
        sync_threads()
        for t in range(TILE):
            dx = tile[t, 0] - xi
            dy = tile[t, 1] - yi
            dz = tile[t, 2] - zi
            inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + eps2)
            s = tile[t, 3] * inv * inv * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        sync_threads()
    if i < n:
        vel[i, 0] += ax * dt
        vel[i, 1] += ay * dt
        vel[i, 2] += az * dt
        pos_out[i, 0] = xi + vel[i, 0] * dt
        pos_out[i, 1] = yi + vel[i, 1] * dt
        pos_out[i, 2] = zi + vel[i, 2] * dt
        pos_out[i, 3] = pos[i, 3]


def nbody_step(pos, vel, pos_out, dt: float = 0.01, softening: float = 0.05):
    n = pos.shape[0]
    blocks = (n + TILE - 1) // TILE
    nbody_step_kernel.launch(GridDim1D(blocks), BlockDim1D(TILE), 0, DEFAULT_STREAM)(
        pos, vel, pos_out, dt, softening)


def reference(pos, vel, dt=0.01, softening=0.05):
    p = pos.astype(np.float64)
    d = p[None, :, :3] - p[:, None, :3]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + softening * softening)
    acc = (d * (p[None, :, 3] * inv**3)[:, :, None]).sum(axis=1)
    v = vel.astype(np.float64) + acc * dt
    out = p.copy()
    out[:, :3] += v * dt
    return v, out


def run(n: int = 300, seed=None):
    rng = np.random.default_rng(seed)
    pos = np.concatenate([rng.standard_normal((n, 3)), rng.uniform(0.1, 1, (n, 1))], axis=1)
    pos = pos.astype(np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32) * 0.1
    vel_dev = gn.to_device(vel)
    pos_out = gn.empty((n, 4), gn.f32)
    poison(pos_out)
    nbody_step(gn.to_device(pos), vel_dev, pos_out)
    return (vel_dev.to_host(), pos_out.to_host()), reference(pos, vel)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"nbody_tiled on {gn.backend()}: {len(out[1])} bodies advanced one step")


if __name__ == "__main__":
    main()
