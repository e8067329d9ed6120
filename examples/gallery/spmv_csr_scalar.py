"""Sparse matrix-vector product y = A @ x with A in CSR form, one thread per row ("CSR scalar").

Source algorithm: N. Bell and M. Garland, "Efficient Sparse Matrix-Vector Multiplication on
CUDA" (NVIDIA Technical Report NVR-2008-004, 2008), section 4.3, the ``spmv_csr_scalar_kernel``:
thread ``row`` walks ``row_ptr[row] .. row_ptr[row + 1]`` and writes ``y[row]``.

What it exercises: a unique store through the grid uid, loop bounds and gather indices loaded
from memory (``x[cols[j]]``).
"""

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
    f32,
    gpu_kernel,
    i32,
)

THREADS = 128

# f32 dot products of up to a few hundred terms of size <= 1, summed in row order: the rounding
# error grows with the row's magnitude, so relative to 1 + |y|.
TOLERANCE = ("rel", 1e-5)


@gpu_kernel(Kernel1D)
def spmv_csr_scalar_kernel(row_ptr: CUDASlice[i32], cols: CUDASlice[i32], vals: CUDASlice[f32],
                           x: CUDASlice[f32], y: CUDASliceMut[f32]):
    row: UniqueId = FlatLayout1D.uid()
    # row_ptr has one more element than y, so the grid tail alone does not stop the thread
    # past the last row: guard it, as the original does.
    if row < len(y):
        total = f32(0.0)
        for j in range(row_ptr[row], row_ptr[row + 1]):
            total += vals[j] * x[cols[j]]
        y[row] = total


def spmv_csr_scalar(row_ptr, cols, vals, x, y):
    rows = len(y)
    blocks = (rows + THREADS - 1) // THREADS
    spmv_csr_scalar_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(
        row_ptr, cols, vals, x, y)


def random_csr(rng, rows: int, cols: int, max_per_row: int):
    """A random CSR matrix (some rows empty, some long): ``row_ptr``, column indices (sorted
    within each row; a column may repeat, which CSR allows and SpMV sums), values, and the row of
    each nonzero (for the reference)."""
    lengths = rng.integers(0, max_per_row + 1, rows)
    lengths[rng.integers(0, rows, max(1, rows // 10))] = 0
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    row_of = np.repeat(np.arange(rows), lengths)
    col_idx = rng.integers(0, cols, len(row_of))
    col_idx = col_idx[np.lexsort((col_idx, row_of))].astype(np.int32)
    values = rng.uniform(-1, 1, len(row_of)).astype(np.float32)
    return row_ptr, col_idx, values, row_of


def reference(col_idx, values, row_of, x, rows: int):
    """``A @ x`` in float64, summed per row from the nonzeros."""
    products = values.astype(np.float64) * x.astype(np.float64)[col_idx]
    return np.bincount(row_of, weights=products, minlength=rows)


def run(rows: int = 700, cols: int = 500, max_per_row: int = 40, seed=None):
    rng = np.random.default_rng(seed)
    row_ptr, col_idx, values, row_of = random_csr(rng, rows, cols, max_per_row)
    x = rng.uniform(-1, 1, cols).astype(np.float32)
    y = gn.empty(rows, gn.f32)
    poison(y)
    spmv_csr_scalar(gn.to_device(row_ptr), gn.to_device(col_idx), gn.to_device(values),
                    gn.to_device(x), y)
    return y.to_host(), reference(col_idx, values, row_of, x, rows)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"spmv_csr_scalar on {gn.backend()}: {len(out)} rows, "
          f"max error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()
