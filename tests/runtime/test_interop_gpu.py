"""Stream handshakes with PyTorch and CuPy on a real GPU (``pytest -m gpu``; each test skips
without its library).

Each race test makes a producer slow on purpose (it spins for ``SLEEP_CYCLES`` GPU clock cycles,
about 100 ms, before it writes), then consumes the array at once on another stream.  With the
handshake the consumer sees the written values; with it switched off (``interop.SYNC = False``,
what ``GPU_NATIVE_INTEROP_SYNC=0`` does) the test asserts that it reads the stale ones, which shows
that the handshake is what orders them.  Kernels are launched once before each race so that
compiling them cannot outlast the sleep.

    PYTHONPATH=$PWD python3 -m pytest -q -m gpu tests/runtime/test_interop_gpu.py
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.runtime import interop

pytestmark = pytest.mark.gpu

SLEEP_CYCLES = 200_000_000  # about 100 ms at 2 GHz, more at lower clocks
N = 1 << 20
STALE, FRESH = 0.0, 1.0  # the consumer's kernel doubles what it reads


@pytest.fixture(autouse=True)
def _cuda(cuda_backend):
    yield


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


@pytest.fixture(params=[True, False], ids=["handshake", "no-handshake"])
def handshake(request, monkeypatch):
    if not request.param:
        monkeypatch.setattr(interop, "SYNC", False)
    return request.param


def _doubled(kr, stream):
    return kr.add_kernel.launch(gn.GridDim1D(N // 256), gn.BlockDim1D(256), 0, stream)


def _check(result: np.ndarray, handshake: bool) -> None:
    if handshake:
        np.testing.assert_array_equal(result, 2 * FRESH)
    else:  # the kernel ran during the producer's sleep
        np.testing.assert_array_equal(result, 2 * STALE)


# ---- we consume -----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ["launch argument", "from_dlpack"])
def test_our_kernel_waits_for_a_tensor_written_on_a_torch_side_stream(kr, handshake, entry):
    torch = pytest.importorskip("torch")
    ours = gn.Stream()
    out = gn.zeros(N)
    x = torch.full((N,), STALE, device="cuda")
    _doubled(kr, ours)(x, x, out)  # compiled and loaded before the race
    ours.synchronize()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()  # non-blocking: nothing orders it with our stream but the handshake
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(FRESH)
        # torch's __dlpack__ orders the stream we name after its current one (side).
        arg = x if entry == "launch argument" else gn.from_dlpack(x, stream=ours)
        _doubled(kr, ours)(arg, arg, out)
    result = out.to_host(stream=ours)
    torch.cuda.synchronize()
    _check(result, handshake)


def test_our_kernel_waits_for_a_cupy_array_through_the_interfaces_stream(kr, handshake):
    cp = pytest.importorskip("cupy")
    spin = cp.RawKernel(r'''
        extern "C" __global__ void spin_then_fill(long long cycles, float* x, float v, int n) {
            long long start = clock64();
            while (clock64() - start < cycles) {}
            for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = v;
        }''', "spin_then_fill")
    ours = gn.Stream()
    out = gn.zeros(N)
    x = cp.full(N, STALE, dtype=cp.float32)
    _doubled(kr, ours)(x, x, out)
    ours.synchronize()
    cp.cuda.Device().synchronize()
    side = cp.cuda.Stream(non_blocking=True)
    with side:  # CuPy exports its current stream in __cuda_array_interface__ (v3)
        spin((1,), (256,), (np.int64(SLEEP_CYCLES), x, np.float32(FRESH), np.int32(N)))
        assert x.__cuda_array_interface__["stream"] == side.ptr
        _doubled(kr, ours)(x, x, out)
    result = out.to_host(stream=ours)
    side.synchronize()
    _check(result, handshake)


# ---- they consume -------------------------------------------------------------------------------


def _slow_write(kr, torch, stream, out, value):
    """Queue, on our ``stream``, a sleep and then a kernel writing ``2 * value`` into ``out``."""
    a = gn.to_device(np.full(N, value, np.float32))
    _doubled(kr, stream)(a, a, out)  # compiled and loaded before the race
    gn.synchronize()
    stream.synchronize()
    out.fill(STALE)
    gn.synchronize()
    handle = stream.handle if isinstance(stream, gn.Stream) else stream.cuda_stream
    with torch.cuda.stream(torch.cuda.ExternalStream(handle)):
        torch.cuda._sleep(SLEEP_CYCLES)
    _doubled(kr, stream)(a, a, out)


@pytest.mark.parametrize("writer", ["gn.Stream", "torch side stream"])
def test_torch_waits_for_our_kernel_through_dlpack(kr, handshake, writer):
    torch = pytest.importorskip("torch")
    # Our kernel on a blocking gn.Stream, or on a non-blocking torch stream we launch on (which
    # the export fences in too).
    stream = gn.Stream() if writer == "gn.Stream" else torch.cuda.Stream()
    out = gn.empty(N)
    _slow_write(kr, torch, stream, out, FRESH)
    reader = torch.cuda.Stream()
    with torch.cuda.stream(reader):
        seen = torch.from_dlpack(out).clone()  # __dlpack__(stream=reader): reader waits for us
    reader.synchronize()
    result = seen.cpu().numpy()
    torch.cuda.synchronize()
    _check(result, handshake)


def test_cupy_waits_for_our_kernel_through_the_interfaces_stream(kr, handshake):
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")  # for its sleep kernel
    ours = gn.Stream()
    out = gn.empty(N)
    _slow_write(kr, torch, ours, out, FRESH)
    reader = cp.cuda.Stream(non_blocking=True)
    with reader:  # CuPy waits for the stream our interface names (1, fenced) on its current one
        seen = cp.asarray(out).copy()
    reader.synchronize()
    result = cp.asnumpy(seen)
    torch.cuda.synchronize()
    _check(result, handshake)


# ---- the protocol's other parts on a GPU ---------------------------------------------------------


def test_versioned_capsules_both_ways_with_torch(kr):
    torch = pytest.importorskip("torch")
    ours = gn.to_device(np.arange(N, dtype=np.float32))
    capsule = ours.__dlpack__(max_version=(1, 0), stream=torch.cuda.current_stream().cuda_stream
                              or 1)
    assert "dltensor_versioned" in repr(capsule)
    t = torch.from_dlpack(ours)
    assert t.device.type == "cuda" and t.data_ptr() == ours.ptr
    back = gn.from_dlpack(t)
    assert back.ptr == ours.ptr and back.device == ours.device
    assert ours.__cuda_array_interface__["stream"] == 1


def test_a_consumer_freeing_our_tensor_during_an_exception_keeps_its_exception(kr):
    # The temporary torch view dies while torch's error propagates and releases our tensor:
    # the release was a Python callback, which replaced the error with SystemError.
    torch = pytest.importorskip("torch")
    host = np.random.default_rng().standard_normal(64).astype(np.float32)
    ours = gn.to_device(host)
    before = len(interop._exports)
    # torch's own error (its wording and class vary between releases), not SystemError.
    with pytest.raises((RuntimeError, ValueError),
                       match=r"one element tensors|cannot be converted to Scalar"):
        float(torch.from_dlpack(ours))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        torch.from_dlpack(ours) + torch.zeros(3, device="cuda")
    assert len(interop._exports) == before
    np.testing.assert_array_equal(torch.from_dlpack(ours).cpu().numpy(), host)


def test_torch_reads_strided_and_bf16_exports(kr):
    torch = pytest.importorskip("torch")
    host = np.random.default_rng().standard_normal((64, 48)).astype(np.float32)
    ours = gn.to_device(host)
    cols = torch.from_dlpack(ours[:, 1::3])  # a strided view: no copy, its strides passed
    assert cols.device.type == "cuda" and cols.stride() == (48, 3)
    assert cols.data_ptr() == ours.ptr + 4
    np.testing.assert_array_equal(cols.cpu().numpy(), host[:, 1::3])
    half = gn.zeros(16, "bf16")
    half.fill(1.5)
    got = torch.from_dlpack(half)
    assert got.dtype == torch.bfloat16 and got.float().cpu().tolist() == [1.5] * 16


def test_our_streams_speak_the_cuda_stream_protocol_to_torch(kr):
    torch = pytest.importorskip("torch")
    ours = gn.Stream()
    assert ours.__cuda_stream__() == (0, ours.handle)
    ext = torch.cuda.ExternalStream(ours.handle)
    assert ext.cuda_stream == ours.handle
    side = torch.cuda.Stream()
    a = torch.ones(N, device="cuda")
    c = torch.empty(N, device="cuda")
    torch.cuda.synchronize()
    _doubled(kr, side)(a, a, c)  # a torch stream as the launch stream
    side.synchronize()
    assert bool((c == 2).all())
