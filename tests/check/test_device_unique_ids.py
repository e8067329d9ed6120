"""A device function that writes an array it is passed, at its ``UniqueId`` parameter
(``def put(s, t: UniqueId, v): s[t] = v``): each call needs the id unique where the argument's
memory lives, the block's threads for a shared array, the grid's for a global one, also
through a device function that passes both on.  Before, every array parameter counted as global
memory, so ``put(s, thread_idx.x, v)`` into a kernel's shared array was refused.

Accepted kernels run on the simulator against NumPy with the race detector watching every
write; the global-array calls with a block index are refused, and race under ``unsafe()``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build, launch


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


DEVICE = """
    @gpu_device
    def put(s: CUDASliceMut[f32], t: UniqueId, v: f32):
        s[t] = v

    @gpu_device
    def put_twice(s: CUDASliceMut[f32], t: UniqueId, v: f32):
        put(s, t, v)
    """

SHARED = DEVICE + """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32]):
        assert block_dim.x == 32
        s = shared_array(f32, (32,))
        t = thread_idx.x
        {call}(s, t, f32(block_idx.x * 100 + t))
        sync_threads()
        out[block_idx.x * 32 + t] = s[31 - t]
    """


@pytest.mark.parametrize("call", ["put", "put_twice"])
def test_a_shared_array_written_at_the_thread_s_index(tmp_path, call):
    kernel = build(tmp_path, SHARED.format(call=call), name=call)["k"]
    out = np.full(64, np.nan, np.float32)
    errors = launch(kernel, 2, 32, out)
    assert errors.races == [] and errors.fails == [], errors
    want = np.array([b * 100 + 31 - t for b in range(2) for t in range(32)], np.float32)
    np.testing.assert_array_equal(out, want)


GLOBAL = DEVICE + """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32]):
        {call}(out, {index}, f32(thread_idx.x))
    """


@pytest.mark.parametrize("call", ["put", "put_twice"])
def test_a_global_array_needs_an_id_unique_in_the_grid(tmp_path, call):
    with pytest.raises(TranspileError, match="UniqueId used to write memory, but this value "
                                             "is not provably unique"):
        build(tmp_path, GLOBAL.format(call=call, index="thread_idx.x"), name=f"{call}_block")
    kernel = build(tmp_path, GLOBAL.format(call=call, index="FlatLayout1D.uid()"),
                   name=f"{call}_grid")["k"]
    out = np.full(64, np.nan, np.float32)
    errors = launch(kernel, 2, 32, out)
    assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_array_equal(out, np.tile(np.arange(32, dtype=np.float32), 2))


def test_a_block_index_into_a_global_array_races(tmp_path):
    """What the refusal above keeps out: thread t of every block writes out[t]."""
    source = GLOBAL.format(call="put", index="thread_idx.x").replace(
        "        s[t] = v", "        with unsafe():\n            s[t] = v").replace(
        "t: UniqueId", "t: i32")
    kernel = build(tmp_path, source, name="racing")["k"]
    assert launch(kernel, 2, 32, np.zeros(64, np.float32)).races


def test_the_refusal_in_the_device_function_says_whose_array_it_is(tmp_path):
    source = DEVICE.replace("t: UniqueId", "t: i32") + """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32]):
        put(out, FlatLayout1D.uid(), 1.0)
    """
    with pytest.raises(TranspileError) as info:
        build(tmp_path, source, name="plain_param")
    text = str(info.value)
    assert "two threads of the grid (the array is a caller's, checked as a global one" in text
    assert "declare it `t: UniqueId`" in text, text
