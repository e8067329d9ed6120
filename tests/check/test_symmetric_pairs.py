"""Two stores per thread that a condition keeps apart: a butterfly over a launch value the proofs
keep opaque, an in-place reverse, an in-place square transpose.

* ``half = len(a) // 2; if i < half: a[i], a[i + half]``: the quotient is the same in every
  thread, an opaque value like a parameter, and ``i < half`` makes it at least 1 there, so the
  mixed-radix rule sees ``i + half`` past every thread's ``i`` (:func:`gpu_native.check.
  ownership.guard_assumptions`).
* ``if i < n // 2: a[i], a[n - 1 - i] = a[n - 1 - i], a[i]``: the two indices run in opposite
  directions, and ``n - 1 - i >= n - n // 2 > i`` since ``2 * (n // 2) <= n``
  (:mod:`gpu_native.check.apart`); also with ``if i < n - 1 - i:``, and in a grid-stride or
  block-stride loop over ``n // 2``.
* ``if x < y: a[y, x], a[x, y] = a[x, y], a[y, x]``: the indices trade places, so their
  difference ``y - x`` is positive in one store and negative in the other.
* ``if i < n - 1: out[i]`` beside ``elif i == n - 1: out[n - 1]``: the first index stays below
  the second.

Each accepted kernel runs on the simulator against NumPy with the race detector on; each near
miss is refused and races on the simulator once its stores are put under ``with unsafe():``.
Two race-free kernels that the rule does not reach (a thread writing the middle element twice,
the diagonal twice) stay refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from gpu_native.spec import ParamCheck
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch, race_free_draws
from tools.fuzz import guarded, mirrored


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def _butterfly(a: np.ndarray, half: int) -> np.ndarray:
    out = a.copy()
    u, v = a[:half], a[half:2 * half]
    out[:half], out[half:2 * half] = u + v, u - v
    return out


BUTTERFLY = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]{params}):
        i = FlatLayout1D.uid()
        half = {half}
        if i < half:
            u = a[i]
            v = a[i + half]
            a[i] = u + v  # <--
            a[i + half] = u - v  # <--
    """

# name: (the half, extra parameters, the arguments after a for an array of n).
BUTTERFLIES = {
    "len": ("len(a) // 2", "", lambda n: ()),
    "shape": ("a.shape[0] // 2", "", lambda n: ()),
    "i64_param": ("n // 2", ", n: i64", lambda n: (np.int64(n),)),
    "i32_param": ("n // 2", ", n: i32", lambda n: (np.int32(n),)),
    "rounded_up": ("(len(a) + 1) // 2", "", lambda n: ()),
}

