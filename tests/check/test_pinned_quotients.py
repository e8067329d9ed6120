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


# ---- a pin on the thread's lane, in blocks of whole warps ------------------------------------
#
# With u = block_idx.x * block_dim.x + thread_idx.x and block_dim.x a multiple of M (asserted),
# u % M == thread_idx.x % M: a pin on the thread's lane pins u's, and u // K (K dividing M) is
# unique as above.  Each kernel runs at several block sizes its assert lets through.

WHOLE_WARPS = {
    "lane_of_thread": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.x % 32 == 0 and tid < len(x):
                y[tid // 32] = x[tid]
        """, every(32), (32, 64, 96, 160)),
    "lane_local_mask_shift": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            lane = thread_idx.x & 31
            tid = block_idx.x * block_dim.x + thread_idx.x
            if lane == 0 and tid < len(x):
                y[tid >> 5] = x[tid]
        """, every(32), (32, 64, 96, 160)),
    # A multiple of 64 is a multiple of 32.
    "coarser_assert": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 64 == 0
            lane = thread_idx.x % 32
            if lane == 0 and block_idx.x * block_dim.x + thread_idx.x < len(x):
                y[(block_idx.x * block_dim.x + thread_idx.x) // 32] = \
                    x[block_idx.x * block_dim.x + thread_idx.x]
        """, every(32), (64, 128, 192)),
    # A block of a fixed size that is whole warps.
    "asserted_extent": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x == 96
            tid = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.x % 32 == 0 and tid < len(x):
                y[tid // 32] = x[tid]
        """, every(32), (96,)),
    # The pin's modulus a multiple of the quotient's: tid % 16 is fixed too.
    "divisor_quotient": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.x % 32 == 0 and tid < len(x):
                y[tid // 16] = x[tid]
        """, lambda x, out: np.where(np.arange(len(out)) % 2 == 0,
                                     every(32)(x, out[::2].copy()).repeat(2)[:len(out)], out),
        (32, 64, 128)),
    # lane_id() is thread_idx.x % 32 in a Kernel1D (its blocks are one-dimensional).
    "lane_id": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if lane_id() == 0 and tid < len(x):
                y[tid // 32] = x[tid]
        """, every(32), (32, 64, 96, 160)),
    "lane_id_local_early_return": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 64 == 0
            lane = lane_id()
            tid = FlatLayout1D.uid()
            if lane != 5 or tid >= len(x):
                return
            y[tid >> 5] = x[tid]
        """, every(32, 5), (64, 128)),
    # Another lane than 0, and a constant added before the division.
    "offset": ("""
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 4 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.x % 4 == 3 and tid < len(x):
                y[(tid + 1) // 4 - 1] = x[tid]
        """, every(4, 3), (4, 12, 64, 100)),
}


@pytest.mark.parametrize("name", sorted(WHOLE_WARPS))
def test_a_pinned_lane_of_the_thread_in_whole_warps_is_accepted_and_race_free(tmp_path, name):
    source, reference, blocks = WHOLE_WARPS[name]
    kernel = build(tmp_path, source, name=name)["k"]
    for seed, block in enumerate(blocks):
        rng = np.random.default_rng(seed + 100 * len(name))
        x = rng.standard_normal(N).astype(np.float32)
        out = np.full(N, np.nan, np.float32)
        errors = run_sim(kernel, -(-N // block), block, x, out)
        assert errors.races == [] and errors.fails == [], (block, errors)
        np.testing.assert_array_equal(out, reference(x, np.full(N, np.nan, np.float32)),
                                      err_msg=f"block {block}")


def test_along_y(tmp_path):
    """The same along ``y``: one row of threads in four writes a row of ``out``."""
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel2D)
        def k(a: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
            assert block_dim.y % 4 == 0
            col = block_idx.x * block_dim.x + thread_idx.x
            row = block_idx.y * block_dim.y + thread_idx.y
            if thread_idx.y % 4 == 0 and row < a.shape[0] and col < a.shape[1]:
                out[row // 4, col] = a[row, col]
        """, name="along_y")["k"]
    rng = np.random.default_rng(11)
    a = rng.standard_normal((50, 37)).astype(np.float32)
    for block in ((8, 4), (4, 8), (32, 12)):
        out = np.full((13, 37), np.nan, np.float32)
        grid = (-(-37 // block[0]), -(-50 // block[1]))
        errors = run_sim(kernel, grid, block, a, out)
        assert errors.races == [] and errors.fails == [], (block, errors)
        np.testing.assert_array_equal(out, a[::4], err_msg=f"block {block}")


MATVEC_WHOLE_WARPS = """
    @gpu_kernel(Kernel1D)
    def k(A: CUDASlice2D[f32], x: CUDASlice[f32], y: CUDASliceMut[f32]):
        {assert_}
        warp = (block_idx.x * block_dim.x + thread_idx.x) // 32
        lane = thread_idx.x % 32
        acc = f32(0.0)
        if warp < A.shape[0]:
            for j in range(lane, A.shape[1], 32):
                acc += A[warp, j] * x[j]
        for off in (16, 8, 4, 2, 1):
            acc += shfl_down(acc, off)
        if lane == 0 and warp < A.shape[0]:
            {store}
    """


def test_the_new_users_warp_per_row_matvec(tmp_path):
    """The new-user trial's kernel: the lane is ``thread_idx.x % 32``, the warp a quotient of
    the flat id, under ``assert block_dim.x % 32 == 0`` (it was refused, and told to add the
    assert it had)."""
    source = MATVEC_WHOLE_WARPS.format(assert_="assert block_dim.x % 32 == 0",
                                       store="y[warp] = acc")
    kernel = build(tmp_path, source, name="matvec_whole_warps")["k"]
    rng = np.random.default_rng(5)
    A = rng.standard_normal((37, 70)).astype(np.float32)
    x = rng.standard_normal(70).astype(np.float32)
    for block in (32, 64, 96, 128):
        y = np.full(37, np.nan, np.float32)
        errors = run_sim(kernel, -(-37 * 32 // block), block, A, x, y)
        assert errors.races == [] and errors.fails == [], (block, errors)
        np.testing.assert_allclose(y, A.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)


WHOLE_WARPS_REFUSED = {
    # Without the assert a block of 48 has one and a half warps: block 0's thread 32 and block
    # 1's thread 0 (u = 32 and 48, lanes 0 and 0) both write y[1].
    "no_assert": MATVEC_WHOLE_WARPS.format(assert_="pass", store="y[warp] = acc"),
    # Blocks of 48 are a multiple of 16: the same two threads.
    "assert_16": MATVEC_WHOLE_WARPS.format(assert_="assert block_dim.x % 16 == 0",
                                           store="y[warp] = acc"),
    # Threads 0 and 16 both write y[0].
    "finer_pin": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.x % 16 == 0:
                y[tid // 32] = x[tid]
        """,
    # Threads 0 and 32 both write y[0].
    "coarser_quotient": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.x % 32 == 0:
                y[tid // 64] = x[tid]
        """,
    # lane_id() without the assert: blocks of 48 put threads 32 of block 0 and 0 of block 1
    # (flat ids 32 and 48, both lane 0) on y[1].
    "lane_id_unasserted": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = block_idx.x * block_dim.x + thread_idx.x
            if lane_id() == 0:
                y[tid // 32] = x[tid]
        """,
    # In a 2-D block the lane counts threads of the flattened block, not thread_idx.x % 32.
    "lane_id_2d": """
        @gpu_kernel(Kernel2D)
        def k(x: CUDASlice[f32], y: CUDASliceMut2D[f32]):
            assert block_dim.x % 32 == 0
            u = block_idx.x * block_dim.x + thread_idx.x
            if lane_id() == 0:
                y[block_idx.y, u // 32] = x[u]
        """,
    # The pin is on the lane along y, not along x: u = 0 and u = 1 (thread_idx.y = 0) both
    # write y[0, 0].
    "other_axis": """
        @gpu_kernel(Kernel2D)
        def k(x: CUDASlice[f32], y: CUDASliceMut2D[f32]):
            assert block_dim.x % 32 == 0
            assert block_dim.y % 32 == 0
            u = block_idx.x * block_dim.x + thread_idx.x
            if thread_idx.y % 32 == 0:
                y[block_idx.y, u // 32] = x[u]
        """,
}


@pytest.mark.parametrize("name", sorted(WHOLE_WARPS_REFUSED))
def test_whole_warp_near_misses_stay_refused(tmp_path, name):
    with pytest.raises(TranspileError, match=r"not provably unique"):
        build(tmp_path, WHOLE_WARPS_REFUSED[name], name=name)


def test_the_refused_matvec_without_the_assert_races_on_blocks_of_48(tmp_path):
    """The near miss races for real (inside `unsafe()`): blocks of 48 threads."""
    source = MATVEC_WHOLE_WARPS.format(assert_="pass", store="""with unsafe():
                y[warp] = acc""")
    kernel = build(tmp_path, source, name="matvec_unsafe")["k"]
    rng = np.random.default_rng(9)
    A = rng.standard_normal((4, 40)).astype(np.float32)
    x = rng.standard_normal(40).astype(np.float32)
    errors = run_sim(kernel, 3, 48, A, x, np.zeros(4, np.float32))
    assert errors.races, "blocks of 48: threads 32 of block 0 and 0 of block 1 both write y[1]"


def test_the_hint_does_not_ask_for_the_assert_that_is_there(tmp_path):
    with pytest.raises(TranspileError) as info:
        build(tmp_path, WHOLE_WARPS_REFUSED["coarser_quotient"], name="hint")
    hint = str(info.value).split("hint:")[-1]
    assert "assert block_dim.x % 32 == 0" not in hint and "whole warps" in hint, hint


@pytest.mark.parametrize("assert_, quotient, hint", [
    ("pass", 4, "`thread_idx.x % 4` is pinned, but the quotient is not shown apart from the "
                "other blocks' threads: assert that the block is a multiple of 4 threads "
                "(`assert block_dim.x % 4 == 0`"),
    ("assert block_dim.x % 4 == 0", 8, "the block is a multiple of 4 threads along x (its "
                                       "assert is there), but the quotient does not match"),
])
def test_a_pin_of_another_modulus_than_a_warp_gets_its_own_hint(tmp_path, assert_, quotient,
                                                                  hint):
    # The hints spoke of warps and lanes (`assert block_dim.x % 32 == 0`) for any modulus.
    with pytest.raises(TranspileError) as info:
        build(tmp_path, f"""
            @gpu_kernel(Kernel1D)
            def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
                {assert_}
                tid = block_idx.x * block_dim.x + thread_idx.x
                if thread_idx.x % 4 == 0:
                    y[tid // {quotient}] = x[tid]
            """, name="modulus")
    assert hint in (info.value.hint or ""), info.value.hint
    assert "warp" not in (info.value.hint or "")


def test_the_flat_index_built_from_a_thread_local_is_followed(tmp_path):
    # `tid = thread_idx.x` then `(block_idx.x * block_dim.x + tid) // 32`: the flat index
    # through a local was not recognised (the generated warps family found it).
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = thread_idx.x
            base = block_idx.x * block_dim.x
            slot = (base + tid) // 32
            if lane_id() == 0 and base + tid < len(x):
                y[slot] = x[base + tid]
        """, name="flat_local")["k"]
    for block in (32, 96):
        x = np.random.default_rng(block).standard_normal(N).astype(np.float32)
        out = np.full(N, np.nan, np.float32)
        errors = run_sim(kernel, -(-N // block), block, x, out)
        assert errors.races == [] and errors.fails == [], errors
        np.testing.assert_array_equal(out, every(32)(x, np.full(N, np.nan, np.float32)))


# Two stores through one quotient under different pins: each is unique among the threads its
# own condition lets through, but a thread of one and a thread of the other meet (the second
# store was taken as the same owner index and never compared).
TWO_PINS = {
    "remainders": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = block_idx.x * block_dim.x + thread_idx.x
            if tid % 128 == 0:
                y[tid // 128] = x[tid]
            if tid % 128 == 64:
                y[tid // 128] = x[tid]
        """,
    "elif_mask_shift": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid & 63 == 0:
                y[tid >> 6] = x[tid]
            elif tid & 63 == 1:
                y[tid >> 6] = x[tid]
        """,
    "lanes": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x % 32 == 0
            tid = block_idx.x * block_dim.x + thread_idx.x
            if lane_id() == 0:
                y[tid // 32] = x[tid]
            if lane_id() == 5:
                y[tid // 32] = x[tid]
        """,
}


@pytest.mark.parametrize("name", sorted(TWO_PINS))
def test_one_quotient_under_two_pins_is_refused(tmp_path, name):
    with pytest.raises(TranspileError, match=r"written through one index under two different "
                                             r"conditions"):
        build(tmp_path, TWO_PINS[name], name=name)


def test_one_quotient_under_two_pins_really_races(tmp_path):
    source = TWO_PINS["remainders"].replace(
        "                y[tid // 128] = x[tid]\n            if",
        "                with unsafe():\n                    y[tid // 128] = y[tid // 128] + x[tid]"
        "\n            if").replace(
        "            if tid % 128 == 64:\n                y[tid // 128] = x[tid]",
        "            if tid % 128 == 64:\n                with unsafe():\n"
        "                    y[tid // 128] = y[tid // 128] + x[tid]")
    assert source.count("unsafe") == 2
    kernel = build(tmp_path, source, name="two_pins_unsafe")["k"]
    x = np.ones(256, np.float32)
    errors = run_sim(kernel, 4, 64, x, np.zeros(2, np.float32))
    assert errors.races, "tid 0 and tid 64 both read and write y[0]"


def test_one_quotient_under_the_same_pin_twice_is_accepted(tmp_path):
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 == 0:
                y[tid // 32] = x[tid]
            if tid % 32 == 0 and tid + 1 < len(x):
                y[tid // 32] = x[tid] + x[tid + 1]
        """, name="same_pin")["k"]
    x = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    out = np.full(N, np.nan, np.float32)
    errors = run_sim(kernel, -(-N // 128), 128, x, out)
    assert errors.races == [] and errors.fails == []
    want = np.full(N, np.nan, np.float32)
    want[:len(x[::32])] = x[::32] + np.r_[x[1::32], 0][:len(x[::32])]
    np.testing.assert_array_equal(out, want)


def test_a_read_of_a_pinned_store_s_element_by_every_thread_is_refused(tmp_path):
    # Thread 0 writes y[0] under the pin; threads 1..31 read it without one (a race the
    # checker took for each thread reading its own element).
    source = """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32], z: CUDASliceMut[f32]):
            tid = FlatLayout1D.uid()
            if tid % 32 == 0:
                y[tid // 32] = x[tid]
            z[tid] = y[tid // 32]
        """
    with pytest.raises(TranspileError, match=r"'y' is read here at another index than it is "
                                             r"written at"):
        build(tmp_path, source, name="pinned_read")
    # Under the same pin the read is the thread's own element.
    build(tmp_path, source.replace("            z[tid] = y[tid // 32]",
                                   "            if tid % 32 == 0:\n"
                                   "                z[tid] = y[tid // 32]"), name="pinned_own")


# ---- the grid's lane in blocks of whole warps --------------------------------------------------
#
# cuda-samples' shfl_scan takes the lane from the grid uid, `lane_id = id % 32` with `id =
# block_idx.x * block_dim.x + thread_idx.x`, and the first warp writes the warp sums `sums[lane_id]`.
# Where the block is asserted whole warps, `id % 32` is `thread_idx.x % 32`: one writer per element.

WARP_SUMS = """
    @gpu_kernel(Kernel1D)
    def k(x: CUDASlice[i32], out: CUDASliceMut[i32]):
        assert block_dim.x % 32 == 0
        sums = shared_array(i32, 32)
        tid = block_idx.x * block_dim.x + thread_idx.x
        lane = tid % 32
        warp = thread_idx.x // 32
        if lane == 31:
            sums[warp] = x[tid]
        sync_threads()
        if warp == 0 and lane < block_dim.x // 32:
            sums[lane] = sums[lane] * 2
        sync_threads()
        out[tid] = sums[warp]
    """


def _warp_sums(x: np.ndarray) -> np.ndarray:
    return np.repeat(x[31::32] * 2, 32)


@pytest.mark.parametrize("block", [32, 64, 96, 256])
def test_the_grid_s_lane_in_blocks_of_whole_warps_is_the_thread_s(tmp_path, block):
    kernel = build(tmp_path, WARP_SUMS, name="warp_sums")["k"]
    x = np.random.default_rng(block).integers(-1000, 1000, 4 * block).astype(np.int32)
    out = np.full_like(x, 0x5A5A5A5A)
    errors = run_sim(kernel, 4, block, x, out)
    assert errors.races == [] and errors.fails == []
    np.testing.assert_array_equal(out, _warp_sums(x))


def test_the_grid_s_lane_without_the_assert_is_refused_with_the_assert_to_add(tmp_path):
    source = WARP_SUMS.replace("        assert block_dim.x % 32 == 0\n", "")
    with pytest.raises(TranspileError, match="could write the same element") as refused:
        build(tmp_path, source, name="warp_sums_no_assert")
    assert "assert block_dim.x % 32 == 0" in refused.value.hint
    assert "thread_idx.x % 32" in refused.value.hint


def test_the_grid_s_lane_by_every_warp_is_refused_and_races(tmp_path):
    # Without `warp == 0` every warp writes sums[lane]: a real race.
    source = WARP_SUMS.replace("if warp == 0 and lane <", "if lane <")
    with pytest.raises(TranspileError, match="could write the same element"):
        build(tmp_path, source, name="warp_sums_every_warp")
    unsafe = source.replace("            sums[lane] = sums[lane] * 2",
                            "            with unsafe():\n"
                            "                sums[lane] = sums[lane] * 2")
    kernel = build(tmp_path, unsafe, name="warp_sums_every_warp_unsafe")["k"]
    x = np.arange(256, dtype=np.int32)
    errors = run_sim(kernel, 1, 256, x, np.zeros_like(x))
    assert errors.races


def test_the_grid_s_lane_by_a_modulus_not_a_power_of_two_is_refused_with_the_thread_s_form(
        tmp_path):
    # `id % 48` is `thread_idx.x % 48` in blocks of a multiple of 48 only while `id` does not
    # wrap; the proofs take the remainder of a power of two alone, and say so.
    source = WARP_SUMS.replace("% 32 == 0", "% 48 == 0").replace("tid % 32", "tid % 48") \
        .replace("thread_idx.x // 32", "thread_idx.x // 48").replace("lane == 31", "lane == 47") \
        .replace("block_dim.x // 32", "block_dim.x // 48").replace("(i32, 32)", "(i32, 48)")
    assert "% 48" in source and "// 32" not in source
    with pytest.raises(TranspileError, match="could write the same element") as refused:
        build(tmp_path, source, name="warp_sums_48")
    assert "where the modulus is a power of two" in refused.value.hint
    assert "`thread_idx.x % 48`" in refused.value.hint
    # Taken from the thread, as the hint says, it is accepted.
    build(tmp_path, source.replace("lane = tid % 48", "lane = thread_idx.x % 48"),
          name="warp_sums_48_thread")
