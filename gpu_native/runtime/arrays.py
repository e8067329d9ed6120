"""Device arrays: ``gn.to_device``, ``gn.empty``, ``gn.zeros`` and :class:`DeviceArray`.

A ``DeviceArray`` is a C-contiguous block of device memory with a shape and an element type: a
scalar type, or a vector type (``vec3f`` ...), whose components the host sees as a last axis of
its own (an array of ``n`` ``vec3f`` comes back from :meth:`DeviceArray.to_host` as an ``(n, 3)``
``float32`` array, and ``gn.to_device(a, dtype=gn.vec3f)`` takes one).  Views
(``a[10:20]``, ``a[3]`` of a 2-D array, ``a.reshape(...)``, ``a.readonly()``) share the memory.
Arrays export ``__cuda_array_interface__`` (v3) and DLPack, and foreign CUDA arrays (CuPy,
PyTorch, Numba) are accepted by launches and by :func:`to_device` without a copy.

Memory is freed in stream order when the last array using it is gone, after all work already
queued on the device (see ``CudaBackend.free``), so dropping an array right after an asynchronous
launch that uses it is safe.
"""

from __future__ import annotations

import math
import operator
import struct
import threading
from typing import Any

import numpy as np

from .. import abi
from ..lang.halfprec import bf16_bits_to_f32, f32_to_bf16_bits
from ..lang.types import ScalarInfo, VectorInfo, element_info, scalar_info
from ..tracebacks import boundary
from . import backend as B
from .devices import current_device, on_device
from .records import raise_pending

_sig_lock = threading.Lock()
_signatures: dict[tuple, Signature] = {}


# The packed parameters of a 1-, 2- and 3-D array (see DeviceArray.launch_args).
_ARGS = {ndim: struct.Struct("<" + abi.POINTER_FORMAT + abi.EXTENT_FORMAT * ndim)
         for ndim in (1, 2, 3)}


class Signature:
    """An interned token for (backend, device, scalar type, ndim, wide).

    A launcher's fast path accepts an array with one identity test: ``a.launch_sig is sig`` for
    a read-only parameter, ``a.launch_sig_mut is sig`` for a writable one (``launch_sig_mut`` is
    None on a read-only view).  Everything an argument check needs is in the token.  ``wide`` marks an array
    of more than ``abi.INDEX32_MAX_ELEMENTS`` elements: fast paths only take the others, so a
    kernel's 32-bit index entry point never sees one (the checked path runs the main one).
    """

    __slots__ = ("backend", "device", "dtype", "ndim", "wide")

    def __init__(self, backend: str, device: int, dtype: str, ndim: int, wide: bool = False):
        self.backend, self.device, self.dtype, self.ndim = backend, device, dtype, ndim
        self.wide = wide

    def __repr__(self) -> str:
        wide = ", wide" if self.wide else ""
        return f"<signature {self.dtype}[{self.ndim}D{wide}] on {self.backend}:{self.device}>"


def signature(backend: str, device: int, dtype: str, ndim: int, wide: bool = False) -> Signature:
    key = (backend, device, dtype, ndim, wide)
    sig = _signatures.get(key)
    if sig is None:
        with _sig_lock:
            sig = _signatures.setdefault(key, Signature(*key))
    return sig


class Allocation:
    """Owns device memory; frees it (stream-ordered) when the last array using it is gone."""

    __slots__ = ("__weakref__", "backend", "device", "nbytes", "ptr")

    def __init__(self, backend, device: int, nbytes: int):
        self.backend = backend
        self.device = device
        self.nbytes = nbytes
        self.ptr = backend.alloc(nbytes, device)

    def __del__(self) -> None:
        try:
            self.backend.free(self.ptr, self.device)
        except Exception:  # pragma: no cover - interpreter shutdown, lost context
            pass


