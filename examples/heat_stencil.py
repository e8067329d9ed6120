"""2-D heat equation: explicit 5-point stencil steps, ping-ponging between two grids."""

import numpy as np

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
)


@gpu_kernel(Kernel2D)
def heat_step(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32], alpha: f32):
    x, y = FlatLayout2D.uid()
    h = src.shape[0]
    w = src.shape[1]
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        dst[y, x] = src[y, x]
    else:
        center = src[y, x]
        around = src[y - 1, x] + src[y + 1, x] + src[y, x - 1] + src[y, x + 1]
        dst[y, x] = center + alpha * (around - 4.0 * center)


def simulate(grid_host: np.ndarray, steps: int, alpha: float = 0.2) -> np.ndarray:
    h, w = grid_host.shape
    a = gn.to_device(grid_host)
    b = gn.empty((h, w), gn.f32)
    launch = heat_step.launch(GridDim2D((w + 15) // 16, (h + 15) // 16), BlockDim2D(16, 16), 0,
                              DEFAULT_STREAM)
    for _ in range(steps):
        launch(a, b, alpha)
        a, b = b, a
    return a.to_host()


def reference(grid_host: np.ndarray, steps: int, alpha: float = 0.2) -> np.ndarray:
    u = grid_host.astype(np.float32)
    a = np.float32(alpha)
    for _ in range(steps):
        v = u.copy()
        around = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + a * (around - np.float32(4.0) * u[1:-1, 1:-1])
        u = v
    return u.astype(np.float64)


def run(h: int = 97, w: int = 130, steps: int = 20, seed=None):
    rng = np.random.default_rng(seed)
    start = rng.random((h, w), dtype=np.float32)
    return simulate(start, steps), reference(start, steps)


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"heat_stencil on {gn.backend()}: {out.shape}, max |error| {err:.2e}")
    assert err < 1e-5


if __name__ == "__main__":
    main()
