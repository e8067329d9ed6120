"""Values at the edges of their types, the same on the simulator and the GPU: ``int()`` of a
float literal folds to what it computes at run time, and a ``grid_stride`` loop takes a ``u64``
bound past i64's range."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn

HEAD = """\
import math
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f64, i64,
                        u64, grid_dim, thread_idx)
"""

INT_OF_LITERALS = HEAD + """
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f64], out: CUDASliceMut[f64]):
    assert grid_dim.x == 1
    if thread_idx.x == 0:
        out[0] = f64(int(math.inf))
        out[1] = f64(int(-math.inf))
        out[2] = f64(int(math.nan))
        out[3] = f64(int(1e300) // 2)
        out[4] = f64(int(-2.7))
        for j in range(4):
            out[5 + j] = f64(int(x[j]))
"""


def test_int_of_a_literal_is_the_run_time_conversion(backend, kernel_module):
    """Saturated at i64's range, NaN 0, as ``int(x)`` of a value: ``int(math.inf)`` was an
    internal error, and ``int(1e300)`` folded to Python's 10**300."""
    m = kernel_module(INT_OF_LITERALS)
    x = gn.to_device(np.array([np.inf, -np.inf, np.nan, 1e300]))
    out = gn.to_device(np.full(9, np.nan))
    m.k[1, 32](x, out)
    top, bottom = float(2**63 - 1), float(-2**63)
    np.testing.assert_array_equal(out.to_host(), [top, bottom, 0.0, float((2**63 - 1) // 2),
                                                  -2.0, top, bottom, 0.0, top])


GRID_STRIDE_U64 = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i64], n: u64):
    for j in FlatLayout1D.grid_stride(n):
        if j < len(out):
            out[j] = j + 1
        else:
            return
"""


@pytest.mark.parametrize("n", [3, 2**63 - 1, 2**63, 2**64 - 1])
def test_a_grid_stride_loop_over_a_u64_bound_past_i64(backend, kernel_module, n):
    """The loop counts in i64: a u64 bound of 2**63 or more goes as far as i64 does (it
    converted to a negative bound, and the loop ran no iteration)."""
    m = kernel_module(GRID_STRIDE_U64)
    untouched = np.iinfo(np.int64).max
    out = gn.to_device(np.full(4, untouched, np.int64))
    m.k[1, 2](out, np.uint64(n))
    np.testing.assert_array_equal(out.to_host(), [1, 2, 3, untouched if n == 3 else 4])
