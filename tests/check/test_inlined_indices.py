"""Index arithmetic the proofs see through: a ``@gpu_device`` function that only returns
arithmetic of its arguments (GPU Gems' ``CONFLICT_FREE_OFFSET`` macro written as one), and a
local that holds a module constant (``n = N``), are what they stand for, as if written out.
Calls of any other device function stay opaque, and arithmetic that may wrap stays refused."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module

HEAD = """\
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut, f32, i32,
                        u32, thread_idx, block_dim, grid_dim, shared_array, sync_threads)
"""

# GPU Gems 3, chapter 39: the work-efficient scan of one block, with the bank-conflict-free
# padding of its shared array computed by a device function, and `n` a local copy of N.
PRESCAN = HEAD + textwrap.dedent("""
    NUM_BANKS = 32
    LOG_NUM_BANKS = 5
    N = 512


    @gpu_device
    def conflict_free_offset(n: i32) -> i32:
        return n >> LOG_NUM_BANKS


    @gpu_kernel(Kernel1D)
    def prescan(g_odata: CUDASliceMut[f32], g_idata: CUDASlice[f32]):
        assert block_dim.x == N // 2 and grid_dim.x == 1
        temp = shared_array(f32, (N + N // NUM_BANKS,))
        thid = thread_idx.x
        n = N
        offset = 1
        ai = thid
        bi = thid + (n // 2)
        bank_a = conflict_free_offset(ai)
        bank_b = conflict_free_offset(bi)
        temp[ai + bank_a] = g_idata[ai]
        temp[bi + bank_b] = g_idata[bi]
        d = n >> 1
        while d > 0:  # build the sums in place up the tree
            sync_threads()
            if thid < d:
                ai = offset * (2 * thid + 1) - 1
                bi = offset * (2 * thid + 2) - 1
                ai += conflict_free_offset(ai)
                bi += conflict_free_offset(bi)
                temp[bi] += temp[ai]
            offset *= 2
            d >>= 1
        if thid == 0:
            temp[n - 1 + conflict_free_offset(n - 1)] = 0
        d = 1
        while d < n:  # traverse down the tree, building the scan
            offset >>= 1
            sync_threads()
            if thid < d:
                ai = offset * (2 * thid + 1) - 1
                bi = offset * (2 * thid + 2) - 1
                ai += conflict_free_offset(ai)
                bi += conflict_free_offset(bi)
                t = temp[ai]
                temp[ai] = temp[bi]
                temp[bi] += t
            d *= 2
        sync_threads()
        ai = thid
        bi = thid + (n // 2)
        g_odata[ai] = temp[ai + bank_a]
        g_odata[bi] = temp[bi + bank_b]
    """)


@pytest.mark.slow
def test_the_gpu_gems_scan_with_its_offset_macro_as_a_device_function(kernel_module, backend,
                                                                       monkeypatch):
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")
    module = kernel_module(PRESCAN)
    x = np.random.default_rng(12).integers(0, 10, 512).astype(np.float32)
    out = gn.empty(512, gn.f32)
    out.fill(np.nan)
    module.prescan[1, 256](out, gn.to_device(x))
    want = np.concatenate([[0.0], np.cumsum(x.astype(np.float64))[:-1]])
    np.testing.assert_array_equal(out.to_host(), want)


def test_a_loop_whose_bound_comes_through_a_local_constant_counts_its_barrier(tmp_path):
    # `d = n >> 1` with `n = N`: the loop runs (d is 128), so its barrier orders the stores.
    source = HEAD + textwrap.dedent("""
        N = 256

        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            assert block_dim.x == N and grid_dim.x == 1
            s = shared_array(f32, (N,))
            tid = thread_idx.x
            n = N
            s[tid] = 1.0
            d = n >> 1
            while d > 0:
                sync_threads()
                d >>= 1
            if tid == 0:
                s[N - 1] = 0.0
            sync_threads()
            out[tid] = s[tid]
        """)
    rewrite_module(source, str(tmp_path / "k.py"), "k")


REFUSED = {
    # u32 arithmetic that wraps in the device function: (t << 23) >> 23 is t mod 512, so
    # threads t and t + 512 meet, though the exact value would tell them apart.
    "a device function whose arithmetic wraps": """
        @gpu_device
        def spread(n: u32) -> u32:
            return n * u32(8388608)

        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            assert block_dim.x == 1024 and grid_dim.x == 1
            s = shared_array(f32, 1024)
            t = u32(thread_idx.x)
            s[spread(t) >> u32(23)] = f32(t)
            sync_threads()
            out[thread_idx.x] = s[thread_idx.x]
        """,
    # A device function that reads memory is no arithmetic of its arguments: opaque.
    "a device function that reads an array": """
        @gpu_device
        def look_up(perm: CUDASlice[i32], i: i32) -> i32:
            return perm[i]

        @gpu_kernel(Kernel1D)
        def k(perm: CUDASlice[i32], out: CUDASliceMut[f32]):
            assert block_dim.x == 256 and grid_dim.x == 1
            s = shared_array(f32, 256)
            s[look_up(perm, thread_idx.x)] = 1.0
            sync_threads()
            out[thread_idx.x] = s[thread_idx.x]
        """,
    # Two statements: not one returned expression, so not looked into.
    "a device function of more than a return": """
        @gpu_device
        def twice(i: i32) -> i32:
            j = i * 2
            return j % 256

        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            assert block_dim.x == 256 and grid_dim.x == 1
            s = shared_array(f32, 256)
            s[twice(thread_idx.x)] = 1.0
            sync_threads()
            out[thread_idx.x] = s[thread_idx.x]
        """,
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_is_not_plain_arithmetic_stays_refused(name, tmp_path):
    source = HEAD + textwrap.dedent(REFUSED[name])
    with pytest.raises(TranspileError, match="store into 's'"):
        rewrite_module(source, str(tmp_path / "k.py"), "k")


def test_two_calls_of_one_function_are_each_their_own_value(tmp_path):
    # The same device function called with t and with t + 1 gives two different elements:
    # the stores are apart, and a swap through it is proven like the one written out.
    source = HEAD + textwrap.dedent("""
        @gpu_device
        def pair(i: i32) -> i32:
            return 2 * i

        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            assert block_dim.x == 128 and grid_dim.x == 1
            s = shared_array(f32, 256)
            t = thread_idx.x
            s[pair(t)] = 1.0
            s[pair(t) + 1] = 2.0
            sync_threads()
            out[t] = s[2 * t] + s[2 * t + 1]
        """)
    rewrite_module(source, str(tmp_path / "k.py"), "k")
    # And with the second store at pair(t + 1) - 1 == 2t + 1 as well.
    rewrite_module(source.replace("s[pair(t) + 1]", "s[pair(t + 1) - 1]"),
                   str(tmp_path / "k2.py"), "k2")
    # While pair(t + 1) itself meets the next thread's pair(t): refused.
    with pytest.raises(TranspileError, match="store into 's'"):
        rewrite_module(source.replace("s[pair(t) + 1]", "s[pair(t + 1)]"),
                       str(tmp_path / "k3.py"), "k3")