class DeviceArray:
    """An array in device memory.  Create one with :func:`to_device`, :func:`empty` or
    :func:`zeros`; pass it to kernels; read it back with :meth:`to_host`.

    Launch protocol
    ---------------
    The launchers the rewrite generates (``gpu-native expand`` shows them) read four attributes
    of an array, fixed when the array (or view) is made; they are not to be assigned:

    ``launch_args``
        The kernel parameters the array passes, packed: its device address (``u64``), then one
        ``i64`` extent per dimension (see :mod:`gpu_native.abi`).
    ``launch_sig``
        An interned :class:`Signature` of (backend, device, element type, ndim, wide): a
        launcher accepts the array for a read-only parameter with one identity test.
    ``launch_sig_mut``
        The same signature when the array is writable, None on a read-only view: the test for a
        ``CUDASliceMut`` parameter.
    ``launch_base``
        The allocation the memory belongs to: arrays of different bases cannot overlap, which
        is all a launcher's fast path checks (the checked path compares addresses).
    """

    __slots__ = ("__weakref__", "_backend", "_gn_ptr", "_info", "_owner", "device", "dtype",
                 "launch_args", "launch_base", "launch_sig", "launch_sig_mut", "shape")

    def __init__(self, backend, device: int, ptr: int, shape: tuple[int, ...],
                 info: ScalarInfo | VectorInfo, owner: Any, base: Any, writable: bool = True):
        if not 1 <= len(shape) <= 3:
            raise ValueError(f"device arrays have 1 to 3 dimensions, not {len(shape)}")
        self._backend = backend
        self.device = device
        self._gn_ptr = ptr
        self.shape = tuple(int(s) for s in shape)
        self._info = info
        self.dtype = info.dtype
        self._owner = owner
        self.launch_base = base
        # The kernel parameters this array passes (its address, then its extents), packed once:
        # a launcher's fast path copies them into its argument buffer as they are.
        self.launch_args = _ARGS[len(self.shape)].pack(ptr, *self.shape)
        sig = signature(backend.name, device, info.name, len(self.shape),
                        math.prod(self.shape) > abi.INDEX32_MAX_ELEMENTS)
        self.launch_sig = sig
        self.launch_sig_mut = sig if writable else None

    # ---- properties -----------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._info.itemsize

    @property
    def scalar_type(self) -> type:
        """The gpu_native type of the elements (``gn.f32``, ..., ``gn.vec3f``, ...)."""
        from ..lang.types import SCALAR_CLASSES, VECTOR_CLASSES

        return {**SCALAR_CLASSES, **VECTOR_CLASSES}[self._info.name]

    @property
    def scalar_info(self) -> ScalarInfo:
        """The scalar type of the elements, or of their components for an array of vectors
        (for an array of structs, the struct's :class:`~gpu_native.lang.structs.StructInfo`,
        whose ``dtype`` is the host array's)."""
        info = self._info
        return info.elem if isinstance(info, VectorInfo) else info

    @property
    def host_shape(self) -> tuple[int, ...]:
        """The shape of :meth:`to_host`'s array: :attr:`shape`, and for an array of vectors a
        last axis of their length."""
        info = self._info
        return (*self.shape, info.n) if isinstance(info, VectorInfo) else self.shape

    @property
    def is_writable(self) -> bool:
        """False for a view made with :meth:`readonly` (it cannot bind to ``CUDASliceMut``)."""
        return self.launch_sig_mut is not None

    @property
    def ptr(self) -> int:
        """The device address of the first element."""
        return self._gn_ptr

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        flag = "" if self.is_writable else ", read-only"
        return (f"<gpu_native.DeviceArray shape={self.shape} dtype={self._info.name} "
                f"device={self._backend.name}:{self.device}{flag}>")

    # ---- views ---------------------------------------------------------------------------------

    def _view(self, offset_elems: int, shape: tuple[int, ...], writable: bool | None = None
              ) -> DeviceArray:
        return DeviceArray(self._backend, self.device,
                           self._gn_ptr + offset_elems * self._info.itemsize, shape, self._info,
                           self._owner, self.launch_base,
                           self.is_writable if writable is None else writable)

    @boundary
    def __getitem__(self, key):
        if isinstance(key, tuple):
            if len(key) != 1:
                raise IndexError("device arrays support indexing and slicing along the first "
                                 "axis only; use to_host() for general indexing")
            key = key[0]
        n = self.shape[0]
        row = math.prod(self.shape[1:])
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise ValueError("device array views must be contiguous: slices with a step are "
                                 "not supported")
            length = max(0, stop - start)
            return self._view(start * row, (length, *self.shape[1:]))
        try:
            i = int(key.__index__())
        except AttributeError:
            raise TypeError(f"device arrays are indexed by integers or slices, not "
                            f"{type(key).__name__}") from None
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"index {key} is out of bounds for axis 0 with size {n}")
        if self.ndim > 1:
            return self._view(i * row, self.shape[1:])
        return self._view(i, (1,)).to_host()[0]

    @boundary
    def reshape(self, *shape: int) -> DeviceArray:
        """A view with another shape (same number of elements, row-major); one dimension may
        be -1, meaning whatever the others leave."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        try:
            shape = tuple(operator.index(s) for s in shape)
        except TypeError:
            raise TypeError(f"reshape takes integer dimensions, not {shape!r}") from None
        if any(s < -1 for s in shape):
            raise ValueError(f"cannot reshape into {shape}: dimensions must not be negative "
                             "(only one may be -1, for the one inferred)")
        if shape.count(-1) > 1:
            raise ValueError(f"cannot reshape into {shape}: only one dimension may be -1")
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape an array of {self.size} elements into {shape}")
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape an array of {self.size} elements into {shape}")
        return self._view(0, shape)

    def readonly(self) -> DeviceArray:
        """A read-only view: launches refuse to bind it to a ``CUDASliceMut`` parameter."""
        return self._view(0, self.shape, writable=False)

    # ---- copies --------------------------------------------------------------------------------

    @boundary
    def to_host(self, stream=None) -> np.ndarray:
        """Copy to a new NumPy array.  A synchronisation point: waits for the device's work and
        raises any error a kernel reported (``KernelIndexError`` ...).  bf16 arrays come back as
        float32."""
        if self.device != current_device():  # copies are ordered on the array's own device
            with on_device(self.device):
                return self.to_host(stream)
        if stream is not None:
            from .streams import as_stream

            as_stream(stream).synchronize()
        out = np.empty(self.host_shape, dtype=self.scalar_info.dtype)
        self._backend.copy_dtoh(out, self._gn_ptr)
        raise_pending(None)
        if self._info.name == "bf16":
            return bf16_bits_to_f32(out).reshape(self.shape)
        return out

    def _check_writable(self, what: str) -> None:
        if not self.is_writable:
            raise TypeError(f"cannot {what} a read-only view (made with readonly()); write to "
                            "the array it was made from")

    @boundary
    def copy_from_host(self, host) -> None:
        """Overwrite this array with the contents of a host array of the same shape.

        Raises ``TypeError`` for a read-only view."""
        self._check_writable("copy into")
        if self.device != current_device():
            with on_device(self.device):
                return self.copy_from_host(host)
        data = _host_data(host, self.scalar_info)
        if data.shape != self.host_shape:
            what = "" if data.shape == self.shape else (
                f" ({self._info.name} elements: a last axis of {self._info.n})"
                if isinstance(self._info, VectorInfo) else "")
            raise ValueError(f"shape mismatch: array is {self.host_shape}{what}, data is "
                             f"{data.shape}")
        self._backend.copy_htod(self._gn_ptr, data)

    @boundary
    def fill(self, value) -> None:
        """Set every element to ``value``.  Raises ``TypeError`` for a read-only view."""
        self._check_writable("fill")
        info = self.scalar_info
        self.copy_from_host(np.full(self.host_shape, value, dtype=np.float32 if
                                    info.name == "bf16" else info.dtype))

    @boundary
    def copy(self) -> DeviceArray:
        """A new array with the same contents, on the same device."""
        if self.device != current_device():
            with on_device(self.device):
                return self.copy()
        out = empty(self.shape, self._info.name)
        self._backend.copy_dtod(out._gn_ptr, self._gn_ptr, self.nbytes)
        return out

    @boundary
    def to(self, device) -> DeviceArray:
        """This array on ``device`` (a ``gn.Device`` or an ordinal): the array itself if it
        lives there already, else a copy, peer to peer where the GPUs allow it and staged through
        host memory where they do not (see ``gn.copy``)."""
        from .peer import move

        return move(self, device)

    # ---- interoperability ----------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        if self._backend.name != "cuda":
            raise AttributeError("simulator arrays live in host memory and have no CUDA array "
                                 "interface")
        dtype = self.scalar_info.dtype
        extra = {"descr": dtype.descr} if dtype.names is not None else {}
        return {
            **extra,
            "shape": self.host_shape,
            "typestr": dtype.str,
            "data": (self._gn_ptr, not self.is_writable),
            "version": 3,
            "strides": None,
            # Work is queued on the legacy default stream or blocking streams; a consumer that
            # waits on the legacy stream sees it complete.
            "stream": 1,
        }

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .interop import to_dlpack

        return to_dlpack(self, stream=stream, max_version=max_version)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._backend.name != "cuda":
            return (1, 0)  # kDLCPU: the simulator's memory is host memory
        return (2, self.device)  # kDLCUDA

    def __reduce__(self):
        raise TypeError("a DeviceArray cannot be pickled: its memory lives on one GPU of one "
                        "process; send arr.to_host() (a NumPy array) and call gn.to_device() on "
                        "the other side")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a DeviceArray is in device memory; call .to_host() to get a NumPy array")


def _resolve_dtype(dtype) -> ScalarInfo | VectorInfo:
    return element_info(dtype)


def _host_data(obj, info: ScalarInfo) -> np.ndarray:
    if info.name == "bf16":
        arr = np.asarray(obj)
        if arr.dtype == np.uint16:
            return np.ascontiguousarray(arr)
        return np.ascontiguousarray(f32_to_bf16_bits(arr.astype(np.float32)).reshape(arr.shape))
    return np.ascontiguousarray(np.asarray(obj, dtype=info.dtype))


@boundary
def empty(shape, dtype=None) -> DeviceArray:
    """A new uninitialised device array on the current device (``dtype`` defaults to f32; a
    vector type such as ``gn.vec3f`` makes an array of ``shape`` vectors)."""
    info = _resolve_dtype("f32" if dtype is None else dtype)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    backend = B.select()
    device = current_device()
    alloc = Allocation(backend, device, math.prod(shape) * info.itemsize)
    return DeviceArray(backend, device, alloc.ptr, shape, info, alloc, alloc)


@boundary
def zeros(shape, dtype=None) -> DeviceArray:
    """A new device array of zeros."""
    out = empty(shape, dtype)
    out._backend.memset8(out._gn_ptr, 0, out.nbytes)
    return out


@boundary
def to_device(obj, dtype=None) -> DeviceArray:
    """Copy a host array (anything NumPy accepts) to the current device.

    A foreign CUDA array (CuPy, PyTorch, Numba: ``__cuda_array_interface__`` or DLPack) is wrapped
    without a copy instead, and a ``DeviceArray`` is returned as it is.

    ``dtype`` converts a host array to that element type.  A vector type (``gn.vec3f`` ...)
    takes an array whose last axis holds the components (``(n, 3)`` for ``n`` ``vec3f``s); a
    device array of the element's scalar type with such a last axis is seen as vectors without
    a copy.
    """
    want = None if dtype is None else _resolve_dtype(dtype)
    if isinstance(obj, DeviceArray) or hasattr(obj, "__cuda_array_interface__") or (
            hasattr(obj, "__dlpack_device__") and _is_cuda_dlpack(obj)):
        if isinstance(obj, DeviceArray):
            arr = obj
        else:
            from .interop import from_foreign

            arr = from_foreign(obj)
        if want is None or want.name == arr._info.name:
            return arr
        if isinstance(want, VectorInfo) and arr._info.name == want.elem.name:
            return _as_vectors(arr, want)
        raise TypeError(f"array is {arr._info.name}, not {want.name}; convert on the host or in "
                        "a kernel")
    if want is None:
        dtype = obj.dtype if isinstance(obj, (np.ndarray, np.generic)) else np.asarray(obj).dtype
        # A structured array is an array of structs of its own layout (a kernel parameter of
        # a @gpu_struct type checks the layout at the launch).
        info: ScalarInfo | VectorInfo = element_info(dtype) if dtype.names is not None else \
            scalar_info(dtype)
    else:
        info = want
    if isinstance(info, VectorInfo):
        data = _host_data(obj, info.elem)
        if data.ndim == 0 or data.shape[-1] != info.n:
            raise ValueError(f"an array of {info.name} is given as an array whose last axis "
                             f"holds the {info.n} components, not one of shape {data.shape}")
        shape = data.shape[:-1] or (1,)
    else:
        data = _host_data(obj, info)
        shape = data.shape or (1,)
    out = empty(shape, info.name)
    out._backend.copy_htod(out._gn_ptr, data)
    return out


def _as_vectors(arr: DeviceArray, info: VectorInfo) -> DeviceArray:
    """The same memory as an array of vectors: ``arr``'s last axis holds their components."""
    if arr.shape[-1] != info.n or arr.ndim < 2:
        raise ValueError(f"an array of {arr._info.name} with shape {arr.shape} is not an array "
                         f"of {info.name}: its last axis must hold the {info.n} components")
    if arr._gn_ptr % info.align:
        raise ValueError(f"this array's memory is not aligned to {info.align} bytes, as an "
                         f"array of {info.name} must be; copy it first")
    return DeviceArray(arr._backend, arr.device, arr._gn_ptr, arr.shape[:-1], info, arr._owner,
                       arr.launch_base, arr.is_writable)


def _is_cuda_dlpack(obj) -> bool:
    try:
        return obj.__dlpack_device__()[0] in (2, 3, 13)  # CUDA, CUDA host, CUDA managed
    except Exception:
        return False
