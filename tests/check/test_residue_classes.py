"""Stores that a condition puts in one residue class, at offsets in different ones
(:mod:`gpu_native.check.residues`): ``if i % 2 == 0: a[i], a[i + 1] = a[i + 1], a[i]``.

Each accepted kernel runs on the simulator against NumPy with the race detector watching every
written array; each near miss (offsets a multiple of the modulus apart, a class chosen per
round of a loop or per thread, a modulus that is not a power of two) is refused, and races on
the simulator once its stores are put under ``with unsafe():`` where it does race.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch, race_free_draws
from tools.fuzz import guarded, residues


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


SWAP = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        i = {thread}
        if {condition} and i + 1 < len(a):
            x = a[i]
            y = a[i + 1]
            a[i] = y  # <--
            a[i + 1] = x  # <--
    """

FLAT = "block_idx.x * block_dim.x + thread_idx.x"
SWAPS = {
    "even": (FLAT, "i % 2 == 0"),
    "even_by_mask": (FLAT, "(i & 1) == 0"),
    "uid": ("FlatLayout1D.uid()", "i % 2 == 0"),
    "reversed_equality": (FLAT, "0 == i % 2"),
}


def _run(kernel, a: np.ndarray, *extra, grid=2, block=32) -> np.ndarray:
    out = a.copy()
    errors = launch(kernel, grid, block, out, *extra)
    assert errors.races == [] and errors.fails == [], errors
    return out


@pytest.mark.parametrize("name", sorted(SWAPS))
def test_a_pairwise_swap(tmp_path, name):
    thread, condition = SWAPS[name]
    kernel = build(tmp_path, marked_unsafe(SWAP.format(thread=thread, condition=condition),
                                           wrap=False), name=name)["k"]
    rng = np.random.default_rng(len(name))
    for n in (2, 9, 64, 100):
        a = rng.standard_normal(n).astype(np.float32)
        want = a.copy()
        m = n - n % 2
        want[0:m:2], want[1:m:2] = a[1:m:2], a[0:m:2]
        np.testing.assert_array_equal(_run(kernel, a, grid=2, block=64), want)


QUAD = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[i32], p: i32):
        i = block_idx.x * block_dim.x + thread_idx.x
        if (i & 3) == p and i + 3 < len(a):
            a[i] = 10 * i  # <--
            a[i + 1] = 10 * i + 1  # <--
            a[i + 2] = 10 * i + 2  # <--
            a[i + 3] = 10 * i + 3  # <--
    """


def test_four_stores_in_four_classes_chosen_by_a_parameter(tmp_path):
    kernel = build(tmp_path, marked_unsafe(QUAD, wrap=False), name="quad")["k"]
    for p in range(4):
        got = _run(kernel, np.full(70, -1, np.int32), np.int32(p), grid=3, block=32)
        want = np.full(70, -1, np.int32)
        for i in range(p, 67, 4):
            want[i:i + 4] = 10 * i + np.arange(4)
        np.testing.assert_array_equal(got, want)


COLUMNS = """
    @gpu_kernel(Kernel2D)
    def k(a: CUDASliceMut2D[f32]):
        x, y = FlatLayout2D.uid()
        if x % 2 == 0 and y < a.shape[0] and x + 1 < a.shape[1]:
            u = a[y, x]
            v = a[y, x + 1]
            a[y, x] = u + v  # <--
            a[y, x + 1] = u - v  # <--
    """


def test_column_pairs_of_a_matrix(tmp_path):
    kernel = build(tmp_path, marked_unsafe(COLUMNS, wrap=False), name="columns")["k"]
    a = np.random.default_rng(3).standard_normal((5, 12)).astype(np.float32)
    got = a.copy()
    errors = launch(kernel, (2, 1), (8, 8), got)
    assert errors.races == [] and errors.fails == [], errors
    want = a.copy()
    want[:, 0::2], want[:, 1::2] = a[:, 0::2] + a[:, 1::2], a[:, 0::2] - a[:, 1::2]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_rule_names_the_class(tmp_path):
    from gpu_native.check import pairproofs

    texts = []
    original = pairproofs.residues_apart

    def spy(a, b):
        text = original(a, b)
        texts.append(text)
        return text

    pairproofs.residues_apart = spy
    try:
        build(tmp_path, marked_unsafe(SWAP.format(thread=FLAT, condition="i % 2 == 0"),
                                      wrap=False), name="named")
    finally:
        pairproofs.residues_apart = original
    assert ("(block_idx.x * block_dim.x + thread_idx.x) % 2 == 0 around both stores, and index "
            "is block_idx.x * block_dim.x + thread_idx.x + 1 here, block_idx.x * block_dim.x + "
            "thread_idx.x at line 19: apart modulo 2") in texts  # the header is 13 lines


# ---- near misses -------------------------------------------------------------------------------

STRIDE_TWO = SWAP.replace("i + 1", "i + 2")
# name: (source, whether it races once unsafe)
NEAR_MISSES = {
    # Thread 0's a[2] is thread 2's a[i].
    "offsets_one_modulus_apart": (STRIDE_TWO.format(thread=FLAT, condition="i % 2 == 0"), True),
    # The class changes between the rounds: thread 0 writes a[1] in round 0, thread 1 a[1] in
    # round 1.
    "class_of_a_loop_counter": ("""
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        i = block_idx.x * block_dim.x + thread_idx.x
        for p in range(2):
            if i % 2 == p and i + 1 < len(a):
                a[i] = 1.0  # <--
                a[i + 1] = 2.0  # <--
    """, True),
    # The class differs between threads: thread 63 (odd, block half 0) and thread 64 (even,
    # block half 1) both write a[64].
    "class_of_the_thread": (SWAP.format(thread=FLAT, condition="i % 2 == i // 64 % 2"), True),
    # Not an equality: nothing fixes the class.
    "inequality": (SWAP.format(thread=FLAT, condition="i % 2 < 2"), True),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused(tmp_path, name):
    source, races = NEAR_MISSES[name]
    with pytest.raises(TranspileError, match=r"could race|not provably disjoint|could write"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    a = np.arange(200, dtype=np.float32)
    assert bool(launch(kernel, 2, 128, a).races) is races


def test_a_modulus_of_three_stays_refused_though_race_free(tmp_path):
    """Wrapping keeps residues modulo a power of two only, so the rule takes no other."""
    source = SWAP.format(thread=FLAT, condition="i % 3 == 0")
    with pytest.raises(TranspileError, match=r"could race|not provably disjoint"):
        build(tmp_path, marked_unsafe(source, wrap=False), name="three")
    kernel = build(tmp_path, marked_unsafe(source), name="three_unsafe")["k"]
    assert launch(kernel, 2, 64, np.arange(200, dtype=np.float32)).races == []


@pytest.mark.slow
def test_generated_residue_classes_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/residues.py the checker accepts runs without a race for each n
    and launch shape its checks let through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, residues.generated, 20261206, 300, "residues", guarded.runs)
    print(f"\nresidue draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 30 and refused >= 100
