"""Interop plumbing that needs no GPU: DLPack capsules (both ABIs) read back with ctypes, the
stream handshakes against a stub CUDA backend and fake producers, and foreign CPU arrays as the
simulator's device memory.  The same handshakes on a real GPU, with PyTorch and CuPy, are in
tests/runtime/test_interop_gpu.py.
"""

from __future__ import annotations

import ctypes
import gc
import types

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.runtime import interop
from gpu_native.runtime.streams import DEFAULT_STREAM, as_stream


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


class CpuTensor:
    """A foreign CPU array (what a CPU torch tensor is to DLPack), exporting a NumPy array."""

    def __init__(self, host: np.ndarray):
        self.host = host
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.host.__dlpack__(**kwargs)


def _capsule_address(capsule, name: bytes) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


def _capsule_name(capsule) -> bytes:
    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get(capsule)


# ---- capsule layout and versions ------------------------------------------------------------------


def test_the_structures_have_dlpack_h_layout():
    # dlpack.h on a 64-bit platform: DLTensor is 48 bytes; DLManagedTensorVersioned puts its
    # version, manager_ctx, deleter and flags before the tensor.
    assert ctypes.sizeof(interop.DLTensor) == 48
    assert interop.DLTensor.byte_offset.offset == 40
    assert ctypes.sizeof(interop.DLManagedTensor) == 64
    v = interop.DLManagedTensorVersioned
    assert (v.version.offset, v.manager_ctx.offset, v.deleter.offset, v.flags.offset,
            v.dl_tensor.offset) == (0, 8, 16, 24, 32)
    assert ctypes.sizeof(v) == 80


@pytest.mark.parametrize("max_version, name", [(None, b"dltensor"), ((0, 8), b"dltensor"),
                                               ((1, 0), b"dltensor_versioned"),
                                               ((1, 3), b"dltensor_versioned"),
                                               ((2, 0), b"dltensor_versioned")])
def test_export_gives_the_capsule_the_consumer_asked_for(sim, max_version, name):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    arr = gn.to_device(host)
    capsule = arr.__dlpack__(max_version=max_version)
    assert _capsule_name(capsule) == name
    address = _capsule_address(capsule, name)
    if name == b"dltensor_versioned":
        managed = interop.DLManagedTensorVersioned.from_address(address)
        assert (managed.version.major, managed.version.minor) == (1, 0)
        assert managed.flags == 0
    else:
        managed = interop.DLManagedTensor.from_address(address)
    t = managed.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (1, 0)  # the simulator: kDLCPU
    assert t.ndim == 2 and (t.shape[0], t.shape[1]) == (3, 4)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)  # kDLFloat, 32 bits
    # Row-major strides, in elements (NumPy, which makes our capsules, always writes them).
    assert (not t.strides or (t.strides[0], t.strides[1]) == (4, 1)) and t.byte_offset == 0
    seen = np.ctypeslib.as_array(ctypes.cast(t.data, ctypes.POINTER(ctypes.c_float)), (3, 4))
    np.testing.assert_array_equal(seen, host)


def test_versioned_flags_mark_a_read_only_view_and_a_copy(sim):
    arr = gn.to_device(np.arange(8, dtype=np.int32))
    capsule = arr.readonly().__dlpack__(max_version=(1, 0))
    flags = interop.DLManagedTensorVersioned.from_address(
        _capsule_address(capsule, b"dltensor_versioned")).flags
    assert flags == interop.FLAG_READ_ONLY
    copied = arr.__dlpack__(max_version=(1, 0), copy=True)
    managed = interop.DLManagedTensorVersioned.from_address(
        _capsule_address(copied, b"dltensor_versioned"))
    assert managed.flags == interop.FLAG_IS_COPIED
    assert managed.dl_tensor.data != np.from_dlpack(arr).ctypes.data  # new memory
    out = np.from_dlpack(types.SimpleNamespace(
        __dlpack__=lambda **kw: arr.readonly().__dlpack__(**kw),
        __dlpack_device__=arr.__dlpack_device__))
    assert not out.flags.writeable  # NumPy read the read-only flag
    np.testing.assert_array_equal(out, np.arange(8))


