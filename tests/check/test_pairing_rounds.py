"""Stores that pair elements up by an XOR, stores in one round of a loop, and reads of arrays
written in pairs.

* The global bitonic-sort step as every tutorial writes it: thread ``i`` writes ``a[i]`` and
  ``a[i ^ j]`` under ``if (i ^ j) > i:``; ``x -> x ^ j`` is an involution, so the partner fails
  the condition and no two threads write one pair (:mod:`gpu_native.check.xorpairs`).
* The odd-even transposition sort: in a ``range()`` loop whose rounds a barrier parts, every
  thread has the same ``phase`` in one round, so ``s[2 * t + (phase & 1)]`` never meets
  ``s[2 * t' + (phase & 1) + 1]`` there (:func:`gpu_native.check.phases.round_digits`); pairs of
  different rounds are ordered by the barrier.
* A read of an array written through several indices reads the thread's own element only
  under the conditions that keep the stores apart: it is proven apart from every store as a
  store of its own would be (``u = a[i]`` before ``if i < half: a[i + half] = ...`` reads what
  thread ``i - half`` writes).

Each accepted kernel runs on the simulator against NumPy with the race detector watching every
written array; each near miss is refused and races on the simulator once its stores (or reads)
are put under ``with unsafe():``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from gpu_native.expand import Expansion
from tests.helpers import marked_unsafe
from tests.simulator.support import HEADER, build, launch, race_free_draws
from tools.fuzz import guarded, pairing


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def _clean(errors) -> None:
    assert errors.races == [] and errors.fails == [], errors


# ---- the global bitonic sort ---------------------------------------------------------------------

BITONIC_STEP = """
    @gpu_kernel(Kernel1D)
    def bitonic_sort_step(dev_values: CUDASliceMut[f32], j: i32, k: i32):
        i = FlatLayout1D.uid()
        ixj = i ^ j
        if ixj > i and ixj < len(dev_values):
            a = dev_values[i]
            b = dev_values[ixj]
            if ((i & k) == 0) == (a > b):
                dev_values[i] = b
                dev_values[ixj] = a
    """


def _sort(kernel, values: np.ndarray, block: int = 32) -> np.ndarray:
    """The tutorial's host loop: k = 2, 4, ..., n; j = k / 2, ..., 1; one launch each."""
    out = values.copy()
    n = len(out)
    grid = max(1, (n + block - 1) // block)
    k = 2
    while k <= n:
        j = k // 2
        while j > 0:
            _clean(launch(kernel, grid, block, out, np.int32(j), np.int32(k)))
            j //= 2
        k *= 2
    return out


def test_the_tutorial_bitonic_sort_step_is_accepted_and_sorts(tmp_path):
    kernel = build(tmp_path, BITONIC_STEP, name="bitonic")["bitonic_sort_step"]
    rng = np.random.default_rng(7)
    for n, block in ((2, 32), (64, 32), (256, 64), (1024, 128)):
        values = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_array_equal(_sort(kernel, values, block), np.sort(values))


def test_the_rule_is_named_by_expand(tmp_path):
    text = Expansion.of(HEADER + BITONIC_STEP.replace("\n    ", "\n"), "k.py", "k").proofs()
    assert "apart from the store at line 21: the stores pair elements by an XOR with a value " \
        "every thread shares" in text, text
    assert "so of two partners only one writes" in text


STEP = """
    @gpu_kernel(Kernel1D)
    def k(v: CUDASliceMut[i32], j: i32):
        i = {thread}
        ixj = {partner}
        if ixj < len(v) and i < len(v):
            if {condition}:
                a = v[i]
                b = v[ixj]
                if a > b:
                    v[i] = b  # <--
                    v[ixj] = a  # <--
    """

UID = "FlatLayout1D.uid()"
FLAT = "block_idx.x * block_dim.x + thread_idx.x"

# name: (thread, partner, condition); the lower partner writes, but for "higher".
STEPS = {
    "tutorial": (UID, "i ^ j", "ixj > i"),
    "commuted": (UID, "j ^ i", "i < ixj"),
    "i32_flat_index": (FLAT, "i ^ j", "ixj > i"),
    "higher": (UID, "i ^ j", "ixj < i"),
}


def _step(values: np.ndarray, j: int, higher: bool = False) -> np.ndarray:
    """One step as NumPy runs it: each pair (i, i ^ j) in order (its lower element first)."""
    out = values.copy()
    for i in range(len(out)):
        x = i ^ j
        if x < len(out) and (x < i if higher else x > i) and out[i] > out[x]:
            out[i], out[x] = out[x], out[i]
    return out


@pytest.mark.parametrize("name", sorted(STEPS))
def test_xor_paired_steps_are_accepted(tmp_path, name):
    thread, partner, condition = STEPS[name]
    kernel = build(tmp_path, marked_unsafe(STEP.format(thread=thread, partner=partner,
                                                 condition=condition), wrap=False), name=name)["k"]
    rng = np.random.default_rng(len(name))
    for n, grid, block in ((8, 1, 32), (100, 4, 32), (256, 2, 128)):
        # A negative j gives negative partners, which only a lower partner never passes.
        for j in (0, 1, 2, 5, 16, 64) + (() if name == "higher" else (-1,)):
            values = rng.integers(0, 1000, n).astype(np.int32)
            got = values.copy()
            _clean(launch(kernel, grid, block, got, np.int32(j)))
            np.testing.assert_array_equal(got, _step(values, j, name == "higher"))


# name: (source, n, grid, block, j): a launch that races once the marked lines are unsafe.
NEAR_MISSES = {
    # Thread 0 writes a[0] and a[1], thread 1 a[1] and a[0].
    "no_order": (STEP.format(thread=UID, partner="i ^ j", condition="True"), 8, 1, 32, 1),
    # The partner's store is outside the condition: thread 1 writes a[0] through its second.
    "order_around_one_store": (STEP.format(thread=UID, partner="i ^ j", condition="True").replace(
        "                    v[i] = b  # <--",
        "                    if ixj > i:\n                        v[i] = b  # <--"), 8, 1, 32, 1),
    # Thread 0 writes a[0] (as the lower), thread 1 writes a[0] too (as the higher).
    "two_orders": (STEP.format(thread=UID, partner="i ^ j", condition="True").replace(
        "                    v[i] = b  # <--",
        "                    if ixj > i:\n                        v[i] = b  # <--").replace(
        "                    v[ixj] = a  # <--",
        "                    if ixj < i:\n                        v[ixj] = a  # <--"), 8, 1, 32, 1),
    # Not an involution: thread 0 pairs with 1, thread 1 with 3.
    "partner_of_the_thread": (STEP.format(thread=UID, partner="i ^ (1 + (i & 1))",
                                          condition="ixj > i"), 8, 1, 32, 1),
    # A third store: thread 0's a[1] is thread 1's a[i].
    "third_store": (STEP.format(thread=UID, partner="i ^ j", condition="ixj > i").replace(
        "                    v[ixj] = a  # <--",
        "                    v[ixj] = a  # <--\n                    v[i + 1] = a  # <--"), 8, 1, 32, 2),
    # The block's index: block 1's thread 0 meets block 0's.
    "index_in_the_block": (STEP.format(thread="thread_idx.x", partner="i ^ j",
                                       condition="ixj > i"), 8, 2, 32, 1),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_xor_near_misses_are_refused_and_race(tmp_path, name):
    source, n, grid, block, j = NEAR_MISSES[name]
    with pytest.raises(TranspileError, match=r"could write the same element|could race|"
                       r"may meet|not provably disjoint") as refused:
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    if name not in ("third_store", "index_in_the_block"):
        assert "XOR" in (refused.value.hint or ""), refused.value.hint
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    values = np.arange(n, 0, -1).astype(np.int32)
    assert launch(kernel, grid, block, values, np.int32(j)).races


def test_a_non_strict_order_is_refused_though_race_free(tmp_path):
    """``(i ^ j) >= i`` holds for ``j == 0`` in every thread, which then writes ``a[i]`` twice:
    race-free, but the rule proves that the two stores never meet at all."""
    source = STEP.format(thread=UID, partner="i ^ j", condition="ixj >= i")
    with pytest.raises(TranspileError, match=r"could write the same element"):
        build(tmp_path, marked_unsafe(source, wrap=False), name="non_strict")
    kernel = build(tmp_path, marked_unsafe(source), name="non_strict_unsafe")["k"]
    for j in (0, 1, 3):
        values = np.arange(64, 0, -1).astype(np.int32)
        _clean(launch(kernel, 2, 32, values, np.int32(j)))


# ---- the bitonic sort of a block ----------------------------------------------------------------

BLOCK_SORT = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        assert block_dim.x == 64
        s = shared_array(f32, 64)
        t = thread_idx.x
        base = block_idx.x * 64
        s[t] = a[base + t]
        sync_threads()
        k = 2
        while k <= 64:
            j = k // 2
            while j > 0:
                ixj = {partner}
                if {condition}:
                    x = s[t]
                    y = s[ixj]
                    if ((t & k) == 0) == (x > y):
                        s[t] = y  # <--
                        s[ixj] = x  # <--
                {barrier}
                j //= 2
            k *= 2
        a[base + t] = s[t]
    """

SORTING = dict(partner="t ^ j", condition="ixj > t", barrier="sync_threads()")


@pytest.mark.slow
def test_the_bitonic_sort_of_a_block_is_accepted_and_sorts(tmp_path):
    """``j`` halves in a while loop: the trace of :mod:`gpu_native.check.strides` gives its value
    in each barrier interval, and the XOR rule pairs ``s[t]`` with ``s[t ^ j]`` there."""
    kernel = build(tmp_path, marked_unsafe(BLOCK_SORT.format(**SORTING), wrap=False), name="block_sort")["k"]
    values = np.random.default_rng(5).standard_normal(4 * 64).astype(np.float32)
    got = values.copy()
    _clean(launch(kernel, 4, 64, got))
    np.testing.assert_array_equal(got.reshape(4, 64), np.sort(values.reshape(4, 64), axis=1))


BLOCK_SORT_COUNTED = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        assert block_dim.x == 64
        s = shared_array(f32, 64)
        t = thread_idx.x
        base = block_idx.x * 64
        s[t] = a[base + t]
        sync_threads()
        for p in range(6):
            k = 2 << p
            for q in range(p + 1):
                j = (1 << p) >> q
                ixj = t ^ j
                if ixj > t:
                    x = s[t]
                    y = s[ixj]
                    if ((t & k) == 0) == (x > y):
                        s[t] = y  # <--
                        s[ixj] = x  # <--
                {barrier}
        a[base + t] = s[t]
    """


@pytest.mark.slow
def test_a_bitonic_sort_of_a_block_counted_by_range_loops(tmp_path):
    """``j = (1 << p) >> q`` from two ``range()`` counters: the trace gives ``t ^ j`` as ``t ^
    4`` (say) in each barrier interval, which no step can wrap."""
    kernel = build(tmp_path, marked_unsafe(BLOCK_SORT_COUNTED.format(barrier="sync_threads()"), wrap=False),
                   name="counted")["k"]
    values = np.random.default_rng(6).standard_normal(3 * 64).astype(np.float32)
    got = values.copy()
    _clean(launch(kernel, 3, 64, got))
    np.testing.assert_array_equal(got.reshape(3, 64), np.sort(values.reshape(3, 64), axis=1))
    source = BLOCK_SORT_COUNTED.format(barrier="pass")
    with pytest.raises(TranspileError, match=r"may meet"):
        build(tmp_path, marked_unsafe(source, wrap=False), name="counted_no_barrier")
    kernel = build(tmp_path, marked_unsafe(source), name="counted_no_barrier_unsafe")["k"]
    assert launch(kernel, 1, 64, values[:64].copy()).races


BLOCK_NEAR_MISSES = {
    # Every round in one barrier interval: thread 0 (j = 1) and thread 1 (j = 2) share s[1].
    "no_barrier": dict(SORTING, barrier="pass"),
    "no_order": dict(SORTING, condition="ixj < 64"),
    "partner_of_the_thread": dict(SORTING, partner="t ^ (1 + (t & 1))"),
}


@pytest.mark.parametrize("name", sorted(BLOCK_NEAR_MISSES))
def test_block_sort_near_misses_are_refused_and_race(tmp_path, name):
    source = BLOCK_SORT.format(**BLOCK_NEAR_MISSES[name])
    with pytest.raises(TranspileError, match=r"may meet|could write the same element"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    values = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    assert launch(kernel, 1, 64, values).races


def test_a_block_sort_ordered_around_one_store_is_refused_and_races(tmp_path):
    source = BLOCK_SORT.format(**dict(SORTING, condition="ixj < 64")).replace(
        "                        s[t] = y  # <--",
        "                        if ixj > t:\n                            s[t] = y  # <--")
    with pytest.raises(TranspileError, match=r"may meet") as refused:
        build(tmp_path, marked_unsafe(source, wrap=False), name="one_store")
    assert "XOR" in (refused.value.hint or ""), refused.value.hint
    kernel = build(tmp_path, marked_unsafe(source), name="one_store_unsafe")["k"]
    values = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    assert launch(kernel, 1, 64, values).races


# ---- loop rounds parted by a barrier -------------------------------------------------------------

ODD_EVEN = """
    @gpu_kernel(Kernel1D)
    def oddeven(a: CUDASliceMut[f32]):
        assert block_dim.x == 64
        assert grid_dim.x == 1
        s = shared_array(f32, 128)
        t = thread_idx.x
        s[t] = a[t]
        s[t + 64] = a[t + 64]
        sync_threads()
        for phase in {rounds}:
            {first}
            i = 2 * t + (phase & 1)
            if i + 1 < 128 and s[i] > s[i + 1]:
                s[i], s[i + 1] = s[i + 1], s[i]  # <--
            {last}
        sync_threads()
        a[t] = s[t]
        a[t + 64] = s[t + 64]
    """

ROUND = dict(rounds="range(128)", first="pass", last="sync_threads()")

ODD_EVEN_PER_ELEMENT = """
    @gpu_kernel(Kernel1D)
    def oddeven(a: CUDASliceMut[f32]):
        assert block_dim.x == 128
        assert grid_dim.x == 1
        s = shared_array(f32, 128)
        t = thread_idx.x
        s[t] = a[t]
        sync_threads()
        for phase in range(128):
            if t % 2 == phase % 2 and t + 1 < 128:
                if s[t] > s[t + 1]:
                    s[t], s[t + 1] = s[t + 1], s[t]  # <--
            {last}
        a[t] = s[t]
    """

# name: (source, threads).
ODD_EVEN_SORTS = {
    "pair_per_thread": (ODD_EVEN.format(**ROUND), 64),
    "barrier_first_in_the_round": (ODD_EVEN.format(**dict(
        ROUND, first="sync_threads()", last="pass")), 64),
    "rounds_of_a_length": (ODD_EVEN.format(**dict(ROUND, rounds="range(len(a))")), 64),
    "element_per_thread": (ODD_EVEN_PER_ELEMENT.format(last="sync_threads()"), 128),
    # A while loop's counter is assigned twice: the trace of .strides gives its values.
    "while_loop": (ODD_EVEN.replace("for phase in {rounds}:", "phase = 0\n        while phase "
                                    "< 128:").replace("{last}", "{last}\n            phase += 1"
                                                      ).format(**ROUND), 64),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ODD_EVEN_SORTS))
def test_an_odd_even_transposition_sort_is_accepted_and_sorts(tmp_path, name):
    """Within one round every thread has the same ``phase``: the barrier that parts the rounds
    orders a pair of different rounds, and in one round ``2 * t + (phase & 1)`` never meets
    ``2 * t' + (phase & 1) + 1`` (nor ``t`` meets ``t' + 1`` where both have the parity of
    ``phase``)."""
    source, threads = ODD_EVEN_SORTS[name]
    kernel = build(tmp_path, marked_unsafe(source, wrap=False), name=name)["oddeven"]
    rng = np.random.default_rng(len(name))
    for _ in range(3):
        values = rng.standard_normal(128).astype(np.float32)
        got = values.copy()
        _clean(launch(kernel, 1, threads, got))
        np.testing.assert_array_equal(got, np.sort(values))


def test_the_round_is_named_by_expand(tmp_path):
    source = HEADER + marked_unsafe(ODD_EVEN.format(**ROUND), wrap=False).replace("\n    ", "\n")
    text = Expansion.of(source, "k.py", "k").proofs()
    assert "in one round of the loop over 'phase', which a barrier that every thread reaches " \
        "parts from the next" in text, text


# name: (source, threads): refused, and racing once the swap is unsafe.
ROUND_NEAR_MISSES = {
    # Every round in one barrier interval: thread 0 swaps s[0], s[1] in round 0 while thread 0
    # (or 1) swaps s[1], s[2] in round 1.
    "no_barrier": (ODD_EVEN.format(**dict(ROUND, last="pass")), 64),
    "no_barrier_per_element": (ODD_EVEN_PER_ELEMENT.format(last="pass"), 128),
    # Rounds 0 and 1 share an interval: the barrier runs in odd rounds only.
    "barrier_under_a_condition": (ODD_EVEN.format(**dict(
        ROUND, last="if phase % 2 == 1:\n                sync_threads()")), 64),
    "barrier_skipped_by_continue": (ODD_EVEN.format(**dict(
        ROUND, last="if phase % 2 == 0:\n                continue\n            sync_threads()")),
        64),
    # A barrier between the two stores: one round's second store meets the next round's first.
    "barrier_between_the_stores": ("""
        @gpu_kernel(Kernel1D)
        def oddeven(a: CUDASliceMut[f32]):
            assert block_dim.x == 64
            assert grid_dim.x == 1
            s = shared_array(f32, 128)
            t = thread_idx.x
            s[t] = a[t]
            s[t + 64] = a[t + 64]
            sync_threads()
            for phase in range(128):
                i = 2 * t + (phase & 1)
                if i + 1 < 128:
                    s[i] = s[i] + 1.0  # <--
                sync_threads()
                if i + 1 < 128:
                    s[i + 1] = s[i + 1] + 1.0  # <--
            sync_threads()
            a[t] = s[t]
            a[t + 64] = s[t + 64]
        """, 64),
}


@pytest.mark.parametrize("name", sorted(ROUND_NEAR_MISSES))
def test_round_near_misses_are_refused_and_race(tmp_path, name):
    source, threads = ROUND_NEAR_MISSES[name]
    with pytest.raises(TranspileError, match=r"may meet|could race|could write the same") \
            as refused:
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    if name != "barrier_between_the_stores":
        assert "parts the rounds" in (refused.value.hint or ""), refused.value.hint
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["oddeven"]
    values = np.random.default_rng(3).standard_normal(128).astype(np.float32)
    assert launch(kernel, 1, threads, values).races


# Refused: the proofs cannot see one round's value shared by every thread.
ROUND_REFUSED = {
    # A parity read from memory is no counter of the loop.
    "parity_read_from_memory": ODD_EVEN.replace("(phase & 1)", "(p[phase] & 1)").replace(
        "a: CUDASliceMut[f32]):", "a: CUDASliceMut[f32], p: CUDASliceMut[i32]):").format(
        **ROUND),
    # Threads run the rounds from different starts.
    "rounds_of_the_thread": ODD_EVEN.format(**dict(ROUND, rounds="range(t % 2, 128)")),
    # A break may end the rounds of some threads early.
    "a_break_after_the_barrier": ODD_EVEN.format(**dict(
        ROUND, last="sync_threads()\n            if phase == 200:\n                break")),
}


@pytest.mark.parametrize("name", sorted(ROUND_REFUSED))
def test_rounds_the_proofs_cannot_follow_are_refused(tmp_path, name):
    with pytest.raises(TranspileError):
        build(tmp_path, marked_unsafe(ROUND_REFUSED[name], wrap=False), name=name)


# ---- reads of arrays written in pairs ------------------------------------------------------------

# name: (source, launch); the read marked `# <--` is outside the conditions of the pair.
READS_OUTSIDE = {
    "xor": ("""
        @gpu_kernel(Kernel1D)
        def k(v: CUDASliceMut[f32], j: i32):
            i = FlatLayout1D.uid()
            ixj = i ^ j
            if ixj < len(v) and i < len(v):
                b = v[ixj]  # <--
                if ixj > i:
                    a = v[i]
                    v[i] = b
                    v[ixj] = a
        """, (8, 1, 32, (np.int32(1),))),
    "reverse": ("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            n = len(a)
            if i < n:
                x = a[n - 1 - i]  # <--
                if i < n // 2:
                    y = a[i]
                    a[i] = x
                    a[n - 1 - i] = y
        """, (8, 1, 32, ())),
    "butterfly": ("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            half = len(a) // 2
            if i < len(a):
                u = a[i]  # <--
                if i < half:
                    v = a[i + half]
                    a[i] = u + v
                    a[i + half] = u - v
        """, (16, 1, 32, ())),
    "index_ranges": ("""
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            if i < len(out):
                x = out[i]  # <--
                if i < 5:
                    out[i] = x + 1.0
                elif i < 50:
                    out[i - 5 + 100] = 2.0
        """, (200, 1, 256, ())),
}


@pytest.mark.parametrize("name", sorted(READS_OUTSIDE))
def test_a_read_outside_the_conditions_of_a_pair_is_refused_and_races(tmp_path, name):
    source, (n, grid, block, extra) = READS_OUTSIDE[name]
    with pytest.raises(TranspileError, match=r"not under the conditions that keep the array's "
                       r"stores apart"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    values = np.arange(n, dtype=np.float32)
    assert launch(kernel, grid, block, values, *extra).races


@pytest.mark.parametrize("name", sorted(READS_OUTSIDE))
def test_the_same_read_inside_the_conditions_is_accepted(tmp_path, name):
    """Moved inside the innermost condition of the stores, the read is the thread's own."""
    source, (n, grid, block, extra) = READS_OUTSIDE[name]
    lines = marked_unsafe(source, wrap=False).splitlines()
    at = next(k for k, line in enumerate(lines) if "# <--" in source.splitlines()[k])
    read = lines.pop(at)
    # The next line is the condition: the read goes first in its body.
    cond = at
    indent = len(lines[cond + 1]) - len(lines[cond + 1].lstrip())
    lines.insert(cond + 1, " " * indent + read.strip())
    kernel = build(tmp_path, "\n".join(lines) + "\n", name=f"{name}_inside")["k"]
    _clean(launch(kernel, grid, block, np.arange(n, dtype=np.float32), *extra))


# ---- generated draws --------------------------------------------------------------------------------


@pytest.mark.slow
def test_generated_pairings_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/pairing.py the checker accepts (XOR-paired stores in global and
    shared memory, stores in one round of a loop) runs without a race for each n and launch
    shape its checks let through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, pairing.generated, 20261207, 300, "pairing", guarded.runs)
    print(f"\npairing draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 100
