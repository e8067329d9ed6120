"""SAXPY with a grid-stride loop: ``out = alpha * x + y`` with any grid size."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    f32,
    gpu_kernel,
)


@gpu_kernel(Kernel1D)
def saxpy_kernel(alpha: f32, x: CUDASlice[f32], y: CUDASlice[f32], out: CUDASliceMut[f32]):
    for i in FlatLayout1D.grid_stride(len(out)):
        out[i] = alpha * x[i] + y[i]


def saxpy(alpha, x, y, out, blocks: int = 256, threads: int = 256):
    saxpy_kernel.launch(GridDim1D(blocks), BlockDim1D(threads), 0, DEFAULT_STREAM)(
        alpha, x, y, out)


def run(n: int = 1_000_003, seed=None):
    rng = np.random.default_rng(seed)
    alpha = float(rng.standard_normal())
    x_host = rng.standard_normal(n, dtype=np.float32)
    y_host = rng.standard_normal(n, dtype=np.float32)
    out = gn.empty(n, gn.f32)
    out.fill(np.nan)
    saxpy(alpha, gn.to_device(x_host), gn.to_device(y_host), out, blocks=37)
    ref = np.float32(alpha).astype(np.float64) * x_host + y_host
    return out.to_host(), ref


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref) / (1 + np.abs(ref)))
    print(f"saxpy on {gn.backend()}: {len(out)} elements, max relative error {err:.2e}")
    assert err < 1e-5


if __name__ == "__main__":
    main()
