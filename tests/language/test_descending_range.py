"""``for m in range(start, stop, -step)``, C's ``for (m = B - 1; m >= 0; m--)``: in the body
``stop < m <= start``, so an index through ``m`` is proven in bounds and race-free as through an
ascending range's variable (Rodinia's nw sweeps its tile's anti-diagonals this way), and the
values are Python's."""

from __future__ import annotations

import textwrap

import numpy as np

import gpu_native as gn

KERNELS = textwrap.dedent("""\
    from gpu_native import *

    B = 16

    @gpu_kernel(Kernel1D)
    def sweep(out: CUDASliceMut[i32]):
        # Each round m, thread tx writes t[tx + B - m]: the threads of a round write apart,
        # and a barrier ends the round.
        assert block_dim.x == B
        tx = thread_idx.x
        t = shared_array(i32, (2 * B,))
        t[tx] = -1
        t[tx + B] = -1
        sync_threads()
        for m in range(B - 1, -1, -1):
            t[tx + B - m] = m * 100 + tx
            sync_threads()
        out[block_idx.x * 2 * B + tx] = t[tx]
        out[block_idx.x * 2 * B + B + tx] = t[tx + B]

    @gpu_kernel(Kernel1D)
    def suffix_sums(a: CUDASlice[f64], out: CUDASliceMut[f64]):
        # One thread walks a from its end: out[q] = a[q] + a[q + 1] + ... (stride 1), and
        # the odd positions from the last down by 2.
        if FlatLayout1D.uid() == 0:
            acc = 0.0
            for q in range(len(a) - 1, -1, -1):
                acc += a[q]
                out[q] = acc
            for p in range(len(a) - 1, 0, -2):
                out[p] += 1000.0
    """)


def test_a_shared_tile_swept_by_a_descending_counter(backend, kernel_module):
    module = kernel_module(KERNELS)
    blocks, b = 3, 16
    out = gn.to_device(np.full(blocks * 2 * b, -7, np.int32))
    module.sweep.launch(gn.GridDim1D(blocks), gn.BlockDim1D(b))(out)
    tile = np.full(2 * b, -1)
    for m in range(b - 1, -1, -1):
        for tx in range(b):
            tile[tx + b - m] = m * 100 + tx
    np.testing.assert_array_equal(out.to_host(), np.tile(tile, blocks))


def test_a_walk_from_the_end_of_an_array(backend, kernel_module):
    module = kernel_module(KERNELS)
    rng = np.random.default_rng()
    for n in (1, 2, 7, 64):
        a = rng.standard_normal(n)
        out = gn.to_device(np.full(n, np.nan))
        module.suffix_sums.forall(1)(gn.to_device(a), out)
        expected = np.cumsum(a[::-1])[::-1]
        expected[n - 1::-2][:len(range(n - 1, 0, -2))] += 1000.0
        np.testing.assert_allclose(out.to_host(), expected, rtol=1e-12, atol=1e-12)


UNSIGNED = textwrap.dedent("""\
    from gpu_native import *

    @gpu_kernel(Kernel1D)
    def countdown(out: CUDASliceMut[i64], n: u32):
        # `n - 1` wraps at n == 0: the guard shows it does not, so the loop is accepted.
        if FlatLayout1D.uid() == 0 and n > 0:
            k = 0
            for m in range(n - 1, -1, -1):
                out[k] = i64(m)
                k += 1
    """)


def test_a_countdown_from_an_unsigned_difference_guarded_from_wrapping(backend, kernel_module):
    """Without the guard the loop is refused (tests/check/test_transpile_errors.py): at n == 0
    its u32 start wrapped to 4294967295 and it ran 2**32 times."""
    module = kernel_module(UNSIGNED)
    for n in (0, 1, 5):
        out = gn.to_device(np.full(5, -1, np.int64))
        module.countdown.forall(1)(out, np.uint32(n))
        np.testing.assert_array_equal(out.to_host(), list(range(n - 1, -1, -1)) + [-1] * (5 - n))
