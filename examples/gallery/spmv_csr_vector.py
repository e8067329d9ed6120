"""Sparse matrix-vector product y = A @ x with A in CSR form, one warp per row and several warps
per block ("CSR vector").

Source algorithm: N. Bell and M. Garland, "Efficient Sparse Matrix-Vector Multiplication on
CUDA" (NVIDIA Technical Report NVR-2008-004, 2008), section 4.3, the ``spmv_csr_vector_kernel``:
the 32 lanes of a warp stride through one row's nonzeros, reduce their partial sums (here with
warp shuffles instead of the report's shared-memory tree), and lane 0 writes ``y[row]`` with
``row = block_idx.x * WARPS + warp``.

What it exercises: the warp-per-row mapping (``lane = tid % 32``, ``wid = tid // 32``), a store
by one lane of each warp (``if lane == 0: y[row] = ...``), ``shfl_down`` reduction, a loop that
starts at a lane offset and strides by the warp size.
"""

import numpy as np
from _gallery import compare, poison
from spmv_csr_scalar import random_csr, reference

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    i32,
    shfl_down,
    thread_idx,
)

WARPS = 4                 # warps (rows) per block
THREADS = 32 * WARPS

# f32 dot products of up to a few hundred terms of size <= 1, summed lane by lane and then
# across the warp: the rounding error grows with the row's magnitude, so relative to 1 + |y|.
TOLERANCE = ("rel", 1e-5)


@gpu_kernel(Kernel1D)
def spmv_csr_vector_kernel(row_ptr: CUDASlice[i32], cols: CUDASlice[i32], vals: CUDASlice[f32],
                           x: CUDASlice[f32], y: CUDASliceMut[f32]):
    assert block_dim.x == THREADS, "launch spmv_csr_vector_kernel with THREADS threads per block"
    tid = thread_idx.x
    lane = tid % 32
    wid = tid // 32
    row = block_idx.x * WARPS + wid
    total = f32(0.0)
    if row < len(y):
        for j in range(row_ptr[row] + lane, row_ptr[row + 1], 32):
            total += vals[j] * x[cols[j]]
    # Every lane takes part in the shuffles, also in a warp past the last row.
    offset = 16
    while offset > 0:
        total += shfl_down(total, offset)
        offset //= 2
    if lane == 0 and row < len(y):
        y[row] = total


def spmv_csr_vector(row_ptr, cols, vals, x, y):
    rows = len(y)
    blocks = (rows + WARPS - 1) // WARPS
    spmv_csr_vector_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        row_ptr, cols, vals, x, y)


def run(rows: int = 300, cols: int = 500, max_per_row: int = 70, seed=None):
    rng = np.random.default_rng(seed)
    row_ptr, col_idx, values, row_of = random_csr(rng, rows, cols, max_per_row)
    x = rng.uniform(-1, 1, cols).astype(np.float32)
    y = gn.empty(rows, gn.f32)
    poison(y)
    spmv_csr_vector(gn.to_device(row_ptr), gn.to_device(col_idx), gn.to_device(values),
                    gn.to_device(x), y)
    return y.to_host(), reference(col_idx, values, row_of, x, rows)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"spmv_csr_vector on {gn.backend()}: {len(out)} rows, "
          f"max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
