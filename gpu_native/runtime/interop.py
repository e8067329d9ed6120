"""Zero-copy exchange with CuPy, PyTorch, Numba and anything else speaking
``__cuda_array_interface__`` (v3) or DLPack.

Importing wraps the foreign memory in a :class:`~gpu_native.runtime.arrays.DeviceArray` that keeps
the foreign object alive.  Exporting through DLPack hands out a ``dltensor`` capsule whose deleter
releases our reference.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..lang.types import scalar_info
from . import backend as B
from .arrays import DeviceArray

# ---- DLPack structures (dlpack.h, the unversioned ABI every consumer accepts) --------------------


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


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _Deleter)]

_KDL_CPU, _KDL_CUDA = 1, 2
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_BOOL = 0, 1, 2, 4, 6

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

_exports: dict[int, tuple] = {}  # address of our DLManagedTensor -> what keeps it alive
_exports_lock = threading.Lock()


def _dl_dtype(info) -> DLDataType:
    if info.kind == "struct":
        raise TypeError("DLPack has no struct element type: an array of structs cannot be "
                        "exported through DLPack; use __cuda_array_interface__ (whose descr "
                        "lists the fields) or to_host()")
    code = {"int": _DL_INT, "uint": _DL_UINT, "float": _DL_FLOAT, "bool": _DL_BOOL}[info.kind]
    if info.name == "bf16":
        code = _DL_BFLOAT
    return DLDataType(code, info.bits, 1)


@_Deleter
def _delete_export(managed):
    address = ctypes.cast(managed, ctypes.c_void_p).value
    if address is None:  # NULL: not one of ours
        return
    with _exports_lock:
        _exports.pop(address, None)


# The destructor receives the dying capsule as a raw pointer: wrapping it in a py_object would
# take a new reference to an object whose reference count already reached zero.
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_raw_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule):
    # A capsule nobody consumed still owns its tensor; a consumed one was renamed.
    if _raw_is_valid(capsule, b"dltensor"):
        address = _raw_pointer(capsule, b"dltensor")
        with _exports_lock:
            _exports.pop(address, None)


def to_dlpack(arr: DeviceArray, stream=None, max_version=None):
    """Export ``arr`` as a DLPack capsule (no copy)."""
    backend = arr._backend
    if backend.name == "cuda" and stream not in (None, 0, 1, 2, -1):
        # The consumer works on another stream: make it wait for work queued so far.
        drv = backend.drv
        event = backend.event_create()
        backend.event_record(event, backend.default_stream(arr.device))
        backend.stream_wait_event(drv.CUstream(int(stream)), event)
        backend.event_destroy(event)
    managed = DLManagedTensor()
    dims = arr.host_shape  # an array of vectors exports its components on a last axis
    shape = (ctypes.c_int64 * len(dims))(*dims)
    tensor = managed.dl_tensor
    tensor.data = arr._gn_ptr
    if backend.name == "cuda":
        tensor.device = DLDevice(_KDL_CUDA, arr.device)
    else:
        tensor.device = DLDevice(_KDL_CPU, 0)
        buf, offset = backend.memory.locate(arr._gn_ptr, arr.nbytes)
        tensor.data = buf.ctypes.data + offset
    tensor.ndim = len(dims)
    tensor.dtype = _dl_dtype(arr.scalar_info)
    tensor.shape = shape
    tensor.strides = None
    tensor.byte_offset = 0
    managed.deleter = _delete_export
    address = ctypes.addressof(managed)
    with _exports_lock:
        _exports[address] = (managed, shape, arr)
    return _capsule_new(address, b"dltensor", ctypes.cast(_destroy_capsule, ctypes.c_void_p))


class _DLPackOwner:
    """Keeps an imported DLPack tensor alive; calls its deleter when our arrays are gone."""

    __slots__ = ("capsule", "managed", "source")

    def __init__(self, capsule, managed, source):
        self.capsule, self.managed, self.source = capsule, managed, source

    def __del__(self) -> None:
        try:
            if self.managed.deleter:
                self.managed.deleter(ctypes.pointer(self.managed))
        except Exception:  # pragma: no cover
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


def from_foreign(obj, what: str = "the array", wait_stream=None) -> DeviceArray:
    """Wrap a foreign CUDA array without copying (CUDA array interface first, then DLPack)."""
    backend = B.select()
    if backend.name != "cuda":
        raise TypeError(f"{what} is a CUDA array from another library, but kernels run on the "
                        "CPU simulator (no GPU); pass gpu_native arrays (gn.to_device)")
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(obj, cai, what, backend, wait_stream)
    return _from_dlpack(obj, what, backend)


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


def _from_cai(obj, cai: dict, what: str, backend, wait_stream) -> DeviceArray:
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    info = scalar_info(dtype)
    strides = cai.get("strides")
    if not _contiguous(shape, strides, dtype.itemsize):
        raise ValueError(f"{what} is not C-contiguous (strides {strides}); pass a contiguous "
                         "array (e.g. .contiguous() in PyTorch, cupy.ascontiguousarray)")
    if not 1 <= len(shape) <= 3:
        raise ValueError(f"{what} has {len(shape)} dimensions; kernels take 1 to 3")
    ptr, readonly = cai["data"]
    ptr = int(ptr or 0)
    device = _check_memory(backend, ptr, shape, dtype.itemsize, what)
    producer = cai.get("stream")
    if producer not in (None, 0) and wait_stream is not None:
        drv = backend.drv
        handle = {1: drv.CUstream(0), 2: drv.CUstream(2)}.get(producer, drv.CUstream(producer))
        event = backend.event_create()
        backend.event_record(event, handle)
        backend.stream_wait_event(wait_stream, event)
        backend.event_destroy(event)
    return DeviceArray(backend, device, ptr, shape, info, obj, obj, writable=not readonly)


def _from_dlpack(obj, what: str, backend) -> DeviceArray:
    device_type, _ = obj.__dlpack_device__()
    if device_type != _KDL_CUDA:
        raise TypeError(f"{what} is not in CUDA device memory (DLPack device type "
                        f"{device_type}); copy it with gn.to_device()")
    capsule = obj.__dlpack__(stream=None)
    if not _capsule_is_valid(capsule, b"dltensor"):
        raise TypeError(f"{what} gave a DLPack capsule gpu_native cannot read")
    address = _capsule_pointer(capsule, b"dltensor")
    managed = DLManagedTensor.from_address(address)
    _capsule_set_name(capsule, b"used_dltensor")
    t = managed.dl_tensor
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    code, bits = t.dtype.code, t.dtype.bits
    names = {(_DL_INT, 8): "i8", (_DL_INT, 16): "i16", (_DL_INT, 32): "i32", (_DL_INT, 64): "i64",
             (_DL_UINT, 8): "u8", (_DL_UINT, 16): "u16", (_DL_UINT, 32): "u32",
             (_DL_UINT, 64): "u64", (_DL_FLOAT, 16): "f16", (_DL_FLOAT, 32): "f32",
             (_DL_FLOAT, 64): "f64", (_DL_BFLOAT, 16): "bf16", (_DL_BOOL, 8): "bool_"}
    name = names.get((code, bits))
    owner = _DLPackOwner(capsule, managed, obj)
    if name is None:
        raise TypeError(f"{what} has a DLPack dtype (code {code}, {bits} bits) gpu_native does "
                        "not support")
    info = scalar_info(name)
    strides = None if not t.strides else tuple(t.strides[i] * info.itemsize for i in range(ndim))
    if not _contiguous(shape, strides, info.itemsize):
        raise ValueError(f"{what} is not C-contiguous; pass a contiguous array")
    ptr = (t.data or 0) + t.byte_offset
    if t.device.device_type != _KDL_CUDA:
        raise TypeError(f"{what} said it is in CUDA memory, but its DLPack tensor is not "
                        f"(device type {t.device.device_type})")
    device = _check_memory(backend, ptr, shape, info.itemsize, what)
    return DeviceArray(backend, device, ptr, shape, info, owner, owner)
