"""Two stores whose index values never meet write different elements, whichever threads run them.

``if i == 0: out[0] = x`` beside ``elif i < n: out[i] = y`` (a boundary element written by one
thread, the rest by the others) has no race: the second store's index is at least 1 where it
runs.  The pair proof takes each store's index interval from the bounds proofs' facts at the
store (:meth:`gpu_native.check.unique.UniqueWrites._index_spans`); intervals apart along any
axis prove the pair.  Overlapping intervals are left to the other rules (so a relation between
two values, ``if i < n - 1: out[i]`` beside ``elif i == n - 1: out[n - 1]``, is not taken), and
the near misses here, which do race, stay refused.  A condition ``row == 0`` on a flat value
``block_idx.y * block_dim.y + thread_idx.y`` pins both of its parts to 0.  Every accepted kernel runs on the simulator with its race
detector watching every array it writes.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build, race_free_draws
from tools.fuzz import guarded, ranges
from tools.fuzz.indices import run_sim

ACCEPTED = {
    # The elif after `i == 0`: i != 0 there, and a uid is never negative.
    "first_then_elif": ("""
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32], a: CUDASlice[f32]):
            i = FlatLayout1D.uid()
            if i == 0:
                out[0] = a[0]
            elif i < len(out):
                out[i] = a[i] - a[i - 1]
        """, lambda a: np.concatenate([a[:1], np.diff(a)])),
    # A condition that says so.
    "first_then_positive": ("""
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32], a: CUDASlice[f32]):
            i = FlatLayout1D.uid()
            if i == 0:
                out[0] = a[0]
            if i > 0 and i < len(out):
                out[i] = a[i] - a[i - 1]
        """, lambda a: np.concatenate([a[:1], np.diff(a)])),
    # Shifted by one: i + 1 >= 1.
    "shifted_then_first": ("""
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32], a: CUDASlice[f32]):
            i = FlatLayout1D.uid()
            if i < len(out) - 1:
                out[i + 1] = a[i]
            if i == 0:
                out[0] = 0.0
        """, lambda a: np.concatenate([[0.0], a[:-1]])),
    # Two dimensions: a header row written by the first row of threads, the rest below it.
    "header_row": ("""
        @gpu_kernel(Kernel2D)
        def k(out: CUDASliceMut2D[f32], a: CUDASlice2D[f32]):
            col = block_idx.x * block_dim.x + thread_idx.x
            row = block_idx.y * block_dim.y + thread_idx.y
            if col < out.shape[1]:
                if row == 0:
                    out[0, col] = -1.0
                elif row < out.shape[0]:
                    out[row, col] = a[row, col]
        """, lambda a: np.concatenate([np.full((1, a.shape[1]), -1.0), a[1:]])),
}

NEAR_MISSES = {
    # Thread 0 writes out[1], and so does thread 1.
    "one_off": """
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            if i == 0:
                out[1] = 1.0
            elif i < len(out):
                out[i] = 2.0
        """,
    # Thread i + 1 writes out[i] through the second store, thread i through the first.
    "ranges_overlap": """
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            if i < len(out):
                out[i] = 1.0
            if i > 1 and i < len(out):
                out[i - 1] = 2.0
        """,
    # A narrowing cast is no flat coordinate: with blocks 512 tall, thread_idx.y = 3 and 259
    # give the same row 3.
    "narrowed_row": """
        @gpu_kernel(Kernel2D)
        def k(out: CUDASliceMut[f32]):
            row = block_idx.y * block_dim.y + i32(u8(thread_idx.y))
            if row == 3 and thread_idx.x == 0 and block_idx.x == 0:
                out[0] = 1.0
        """,
    # A value that wraps pins nothing: u * 2**62 is 0 in the threads whose uids are 0 and 4.
    "wrapped_pin": """
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            u = FlatLayout1D.uid()
            if u * 4611686018427387904 == 0:
                out[0] = 1.0
        """,
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_stores_apart_are_accepted_and_race_free(tmp_path, name):
    source, reference = ACCEPTED[name]
    kernel = build(tmp_path, source, name=name)["k"]
    rng = np.random.default_rng(len(name))
    two_d = kernel.ndim == 2
    shape = (9, 37) if two_d else (70,)
    a = rng.standard_normal(shape).astype(np.float32)
    for grid, block in ([((2, 3), (32, 4))] if two_d else [(1, 128), (3, 32), (5, 16)]):
        out = np.full(shape, np.nan, np.float32)
        errors = run_sim(kernel, grid, block, out, a)
        assert errors.races == [] and errors.fails == [], (grid, block, errors)
        np.testing.assert_allclose(out, reference(a.astype(np.float64)), rtol=1e-6, atol=1e-6)


def test_the_rule_names_the_ranges(tmp_path):
    from gpu_native.check.ownership import StoreForm
    from gpu_native.check.storepairs import spans_apart

    first = StoreForm((), {}, {}, 6, "out[0]", spans=((0, 0),))
    rest = StoreForm((), {}, {}, 8, "out[i]", spans=((1, 2**31 - 2),))
    assert spans_apart(rest, first) == (
        "the stores' index ranges do not meet (1 to 2147483646 here, 0 at line 6)")
    assert spans_apart(rest, StoreForm((), {}, {}, 9, "out[j]", spans=(None,))) is None
    touching = StoreForm((), {}, {}, 9, "out[j]", spans=((0, 1),))
    assert spans_apart(rest, touching) is None


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_stay_refused(tmp_path, name):
    with pytest.raises(TranspileError, match=r"could race|may meet|not provably unique"):
        build(tmp_path, NEAR_MISSES[name], name=name)


ROW_ONE = """
    @gpu_kernel(Kernel2D)
    def k(out: CUDASliceMut2D[f32]):
        col = block_idx.x * block_dim.x + thread_idx.x
        row = block_idx.y * block_dim.y + thread_idx.y
        if col < out.shape[1] and row == 1:
            out[0, col] = 1.0
    """


def test_a_flat_row_equal_to_a_constant_is_one_row_of_threads(tmp_path):
    """``row == 1`` leaves one row of threads in every launch, so ``out[0, col]`` under it is
    race-free (this was once a near miss).  Within a launch ``block_dim.y`` is one number and
    ``0 <= thread_idx.y < block_dim.y``, so ``block_idx.y * block_dim.y + thread_idx.y == 1``
    has one solution (``1 // block_dim.y``, ``1 % block_dim.y``): (thread_idx.y = 1, block_idx.y
    = 0) and (0, 1) are threads of two different launches, blocks at least two tall and blocks
    one tall.  ``row`` cannot wrap in i32 (65535 blocks of 1024), and ``col`` tells the threads
    of that row apart.  Run at both kinds of launch, with the race detector on."""
    kernel = build(tmp_path, ROW_ONE, name="row_one")["k"]
    shape = (3, 37)
    for grid, block in (((2, 3), (32, 4)), ((5, 4), (8, 1)), ((3, 2), (16, 2)), ((40, 3), (1, 1)),
                        ((1, 1), (64, 16))):
        out = np.full(shape, np.nan, np.float32)
        errors = run_sim(kernel, grid, block, out)
        assert errors.races == [] and errors.fails == [], (grid, block, errors)
        expected = np.full(shape, np.nan, np.float32)
        expected[0] = 1.0
        np.testing.assert_array_equal(out, expected, err_msg=f"grid {grid}, block {block}")


def test_a_refusal_gives_no_example_the_conditions_rule_out(tmp_path):
    """The example search once put a thread of the `i == 0` store (a condition on a flat value,
    which its form does not pin) beside one of the other store at an element that store never
    writes: "(block 0) and (block 1) both write out[0]".  Now an example is one thread of each
    store, at an element within each store's index range, or there is none: here thread 64
    writes out[64] through the first store and thread 65 through the second."""
    with pytest.raises(TranspileError) as info:
        build(tmp_path, NEAR_MISSES["ranges_overlap"], name="example")
    assert "(thread_idx.x = 0, block_idx.x = 1) and (thread_idx.x = 1, block_idx.x = 1) both " \
        "write out[64]" in str(info.value)


@pytest.mark.slow
def test_generated_pairs_accepted_only_when_race_free(tmp_path, monkeypatch):
    """Every draw of tools/fuzz/ranges.py the checker accepts runs without a race for each n and
    launch shape its checks let through; the counts are printed (``pytest -s``)."""
    # Every written array is shadowed by the race detector, not only those also read.
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")
    accepted, refused, launches = race_free_draws(
        tmp_path, ranges.generated, 20261205, 300, "ranges", guarded.runs)
    print(f"\nrange draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 10 and refused >= 50
