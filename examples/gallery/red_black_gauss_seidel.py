"""Red-black Gauss-Seidel sweeps for the 2-D Poisson equation -lap(u) = f, updated in place; the
colour to update is a launch parameter.

Source algorithm: red-black (checkerboard) ordering of Gauss-Seidel relaxation, as in W. L.
Briggs, V. E. Henson and S. F. McCormick, "A Multigrid Tutorial" (SIAM, 2nd ed. 2000), chapter 2
(and the smoothers of GPU multigrid codes such as NVIDIA AmgX): a cell (x, y) is red when
x + y is even; a half-sweep updates every cell of one colour from its four neighbours, which all
have the other colour, so the update can run in place with one thread per cell.

What it exercises: an in-place stencil (``u[y, x]`` written, ``u[y - 1, x]`` ... read in the
same launch), a store guarded by a parity test against a launch parameter
(``(x + y) % 2 == colour``), a 2-D grid of 2-D blocks.
"""

import numpy as np
from _gallery import compare

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASlice2D,
    CUDASliceMut2D,
    FlatLayout2D,
    GridDim2D,
    Kernel2D,
    f32,
    gpu_kernel,
    i32,
)

BX = 16
BY = 8
RED = 0
BLACK = 1

# Each update averages five f32 terms of size ~1; errors do not grow over a few sweeps.
TOLERANCE = ("abs", 1e-5)


@gpu_kernel(Kernel2D)
def red_black_kernel(u: CUDASliceMut2D[f32], f: CUDASlice2D[f32], h2: f32, colour: i32):
    x, y = FlatLayout2D.uid()
    ny = u.shape[0]
    nx = u.shape[1]
    if y > 0 and y < ny - 1 and x > 0 and x < nx - 1 and (x + y) % 2 == colour:
        around = u[y - 1, x] + u[y + 1, x] + u[y, x - 1] + u[y, x + 1]
        u[y, x] = 0.25 * (around + h2 * f[y, x])


def gauss_seidel(u, f, h: float, sweeps: int):
    """``sweeps`` red-black sweeps on ``u`` in place (its border is the boundary condition)."""
    ny, nx = u.shape
    grid = GridDim2D((nx + BX - 1) // BX, (ny + BY - 1) // BY)
    block = BlockDim2D(BX, BY)
    for _ in range(sweeps):
        for colour in (RED, BLACK):
            red_black_kernel.launch(grid, block, 0, DEFAULT_STREAM)(u, f, h * h, colour)


def reference(u, f, h, sweeps):
    u = u.astype(np.float64)
    f = f.astype(np.float64)
    ny, nx = u.shape
    yy, xx = np.mgrid[0:ny, 0:nx]
    inner = (yy > 0) & (yy < ny - 1) & (xx > 0) & (xx < nx - 1)
    for _ in range(sweeps):
        for colour in (RED, BLACK):
            mask = inner & ((xx + yy) % 2 == colour)
            around = np.zeros_like(u)
            around[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
            u = np.where(mask, 0.25 * (around + h * h * f), u)
    return u


def run(ny: int = 40, nx: int = 53, sweeps: int = 4, seed=None):
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1, 1, (ny, nx)).astype(np.float32)
    f = rng.uniform(-1, 1, (ny, nx)).astype(np.float32)
    h = 1.0 / (nx - 1)
    u_dev = gn.to_device(u)
    gauss_seidel(u_dev, gn.to_device(f), h, sweeps)
    return u_dev.to_host(), reference(u, f, h, sweeps)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"red_black_gauss_seidel on {gn.backend()}: {out.shape} grid, "
          f"max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
