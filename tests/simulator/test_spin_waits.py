"""A loop that writes no memory and whose round changes nothing would run forever in the
simulator (its threads run in lockstep, a chunk of blocks at a time, so no other thread can end
the wait): the simulator reports it, naming the thread and the line, and stops those threads,
where it hung.  Loops that write no memory but make progress run to their end as before."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from tests.simulator.support import build, launch


@pytest.fixture(autouse=True)
def deadline():
    """A hang fails the test instead of the run (SIGALRM, in the worker's main thread)."""
    def expire(signum, frame):
        raise TimeoutError("the simulator did not stop the waiting threads")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


LOOK_BACK = """
    @gpu_kernel(Kernel1D)
    def k(status: CUDASliceMut[i32], out: CUDASliceMut[i32]):
        b = block_idx.x
        if thread_idx.x == 0:
            if b > 0:
                while status.atomic_ref(b - 1).load(MemoryOrder.ACQUIRE) == 0:
                    pass
            out[b] = b + 1
            status.atomic_ref(b).store(1, MemoryOrder.RELEASE)
    """


def test_a_wait_for_another_block_s_flag_is_reported(tmp_path):
    kernel = build(tmp_path, LOOK_BACK, name="look_back")["k"]
    status = np.zeros(4, np.int32)
    errors = launch(kernel, 4, 32, status, np.zeros(4, np.int32))
    assert errors.races, errors
    text = errors.races[0]
    assert "thread (0, 0, 0) of block (1, 0, 0) waits in the loop at look_back.py:" in text
    assert "which writes no memory, and a round of it changed nothing" in text
    assert "run this kernel on the GPU" in text


def test_a_flag_set_before_the_launch_ends_the_wait(tmp_path):
    kernel = build(tmp_path, LOOK_BACK, name="look_back_set")["k"]
    status = np.ones(4, np.int32)  # every flag up already: no block waits
    out = np.zeros(4, np.int32)
    errors = launch(kernel, 4, 32, status, out)
    assert errors.races == [] and errors.fails == [], errors
    assert out.tolist() == [1, 2, 3, 4]


STUCK = """
    @gpu_kernel(Kernel1D)
    def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        v = x[0]
        while v > 0.0:
            v = x[0] * 1.0
        out[i] = v
    """


def test_a_loop_that_can_never_end_is_reported(tmp_path):
    kernel = build(tmp_path, STUCK, name="stuck")["k"]
    errors = launch(kernel, 1, 32, np.ones(1, np.float32), np.zeros(32, np.float32))
    assert errors.races and "waits in the loop at stuck.py:" in errors.races[0]


COUNTING = """
    @gpu_kernel(Kernel1D)
    def k(n: CUDASlice[i32], out: CUDASliceMut[i32]):
        i = FlatLayout1D.uid()
        k = 0
        x = 1
        while k < n[0] + thread_idx.x:
            k += 1
            x = (x * 3) % 1000003
        out[i] = x
    """


def test_loops_that_make_progress_run_to_their_end(tmp_path):
    kernel = build(tmp_path, COUNTING, name="counting")["k"]
    out = np.zeros(32, np.int32)
    errors = launch(kernel, 1, 32, np.array([5000], np.int32), out)
    assert errors.races == [] and errors.fails == [], errors
    want = [pow(3, 5000 + t, 1000003) for t in range(32)]
    assert out.tolist() == want


SETTLED = """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        x = f32(1.0)
        k = 0
        while k < 3000:
            x = x * f32(0.5) + f32(0.5)  # settles at 1.0 at once: the counter still moves
            k += 1
        out[i] = x
    """


def test_a_loop_whose_value_settles_but_whose_counter_moves_ends(tmp_path):
    kernel = build(tmp_path, SETTLED, name="settled")["k"]
    out = np.zeros(32, np.float32)
    errors = launch(kernel, 1, 32, out)
    assert errors.races == [] and errors.fails == [], errors
    assert (out == 1.0).all()
