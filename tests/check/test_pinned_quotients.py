"""``u // K`` is unique where a condition pins ``u % K`` (R1): one writer per warp over the grid.

``if tid % 32 == 0: y[tid // 32] = x[tid]`` with ``tid`` a grid uid (or ``block_idx.x *
block_dim.x + thread_idx.x``) is race-free: floor division gives ``tid == 32 * (tid // 32) + tid
% 32``, and the remainder is the same in every thread that runs the store.  The store depends only
on the global uid, so it is race-free for any block size, 48 and 96 (not whole warps) included.
Each accepted kernel runs on the simulator with its race detector on, against NumPy; the near
misses, which race or which the rule does not cover, stay refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build
from tools.fuzz.indices import run_sim

N = 1000


def every(k: int, start: int = 0):
    """``out[j] = x[k * j + start]``, for every ``j`` with ``k * j + start < N``."""
    def reference(x: np.ndarray, out: np.ndarray) -> np.ndarray:
        expected = out.copy()
        picked = x[start::k]
        expected[:len(picked)] = picked
        return expected
    return reference


ACCEPTED = {
    "uid": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 == 0:
                y[tid // 32] = x[tid]
        """, every(32)),
    "downsample": ("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            if i < len(a) and i % 2 == 0:
                out[i // 2] = a[i]
        """, every(2)),
    "lane_of_uid": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            warp = tid // 32
            lane = tid % 32
            if lane == 0:
                y[warp] = x[tid]
        """, every(32)),
    "lane_of_flat": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = block_idx.x * block_dim.x + thread_idx.x
            warp = tid // 32
            lane = tid % 32
            if lane == 0 and tid < len(x):
                y[warp] = x[tid]
        """, every(32)),
    "shift_and_mask": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid & 31 == 0:
                y[tid >> 5] = x[tid]
        """, every(32)),
    "early_return": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = block_idx.x * block_dim.x + thread_idx.x
            if tid % 8 != 0 or tid >= len(x):
                return
            y[tid // 8] = x[tid]
        """, every(8)),
    # The remainder pinned to another constant, and a constant added first (`(tid - 3) // 4`
    # is refused by the wrap check: nothing shows `tid - 3` never negative).
    "offset": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 4 == 3:
                y[(tid + 1) // 4 - 1] = x[tid]
        """, every(4, 3)),
    # tid % 32 fixed fixes tid % 16: y[2 * m] = x[32 * m], one writer each.
    "divisor_of_the_pin": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 == 0:
                y[tid // 16] = x[tid]
        """, lambda x, out: np.where(np.arange(len(out)) % 2 == 0,
                                     every(32)(x, out[::2].copy()).repeat(2)[:len(out)], out)),
}

BLOCKS = (32, 48, 96, 128)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_quotient_under_a_pinned_remainder_is_accepted_and_race_free(tmp_path, name):
    source, reference = ACCEPTED[name]
    kernel = build(tmp_path, source, name=name)["k"]
    for seed, block in enumerate(BLOCKS):
        rng = np.random.default_rng(seed + 100 * len(name))
        x = rng.standard_normal(N).astype(np.float32)
        out = np.full(N, np.nan, np.float32)
        grid = -(-N // block)
        errors = run_sim(kernel, grid, block, x, out)
        assert errors.races == [] and errors.fails == [], (block, errors)
        np.testing.assert_array_equal(out, reference(x, np.full(N, np.nan, np.float32)),
                                      err_msg=f"block {block}")


def test_under_an_asserted_block_size(tmp_path):
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
            assert block_dim.x == 256
            t = block_idx.x * 256 + thread_idx.x
            if t % 32 == 0:
                out[t // 32] = x[t]
        """, name="asserted")["k"]
    rng = np.random.default_rng(7)
    x = rng.standard_normal(4 * 256).astype(np.float32)
    out = np.full(len(x) // 32, np.nan, np.float32)
    errors = run_sim(kernel, 4, 256, x, out)
    assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_array_equal(out, x[::32])


def test_a_warp_per_row_matvec(tmp_path):
    """The trial's kernel: a warp per row of ``A``, its first lane writes ``y[warp]``."""
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(A: CUDASlice2D[f32], x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = block_idx.x * block_dim.x + thread_idx.x
            warp = tid // 32
            lane = tid % 32
            n_rows, n_cols = A.shape
            acc = f32(0.0)
            if warp < n_rows:
                for j in range(lane, n_cols, 32):
                    acc += A[warp, j] * x[j]
            offset = 16
            while offset > 0:
                acc += shfl_down(acc, offset)
                offset //= 2
            if lane == 0 and warp < n_rows:
                y[warp] = acc
        """, name="matvec")["k"]
    rng = np.random.default_rng(3)
    A = rng.standard_normal((37, 70)).astype(np.float32)
    x = rng.standard_normal(70).astype(np.float32)
    for block in (64, 128):
        y = np.full(37, np.nan, np.float32)
        errors = run_sim(kernel, -(-37 * 32 // block), block, A, x, y)
        assert errors.races == [] and errors.fails == [], (block, errors)
        np.testing.assert_allclose(y, A.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)


REFUSED = {
    # Two writers an element: threads 0 and 16 both write y[0].
    "finer_pin": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 16 == 0:
                y[tid // 32] = x[tid]
        """,
    # 32 does not pin tid % 64: threads 0 and 32 both write y[0].
    "coarser_quotient": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 == 0:
                y[tid // 64] = x[tid]
        """,
    # The guard is on another value: with blocks of 48, block 1's thread 0 (uid 48) and block
    # 0's thread 32 (uid 32) both write y[1].
    "other_variable": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            t = thread_idx.x
            if t % 32 == 0:
                y[tid // 32] = x[tid]
        """,
    # A range, not one remainder.
    "remainder_range": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 < 2:
                y[tid // 32] = x[tid]
        """,
    # A pin that does not dominate the store.
    "pin_in_another_branch": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 == 0:
                x[0]
            y[tid // 32] = x[tid]
        """,
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_near_misses_stay_refused(tmp_path, name):
    with pytest.raises(TranspileError, match=r"not provably unique"):
        build(tmp_path, REFUSED[name], name=name)


def test_the_other_variables_race_is_real(tmp_path):
    """The refused `other_variable` does race on the simulator with blocks of 48 (inside
    `unsafe()`), so refusing it is right."""
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            t = thread_idx.x
            if t % 32 == 0:
                with unsafe():
                    y[tid // 32] = x[tid]
        """, name="other_unsafe")["k"]
    x = np.arange(96, dtype=np.float32)
    y = np.zeros(3, np.float32)
    errors = run_sim(kernel, 2, 48, x, y)
    assert errors.races, "blocks of 48: uids 32 and 48 both write y[1]"