def test_a_copy_is_not_the_array(sim):
    arr = gn.to_device(np.arange(8, dtype=np.float32))
    view = np.from_dlpack(arr)
    copied = np.from_dlpack(types.SimpleNamespace(
        __dlpack__=lambda **kw: arr.__dlpack__(copy=True, **kw),
        __dlpack_device__=arr.__dlpack_device__))
    assert np.shares_memory(view, np.from_dlpack(arr))
    assert not np.shares_memory(copied, view)
    np.testing.assert_array_equal(copied, view)


def test_unversioned_export_of_a_read_only_view_is_refused(sim):
    view = gn.to_device(np.arange(8, dtype=np.float32)).readonly()
    with pytest.raises(BufferError, match="read-only"):
        view.__dlpack__()
    view.__dlpack__(copy=True)  # a copy is writable


def test_export_arguments_are_checked(sim):
    arr = gn.to_device(np.arange(8, dtype=np.float32))
    with pytest.raises(BufferError, match="DLPack device"):
        arr.__dlpack__(dl_device=(2, 0))
    arr.__dlpack__(dl_device=(1, 0))
    with pytest.raises(TypeError, match="max_version"):
        arr.__dlpack__(max_version=1)
    with pytest.raises(TypeError, match="dl_device"):
        arr.__dlpack__(dl_device="cuda")
    with pytest.raises(TypeError, match="copy"):
        arr.__dlpack__(copy="yes")
    with pytest.raises(TypeError, match="stream"):
        arr.__dlpack__(stream="s")


def test_numpy_reads_our_capsules_of_either_version_without_a_copy(sim):
    arr = gn.to_device(np.arange(6, dtype=np.float64))
    for max_version in (None, (1, 0)):
        out = np.from_dlpack(types.SimpleNamespace(
            __dlpack__=lambda max_version=max_version, **kw: arr.__dlpack__(
                max_version=max_version, stream=kw.get("stream")),
            __dlpack_device__=arr.__dlpack_device__))
        out[0] = 100.0 + (max_version is not None)
        assert arr.to_host()[0] == out[0]


@pytest.mark.slow
def test_an_exported_tensor_lives_until_its_capsule_or_consumer_lets_go(sim):
    arr = gn.to_device(np.arange(8, dtype=np.float32))
    before = len(interop._exports)
    capsule = arr.__dlpack__(max_version=(1, 0))
    assert len(interop._exports) == before + 1
    del capsule
    gc.collect()
    assert len(interop._exports) == before  # an unconsumed capsule frees it
    out = np.from_dlpack(arr)
    assert len(interop._exports) == before + 1
    del out
    gc.collect()
    assert len(interop._exports) == before  # the consumer called the deleter


def test_a_consumer_refusing_our_capsule_raises_its_own_error_and_frees_the_tensor(sim):
    # A NumPy without bf16 refuses the capsule with its error set and drops it.  The capsule's
    # release ran then, as a Python callback that cannot keep a pending error: the caller got
    # "SystemError: ... returned NULL without setting an exception" and the tensor leaked.
    # (NumPy 2.x raises RuntimeError, newer releases BufferError; one that takes bf16 must give
    # the right array.)
    arr = gn.zeros(4, "bf16")
    arr.fill(1.5)
    before = len(interop._exports)
    try:
        got = np.from_dlpack(arr)
    except (RuntimeError, BufferError) as refusal:  # NumPy's own error, not SystemError
        assert "Unsupported dtype" in str(refusal)
    else:
        assert got.dtype.itemsize == 2 and got.astype(np.float32).tolist() == [1.5] * 4
        del got
    gc.collect()
    assert len(interop._exports) == before
    assert np.from_dlpack(gn.zeros(3, "f32")).tolist() == [0.0, 0.0, 0.0]


def test_import_reads_the_versioned_read_only_flag():
    host = np.arange(4, dtype=np.float32)
    host.flags.writeable = False
    capsule = host.__dlpack__(max_version=(1, 0))
    managed, tensor, readonly = interop.open_capsule(capsule, "the array")
    assert readonly and tensor.ndim == 1
    assert _capsule_name(capsule) == b"used_dltensor_versioned"
    managed.deleter(ctypes.addressof(managed))


