"""A barrier in a ``while`` loop whose condition the block's threads share but the checker
cannot evaluate (``while offset < n:``, ``n`` a parameter): :meth:`gpu_native.check.strides.
Trace.loop_maybe` follows every round the block could run until the loop's variables repeat, and
the code after the loop meets the last interval of any round.

The double-buffered (Hillis-Steele) scan of GPU Gems 3 ch. 39, with ``pout``/``pin`` swapped
each round, is accepted and matches NumPy on the simulator for several ``n``; a store after the
loop with no barrier between is proven against every round's stores (and refused where one may
meet it), and a scale that the rounds double until it wraps is refused with the hint to bound
the loop by constants.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch, race_free_draws
from tools.fuzz import indices, scaled

SCAN = """
    N = 128

    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32], inp: CUDASlice[f32], n: i32):
        assert block_dim.x == N
        temp = shared_array(f32, 2 * N)
        t = thread_idx.x
        pout = 0
        pin = 1
        temp[t] = inp[t - 1] if t > 0 and t < n else f32(0.0)
        sync_threads()
        offset = 1
        while offset < n:
            pout = 1 - pout
            pin = 1 - pout
            if t >= offset:
                temp[pout * N + t] = temp[pin * N + t] + temp[pin * N + t - offset]
            else:
                temp[pout * N + t] = temp[pin * N + t]
            sync_threads()
            offset *= 2
        if t < n:
            out[block_idx.x * N + t] = temp[pout * N + t]
    """


def test_a_double_buffered_scan_over_a_parameter(tmp_path):
    kernel = build(tmp_path, SCAN, name="hillis_steele")["k"]
    rng = np.random.default_rng(39)
    for n in (1, 2, 5, 64, 100, 128):
        x = rng.standard_normal(n).astype(np.float32)
        out = np.full(128, np.nan, np.float32)
        errors = launch(kernel, 1, 128, out, x, np.int32(n))
        assert errors.races == [] and errors.fails == [], errors
        want = np.concatenate([[0.0], np.cumsum(x.astype(np.float64))[:-1]])
        np.testing.assert_allclose(out[:n], want, rtol=1e-5, atol=1e-5)
        assert np.isnan(out[n:]).all()


AFTER = """
    N = 64

    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32], n: i32):
        assert block_dim.x == N
        s = shared_array(f32, 2 * N + 1)
        t = thread_idx.x
        p = 0
        d = n
        while d > 0:
            sync_threads()
            s[p * N + t] = f32(d)  # <--
            p = 1 - p
            d -= 1
        {barrier}
        s[t + 1] = f32(t)  # <--
        sync_threads()
        out[block_idx.x * N + t] = s[t]
    """


@pytest.mark.slow
def test_a_store_after_the_loop_is_proven_against_each_rounds_last_interval(tmp_path):
    # Without a barrier after the loop, thread t + 1's s[p * N + t + 1] (p = 0, the round that
    # n = 1 runs) and thread t's s[t + 1] meet in one interval.
    source = AFTER.format(barrier="pass")
    with pytest.raises(TranspileError, match="may meet"):
        build(tmp_path, marked_unsafe(source, wrap=False), name="after")
    kernel = build(tmp_path, marked_unsafe(source), name="after_unsafe")["k"]
    assert launch(kernel, 1, 64, np.zeros(64, np.float32), np.int32(1)).races
    # With one, the loop's rounds are over before it.
    kernel = build(tmp_path, marked_unsafe(AFTER.format(barrier="sync_threads()"), wrap=False),
                   name="after_barrier")["k"]
    for n in (1, 2, 5, 6):
        out = np.zeros(64, np.float32)
        errors = launch(kernel, 1, 64, out, np.int32(n))
        assert errors.races == [] and errors.fails == [], errors
        want = np.arange(-1, 63, dtype=np.float32)  # s[t + 1] = t
        want[0] = 1 if n % 2 == 1 else 2  # d in the last round with p = 0
        assert out.tolist() == want.tolist()


CYCLE = """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[i32], m: i32, n: i32):
        assert block_dim.x == 64
        s = shared_array(i32, 128)
        tx = thread_idx.x
        p = 0
        r = m
        while r < n:
            s[p * 64 + tx] = r  # <--
            sync_threads()
            s[(1 - p) * 64 + tx + p * (63 - 2 * tx)] = r  # <--
            p = 1 - p
            r += 1
        sync_threads()
        out[block_idx.x * 64 + tx] = s[tx]
    """


def test_the_round_that_repeats_an_earlier_one_meets_the_round_before_it(tmp_path):
    """The variables come back to the first round's values after two rounds, and the third
    round's first store (``s[tx]``, no barrier at the top of the loop) runs beside the second
    round's last (``s[63 - tx]``): a pair neither of the first two rounds shows. It is
    refused, and it races once the stores are under ``with unsafe():``."""
    with pytest.raises(TranspileError, match="may meet the store at line 23 in one barrier interval"):
        build(tmp_path, marked_unsafe(CYCLE, wrap=False), name="cycle")
    kernel = build(tmp_path, marked_unsafe(CYCLE), name="cycle_unsafe")["k"]
    assert launch(kernel, 1, 64, np.zeros(64, np.int32), np.int32(0), np.int32(3)).races


DOUBLING = """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[i32], n: i32):
        assert block_dim.x == 64
        s = shared_array(i32, (128,))
        tid = thread_idx.x
        scale = 1
        while scale < n:
            sync_threads()
            s[scale * tid] = tid
            scale *= 2
    """


def test_a_scale_doubled_until_it_wraps_is_refused_with_the_hint(tmp_path):
    with pytest.raises(TranspileError) as info:
        build(tmp_path, DOUBLING, name="doubling")
    text = str(info.value)
    assert "wrap" in text and "hint: compute the index in i64" in text, text
    assert "bound the loop by constants" in text, text


def test_rounds_whose_values_never_repeat_are_refused(tmp_path):
    """A counter that only grows never brings the rounds back to an earlier state: the trace
    gives up after its round limit (race-free here, but not shown).  (Stepped as the body's
    last statement, the counter is a counting loop's, which the index rules follow, and the
    store is accepted: see test_a_counter_stepped_last_is_followed.)"""
    source = DOUBLING.replace("            scale *= 2\n", "").replace(
        "s[scale * tid] = tid", "scale += 1\n            s[(scale % 2) * 64 + tid] = tid")
    assert "scale += 1\n            s[" in source
    with pytest.raises(TranspileError) as info:
        build(tmp_path, source, name="counting")
    text = str(info.value)
    assert "a loop whose rounds the trace cannot count, whose variables take new values for " \
        "more than 80 rounds (line 19)" in text, text
    assert "hint: bound the loop by constants" in text, text


def _flipped_draw(r):
    """A draw of tools/fuzz/scaled.py's double-buffered loops (``sc = 1 - sc``)."""
    while True:
        source = scaled.generated(r)
        if "1 - sc" in source:
            return source