REVERSE = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        i = {thread}
        n = len(a)
        if {condition}:
            a[i], a[{mirror}] = a[{mirror}], a[i]  # <--
    """

UID = "FlatLayout1D.uid()"
FLAT = "block_idx.x * block_dim.x + thread_idx.x"
REVERSES = {
    "half": (UID, "i < n // 2", "n - 1 - i"),
    "half_written_n_i_1": (UID, "i < n // 2", "n - i - 1"),
    "half_i32_index": (FLAT, "i < n // 2", "n - 1 - i"),
    "before_the_mirror": (UID, "i < n - 1 - i", "n - 1 - i"),
    "before_the_mirror_n_i_1": (UID, "i < n - i - 1", "n - i - 1"),
    "mirror_above": (UID, "n - 1 - i > i", "n - 1 - i"),
}

TRANSPOSE = """
    @gpu_kernel(Kernel2D)
    def k(a: CUDASliceMut2D[f32]):
        x, y = FlatLayout2D.uid()
        if {condition}:
            a[y, x], a[x, y] = a[x, y], a[y, x]  # <--
    """

TRANSPOSES = {
    "below_the_diagonal": "y < a.shape[0] and x < y",
    "above_the_diagonal": "x < a.shape[1] and y < x",
    "greater_than": "y < a.shape[0] and y > x",
}


def _run_1d(kernel, a: np.ndarray, *extra, grid=2, block=32) -> np.ndarray:
    out = a.copy()
    errors = launch(kernel, grid, block, out, *extra)
    assert errors.races == [] and errors.fails == [], errors
    return out


# ---- accepted ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUTTERFLIES))
def test_a_butterfly_over_a_quotient_of_the_length(tmp_path, name):
    half, params, args = BUTTERFLIES[name]
    kernel = build(tmp_path, marked_unsafe(BUTTERFLY.format(half=half, params=params), wrap=False), name=name)["k"]
    # The quotient needs no launch check: it is the same in every thread.
    assert not [c for c in kernel.launch_checks if isinstance(c, ParamCheck)]
    rng = np.random.default_rng(len(name))
    for n in (2, 8, 64, 70, 100):  # even lengths: (len(a) + 1) // 2 is len(a) // 2 there
        a = rng.standard_normal(n).astype(np.float32)
        got = _run_1d(kernel, a, *args(n), grid=2, block=32)
        np.testing.assert_allclose(got, _butterfly(a, n // 2), rtol=1e-6)
    if name != "rounded_up":
        a = rng.standard_normal(9).astype(np.float32)  # an odd length: the last one stays
        np.testing.assert_allclose(_run_1d(kernel, a, *args(9)), _butterfly(a, 4), rtol=1e-6)


def test_a_butterfly_rounded_up_with_its_end_guarded(tmp_path):
    source = """
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            half = (len(a) + 1) // 2
            if i < half and i + half < len(a):
                u = a[i]
                v = a[i + half]
                a[i] = u + v
                a[i + half] = u - v
        """
    kernel = build(tmp_path, source, name="rounded_guarded")["k"]
    a = np.random.default_rng(3).standard_normal(9).astype(np.float32)
    expected = a.copy()
    expected[:4], expected[5:9] = a[:4] + a[5:9], a[:4] - a[5:9]  # a[4] has no partner
    np.testing.assert_allclose(_run_1d(kernel, a), expected, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(REVERSES))
def test_an_in_place_reverse(tmp_path, name):
    thread, condition, mirror = REVERSES[name]
    source = marked_unsafe(REVERSE.format(thread=thread, condition=condition, mirror=mirror), wrap=False)
    kernel = build(tmp_path, source, name=name)["k"]
    rng = np.random.default_rng(len(name))
    for n, grid, block in ((1, 1, 32), (2, 1, 32), (7, 1, 32), (64, 1, 32), (65, 2, 32),
                           (200, 3, 64)):
        a = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_array_equal(_run_1d(kernel, a, grid=grid, block=block), a[::-1])


STRIDED_REVERSES = {
    # Each thread takes every (grid's threads)-th pair.
    "grid_stride": """
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            n = len(a)
            for i in FlatLayout1D.grid_stride(n // 2):
                a[i], a[n - 1 - i] = a[n - 1 - i], a[i]  # <--
        """,
    # One block walks the pairs.
    "block_stride": """
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            assert grid_dim.x == 1
            n = len(a)
            for i in range(thread_idx.x, n // 2, block_dim.x):
                a[i], a[n - 1 - i] = a[n - 1 - i], a[i]  # <--
        """,
}


@pytest.mark.parametrize("name", sorted(STRIDED_REVERSES))
def test_an_in_place_reverse_in_a_stride_loop(tmp_path, name):
    kernel = build(tmp_path, marked_unsafe(STRIDED_REVERSES[name], wrap=False), name=name)["k"]
    rng = np.random.default_rng(len(name))
    for n in (1, 2, 7, 64, 65, 300):
        a = rng.standard_normal(n).astype(np.float32)
        grid = 1 if name == "block_stride" else 2
        np.testing.assert_array_equal(_run_1d(kernel, a, grid=grid, block=32), a[::-1])


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
def test_an_in_place_square_transpose(tmp_path, name):
    source = marked_unsafe(TRANSPOSE.format(condition=TRANSPOSES[name]), wrap=False)
    kernel = build(tmp_path, source, name=name)["k"]
    rng = np.random.default_rng(len(name))
    for n, grid, block in ((1, (1, 1), (8, 8)), (5, (1, 1), (8, 8)), (17, (2, 3), (16, 8)),
                           (40, (3, 5), (16, 8))):
        a = rng.standard_normal((n, n)).astype(np.float32)
        out = a.copy()
        errors = launch(kernel, grid, block, out)
        assert errors.races == [] and errors.fails == [], errors
        np.testing.assert_array_equal(out, a.T)


def test_the_last_element_beside_the_rest(tmp_path):
    """A relation between two values: ``i < n - 1`` keeps ``out[i]`` below ``out[n - 1]``,
    which the ``elif`` leaves to one thread (the index ranges alone do not show it: ``n`` is
    not known)."""
    source = """
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32], a: CUDASlice[f32]):
            i = FlatLayout1D.uid()
            n = len(out)
            if i < n - 1:
                out[i] = a[i + 1] - a[i]
            elif i == n - 1:
                out[n - 1] = 0.0
        """
    kernel = build(tmp_path, source, name="last")["k"]
    a = np.random.default_rng(4).standard_normal(70).astype(np.float32)
    out = np.full(70, np.nan, np.float32)
    errors = launch(kernel, 3, 32, out, a)
    assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_allclose(out, np.append(np.diff(a), 0.0), rtol=1e-6)


def test_the_rule_names_the_order(tmp_path):
    """The pair's rule, as the proofs state it: the mirrored index lies above the other."""
    from gpu_native.check import pairproofs

    texts = []
    original = pairproofs.bounds_apart

    def spy(a, b):
        text = original(a, b)
        texts.append(text)
        return text

    pairproofs.bounds_apart = spy
    try:
        build(tmp_path, marked_unsafe(REVERSE.format(thread=UID, condition="i < n // 2",
                                              mirror="n - 1 - i"), wrap=False), name="named")
        build(tmp_path, marked_unsafe(TRANSPOSE.format(condition=TRANSPOSES["below_the_diagonal"]), wrap=False),
              name="named2")
    finally:
        pairproofs.bounds_apart = original
    assert "the conditions around the stores keep them apart: the index is always above its " \
        "value at line 18" in texts  # a[n - 1 - i] against a[i] (the header is 13 lines)
    assert "the conditions around the stores keep them apart: index 0 minus index 1 is always " \
        "below its value at line 17" in texts  # a[x, y] against a[y, x]