def test_import_refuses_a_newer_major_version_and_leaves_the_capsule_to_its_producer():
    capsule = np.arange(4, dtype=np.float32).__dlpack__(max_version=(1, 0))
    managed = interop.DLManagedTensorVersioned.from_address(
        _capsule_address(capsule, b"dltensor_versioned"))
    managed.version.major = 2
    with pytest.raises(TypeError, match=r"DLPack 2\.0"):
        interop.open_capsule(capsule, "the array")
    assert _capsule_name(capsule) == b"dltensor_versioned"  # its destructor still frees it
    managed.version.major = 1


# ---- stream handshakes against a stub CUDA backend ------------------------------------------------


class StubDriver:
    @staticmethod
    def CUstream(value):
        return ("CUstream", int(value))


class StubCuda:
    """The parts of the CUDA backend the handshakes use; records what they ask of it."""

    name = "cuda"

    def __init__(self, device_ranges=()):
        self.drv = StubDriver()
        self.waits: list[tuple] = []
        self.fences: list[int] = []
        self.device_ranges = list(device_ranges)

    def default_stream(self, ordinal):
        return ("CUstream", 0)

    def stream_value(self, handle):
        return handle[1] if isinstance(handle, tuple) else int(handle)

    def stream_wait_stream(self, waiter, producer):
        self.waits.append((waiter, producer))

    def fence_nonblocking(self, ordinal):
        self.fences.append(ordinal)

    def pointer_device(self, ptr):
        return 0 if any(lo <= ptr < hi for lo, hi in self.device_ranges) else None


class StubStream:
    """A consumer stream: its handle value, and whether it is non-blocking."""

    def __init__(self, value: int, nonblocking: bool, device: int = 0):
        self.value, self._nonblocking, self.device = value, nonblocking, device

    def _resolve(self, device):
        return ("CUstream", self.value), None


LEGACY = ("CUstream", 0)


@pytest.mark.parametrize("producer, consumer, waits", [
    (None, StubStream(7, True), []),                      # None: no synchronisation asked
    (1, StubStream(0, False), []),                        # legacy on legacy
    (1, StubStream(7, False), []),                        # blocking streams follow the legacy one
    (1, StubStream(7, True), [(("CUstream", 7), LEGACY)]),
    (2, StubStream(7, False), [(("CUstream", 7), ("CUstream", 2))]),  # per-thread default
    (9, StubStream(9, True), []),                         # the same stream
    (9, StubStream(7, False), [(("CUstream", 7), ("CUstream", 9))]),
    (9, StubStream(0, False), [(LEGACY, ("CUstream", 9))]),
    (np.int64(9), StubStream(7, True), [(("CUstream", 7), ("CUstream", 9))]),
    (9, StubStream(7, True, device=1), []),               # another device: the launch refuses it
])
def test_the_consumer_waits_for_the_interfaces_stream_as_v3_says(sim, producer, consumer, waits):
    backend = StubCuda()
    interop.wait_for_producer(backend, 0, producer, consumer)
    assert backend.waits == waits


def test_the_legacy_default_stream_consumer_is_resolved_per_device(sim):
    backend = StubCuda()
    interop.wait_for_producer(backend, 0, 9, DEFAULT_STREAM)  # the simulator's handle is 0
    assert backend.waits == [(0, ("CUstream", 9))]


def test_stream_zero_and_non_ints_are_refused(sim):
    backend = StubCuda()
    with pytest.raises(ValueError, match="does not allow"):
        interop.wait_for_producer(backend, 0, 0, StubStream(7, True))
    for bad in ("7", 7.0, True):
        with pytest.raises(TypeError, match="'stream' entry"):
            interop.wait_for_producer(backend, 0, bad, StubStream(7, True))


@pytest.mark.parametrize("returned", ["x", (0,), (0, 7, 1), [0, 7], (0, "7"), (0, 7.0),
                                      (0, True), None])
def test_a_malformed_cuda_stream_result_is_refused_naming_it(sim, returned):
    class Foreign:
        def __cuda_stream__(self):
            return returned

    with pytest.raises(TypeError, match=r"Foreign\.__cuda_stream__ must return a \(version, "
                                        r"handle\) pair of ints, but it returned "
                                        + type(returned).__name__):
        as_stream(Foreign())


