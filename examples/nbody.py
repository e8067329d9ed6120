"""N-body accelerations: every body against every other, softened gravity, one thread per body."""

import math

import numpy as np

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
    f32,
    gpu_kernel,
)


@gpu_kernel(Kernel1D)
def accelerations_kernel(bodies: CUDASlice2D[f32], acc: CUDASliceMut2D[f32], softening: f32):
    i: UniqueId = FlatLayout1D.uid()
    xi = bodies[i, 0]
    yi = bodies[i, 1]
    zi = bodies[i, 2]
    ax = f32(0.0)
    ay = f32(0.0)
    az = f32(0.0)
    eps2 = softening * softening
    for j in range(bodies.shape[0]):
        dx = bodies[j, 0] - xi
        dy = bodies[j, 1] - yi
        dz = bodies[j, 2] - zi
        inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + eps2)
        s = bodies[j, 3] * inv * inv * inv
        ax += dx * s
        ay += dy * s
        az += dz * s
    acc[i, 0] = ax
    acc[i, 1] = ay
    acc[i, 2] = az


def accelerations(bodies, acc, softening: float = 0.01):
    n = bodies.shape[0]
    accelerations_kernel.launch(GridDim1D((n + 127) // 128), BlockDim1D(128), 0,
                                DEFAULT_STREAM)(bodies, acc, softening)


def reference(bodies: np.ndarray, softening: float = 0.01) -> np.ndarray:
    b = bodies.astype(np.float64)
    d = b[None, :, :3] - b[:, None, :3]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + softening * softening)
    return (d * (b[None, :, 3] * inv**3)[:, :, None]).sum(axis=1)


def run(n: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    bodies = np.concatenate([rng.standard_normal((n, 3)), rng.random((n, 1))], axis=1)
    bodies = bodies.astype(np.float32)
    acc = gn.empty((n, 3), gn.f32)
    acc.fill(np.nan)
    accelerations(gn.to_device(bodies), acc)
    return acc.to_host(), reference(bodies)


def main():
    out, ref = run()
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"nbody on {gn.backend()}: {len(out)} bodies, relative error {rel:.2e}")
    assert rel < 1e-4


if __name__ == "__main__":
    main()
