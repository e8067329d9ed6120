"""The example of two threads that meet, in the refusal of a store, is a real one: both threads
pass the conditions around the store, or the message names the condition it did not check."""

from __future__ import annotations

import re
import textwrap

import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

HEAD = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, f32, i32, block_dim,
                        block_idx, thread_idx, FlatLayout1D)
"""


def refusal(body: str) -> str:
    source = HEAD + textwrap.dedent(body)
    with pytest.raises(TranspileError) as info:
        transpile_module(source, "example.py", "example")
    return str(info.value)


def example_threads(text: str) -> list[tuple[int, int]]:
    """The (thread_idx.x, block_idx.x) pairs of the example in ``text``."""
    pairs = re.findall(r"\(thread_idx\.x = (\d+), block_idx\.x = (\d+)\)", text)
    assert len(pairs) == 2, text
    return [(int(t), int(b)) for t, b in pairs]


def test_the_threads_of_an_example_pass_a_modulo_guard_of_the_uid():
    # Threads 0 and 16 both write y[0]; thread 1 fails the guard and is not named.
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    tid = FlatLayout1D.uid()
    if tid % 16 == 0:
        y[tid // 32] = x[tid]
""")
    threads = example_threads(text)
    assert all((b * 64 + t) % 16 == 0 for t, b in threads), text
    assert "(thread_idx.x = 0, block_idx.x = 0) and (thread_idx.x = 16, block_idx.x = 0) " \
        "both write y[0]" in text, text
    assert "does not evaluate" not in text, text


def test_the_threads_of_an_example_pass_a_guard_on_a_local():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    tid = block_idx.x * block_dim.x + thread_idx.x
    lane = tid % 8
    if lane == 3 and tid < len(x):
        y[tid // 32] = x[tid]
""")
    threads = example_threads(text)
    assert all((b * 64 + t) % 8 == 3 for t, b in threads), text
    assert "does not evaluate" not in text, text  # `tid < len(x)`: a large enough x passes


def test_a_condition_on_loaded_data_is_named_not_taken_as_passed():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    tid = FlatLayout1D.uid()
    if tid < len(x) and x[tid] > 0.0 and tid % 16 == 0:
        y[tid // 32] = x[tid]
""")
    threads = example_threads(text)
    assert all((b * 64 + t) % 16 == 0 for t, b in threads), text
    assert "both write y[0], if both pass the condition on line 7, which this example does " \
        "not evaluate" in text, text


def test_a_guard_that_no_two_threads_pass_together_gives_no_example():
    # Race-free, but not proven by the rules: no example is made up (thread 1 fails the guard).
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    tid = FlatLayout1D.uid()
    if tid % 32 == 0 and tid % 3 == 0:
        y[tid // 96 + tid // 32] = x[tid]
""")
    assert "both write" not in text, text


def test_the_example_of_a_block_coordinate_guard_passes_it():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
    t = thread_idx.x
    if t % 8 == 3:
        y[t // 16 + block_idx.x * 4] = x[t]
""")
    threads = example_threads(text)
    assert all(t % 8 == 3 for t, _ in threads), text


def test_a_guard_on_a_loop_counter_s_parity_is_not_left_out_of_the_caveat():
    # Odd-even transposition with the parity chosen by the round, and no barrier to part the
    # rounds: the example cannot evaluate `t % 2 == phase % 2` (the index does not read
    # `phase`), so it must not name only the data-dependent condition on another line as the
    # one it skipped.
    text = refusal("""
    from gpu_native import shared_array, sync_threads

    @gpu_kernel(Kernel1D)
    def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        assert block_dim.x == 64
        s = shared_array(f32, (64,))
        t = thread_idx.x
        s[t] = x[block_idx.x * 64 + t]
        sync_threads()
        for phase in range(64):
            if t % 2 == phase % 2 and t + 1 < 64:
                a = s[t]
                b = s[t + 1]
                if a > b:
                    s[t] = b
                    s[t + 1] = a
        sync_threads()
        out[block_idx.x * 64 + t] = s[t]
    """)
    assert "if both pass the conditions around the store, which this example does not " \
           "evaluate" in text, text
    assert "condition on line" not in text, text
    # The hint says what the proofs do follow: a barrier that parts the rounds, or phases of
    # constant parity in each round.
    assert "depends on a loop counter" in text and "if t % 2 == 0: ...; sync_threads()" in text
    assert "where a sync_threads() parts the rounds" in text


def test_the_store_named_beside_this_one_is_the_one_the_example_is_about():
    # The swap's two stores race (no barrier parts the rounds); the first store through
    # another index (`s[t] = a[t]`, line 11) is a barrier away and cannot, so the message must
    # not name it.
    text = refusal("""
    from gpu_native import CUDASliceMut, shared_array, sync_threads

    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        assert block_dim.x == 128
        s = shared_array(f32, 128)
        t = thread_idx.x
        s[t] = a[t]
        sync_threads()
        for phase in range(128):
            if t % 2 == phase % 2 and t + 1 < 128:
                if s[t] > s[t + 1]:
                    s[t], s[t + 1] = s[t + 1], s[t]
        sync_threads()
    """)
    assert "example.py:16:23: error: 's' is written through two different indices (here " \
           "and at example.py:16:17)" in text, text
    assert "example.py:11:" not in text, text
    assert "thread_idx.x = 0 and thread_idx.x = 1 both write s[1]" in text, text
    # A guard compares the thread with the round's parity: the phases hint stays.
    assert "depends on a loop counter" in text, text


def test_an_example_needs_no_parameter_of_a_chosen_value():
    """A batched store in 2-D blocks that never reads thread_idx.y: the example is two threads
    of one block that differ in thread_idx.y (with the stride large, as a user passes it), not
    two blocks that meet only for stride == 0; the hint names the unread coordinate."""
    text = refusal("""
from gpu_native import Kernel2D

@gpu_kernel(Kernel2D)
def k(n: i32, x: CUDASlice[f32], y: CUDASliceMut[f32], stride: i32):
    i = block_idx.x * block_dim.x + thread_idx.x
    if i < n:
        y[block_idx.y * stride + i] = x[block_idx.y * stride + i]
""")
    assert "(thread_idx.x = 0, thread_idx.y = 0, block_idx.x = 0, block_idx.y = 0) and " \
        "(thread_idx.x = 0, thread_idx.y = 1, block_idx.x = 0, block_idx.y = 0) both write " \
        "y[0]" in text, text
    assert "hint: the index does not depend on thread_idx.y, so the threads of a block along " \
        "it write the same elements: if the blocks are one thread deep there, say so " \
        "(`assert block_dim.y == 1`" in text, text