def test_no_handshake_when_switched_off(sim, monkeypatch):
    monkeypatch.setattr(interop, "SYNC", False)
    backend = StubCuda()
    interop.wait_for_producer(backend, 0, 9, StubStream(7, True))
    fake = types.SimpleNamespace(_backend=backend, device=0)
    interop.hand_over(fake, 7)
    assert interop.export_stream(fake) is None
    assert backend.waits == [] and backend.fences == []


@pytest.mark.parametrize("stream, waits", [
    (None, []), (1, []),                                # the legacy stream: the fence suffices
    (2, [(("CUstream", 2), LEGACY)]),
    (0x7F00, [(("CUstream", 0x7F00), LEGACY)]),
])
def test_our_export_makes_the_consumers_stream_wait_for_all_our_work(sim, stream, waits):
    backend = StubCuda()
    fake = types.SimpleNamespace(_backend=backend, device=0)
    interop.hand_over(fake, stream)
    assert backend.fences == [0]  # the legacy stream waits for our non-blocking streams
    assert backend.waits == waits


def test_our_export_refuses_stream_zero_and_skips_minus_one(sim):
    backend = StubCuda()
    fake = types.SimpleNamespace(_backend=backend, device=0)
    with pytest.raises(ValueError, match="stream=0"):
        interop.hand_over(fake, 0)
    interop.hand_over(fake, -1)
    assert backend.waits == [] and backend.fences == []


def test_the_interface_we_export_names_the_fenced_legacy_stream(sim):
    backend = StubCuda()
    assert interop.export_stream(types.SimpleNamespace(_backend=backend, device=0)) == 1
    assert backend.fences == [0]


class CudaDLPack:
    """A producer on CUDA: records the arguments of each ``__dlpack__`` call, then hands out a
    capsule of host memory (so the import stops at the memory check, after the handshake)."""

    def __init__(self, accepts_max_version=True):
        self.calls: list[dict] = []
        self.accepts_max_version = accepts_max_version
        self.host = np.zeros(4, np.float32)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        if kwargs and not self.accepts_max_version:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls.append({"stream": stream, **kwargs})
        return self.host.__dlpack__()


@pytest.mark.parametrize("consumer, stream", [
    (StubStream(0, False), 1),        # the legacy default stream is 1 in DLPack
    (StubStream(0x7F00, True), 0x7F00),
    (StubStream(0x7F00, True, device=1), -1),  # another device: no handshake asked
    (None, -1),
])
def test_a_dlpack_producer_is_told_our_stream(sim, consumer, stream):
    obj = CudaDLPack()
    if consumer is not None:
        consumer.handle = consumer.value
    with pytest.raises(TypeError, match="CUDA memory"):
        interop._from_dlpack(obj, "the argument", StubCuda(), consumer)
    assert obj.calls == [{"stream": stream, "max_version": (1, 0)}]


def test_a_producer_without_max_version_gets_the_unversioned_call(sim):
    obj = CudaDLPack(accepts_max_version=False)
    with pytest.raises(TypeError, match="CUDA memory"):
        interop._from_dlpack(obj, "the argument", StubCuda(), None)
    assert obj.calls == [{"stream": -1}]


def test_dlpack_is_told_no_stream_when_switched_off(sim, monkeypatch):
    monkeypatch.setattr(interop, "SYNC", False)
    obj = CudaDLPack()
    consumer = StubStream(0x7F00, True)
    consumer.handle = 0x7F00
    with pytest.raises(TypeError):
        interop._from_dlpack(obj, "the argument", StubCuda(), consumer)
    assert obj.calls[0]["stream"] == -1


class CudaCAI:
    def __init__(self, ptr, **extra):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (ptr, False),
                                         "version": 3, "strides": None, **extra}


class CudaBoth(CudaDLPack):
    """CUDA array interface (version 2, no stream, as PyTorch's) and DLPack."""

    def __init__(self, ptr):
        super().__init__()
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (ptr, False),
                                         "version": 2, "strides": None}


