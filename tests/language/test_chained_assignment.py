"""Chained assignment into array elements: ``sdata[tid] = total = total + sdata[tid + s]``, the
line of every reduction derived from Harris's.  As in Python, the value is computed once and
assigned to each target from left to right (an element's index is read when its turn comes);
stores in a chain are proven race-free and in bounds as stores written alone are."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import located_transpile_error

HEADER = "from gpu_native import *\n"

KERNELS = HEADER + textwrap.dedent("""\
    THREADS = 128

    @gpu_kernel(Kernel1D)
    def reduce3(g_idata: CUDASlice[f32], g_odata: CUDASliceMut[f32]):
        # Harris's reduce3: the first add during the load, then the running sum kept in a
        # register and stored through the chain.
        assert block_dim.x == THREADS
        sdata = shared_array(f32, (THREADS,))
        tid = thread_idx.x
        i = block_idx.x * (THREADS * 2) + thread_idx.x
        my_sum = g_idata[i] if i < len(g_idata) else f32(0.0)
        if i + THREADS < len(g_idata):
            my_sum += g_idata[i + THREADS]
        sdata[tid] = my_sum
        sync_threads()
        s = THREADS // 2
        while s > 0:
            if tid < s:
                sdata[tid] = my_sum = my_sum + sdata[tid + s]
            sync_threads()
            s >>= 1
        if tid == 0:
            g_odata[block_idx.x] = my_sum

    @gpu_kernel(Kernel1D)
    def chains(a: CUDASliceMut[i32], b: CUDASliceMut[i32], c: CUDASliceMut[i64],
               d: CUDASliceMut[f64]):
        i: UniqueId = FlatLayout1D.uid()
        x = 0
        # Left to right, one value: a[i] and b[i] get 7 + i, and so does x.
        a[i] = x = b[i] = 7 + i
        t = local_array(i32, (4,))
        t[0] = 0
        t[1] = 0
        t[2] = 0
        k = 1
        # The element's index is read at its turn, before k is assigned: t[1] = 2, as Python.
        t[k] = k = 2
        c[i] = t[1] * 100 + t[2] * 10 + k + x * 1000
        # A literal, and a tuple unpacked into names beside an element.
        d[i] = y = 0.5
        p, q = d_pair = (f64(i), y)
        d[i] += p + q + d_pair[1]
    """)


def test_harris_reduce3_with_the_chained_store(backend, kernel_module):
    module = kernel_module(KERNELS)
    rng = np.random.default_rng()
    x = rng.standard_normal(1000).astype(np.float32)
    blocks = (len(x) + 255) // 256
    out = gn.to_device(np.full(blocks, np.nan, np.float32))
    module.reduce3.launch(gn.GridDim1D(blocks), gn.BlockDim1D(128))(gn.to_device(x), out)
    sums = [x[b * 256:(b + 1) * 256].astype(np.float64).sum() for b in range(blocks)]
    np.testing.assert_allclose(out.to_host(), sums, rtol=1e-5, atol=1e-4)


def test_each_target_is_assigned_from_left_to_right(backend, kernel_module):
    module = kernel_module(KERNELS)
    n = 5
    a, b = gn.to_device(np.full(n, -1, np.int32)), gn.to_device(np.full(n, -1, np.int32))
    c, d = gn.to_device(np.full(n, -1, np.int64)), gn.to_device(np.full(n, np.nan))
    module.chains.forall(n)(a, b, c, d)
    idx = np.arange(n)
    np.testing.assert_array_equal(a.to_host(), 7 + idx)
    np.testing.assert_array_equal(b.to_host(), 7 + idx)
    np.testing.assert_array_equal(c.to_host(), (7 + idx) * 1000 + 200 + 2)
    np.testing.assert_array_equal(d.to_host(), 0.5 + idx + 0.5 + 0.5)


@pytest.mark.parametrize("statement, message", [
    # Each element of a chain is a store: a race is refused there as it is alone.
    ("a[0] = s = f32(1.0)  # <-", "store into 'a'"),
    ("v = vec2f(0.0, 0.0)\n    a[i] = v.x = f32(1.0)  # <-",
     "chained assignment assigns names, array elements and tuples of them"),
    ("a[0] = u = FlatLayout2D.uid()  # <-", "a unique id or an array can be assigned to one "
     "name"),
])
def test_what_a_chain_cannot_do(statement, message, tmp_path):
    source = HEADER + ("\n@gpu_kernel(Kernel2D)\ndef k(a: CUDASliceMut[f32]):\n"
                       f"    i, j = FlatLayout2D.uid()\n    {statement}\n")
    located_transpile_error(source, tmp_path / "chains.py", message)
