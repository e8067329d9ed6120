"""Gaussian elimination of a dense system, one launch per pivot, in place.

Source algorithm: Rodinia's ``gaussian`` benchmark (S. Che et al., "Rodinia: A Benchmark Suite
for Heterogeneous Computing", IISWC 2009), whose kernels ``Fan1`` and ``Fan2`` a CUDA course
ports first: for each pivot ``k`` from the host, one kernel computes the multipliers ``m[i] =
a[i, k] / a[k, k]`` of the rows below, and a 2-D kernel updates every element below and right of
the pivot, ``a[i, j] -= m[i] * a[k, j]`` (and the right-hand side ``b[i] -= m[i] * b[k]``).
Back substitution then runs on the host, as in Rodinia.  No pivoting: the test matrices are
diagonally dominant.

What it exercises: reads of the pivot row ``a[k, j]`` and of ``b[k]`` while the threads update
the rows below it in place, accepted with no ``unsafe`` because no thread's store can write them
(the rows written are ``i > k``; the checker proves each read apart from the stores as it proves
two stores apart: ``gpu_native/check/unique.py``, ``check_reads``); a 2-D launch over the
trailing submatrix with the pivot as a scalar parameter; the multipliers kept in their own
array, computed with the right-hand side by the first kernel (one thread per row), so that the
update reads no element another thread writes.
"""

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    BlockDim2D,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    FlatLayout2D,
    GridDim1D,
    GridDim2D,
    Kernel1D,
    Kernel2D,
    f64,
    gpu_kernel,
    i32,
)

TX, TY = 16, 16  # the update's block

# Each step rounds once per element (a product and a difference in f64), n steps in all; the
# host's elimination in float64 does the same operations in the same order but for fused
# multiply-adds on the GPU, so the solutions agree to a few ulps of the condition number.
TOLERANCE = ("rel", 1e-9)


@gpu_kernel(Kernel1D)
def multipliers(a: CUDASlice2D[f64], b: CUDASliceMut[f64], m: CUDASliceMut[f64], k: i32):
    """Fan1: the multiplier of each row below the pivot, and that row's right-hand side."""
    i = FlatLayout1D.uid()
    n = a.shape[0]
    if i > k and i < n:
        f = a[i, k] / a[k, k]
        m[i] = f
        b[i] -= f * b[k]


@gpu_kernel(Kernel2D)
def eliminate(a: CUDASliceMut2D[f64], m: CUDASlice[f64], k: i32):
    """Fan2: every element below and right of the pivot."""
    j, i = FlatLayout2D.uid()
    n = a.shape[0]
    if i > k and i < n and j > k and j < n:
        a[i, j] -= m[i] * a[k, j]


def solve(a_host: np.ndarray, b_host: np.ndarray) -> np.ndarray:
    """``x`` with ``a_host @ x == b_host``: elimination on the device, back substitution here."""
    n = a_host.shape[0]
    a, b = gn.to_device(a_host), gn.to_device(b_host)
    m = gn.empty(n, gn.f64)
    poison(m)
    rows = GridDim1D(-(-n // 128))
    grid = GridDim2D(-(-n // TX), -(-n // TY))
    for k in range(n - 1):
        multipliers.launch(rows, BlockDim1D(128), 0, DEFAULT_STREAM)(a, b, m, k)
        eliminate.launch(grid, BlockDim2D(TX, TY), 0, DEFAULT_STREAM)(a, m, k)
    upper, rhs = a.to_host(), b.to_host()
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (rhs[i] - upper[i, i + 1:] @ x[i + 1:]) / upper[i, i]
    return x


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same elimination in float64 on the host (no pivoting), then back substitution."""
    a, b = a.copy(), b.copy()
    n = a.shape[0]
    for k in range(n - 1):
        f = a[k + 1:, k] / a[k, k]
        a[k + 1:, k + 1:] -= np.outer(f, a[k, k + 1:])
        b[k + 1:] -= f * b[k]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - a[i, i + 1:] @ x[i + 1:]) / a[i, i]
    return x


def run(n: int = 40, seed=None):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + n * np.eye(n)  # diagonally dominant: no pivoting needed
    b = rng.standard_normal(n)
    return solve(a, b), _reference(a, b)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"gaussian_elimination on {gn.backend()}: {out.shape[0]} unknowns solved")


if __name__ == "__main__":
    main()