# ---- near misses: refused, and racing ------------------------------------------------------------

# name: (source, the array's shape, a launch that races once the stores are unsafe).
NEAR_MISSES = {
    # Thread half writes a[half] through a[i], thread 0 through a[i + half] (odd lengths: for
    # even ones thread half's a[2 * half] is out of bounds first).
    "butterfly_inclusive": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "if i < half:", "if i <= half:"), 9, 1, 32),
    "butterfly_one_more": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "if i < half:", "if i < half + 1:"), 9, 1, 32),
    "butterfly_rest_of_the_length": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "if i < half:", "if i < len(a) - half:"), 9, 1, 32),
    # Thread 0's second index is thread half - 1's first.
    "butterfly_one_short": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "i + half]", "i + half - 1]"), 8, 1, 32),
    # Threads n // 2 - 1 and n // 2 swap the same two elements (even lengths).
    "reverse_one_more": (REVERSE.format(thread=UID, condition="i < n // 2 + 1",
                                        mirror="n - 1 - i"), 8, 1, 32),
    "reverse_inclusive": (REVERSE.format(thread=UID, condition="i <= n // 2",
                                         mirror="n - 1 - i"), 8, 1, 32),
    "reverse_past_the_mirror": (REVERSE.format(thread=UID, condition="i < n - i + 1",
                                               mirror="n - 1 - i"), 8, 1, 32),
    # One pair too many: as above, in a grid-stride loop.
    "reverse_grid_stride_one_more": (STRIDED_REVERSES["grid_stride"].replace(
        "grid_stride(n // 2)", "grid_stride(n // 2 + 1)"), 8, 1, 32),
    # The flat index of a block: block 1's thread 0 meets block 0's.
    "reverse_in_the_block": (REVERSE.format(thread="thread_idx.x", condition="i < n // 2",
                                            mirror="n - 1 - i"), 8, 2, 32),
    # Thread 1 swaps a[1] and a[2], thread 2 a[2] and a[1]: no order.
    "transpose_unordered": (TRANSPOSE.format(condition="y < a.shape[0] and x < a.shape[1]"),
                            (5, 5), (1, 1), (8, 8)),
    # (1, 0) and (0, 1) both run: x < y + 2 orders nothing.
    "transpose_loose_order": (TRANSPOSE.format(condition="y < a.shape[0] and x < y + 2"),
                              (5, 5), (1, 1), (8, 8)),
}

REVERSE_OF_ANOTHER = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32], b: CUDASlice[f32]):
        i = FlatLayout1D.uid()
        n = len(a)
        m = len(b)
        if i < n // 2:
            a[i], a[m - 1 - i] = a[m - 1 - i], a[i]  # <--
    """


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused_and_race(tmp_path, name):
    source, shape, grid, block = NEAR_MISSES[name]
    with pytest.raises(TranspileError, match=r"could write the same element|could race|may meet"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    assert launch(kernel, grid, block, a).races


def test_a_reverse_by_another_length_is_refused_and_races(tmp_path):
    with pytest.raises(TranspileError, match=r"could write the same element"):
        build(tmp_path, marked_unsafe(REVERSE_OF_ANOTHER, wrap=False), name="other_length")
    kernel = build(tmp_path, marked_unsafe(REVERSE_OF_ANOTHER), name="other_length_unsafe")["k"]
    # n = 8, m = 6: thread 2 swaps a[2] and a[3], thread 3 a[3] and a[2].
    a = np.arange(8, dtype=np.float32)
    assert launch(kernel, 1, 32, a, np.zeros(6, np.float32)).races


# ---- race-free, but beyond the rule ----------------------------------------------------------------

# The same thread meets itself: the middle element of an odd length, the diagonal.  The rule
# proves two stores never meet at all, so these stay refused; none of them races.
BEYOND = {
    "reverse_rounded_up": (REVERSE.format(thread=UID, condition="i < (n + 1) // 2",
                                          mirror="n - 1 - i"), 9, 1, 32),
    "transpose_with_the_diagonal": (TRANSPOSE.format(condition="y < a.shape[0] and x <= y"),
                                    (5, 5), (1, 1), (8, 8)),
}


@pytest.mark.parametrize("name", sorted(BEYOND))
def test_a_thread_that_meets_itself_is_refused_though_race_free(tmp_path, name):
    source, shape, grid, block = BEYOND[name]
    with pytest.raises(TranspileError, match=r"could write the same element|could race"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    assert launch(kernel, grid, block, a).races == []


# ---- generated draws --------------------------------------------------------------------------------


@pytest.mark.slow
def test_generated_mirrored_pairs_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/mirrored.py the checker accepts runs without a race for each n
    and launch shape its checks let through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, mirrored.generated, 20261206, 300, "mirrored", guarded.runs)
    print(f"\nmirrored draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 30 and refused >= 100
