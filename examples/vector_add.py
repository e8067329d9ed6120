"""Vector add: the seed example, exactly as a user writes it.

Run it: ``python examples/vector_add.py`` (on the GPU if there is one, else on the simulator).
"""

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
    UniqueId,
    f32,
    gpu_kernel,
)


@gpu_kernel(Kernel1D)
def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    idx: UniqueId = FlatLayout1D.uid()
    c[idx] = a[idx] + b[idx]


def add(a, b, c):
    block_dim = 128
    grid_dim = (len(c) + block_dim - 1) // block_dim
    add_kernel.launch(GridDim1D(grid_dim), BlockDim1D(block_dim), 0, DEFAULT_STREAM)(a, b, c)


def run(n: int = 1_000_000, seed=None):
    """Add two random vectors on the device; return (result, float64 reference)."""
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal(n, dtype=np.float32)
    b_host = rng.standard_normal(n, dtype=np.float32)
    a, b = gn.to_device(a_host), gn.to_device(b_host)
    c = gn.empty(n, gn.f32)
    c.fill(np.nan)  # poison: every element must be written
    add(a, b, c)
    return c.to_host(), a_host.astype(np.float64) + b_host


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"vector_add on {gn.backend()}: {len(out)} elements, max |error| = {err:.2e}")
    print("first elements:", out[:4])
    assert err < 1e-6


if __name__ == "__main__":
    main()
