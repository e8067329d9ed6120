"""A kernel's error surfaces in the thread that launched it: a device-wide synchronisation
(``to_host()``, ``gn.synchronize()``) raises the errors of the default stream and of the streams
its own thread launched on, and leaves another thread's stream its error.  It once took every
stream's error: thread B's ``to_host()`` after a correct launch raised the IndexError of thread
A's kernel, and A's ``s.synchronize()`` then raised nothing.  Also: events and streams given
what they cannot use say so."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gpu_native as gn


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


def test_an_error_on_one_threads_stream_is_raised_in_that_thread(backend, kr):
    rng = np.random.default_rng()
    n = 256
    launched, b_synced = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def thread_a():
        s = gn.Stream()
        src, dst = gn.to_device(rng.standard_normal(n, dtype=np.float32)), gn.empty(n, gn.f32)
        kr.shifted_copy[n // 64, 64, s](src, dst)        # reads src[n]: out of bounds
        launched.set()
        b_synced.wait(60)
        try:
            s.synchronize()
            seen["a"] = None
        except gn.KernelIndexError as exc:
            seen["a"] = exc

    def thread_b():
        launched.wait(60)
        s = gn.Stream()
        a_h, b_h = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        c = gn.empty(n, gn.f32)
        c.fill(np.nan)
        kr.add_kernel[n // 64, 64, s](gn.to_device(a_h), gn.to_device(b_h), c)
        try:
            seen["b"] = (c.to_host(), a_h.astype(np.float64) + b_h)
            gn.synchronize()
        except Exception as exc:       # what B must not see
            seen["b"] = exc
        finally:
            b_synced.set()

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert isinstance(seen["b"], tuple), f"thread B raised {seen['b']!r}"
    got, expected = seen["b"]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert isinstance(seen["a"], gn.KernelIndexError)
    assert "shifted_copy" in str(seen["a"])


def test_the_launching_threads_own_device_wide_sync_still_raises(backend, kr):
    rng = np.random.default_rng()
    n = 256
    s = gn.Stream()
    src, dst = gn.to_device(rng.standard_normal(n, dtype=np.float32)), gn.empty(n, gn.f32)
    kr.shifted_copy[n // 64, 64, s](src, dst)
    with pytest.raises(gn.KernelIndexError):
        gn.synchronize()
    s.synchronize()           # raised once, then cleared


def test_event_misuse_is_a_clear_error(backend):
    # An unrecorded event timed as -58780799.86 ms on the simulator; a non-Event argument was
    # an AttributeError from inside the runtime.
    start = gn.Event().record()
    with pytest.raises(ValueError, match="elapsed_time: end was never recorded"):
        start.elapsed_time(gn.Event())
    with pytest.raises(ValueError, match="elapsed_time: this event was never recorded"):
        gn.Event().elapsed_time(start)
    with pytest.raises(TypeError, match="elapsed_time's end must be a gpu_native Event, not int"):
        start.elapsed_time(5)
    s = gn.Stream()
    with pytest.raises(TypeError, match="wait's event must be a gpu_native Event, not NoneType"):
        s.wait(None)
    with pytest.raises(TypeError, match="record's event must be a gpu_native Event, not int"):
        s.record(5)
    with pytest.raises(TypeError, match="wait's event must be a gpu_native Event, not str"):
        gn.DEFAULT_STREAM.wait("x")
    end = s.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0


GRAPH_KERNEL = """
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32


@gpu_kernel(Kernel1D)
def bump(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(a):
        a[i] = a[i] + 1.0
"""


def test_a_graph_on_the_simulator_refuses_what_the_gpu_refuses(sim, kernel_module):
    m = kernel_module(GRAPH_KERNEL)
    a = gn.zeros(64, gn.f32)
    with pytest.raises(gn.GpuNativeError, match="nothing was captured"):
        gn.Graph().replay()
    # A capture that raised leaves nothing to replay (it ran its launches once on the GPU's
    # capture stream: none on the simulator, which replays).
    g = gn.Graph()
    with pytest.raises(RuntimeError, match="stop"), g:
        m.bump[1, 64, g.stream](a)
        raise RuntimeError("stop")
    with pytest.raises(gn.GpuNativeError, match="nothing was captured"):
        g.replay()
    g = gn.Graph()
    with g:
        m.bump[1, 64, g.stream](a)
    with pytest.raises(TypeError, match="expected a stream"):
        g.replay(stream="garbage")
    g.replay()
    g.replay()
    g.synchronize()
    np.testing.assert_array_equal(a.to_host(), np.full(64, 2.0, np.float32))
