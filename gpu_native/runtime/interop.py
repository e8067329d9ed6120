"""Zero-copy exchange with CuPy, PyTorch, Numba and anything else speaking
``__cuda_array_interface__`` (v3) or DLPack (1.0, and the unversioned ABI before it).

Importing wraps the foreign memory in a :class:`~gpu_native.runtime.arrays.DeviceArray` that keeps
the foreign object alive.  Exporting through DLPack hands out a ``dltensor_versioned`` capsule (a
``dltensor`` one to a consumer that asks for no version) whose deleter, NumPy's compiled one,
releases our reference.

Streams.  A foreign array may still be being written on its producer's stream.  The consumer
stream (the launch's stream; ``DEFAULT_STREAM`` for ``gn.to_device``, ``gn.from_dlpack`` and
``gn.copy`` unless given one) is made to wait for it before it is used: through the ``stream`` of
the CUDA array interface (an event recorded there, waited for on ours, skipped where the two
streams are ordered already) or by naming our stream to ``__dlpack__``, which makes the producer
do the same.  Exporting, we cannot say which stream last wrote an array without bookkeeping in
every launch (whose cost the launch fast path must not pay), so we export the legacy default
stream after making it wait for every non-blocking stream this process launched on: it then
orders after all of our work on the device.  ``GPU_NATIVE_INTEROP_SYNC=0`` turns every handshake
off (as ``CUPY_CUDA_ARRAY_INTERFACE_SYNC=0`` does CuPy's): the caller then synchronises.

On the simulator, whose device memory is host memory, a foreign CPU array (a DLPack producer on
``kDLCPU``: a CPU torch tensor, or a NumPy array given to ``gn.from_dlpack``) is lent to it
without a copy: kernels read and write the caller's array.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import weakref

import numpy as np

from ..lang.types import element_info
from ..settings import flag
from . import backend as B
from .arrays import DeviceArray, allocation_holding, element_span
from .devices import current_device, on_device

# Whether foreign arrays are synchronised with their producer's stream, and ours with their
# consumer's (tests switch it off to show the race the handshake prevents).
SYNC = bool(flag("GPU_NATIVE_INTEROP_SYNC", True))

# ---- DLPack structures (dlpack.h: the 1.0 ABI, and the unversioned one every consumer reads) -----


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]


# Both managed-tensor deleters take the struct's address; a void* is the same ABI.
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


DLPACK_VERSION = (1, 0)  # the version we export, and the newest major version we read
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
_LEGACY_NAME, _VERSIONED_NAME = b"dltensor", b"dltensor_versioned"

_KDL_CPU, _KDL_CUDA = 1, 2
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_COMPLEX, _DL_BOOL = 0, 1, 2, 4, 5, 6

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

# NumPy's exporter lays out the managed tensor and frees it in compiled code (see to_dlpack);
# before 2.1 it makes only the unversioned capsule.
_NUMPY_VERSIONED = np.lib.NumpyVersion(np.__version__) >= "2.1.0"

# Every tensor we exported that a consumer (or an unconsumed capsule) still holds, so that a leak
# can be seen (the tests count it); nothing releases through it.
_exports: weakref.WeakSet = weakref.WeakSet()


def _dl_dtype(info) -> DLDataType:
    if info.kind == "struct":
        raise TypeError("DLPack has no struct element type: an array of structs cannot be "
                        "exported through DLPack; use __cuda_array_interface__ (whose descr "
                        "lists the fields) or to_host()")
    code = {"int": _DL_INT, "uint": _DL_UINT, "float": _DL_FLOAT, "complex": _DL_COMPLEX,
            "bool": _DL_BOOL}[info.kind]
    if info.name == "bf16":
        code = _DL_BFLOAT
    return DLDataType(code, info.bits, 1)


_DL_NAMES = {(_DL_INT, 8): "i8", (_DL_INT, 16): "i16", (_DL_INT, 32): "i32", (_DL_INT, 64): "i64",
             (_DL_UINT, 8): "u8", (_DL_UINT, 16): "u16", (_DL_UINT, 32): "u32",
             (_DL_UINT, 64): "u64", (_DL_FLOAT, 16): "f16", (_DL_FLOAT, 32): "f32",
             (_DL_FLOAT, 64): "f64", (_DL_BFLOAT, 16): "bf16", (_DL_BOOL, 8): "bool_",
             (_DL_COMPLEX, 64): "complex64", (_DL_COMPLEX, 128): "complex128"}


class _Export:
    """What a NumPy view built over an exported array's memory sees as its data (``base``): the
    memory's address and layout, and the array that owns it, kept alive by the view."""

    __slots__ = ("__array_interface__", "__weakref__", "array")

    def __init__(self, array: DeviceArray, data: int, dims, strides, itemsize: int):
        self.array = array
        self.__array_interface__ = {
            "version": 3, "shape": tuple(dims), "data": (data, False),
            "typestr": np.dtype("c16" if itemsize == 16 else f"u{itemsize}").str,
            "strides": None if strides is None else tuple(s * itemsize for s in strides)}


