"""A thread that writes the first element of its row and then walks the rest of it
(cuda-samples' box filter: ``od[y * w] = ...; for x in range(1, w): od[y * w + x] = ...``):
the walk's sum ``x + 1 < w`` is bounded in its own store, and the other store has none of its
digits, so in the difference of the two indices it is one term between 1 and ``w - 1`` that
the row stride ``w`` cannot make up (:func:`gpu_native.check.radix._own_sum`).

The accepted walks run on the simulator against NumPy with the race detector watching every
write; near misses (a walk one element too long, from 0, a row stride that is not the walk's
bound) are refused and race once their stores are put under ``with unsafe():``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch, race_free_draws
from tools.fuzz import guarded, rowwalk


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


# A running sum along each row, as the box filter's first pass walks it.
WALK = """
    @gpu_kernel(Kernel1D)
    def k(src: CUDASlice[f32], dst: CUDASliceMut[f32], w: i32, h: i32):
        y = {row}
        if y < h:
            acc = src[y * w]
            dst[y * w] = acc  # <--
            for x in range({start}, {stop}):
                acc += src[y * w + x]
                dst[y * {stride} + x] = acc  # <--
    """

ROW_I64 = "i64(block_idx.x) * block_dim.x + thread_idx.x"
ROWS = {
    "i64_row": dict(row=ROW_I64, start="1", stop="w", stride="w"),
    "i32_row": dict(row="block_idx.x * block_dim.x + thread_idx.x", start="1", stop="w",
                    stride="w"),
    "uid": dict(row="FlatLayout1D.uid()", start="1", stop="w", stride="w"),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_row_walk_beside_its_first_element(tmp_path, name):
    kernel = build(tmp_path, marked_unsafe(WALK.format(**ROWS[name]), wrap=False),
                   name=name)["k"]
    rng = np.random.default_rng(len(name))
    for w, h in ((1, 5), (4, 3), (7, 40), (16, 64)):
        src = rng.standard_normal(w * h).astype(np.float32)
        dst = np.full(w * h + 8, np.nan, np.float32)
        errors = launch(kernel, 2, 32, src, dst, np.int32(w), np.int32(h))
        assert errors.races == [] and errors.fails == [], errors
        want = np.cumsum(src.reshape(h, w).astype(np.float64), axis=1).ravel()
        np.testing.assert_allclose(dst[:w * h], want, rtol=1e-5, atol=1e-5)
        assert np.isnan(dst[w * h:]).all()


NEAR_MISSES = {
    # The walk reaches y * w + w, the next row's first element.
    "one_too_long": dict(row=ROW_I64, start="1", stop="w + 1", stride="w"),
    # Rows of w - 1: row y's walk reaches row y + 1's first element.
    "narrower_rows": dict(row=ROW_I64, start="1", stop="w", stride="(w - 1)"),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused_and_race(tmp_path, name):
    source = WALK.format(**NEAR_MISSES[name])
    with pytest.raises(TranspileError, match=r"not provably unique|could race|may meet"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    w, h = 4, 8
    src = np.ones(w * h + 8, np.float32)
    dst = np.zeros(w * h + 8, np.float32)
    assert launch(kernel, 1, 32, src, dst, np.int32(w), np.int32(h)).races


def test_a_walk_from_the_first_element_stays_refused_though_race_free(tmp_path):
    """From 0, the walk meets its own thread's first element: the rule shows the two stores
    never meet at all, so it does not reach this one."""
    source = WALK.format(row=ROW_I64, start="0", stop="w", stride="w")
    with pytest.raises(TranspileError, match=r"not provably unique|could race"):
        build(tmp_path, marked_unsafe(source, wrap=False), name="from_zero")
    kernel = build(tmp_path, marked_unsafe(source), name="from_zero_unsafe")["k"]
    src = np.ones(40, np.float32)
    assert launch(kernel, 1, 32, src, np.zeros(40, np.float32), np.int32(4),
                  np.int32(8)).races == []


@pytest.mark.slow
def test_generated_row_walks_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/rowwalk.py the checker accepts runs without a race for each n
    and launch shape its checks let through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, rowwalk.generated, 20261206, 400, "rowwalk", guarded.runs)
    print(f"\nrow-walk draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 10 and refused >= 100


UNGUARDED = """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[i32], n: i32):
        y = block_idx.x * block_dim.x + thread_idx.x
        {first}
        {second}
    """
SINGLE = "out[y * n + 0] = y + 1"
WALK_REST = "for x in range(1, n):\n            out[y * n + x] = x + 100"


@pytest.mark.parametrize("single_first", [True, False], ids=["single_first", "walk_first"])
def test_an_i32_walk_in_either_order(tmp_path, single_first):
    """The walk's wrap check takes the stronger of `n >= 1` (the single store's assumption,
    when it came first) and `n >= 2` (what `x + 1 < n` shows where the walk runs): the order of
    the two stores does not decide whether the kernel is accepted."""
    first, second = (SINGLE, WALK_REST) if single_first else (WALK_REST, SINGLE)
    kernel = build(tmp_path, UNGUARDED.format(first=first, second=second),
                   name="single" if single_first else "walk")["k"]
    out = np.full(64 * 5, -1, np.int32)
    errors = launch(kernel, 1, 64, out, np.int32(5))
    assert errors.races == [] and errors.fails == [], errors
    want = np.tile(np.array([0, 101, 102, 103, 104], np.int32), 64)
    want[0::5] = np.arange(1, 65)
    assert out.tolist() == want.tolist()