def test_an_interface_with_a_stream_is_used_and_waited_for(sim, monkeypatch):
    backend = StubCuda(device_ranges=[(0x10000, 0x20000)])
    monkeypatch.setattr(interop, "B", types.SimpleNamespace(select=lambda: backend))
    arr = interop.from_foreign(CudaCAI(0x10000, stream=9), "the argument")
    assert arr.ptr == 0x10000 and arr.shape == (4,)
    assert backend.waits == [(0, ("CUstream", 9))]  # DEFAULT_STREAM waits for stream 9


def test_an_interface_without_a_stream_gives_way_to_dlpack(sim, monkeypatch):
    backend = StubCuda(device_ranges=[(0x10000, 0x20000)])
    monkeypatch.setattr(interop, "B", types.SimpleNamespace(select=lambda: backend))
    obj = CudaBoth(0x10000)
    with pytest.raises(TypeError, match="CUDA memory"):  # its capsule is host memory
        interop.from_foreign(obj, "the argument")
    assert obj.calls == [{"stream": 1, "max_version": (1, 0)}]
    # An interface with no DLPack beside it is used as it is (nothing to synchronise with).
    arr = interop.from_foreign(CudaCAI(0x10000), "the argument")
    assert arr.ptr == 0x10000 and backend.waits == []


# ---- the simulator: foreign CPU arrays are its device memory --------------------------------------


def test_a_numpy_array_lent_through_from_dlpack_is_written_in_place(sim, kr):
    a = np.arange(256, dtype=np.float32)
    c = np.full(256, -1.0, np.float32)
    kr.add_kernel.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(gn.from_dlpack(a),
                                                             gn.from_dlpack(a), gn.from_dlpack(c))
    np.testing.assert_array_equal(c, 2 * a)


def test_a_foreign_cpu_array_is_a_launch_argument_in_and_out(sim, kr):
    a = np.arange(256, dtype=np.float32)
    c = np.full(256, -1.0, np.float32)
    src, dst = CpuTensor(a), CpuTensor(c)
    kr.add_kernel.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(src, src, dst)
    np.testing.assert_array_equal(c, 2 * a)
    assert src.calls and all(call.get("stream") is None for call in src.calls)


def test_to_device_wraps_a_foreign_cpu_array_and_copies_a_numpy_one(sim, kr):
    a = np.arange(256, dtype=np.float32)
    wrapped = gn.to_device(CpuTensor(a))
    copied = gn.to_device(a)
    launch = kr.add_kernel.launch(gn.GridDim1D(2), gn.BlockDim1D(128))
    launch(copied, copied, wrapped)
    np.testing.assert_array_equal(a, 2 * np.arange(256))  # written through the wrapper
    launch(wrapped, wrapped, copied)
    np.testing.assert_array_equal(copied.to_host(), 4 * np.arange(256))


def test_our_array_out_to_numpy_shares_memory_both_ways(sim, kr):
    c = gn.zeros(256)
    out = np.from_dlpack(c)
    a = gn.to_device(np.ones(256, np.float32))
    kr.add_kernel.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(a, a, c)
    np.testing.assert_array_equal(out, 2.0)  # the kernel's writes, seen by NumPy
    out[:] = 5.0
    np.testing.assert_array_equal(c.to_host(), 5.0)  # NumPy's, seen by us


def test_a_numpy_argument_is_still_refused_and_the_error_says_how_to_lend_it(sim, kr):
    c = gn.zeros(128)
    with pytest.raises(TypeError, match=r"gn.from_dlpack\(a\)"):
        kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(128))(np.ones(128, np.float32),
                                                                 c, c)


def test_lent_arrays_that_share_memory_are_seen_to_overlap(sim, kr):
    host = np.zeros(512, np.float32)
    a, c = gn.from_dlpack(host[:256]), gn.from_dlpack(host[128:384])
    with pytest.raises(ValueError, match="overlaps"):
        kr.add_kernel.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(a, a, c)
    np.testing.assert_array_equal(host, 0.0)


def test_a_read_only_array_is_lent_read_only(sim, kr):
    host = np.ones(128, np.float32)
    host.flags.writeable = False
    arr = gn.from_dlpack(host)
    assert not arr.is_writable
    with pytest.raises(TypeError, match="read-only"):
        kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(128))(arr, arr, arr)