@pytest.mark.slow
def test_generated_double_buffers_accepted_only_when_race_free(tmp_path):
    """Every double-buffered draw of tools/fuzz/scaled.py the checker accepts, in loops of known
    and of unknown trip count, runs without a race on every launch shape its asserts allow;
    the counts are printed (``pytest -s``)."""
    def runs(kernel):
        for grid, block in indices.launch_shapes(kernel):
            out = np.full(indices.OUT_SIZE, indices.POISON, np.int32)
            yield (f"grid {grid}, block {block}",
                   lambda g=grid, b=block, o=out: indices.run_sim(kernel, g, b, o))

    accepted, refused, launches = race_free_draws(tmp_path, _flipped_draw, 20261206, 200,
                                                  "flipped", runs)
    print(f"\ndouble-buffer draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 20


def test_a_counter_stepped_last_is_followed(tmp_path):
    """The same loop stepping its counter last is a counting loop (.counted): the store's
    index holds the thread, and it is accepted and runs race-free."""
    source = DOUBLING.replace("scale *= 2", "scale += 1").replace(
        "s[scale * tid] = tid", "s[(scale % 2) * 64 + tid] = tid")
    kernel = build(tmp_path, source, name="counted")["k"]
    assert not launch(kernel, 1, 64, np.zeros(64, np.int32), np.int32(9)).races