# ---- streams -------------------------------------------------------------------------------------


def _stream_number(value, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be None or an int, not {type(value).__name__} {value!r:.40}")
    return int(value)


def _consumer(stream):
    """The consumer :class:`~gpu_native.runtime.streams.Stream` (``DEFAULT_STREAM`` for None)."""
    from .streams import DEFAULT_STREAM, as_stream

    return DEFAULT_STREAM if stream is None else as_stream(stream)


def _dlpack_stream_of(consumer) -> int:
    """The ``stream`` a consumer passes to ``__dlpack__``: 1 for the legacy default stream."""
    value = int(consumer.handle)
    return 1 if value == 0 else value


def wait_for_producer(backend, device: int, producer, consumer) -> None:
    """Make ``consumer`` (a Stream) wait for the work queued so far on ``producer``, the
    ``stream`` entry of a CUDA array interface (v3), unless the two are ordered already.

    Per the interface: None asks for no synchronisation, 1 is the legacy default stream, 2 the
    per-thread default stream, 0 is not allowed, and any other int is a ``CUstream``.  The
    legacy default stream orders itself with blocking streams, so a consumer that is the legacy
    stream or a blocking stream needs nothing to read what the legacy stream wrote."""
    producer = _stream_number(producer, "the 'stream' entry of __cuda_array_interface__")
    if producer is None or not SYNC:
        return
    if producer == 0:
        raise ValueError("the 'stream' entry of __cuda_array_interface__ is 0, which the "
                         "interface (v3) does not allow (1 is the legacy default stream, 2 the "
                         "per-thread default stream, None asks for no synchronisation)")
    from .streams import DEFAULT_STREAM

    if consumer is not DEFAULT_STREAM and consumer.device != device:
        return  # a launch refuses the array (it lives on another device); nothing to order
    with _device_current(device):
        handle, _ = consumer._resolve(device)
        value = backend.stream_value(handle)
        if producer == 1:
            if value == 0 or not consumer._nonblocking:
                return
            source = backend.default_stream(device)
        elif producer == value:
            return
        else:
            source = backend.drv.CUstream(producer)
        backend.stream_wait_stream(handle, source)


def hand_over(arr: DeviceArray, stream) -> None:
    """Our half of ``__dlpack__(stream=...)``: make the consumer's stream wait for our work on
    ``arr``'s device (all of it: see the module's docstring).  ``stream`` follows DLPack: None
    or 1 the legacy default stream, 2 the per-thread default stream, -1 no synchronisation,
    another int a ``CUstream``; 0 is not allowed."""
    stream = _stream_number(stream, "__dlpack__'s stream")
    if stream == 0:   # refused on the simulator too: code that passes there must on the GPU
        raise ValueError("__dlpack__(stream=0) is not allowed by DLPack (it is ambiguous); "
                         "pass 1 for the legacy default stream or 2 for the per-thread one")
    backend = arr._backend
    if backend.name != "cuda":
        return  # the simulator's work is done when its launch returns
    if stream == -1 or not SYNC:
        return
    with _device_current(arr.device):
        backend.fence_nonblocking(arr.device)
        if stream not in (None, 1):
            backend.stream_wait_stream(backend.drv.CUstream(stream),
                                       backend.default_stream(arr.device))


def export_stream(arr: DeviceArray) -> int | None:
    """The ``stream`` of ``arr``'s CUDA array interface: the legacy default stream (1), once it
    waits for every non-blocking stream we launched on; None with the handshakes off."""
    if not SYNC:
        return None
    with _device_current(arr.device):
        arr._backend.fence_nonblocking(arr.device)
    return 1


def _device_current(device: int):
    return contextlib.nullcontext() if current_device() == device else on_device(device)


# ---- export --------------------------------------------------------------------------------------


def to_dlpack(arr: DeviceArray, stream=None, max_version=None, dl_device=None, copy=None):
    """Export ``arr`` as a DLPack capsule, implementing ``__dlpack__``.

    ``max_version`` (a ``(major, minor)`` tuple) of 1.0 or newer gets a ``dltensor_versioned``
    capsule (DLPack 1.0, whose flags mark a read-only view and a copy), None or older an
    unversioned ``dltensor`` one.  ``stream`` is the consumer's stream (see :func:`hand_over`).
    ``dl_device`` must be the array's own device (or None); ``copy=True`` exports a new copy,
    ``copy=False`` promises none is made (none ever is otherwise)."""
    versioned = _wants_versioned(max_version)
    if dl_device is not None:
        try:
            want = (int(dl_device[0]), int(dl_device[1]))
        except (TypeError, ValueError, IndexError):
            raise TypeError(f"dl_device must be a (device type, device id) pair, not "
                            f"{dl_device!r:.60}") from None
        if want != arr.__dlpack_device__():
            raise BufferError(f"this array is on DLPack device {arr.__dlpack_device__()}, not "
                              f"{want}; copy it there first (arr.to_host() for the CPU)")
    if copy not in (None, True, False):
        raise TypeError(f"copy must be None, True or False, not {copy!r:.40}")
    if not arr.is_writable and not copy and not (versioned and _NUMPY_VERSIONED):
        if versioned:
            raise BufferError("exporting a read-only view needs NumPy 2.1 or newer (which makes "
                              "DLPack 1.0 capsules); export the writable array, or upgrade NumPy")
        raise BufferError("a read-only view cannot be exported as an unversioned DLPack capsule "
                          "(it cannot say read-only); ask for max_version=(1, 0) or export the "
                          "writable array")
    hand_over(arr, stream)
    flags = 0 if arr.is_writable else FLAG_READ_ONLY
    if copy:
        arr = arr.copy()
        flags = FLAG_IS_COPIED
        hand_over(arr, stream)  # the copy was queued after the first hand-over
    dims = arr.host_shape  # an array of vectors exports its components on a last axis
    backend = arr._backend
    if backend.name == "cuda":
        data, device = arr.launch_ptr, DLDevice(_KDL_CUDA, arr.device)
    else:
        device = DLDevice(_KDL_CPU, 0)
        lo, hi = element_span(arr.shape, arr.strides)
        size = arr._info.itemsize
        buf, offset = backend.memory.locate(arr.launch_ptr + lo * size, (hi - lo + 1) * size)
        data = buf.ctypes.data + offset - lo * size
    strides = None
    if not arr.is_contiguous:  # in elements of the exported dtype (a vector's components too)
        width = len(dims) - arr.ndim
        scale = dims[-1] if width else 1
        strides = (*(s * scale for s in arr.strides), *((1,) if width else ()))
    # NumPy makes the capsule, over a view of the memory (never read: on a GPU the address is
    # the device's) whose base keeps `arr` alive, and we correct its device and element type.
    # The consumer's release is then NumPy's compiled deleter.  Ours was a Python function
    # called through ctypes, which a consumer freeing the tensor while an exception propagates
    # (`float(np.from_dlpack(a))`) entered with that exception set: the exception was lost, and
    # Python raised SystemError (or crashed) in its place.
    dtype = _dl_dtype(arr.scalar_info)
    export = _Export(arr, data, dims, strides, arr.scalar_info.itemsize)
    view = np.asarray(export)
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned and _NUMPY_VERSIONED:
        capsule = view.__dlpack__(max_version=DLPACK_VERSION)
        managed = DLManagedTensorVersioned.from_address(
            _capsule_pointer(capsule, _VERSIONED_NAME))
        managed.flags = flags
    else:  # a consumer that asks for DLPack 1.0 takes this one too, as the array API says
        capsule = view.__dlpack__()
        managed = DLManagedTensor.from_address(_capsule_pointer(capsule, _LEGACY_NAME))
    managed.dl_tensor.device = device
    managed.dl_tensor.dtype = dtype
    _exports.add(export)
    return capsule


def _wants_versioned(max_version) -> bool:
    if max_version is None:
        return False
    try:
        major = int(max_version[0])
        int(max_version[1])
    except (TypeError, ValueError, IndexError):
        raise TypeError(f"max_version must be a (major, minor) tuple, not "
                        f"{max_version!r:.60}") from None
    return major >= DLPACK_VERSION[0]


# ---- import --------------------------------------------------------------------------------------


class _DLPackOwner:
    """Keeps an imported DLPack tensor alive; calls its deleter when our arrays are gone."""

    __slots__ = ("capsule", "managed", "source")

    def __init__(self, capsule, managed, source):
        self.capsule, self.managed, self.source = capsule, managed, source

    def __del__(self) -> None:
        try:
            if self.managed.deleter:
                self.managed.deleter(ctypes.addressof(self.managed))
        except Exception:  # pragma: no cover
            pass


class _Loan:
    """A host array lent to the simulator (see ``SimMemory.lend``) for as long as it lives."""

    __slots__ = ("__weakref__", "address", "host", "memory", "source", "token")

    def __init__(self, memory, host: np.ndarray, source):
        self.memory, self.host, self.source = memory, host, source
        self.address, self.token = 0, None
        self.address, self.token = memory.lend(host)

    def __del__(self) -> None:
        try:
            if self.token is not None:
                self.memory.take_back(self.token)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def _contiguous(shape, strides, itemsize) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def from_foreign(obj, what: str = "the array", stream=None) -> DeviceArray:
    """Wrap a foreign array without copying, ordered after its producer's work on ``stream``
    (the consumer's stream; None: ``DEFAULT_STREAM``).

    On a GPU: a CUDA array, through ``__cuda_array_interface__`` when it names its stream (v3),
    else DLPack, else the interface as it is.  On the simulator: a host array (NumPy, or a
    DLPack producer on the CPU), lent to it."""
    if isinstance(obj, type):  # `gn.DeviceArray` itself has the interfaces, as properties
        raise TypeError(f"{what} is the class {obj.__name__}, not an array of it")
    backend = B.select()
    consumer = _consumer(stream)
    if backend.name != "cuda":
        return _lend_host(obj, what, backend)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and ("stream" in cai or not hasattr(obj, "__dlpack__")):
        arr = _from_cai(obj, cai, what, backend)
        wait_for_producer(backend, arr.device, cai.get("stream"), consumer)
        return arr
    # An interface that names no stream (PyTorch's) cannot be synchronised with: DLPack can.
    return _from_dlpack(obj, what, backend, consumer)


class _Block:
    """The ``launch_base`` of every foreign array in one device allocation (or, on the simulator,
    of every lent host array): arrays of different bases cannot overlap, so two wrappers of the
    same memory must share one, or a launch's fast path would not compare their addresses."""

    __slots__ = ("__weakref__",)


_blocks: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_blocks_lock = threading.Lock()
_LENT = _Block()  # lent host arrays: any two in one launch take the checked path


def _block(device: int, base: int) -> _Block:
    with _blocks_lock:
        block = _blocks.get((device, base))
        if block is None:
            block = _blocks[(device, base)] = _Block()
        return block


def _foreign_base(backend, device: int, ptr: int, obj):
    own = allocation_holding(backend.name, device, ptr) if ptr else None
    if own is not None:  # gpu_native's own memory, wrapped by another library and passed back
        return own
    allocation_range = getattr(backend, "allocation_range", None)
    found = allocation_range(ptr) if allocation_range is not None and ptr else None
    return obj if found is None else _block(device, found[0])


def _check_memory(backend, ptr: int, shape: tuple[int, ...], itemsize: int, what: str) -> int:
    """Check a foreign array's claim about its memory; return the device that owns it.

    The claim must name device memory, wholly inside one allocation, with a sane shape: the
    kernel's bounds checks guard exactly this extent, so a false one would let it touch memory
    anywhere."""
    if any(n < 0 for n in shape):
        raise ValueError(f"{what} has a negative dimension in its shape {shape}")
    nbytes = (int(np.prod(shape)) if shape else 1) * itemsize
    if not ptr:
        if nbytes:
            raise TypeError(f"{what} has a null data pointer but {nbytes} bytes of elements")
        return 0
    device = backend.pointer_device(ptr)
    if device is None:
        raise TypeError(f"{what} is not in device memory")
    allocation_range = getattr(backend, "allocation_range", None)
    if allocation_range is not None and nbytes:
        found = allocation_range(ptr)
        if found is None:
            raise TypeError(f"{what} does not point into a device allocation")
        base, size = found
        if ptr + nbytes > base + size:
            raise ValueError(f"{what} claims {nbytes} bytes at {ptr:#x}, past the end of its "
                             f"device allocation ({base + size - ptr} bytes remain)")
    return device


def _element_strides(shape, strides, itemsize: int, what: str) -> tuple[int, ...] | None:
    """Byte ``strides`` as element strides (None for a C-contiguous array); a stride that is
    not a whole number of elements is a ``ValueError``."""
    if _contiguous(shape, strides, itemsize):
        return None
    if len(strides) != len(shape) or any(int(s) % itemsize for s in strides):
        raise ValueError(f"{what} has strides {tuple(strides)} (bytes) that are not multiples "
                         f"of its itemsize {itemsize}; pass a contiguous copy")
    return tuple(int(s) // itemsize for s in strides)


def _check_aligned(ptr: int, info, what: str) -> None:
    """A foreign array's first element must be aligned as its type is in CUDA: a kernel's load
    of a misaligned element is a misaligned-address fault (sticky: the context is lost), and
    the simulator refuses what a GPU could not run."""
    align = getattr(info, "align", None) or info.itemsize
    if ptr % align:
        raise ValueError(f"{what} is at address {ptr:#x}, not aligned to {align} bytes as an "
                         f"array of {info.name} must be; pass an aligned copy of it")


def _check_view(backend, ptr: int, shape, strides, itemsize: int, what: str) -> int:
    """:func:`_check_memory` for every element a (possibly strided) view reaches."""
    if strides is None:
        return _check_memory(backend, ptr, shape, itemsize, what)
    lo, hi = element_span(shape, strides)
    return _check_memory(backend, ptr + lo * itemsize, (hi - lo + 1,), itemsize, what)


def _from_cai(obj, cai: dict, what: str, backend) -> DeviceArray:
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    info = element_info(dtype)
    if not 1 <= len(shape) <= 3:
        raise ValueError(f"{what} has {len(shape)} dimensions; kernels take 1 to 3")
    # A non-contiguous view (a transpose, a step slice) keeps its strides: a Strided parameter
    # takes it, a contiguous one refuses it at the launch.
    strides = _element_strides(shape, cai.get("strides"), dtype.itemsize, what)
    ptr, readonly = cai["data"]
    ptr = int(ptr or 0)
    _check_aligned(ptr, info, what)
    device = _check_view(backend, ptr, shape, strides, dtype.itemsize, what)
    return DeviceArray(backend, device, ptr, shape, info, obj,
                       _foreign_base(backend, device, ptr, obj), writable=not readonly,
                       strides=strides)


def _dlpack_capsule(obj, stream):
    """``obj.__dlpack__`` asked for DLPack 1.0, or unversioned from a producer that predates
    the ``max_version`` keyword."""
    try:
        return obj.__dlpack__(stream=stream, max_version=DLPACK_VERSION)
    except TypeError:
        return obj.__dlpack__(stream=stream)


def open_capsule(capsule, what: str) -> tuple[ctypes.Structure, DLTensor, bool]:
    """Take ownership of a DLPack capsule: ``(managed tensor, its DLTensor, read-only)``.

    The capsule is renamed ``used_...`` (so its destructor leaves the tensor to us) only once
    the tensor is known to be one we can read."""
    if _capsule_is_valid(capsule, _VERSIONED_NAME):
        address = _capsule_pointer(capsule, _VERSIONED_NAME)
        managed: ctypes.Structure = DLManagedTensorVersioned.from_address(address)
        major, minor = managed.version.major, managed.version.minor
        if major > DLPACK_VERSION[0]:
            raise TypeError(f"{what} is a DLPack {major}.{minor} tensor; gpu_native reads "
                            f"DLPack {DLPACK_VERSION[0]}.x")
        _capsule_set_name(capsule, b"used_dltensor_versioned")
        return managed, managed.dl_tensor, bool(managed.flags & FLAG_READ_ONLY)
    if _capsule_is_valid(capsule, _LEGACY_NAME):
        managed = DLManagedTensor.from_address(_capsule_pointer(capsule, _LEGACY_NAME))
        _capsule_set_name(capsule, b"used_dltensor")
        return managed, managed.dl_tensor, False
    raise TypeError(f"{what} gave a DLPack capsule gpu_native cannot read")


def _from_dlpack(obj, what: str, backend, consumer=None) -> DeviceArray:
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"{what} has neither __cuda_array_interface__ nor __dlpack__")
    device_type, device_id = obj.__dlpack_device__()
    if device_type != _KDL_CUDA:
        raise TypeError(f"{what} is not in CUDA device memory (DLPack device type "
                        f"{device_type}); copy it with gn.to_device()")
    stream = -1  # no consumer named: the caller orders the work itself
    if SYNC and consumer is not None and consumer.device == device_id:
        stream = _dlpack_stream_of(consumer)
    capsule = _dlpack_capsule(obj, stream)
    managed, t, readonly = open_capsule(capsule, what)
    owner = _DLPackOwner(capsule, managed, obj)
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    code, bits = t.dtype.code, t.dtype.bits
    name = _DL_NAMES.get((code, bits)) if t.dtype.lanes == 1 else None
    if name is None:
        raise TypeError(f"{what} has a DLPack dtype (code {code}, {bits} bits, "
                        f"{t.dtype.lanes} lanes) gpu_native does not support")
    info = element_info(name)
    strides = None if not t.strides else tuple(t.strides[i] * info.itemsize for i in range(ndim))
    if not 1 <= ndim <= 3:
        raise ValueError(f"{what} has {ndim} dimensions; kernels take 1 to 3")
    strides = _element_strides(shape, strides, info.itemsize, what)
    ptr = (t.data or 0) + t.byte_offset
    if t.device.device_type != _KDL_CUDA:
        raise TypeError(f"{what} said it is in CUDA memory, but its DLPack tensor is not "
                        f"(device type {t.device.device_type})")
    _check_aligned(ptr, info, what)
    device = _check_view(backend, ptr, shape, strides, info.itemsize, what)
    return DeviceArray(backend, device, ptr, shape, info, owner,
                       _foreign_base(backend, device, ptr, obj), writable=not readonly,
                       strides=strides)


def is_host_dlpack(obj) -> bool:
    """Whether ``obj`` exports DLPack from host memory (``kDLCPU``)."""
    try:
        return hasattr(obj, "__dlpack__") and obj.__dlpack_device__()[0] == _KDL_CPU
    except Exception:
        return False


def _lend_host(obj, what: str, backend) -> DeviceArray:
    """A host array as simulator device memory, without a copy (writes land in ``obj``)."""
    if isinstance(obj, np.ndarray):
        host = obj
    elif is_host_dlpack(obj):
        try:
            host = np.from_dlpack(obj)
        except Exception as exc:
            raise TypeError(f"{what} could not be read through DLPack: {exc}") from None
    elif hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__"):
        raise TypeError(f"{what} is a CUDA array from another library, but kernels run on the "
                        "CPU simulator (no GPU); pass a CPU array (a CPU tensor) or a gpu_native "
                        "array (gn.to_device)")
    else:
        raise TypeError(f"{what} must be an array, not {type(obj).__name__}")
    info = element_info(host.dtype)
    shape = host.shape or (1,)
    if not 1 <= len(shape) <= 3:
        raise ValueError(f"{what} has {len(shape)} dimensions; kernels take 1 to 3")
    _check_aligned(host.ctypes.data, info, what)
    contiguous = bool(host.flags.c_contiguous)
    strides = () if contiguous else (
        _element_strides(host.shape, host.strides, host.itemsize, what) or ())
    lo, hi = element_span(host.shape, strides) if strides else (0, host.size - 1)
    # A view of a simulated device array's own buffer (np.from_dlpack(a), passed back) is that
    # array's memory: at its simulated address, with its allocation as the launch base, so that
    # a launch sees the two overlap (and the race detector the same elements).
    first = host.ctypes.data + lo * host.itemsize
    address = backend.memory.simulated_address(first, max(hi - lo + 1, 0) * host.itemsize) \
        if host.size else None
    if address is not None:
        alloc = allocation_holding(backend.name, 0, address)
        if alloc is not None:
            return DeviceArray(backend, 0, address - lo * host.itemsize, shape, info,
                               (alloc, obj), alloc, writable=bool(host.flags.writeable),
                               strides=strides or None)
    if contiguous:
        loan = _Loan(backend.memory, host, obj)
        return DeviceArray(backend, 0, loan.address, shape, info, loan, _LENT,
                           writable=bool(host.flags.writeable))
    # A strided view (t[..., 0], x[::2], t.T): the bytes from its lowest element to the end of
    # its highest are lent, and the view is made over them, as a CUDA one would be.
    lowest = host[tuple(slice(n - 1, n) if s < 0 else slice(0, 1)
                        for n, s in zip(host.shape, strides))].reshape(1)
    span = np.lib.stride_tricks.as_strided(lowest, (hi - lo + 1,), (host.itemsize,))
    loan = _Loan(backend.memory, span.view(np.uint8), obj)
    return DeviceArray(backend, 0, loan.address - lo * host.itemsize, shape, info, loan, _LENT,
                       writable=bool(host.flags.writeable), strides=strides)