@pytest.mark.parametrize("obj, error, match", [
    (np.zeros(8, [("x", np.float32), ("n", np.int16)])["x"], ValueError,
     "not multiples of its itemsize"),
    (np.zeros((2, 2, 2, 2), np.float32), ValueError, "4 dimensions"),
    (np.zeros(4, np.longdouble), TypeError, "float128"),
    (CudaCAI(0x1000), TypeError, "CPU simulator"),
    ([1.0, 2.0], TypeError, "exports DLPack"),
])
def test_from_dlpack_refuses_what_it_cannot_lend(sim, obj, error, match):
    with pytest.raises(error, match=match):
        gn.from_dlpack(obj)


@pytest.mark.slow
def test_a_loan_ends_with_the_last_array_using_it(sim):
    memory = gn.runtime.backend.select().memory
    before = len(memory._lent)
    host = np.zeros(16, np.float32)
    arr = gn.from_dlpack(host)
    view = arr[4:8]
    assert len(memory._lent) == before + 1
    del arr
    gc.collect()
    view.fill(3.0)
    np.testing.assert_array_equal(host[4:8], 3.0)
    del view
    gc.collect()
    assert len(memory._lent) == before


def test_from_dlpack_returns_our_own_array_as_it_is(sim):
    arr = gn.zeros(4)
    assert gn.from_dlpack(arr) is arr


def test_wrappers_of_one_device_allocation_share_a_launch_base(sim):
    # Else a launch's fast path, which compares bases only, would take two overlapping views.
    backend = StubCuda(device_ranges=[(0x10000, 0x20000)])
    backend.allocation_range = lambda ptr: (0x10000, 0x10000)
    first = interop._from_cai(CudaCAI(0x10000), CudaCAI(0x10000).__cuda_array_interface__,
                              "a", backend)
    second_obj = CudaCAI(0x10008)
    second = interop._from_cai(second_obj, second_obj.__cuda_array_interface__, "b", backend)
    assert first.launch_base is second.launch_base
    other = StubCuda(device_ranges=[(0x30000, 0x40000)])
    other.allocation_range = lambda ptr: (0x30000, 0x100)
    third_obj = CudaCAI(0x30000)
    third = interop._from_cai(third_obj, third_obj.__cuda_array_interface__, "c", other)
    assert third.launch_base is not first.launch_base


def test_stream_zero_is_refused_on_the_simulator_too(sim):
    # It passed there and failed on the GPU: the simulator mirrors the GPU's refusals.
    a = gn.to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"__dlpack__\(stream=0\) is not allowed by DLPack"):
        a.__dlpack__(stream=0)
    assert a.__dlpack__(stream=-1) is not None and a.__dlpack__(stream=1) is not None


def test_a_release_during_an_exception_keeps_the_exception(tmp_path):
    # NumPy's view dies while its TypeError propagates, and releases our tensor then.  The
    # release was a Python function called through ctypes, which cannot run with an exception
    # set: Python reported it as "Exception ignored", the TypeError was lost and the caller got
    # "SystemError: error return without exception set" (first a lock it took stayed taken and
    # the next export hung).  The release is NumPy's compiled deleter now.  In a child: the
    # failure mode was a corrupted interpreter.
    import subprocess
    import sys

    from tests.helpers import child_env

    code = (
        "import numpy as np, gpu_native as gn\n"
        "a = gn.to_device(np.arange(4, dtype=np.float32))\n"
        "try:\n"
        "    float(np.from_dlpack(a))\n"
        "except TypeError as e:\n"
        "    print('TypeError', e, flush=True)\n"
        "try:\n"
        "    np.from_dlpack(a) + np.zeros(3)\n"
        "except ValueError as e:\n"
        "    print('ValueError', e, flush=True)\n"
        "print(np.from_dlpack(a).tolist(), flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=child_env(tmp_path, GPU_NATIVE_BACKEND="sim"))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("TypeError only"), proc.stdout
    assert lines[1].startswith("ValueError operands could not be broadcast"), proc.stdout
    assert lines[2] == "[0.0, 1.0, 2.0, 3.0]", proc.stdout
    assert "Exception ignored" not in proc.stderr and "SystemError" not in proc.stderr, \
        proc.stderr
