"""Row-major stores whose column a condition bounds are proven race-free from the condition.

``if row < n and col < n: c[row * n + col]`` is the naive matrix kernel's store: two threads
meet only if their columns differ by a multiple of ``n``, which ``col < n`` rules out whatever
the grid.  The proofs take a comparison ``P < U`` whose sides are exact (no wrap) as a bound on
the digits of ``P`` together (:mod:`gpu_native.check.ownership`); a block-stride loop's ``j <
cols`` does the same.  These kernels once needed ``n >= block_dim.x * grid_dim.x`` at every
launch (so a grid that overhangs the matrix, the usual ceil-div launch, was refused) or were
refused outright.  Two neighbours of these idioms are here too: a warp per row whose warps per
block are ``block_dim.x // 32`` under an asserted block size, and a grid-stride loop split into
``idx // w, idx % w``.  Near misses stay refused, and generated draws (tools/fuzz/guarded.py)
that the checker accepts run race-free on the simulator.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelAssertionError, TranspileError
from gpu_native.launchexpr import Compare
from gpu_native.spec import ParamCheck
from tests.simulator.support import build, race_free_draws
from tools.fuzz import guarded


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


@pytest.fixture(scope="module")
def kg():
    from tests.helpers import kernels_guarded

    return kernels_guarded


def _poisoned(n: int) -> gn.DeviceArray:
    out = gn.empty(n, gn.f32)
    out.fill(np.nan)
    return out


@pytest.mark.parametrize("n", [1, 33, 100])
def test_square_rows_under_a_ceil_div_grid(backend, kg, n):
    a = np.random.default_rng(n).standard_normal(n * n).astype(np.float32)
    c = _poisoned(n * n)
    blocks = -(-n // 16)
    kg.square_rows[(blocks, blocks), (16, 16)](gn.to_device(a), c, n)
    np.testing.assert_allclose(c.to_host(), a.astype(np.float64) * 2 + 1, rtol=1e-6)


def test_square_rows_needs_no_launch_check_of_the_grid(kg):
    (variant,) = kg.square_rows.spec.variants
    checks = [c for c in variant.launch_checks if isinstance(c, ParamCheck)]
    # Only that row * n + col cannot wrap in i32: (n - 1) + n * (n - 1) fits.
    assert [(type(c.tree), c.tree.op) for c in checks] == [(Compare, "<=")]
    assert "grid_dim" not in repr(checks)


def test_square_rows_refuses_an_n_whose_index_wraps(backend, kg):
    c = gn.empty(4, gn.f32)
    with pytest.raises(ValueError, match=r"parameter 'n' is 50000 but the writes to c .* "
                                         r"proven race-free for .* only"):
        kg.square_rows[(1, 1), (2, 2)](gn.to_device(np.zeros(4, np.float32)), c, 50000)


def test_flatten_with_the_width_from_the_shape(backend, kg):
    a = np.random.default_rng(1).standard_normal((37, 21)).astype(np.float32)
    b = _poisoned(a.size)
    kg.flatten[(2, 3), (16, 16)](gn.to_device(a), b)
    np.testing.assert_array_equal(b.to_host(), a.reshape(-1))


@pytest.mark.parametrize("cols", [1, 45, 200])
def test_a_block_per_row(backend, kg, cols):
    rows = 5
    a = np.random.default_rng(cols).standard_normal(rows * cols).astype(np.float32)
    b = _poisoned(a.size)
    kg.block_per_row[rows, 64](gn.to_device(a), b, cols)
    np.testing.assert_allclose(b.to_host(), a.astype(np.float64) + 1, rtol=1e-6)


def test_a_thread_per_row(backend, kg):
    a = np.random.default_rng(2).standard_normal((70, 9)).astype(np.float32)
    out = _poisoned(a.size)
    kg.thread_per_row[3, 32](gn.to_device(a), out)
    np.testing.assert_allclose(out.to_host(), a.reshape(-1).astype(np.float64) * 3, rtol=1e-6)


def test_a_thread_per_row_of_k(backend, kg):
    k = 7
    a = np.random.default_rng(3).standard_normal(64 * k).astype(np.float32)
    out = _poisoned(a.size)
    kg.thread_per_row_k[2, 32](gn.to_device(a), out, k)
    np.testing.assert_allclose(out.to_host(), a.astype(np.float64) - 1, rtol=1e-6)


def test_a_warp_per_row_with_the_block_size_asserted(backend, kg):
    x = np.random.default_rng(4).standard_normal(10).astype(np.float32)
    y = _poisoned(10)
    kg.warp_rows[3, 128](gn.to_device(x), y)
    np.testing.assert_allclose(y.to_host(), x.astype(np.float64) * 2, rtol=1e-6)


@pytest.mark.parametrize("block", [32, 64, 96, 1024])
def test_a_warp_per_row_with_any_block_of_whole_warps(backend, kg, block):
    n = 3 * block // 32 - 1  # the last block's last warp has no row
    x = np.random.default_rng(block).standard_normal(n).astype(np.float32)
    y = _poisoned(n)
    kg.warp_rows_whole_warps[3, block](gn.to_device(x), y)
    np.testing.assert_allclose(y.to_host(), x.astype(np.float64) * 2, rtol=1e-6)


@pytest.mark.parametrize("block", [64, 192])
def test_two_outputs_per_warp_at_a_multiple_of_the_warps(backend, kg, block):
    n = 3 * block // 16
    x = np.random.default_rng(block).standard_normal(n).astype(np.float32)
    y = _poisoned(n)
    kg.warp_pairs_whole_warps[3, block](gn.to_device(x), y)
    np.testing.assert_allclose(y.to_host(), x.astype(np.float64) * 2, rtol=1e-6)


def test_a_block_of_a_partial_warp_is_refused_at_launch(backend, kg):
    # 48 threads: warp 1 of block 0 and warp 0 of block 1 would both write y[1].
    with pytest.raises(KernelAssertionError, match=re.escape("block_dim.x % 32 == 0")):
        kg.warp_rows_whole_warps[2, 48](gn.to_device(np.ones(4, np.float32)), _poisoned(4))


def test_a_grid_stride_loop_split_into_rows_and_columns(backend, kg):
    a = np.random.default_rng(5).standard_normal((13, 29)).astype(np.float32)
    b = gn.empty(a.shape, gn.f32)
    b.fill(np.nan)
    kg.flatten_grid_stride[2, 64](gn.to_device(a), b)
    np.testing.assert_allclose(b.to_host(), a.astype(np.float64) + 1, rtol=1e-6)


def test_a_warp_per_row_without_the_block_size_says_what_to_assert(tmp_path):
    source = """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            row = block_idx.x * (block_dim.x // 32) + thread_idx.x // 32
            if thread_idx.x % 32 == 0 and row < len(y):
                y[row] = x[row]
        """
    with pytest.raises(TranspileError) as info:
        build(tmp_path, source, name="warp_rows_unasserted")
    text = str(info.value)
    assert "the lane is pinned, but the warp's index is not shown apart" in text
    assert "assert block_dim.x == WARPS * 32" in text
    assert "assert block_dim.x % 32 == 0" in text
    # No made-up example: with 64 threads a block (two whole warps) no two threads meet.
    assert "both write" not in text


# ---- near misses --------------------------------------------------------------------------------

NEAR_MISSES = {
    # Rows n - 1 apart hold columns up to n - 1: (row 0, col n - 1) is (row 1, col 0).
    "stride_below_bound": """
        @gpu_kernel(Kernel2D)
        def k(c: CUDASliceMut[i32], n: i32):
            col = block_idx.x * block_dim.x + thread_idx.x
            row = block_idx.y * block_dim.y + thread_idx.y
            if row < n and col < n:
                c[row * (n - 1) + col] = 1
        """,
    # col <= n lets col reach n, which is the next row's column 0.
    "bound_inclusive": """
        @gpu_kernel(Kernel2D)
        def k(c: CUDASliceMut[i32], n: i32):
            col = block_idx.x * block_dim.x + thread_idx.x
            row = block_idx.y * block_dim.y + thread_idx.y
            if row < n and col <= n:
                c[row * n + col] = 1
        """,
    # A column that wraps in i32 may be below n when its true value is not.
    "wrapping_column": """
        @gpu_kernel(Kernel2D)
        def k(c: CUDASliceMut[i32], n: i32):
            col = thread_idx.x * 100000000 + block_idx.x
            row = block_idx.y * block_dim.y + thread_idx.y
            if row < n and col < n:
                c[row * n + col] = 1
        """,
    # The second store's column is not bounded: its rows overlap the first's.
    "one_store_unguarded": """
        @gpu_kernel(Kernel2D)
        def k(c: CUDASliceMut[i32], n: i32):
            col = block_idx.x * block_dim.x + thread_idx.x
            row = block_idx.y * block_dim.y + thread_idx.y
            if row < n and col < n:
                c[row * n + col] = 1
            c[row * n + col + 1] = 2
        """,
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused(tmp_path, name):
    with pytest.raises(TranspileError, match=r"could write the same element|may wrap"):
        build(tmp_path, NEAR_MISSES[name], name=name)


# ---- generated draws ------------------------------------------------------------------------------


@pytest.mark.slow
def test_generated_guarded_indices_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/guarded.py the checker accepts runs without a race for each n
    and launch shape its checks let through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, guarded.generated, 20261204, 300, "guarded", guarded.runs)
    print(f"\nguarded draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 30 and refused >= 30 and launches >= 300


@pytest.mark.slow
def test_expand_proofs_names_the_condition_a_store_needed(tmp_path):
    import subprocess
    import sys

    from tests.helpers import HELPERS, child_env

    out = subprocess.run([sys.executable, "-m", "gpu_native", "expand", "--proofs",
                          str(HELPERS / "kernels_guarded.py")], capture_output=True, text=True,
                         env=child_env(tmp_path, GPU_NATIVE_BACKEND="sim"),
                         check=True).stdout
    square = out[out.index("square_rows"):out.index("flatten")]
    assert "the condition block_idx.x * block_dim.x + thread_idx.x < n" in square
