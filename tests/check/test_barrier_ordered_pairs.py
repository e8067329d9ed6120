"""Two stores of a shared array that a ``sync_threads()`` orders are not compared by the
ownership proofs, whatever rule proves each: a plain store and a ``cp_async`` of the same tile,
or two stores through different indices, across a barrier.  (Such a pair was refused when either
store needed the ownership proofs, although no two threads can write an element at once.)

Accepted kernels run on the simulator with its race detector watching; the near misses differ in
the barrier and are refused, and really race (``unsafe``-wrapped, the detector reports them).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build, launch

HEAD = """
from gpu_native import cp_async, cp_async_commit, cp_async_wait
"""

REFILL = HEAD + """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f16], c: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1
    ta = shared_array(f16, (64, 16))
    t = thread_idx.x
    for q in range(8):
        e = t + q * 128
        ta[e // 16, e % 16] = f16(0.0)
    sync_threads()  # <-- barrier
    cp_async(ta, (t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
    cp_async_commit()
    cp_async_wait(0)
    sync_threads()
    for q in range(8):
        e = t + q * 128
        c[e // 16, e % 16] = ta[e // 16, e % 16]
"""

SHIFTED = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64 and grid_dim.x == 1
    s = shared_array(f32, (65,))
    t = thread_idx.x
    s[t] = f32(t)
    sync_threads()  # <-- barrier
    s[t + 1] = f32(2 * t)
    sync_threads()
    out[t] = s[t]
"""

IN_A_LOOP = HEAD + """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f16], c: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1
    ta = shared_array(f16, (64, 16))
    t = thread_idx.x
    for step in range(3):
        sync_threads()  # <-- barrier
        for q in range(8):
            e = t + q * 128
            ta[e // 16, e % 16] = f16(0.0)
        sync_threads()
        cp_async(ta, (t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
        cp_async_commit()
        cp_async_wait(0)
    sync_threads()
    for q in range(8):
        e = t + q * 128
        c[e // 16, e % 16] = ta[e // 16, e % 16]
"""

CASES = {"refill": REFILL, "shifted": SHIFTED, "in a loop": IN_A_LOOP}


def _run(kernels, case):
    if case == "shifted":
        out = np.zeros(64, np.float32)
        errors = launch(kernels["k"], 1, 64, out)
        return errors, out, np.r_[0, 2 * np.arange(63)].astype(np.float32)
    a = np.random.default_rng(3).standard_normal((64, 16)).astype(np.float16)
    c = np.zeros((64, 16), np.float16)
    errors = launch(kernels["k"], 1, 128, a, c)
    return errors, c, a


@pytest.mark.parametrize("case", list(CASES))
def test_a_pair_a_barrier_orders_is_accepted_and_race_free(tmp_path, case):
    errors, got, want = _run(build(tmp_path, CASES[case]), case)
    assert errors.races == []
    np.testing.assert_array_equal(got, want)


def _without_barrier(source: str) -> str:
    out = "\n".join(line for line in source.splitlines() if not line.endswith("# <-- barrier"))
    assert out != source
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_without_the_barrier_the_pair_is_refused(tmp_path, case):
    with pytest.raises(TranspileError, match=r"not provably unique|may meet|two different"):
        build(tmp_path, _without_barrier(CASES[case]))


@pytest.mark.parametrize("case", ["refill", "shifted"])
def test_without_the_barrier_the_pair_really_races(tmp_path, case):
    source = _without_barrier(CASES[case]).replace(
        "    cp_async(ta,", "    with unsafe():\n        cp_async(ta,").replace(
        "    s[t + 1] = f32(2 * t)", "    with unsafe():\n        s[t + 1] = f32(2 * t)")
    errors, _, _ = _run(build(tmp_path, source), case)
    assert errors.races, "the detector saw no race"


# Each phase ends with its barrier (as CUDA code usually writes it), in a loop: the odd phase of
# one round and the even phase of the next are ordered by the barrier at the end of the body,
# which the walk reaches only after both stores (they are proven, or not, once it has).
ODD_EVEN = """
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (64,))
    t = thread_idx.x
    s[t] = x[block_idx.x * 64 + t]
    sync_threads()
    for rnd in range(ROUNDS):
        if t % 2 == 0:
            a = s[t]
            b = s[t + 1]
            s[t] = min(a, b)
            s[t + 1] = max(a, b)
        sync_threads()
        if t % 2 == 1 and t + 1 < 64:
            a = s[t]
            b = s[t + 1]
            s[t] = min(a, b)
            s[t + 1] = max(a, b)
        LAST
    out[block_idx.x * 64 + t] = s[t]
"""


def _odd_even(rounds: int, last: str = "sync_threads()") -> str:
    return ODD_EVEN.replace("ROUNDS", str(rounds)).replace("LAST", last)


def test_phases_that_end_with_their_barrier_in_a_loop_are_accepted_and_race_free(tmp_path):
    # 32 rounds of odd-even transposition sort each block of 64 elements.
    kernel = build(tmp_path, _odd_even(32))["k"]
    x = np.random.default_rng(11).standard_normal(128).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    errors = launch(kernel, 2, 64, x, out)
    assert errors.races == [] and errors.fails == []
    np.testing.assert_array_equal(out, np.sort(x.reshape(2, 64), axis=1).ravel())


@pytest.mark.parametrize("last", [
    "pass",                                           # no barrier closes the round
    "if rnd == 99:\n            continue\n        sync_threads()",  # a jump can skip it
    "if t < 64:\n            sync_threads()",         # not at the loop body's top level
])
def test_a_round_that_may_end_without_its_barrier_is_refused(tmp_path, last):
    with pytest.raises(TranspileError, match=r"written through several indices|may meet"):
        build(tmp_path, _odd_even(4, last))


@pytest.mark.parametrize("jump", ["continue", "break"])
def test_a_jump_out_of_an_inner_loop_does_not_skip_the_round_s_barrier(tmp_path, jump):
    # The `continue` (or `break`) leaves the inner loop only; the round still ends with its
    # barrier.  It was taken as a jump that might skip it.
    source = _odd_even(32, "for q in range(3):\n            if q == 1:\n"
                           f"                {jump}\n        sync_threads()")
    kernel = build(tmp_path, source)["k"]
    x = np.random.default_rng(12).standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    errors = launch(kernel, 1, 64, x, out)
    assert errors.races == [] and errors.fails == []
    np.testing.assert_array_equal(out, np.sort(x))


def test_without_the_closing_barrier_the_rounds_really_race(tmp_path):
    source = _odd_even(4, "pass").replace(
        "        if t % 2 == 0:\n            a = s[t]\n            b = s[t + 1]\n"
        "            s[t] = min(a, b)\n            s[t + 1] = max(a, b)",
        "        if t % 2 == 0:\n            a = s[t]\n            b = s[t + 1]\n"
        "            with unsafe():\n                s[t] = min(a, b)\n"
        "                s[t + 1] = max(a, b)")
    source = source.replace(
        "        if t % 2 == 1 and t + 1 < 64:\n            a = s[t]\n            b = s[t + 1]\n"
        "            s[t] = min(a, b)\n            s[t + 1] = max(a, b)",
        "        if t % 2 == 1 and t + 1 < 64:\n            a = s[t]\n            b = s[t + 1]\n"
        "            with unsafe():\n                s[t] = min(a, b)\n"
        "                s[t + 1] = max(a, b)")
    assert source.count("unsafe") == 2
    errors = launch(build(tmp_path, source)["k"], 1, 64,
                    np.random.default_rng(5).standard_normal(64).astype(np.float32),
                    np.zeros(64, np.float32))
    assert errors.races, "the detector saw no race"


@pytest.mark.parametrize("vote", ["c = sync_threads_count(t > 3)",
                                  "c: bool = sync_threads_and(t < 100)",
                                  "sync_threads_or(t == 0)"])
def test_a_block_vote_statement_is_a_barrier(tmp_path, vote):
    # docs/language.md: the votes are barriers exactly like sync_threads().
    source = SHIFTED.replace("    sync_threads()  # <-- barrier", f"    {vote}")
    kernels = build(tmp_path, "from gpu_native import sync_threads_count, sync_threads_and, "
                              "sync_threads_or\n" + source)
    errors, got, want = _run(kernels, "shifted")
    assert errors.races == []
    np.testing.assert_array_equal(got, want)


def test_a_vote_inside_an_expression_is_not_taken_as_a_barrier(tmp_path):
    # (Sound, if stricter than needed: an expression may skip part of itself.)
    source = SHIFTED.replace("    sync_threads()  # <-- barrier",
                             "    c = i32(1) + sync_threads_count(t > 3)")
    with pytest.raises(TranspileError, match=r"written through two different indices"):
        build(tmp_path, "from gpu_native import sync_threads_count\n" + source)
