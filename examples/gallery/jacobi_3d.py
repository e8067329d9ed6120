"""Jacobi iterations of the 3-D Laplace equation: a 7-point stencil, one thread per cell, two
buffers swapped between launches.

Source algorithm: the Jacobi relaxation of the 7-point Laplacian (any numerical analysis text;
on GPUs, P. Micikevicius, "3D Finite Difference Computation on GPUs using CUDA", GPGPU-2, 2009,
and the Jacobi solvers of NVIDIA's multi-GPU programming models samples): every interior cell
becomes the average of its six face neighbours; boundary cells keep their values (Dirichlet).

What it exercises: ``Kernel3D`` with a 3-D uid ``x, y, z = FlatLayout3D.uid()``, a store into
a 3-D array, neighbour reads from a separate read-only input, the grid tail in three dimensions
(the launch covers whole blocks; cells past the end do nothing).
"""

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim3D,
    CUDASlice3D,
    CUDASliceMut3D,
    FlatLayout3D,
    GridDim3D,
    Kernel3D,
    f32,
    gpu_kernel,
)

BX = 16
BY = 4
BZ = 4

# Averages of six f32 values in [0, 1): one rounding per add, errors do not grow.
TOLERANCE = ("abs", 1e-6)


@gpu_kernel(Kernel3D)
def jacobi_3d_kernel(src: CUDASlice3D[f32], dst: CUDASliceMut3D[f32]):
    x, y, z = FlatLayout3D.uid()
    nz = src.shape[0]
    ny = src.shape[1]
    nx = src.shape[2]
    if z < nz and y < ny and x < nx:
        if z == 0 or z == nz - 1 or y == 0 or y == ny - 1 or x == 0 or x == nx - 1:
            dst[z, y, x] = src[z, y, x]
        else:
            total = (src[z - 1, y, x] + src[z + 1, y, x] + src[z, y - 1, x] + src[z, y + 1, x]
                     + src[z, y, x - 1] + src[z, y, x + 1])
            dst[z, y, x] = total / 6


def jacobi_3d(a, b, iterations: int):
    """Run ``iterations`` sweeps from ``a``, using ``b`` as the other buffer; return the one that
    holds the result."""
    nz, ny, nx = a.shape
    grid = GridDim3D((nx + BX - 1) // BX, (ny + BY - 1) // BY, (nz + BZ - 1) // BZ)
    block = BlockDim3D(BX, BY, BZ)
    for _ in range(iterations):
        jacobi_3d_kernel.launch(grid, block, 0, DEFAULT_STREAM)(a, b)
        a, b = b, a
    return a


def reference(u, iterations):
    u = u.astype(np.float64)
    for _ in range(iterations):
        v = u.copy()
        v[1:-1, 1:-1, 1:-1] = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
                               + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:]) / 6
        u = v
    return u


def run(nz: int = 12, ny: int = 14, nx: int = 21, iterations: int = 5, seed=None):
    rng = np.random.default_rng(seed)
    u = rng.random((nz, ny, nx), dtype=np.float32)
    other = gn.empty((nz, ny, nx), gn.f32)
    poison(other)
    out = jacobi_3d(gn.to_device(u), other, iterations)
    return out.to_host(), reference(u, iterations)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"jacobi_3d on {gn.backend()}: {out.shape} grid, max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
