"""Device arrays: ``gn.to_device``, ``gn.empty``, ``gn.zeros`` and :class:`DeviceArray`.

A ``DeviceArray`` is a C-contiguous block of device memory with a shape and an element type: a
scalar type, or a vector type (``vec3f`` ...), whose components the host sees as a last axis of
its own (an array of ``n`` ``vec3f`` comes back from :meth:`DeviceArray.to_host` as an ``(n, 3)``
``float32`` array, and ``gn.to_device(a, dtype=gn.vec3f)`` takes one).  Views
(``a[10:20]``, ``a[3]`` of a 2-D array, ``a.reshape(...)``, ``a.view(gn.u32)``,
``a.readonly()``) share the memory.
Arrays export ``__cuda_array_interface__`` (v3) and DLPack (1.0), and foreign CUDA arrays (CuPy,
PyTorch, Numba) are accepted by launches, :func:`to_device` and :func:`from_dlpack` without a
copy, ordered after their producer's stream (see :mod:`.interop`).  On the simulator a foreign CPU
array (a CPU torch tensor) takes the place of a CUDA one.

Memory is freed in stream order when the last array using it is gone, after all work already
queued on the device (see ``CudaBackend.free``), so dropping an array right after an asynchronous
launch that uses it is safe.
"""

from __future__ import annotations

import bisect
import math
import operator
import struct
import threading
import weakref
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from .. import abi
from ..lang.halfprec import bf16_bits_to_f32, bf16_dtype
from ..lang.types import ComplexInfo, ScalarInfo, VectorInfo, element_info
from ..tracebacks import boundary
from . import backend as B
from .conversions import host_array, host_data
from .devices import current_device, on_device
from .records import raise_pending

_sig_lock = threading.Lock()
_signatures: dict[tuple, Signature] = {}


# The packed parameters of a 1-, 2- and 3-D array (see DeviceArray.launch_args), and of one
# bound to a Strided parameter (launch_args_strided: its element strides after its extents).
_ARGS = {ndim: struct.Struct("<" + abi.POINTER_FORMAT + abi.EXTENT_FORMAT * ndim)
         for ndim in (1, 2, 3)}
_STRIDED_ARGS = {ndim: struct.Struct("<" + abi.POINTER_FORMAT + abi.EXTENT_FORMAT * (2 * ndim))
                 for ndim in (1, 2, 3)}


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a C-contiguous (row-major) array of ``shape``."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether element ``strides`` lay ``shape`` out row-major (NumPy's rule: an axis of
    extent 1 may have any stride, and an empty array is contiguous)."""
    if 0 in shape:
        return True
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


def element_span(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """The lowest and highest element offset a view reaches, from its first element (0, -1 for
    an empty view)."""
    if 0 in shape:
        return 0, -1
    lo = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    hi = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
    return lo, hi


def self_overlaps(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether two index tuples of a view may name one element: sufficient test (no false
    negatives): with the axes of extent > 1 sorted by ``|stride|``, each stride must exceed
    the span of the axes inside it.  A stride of 0 (a broadcast) overlaps."""
    if 0 in shape:
        return False
    reach = 0
    for n, s in sorted(((n, abs(s)) for n, s in zip(shape, strides) if n > 1),
                       key=lambda t: t[1]):
        if s <= reach:
            return True
        reach += s * (n - 1)
    return False


class Signature:
    """An interned token for (backend, device, scalar type, ndim, wide).

    A launcher's fast path accepts an array with one identity test: ``a.launch_sig is sig`` for
    a read-only parameter, ``a.launch_sig_mut is sig`` for a writable one (``launch_sig_mut`` is
    None on a read-only view).  Everything an argument check needs is in the token.
    ``strided`` marks the signatures of Strided parameters (``launch_sig_strided``), and the
    ``launch_sig`` of a non-contiguous view, which no contiguous parameter has.  ``wide`` marks an array
    of more than ``abi.INDEX32_MAX_ELEMENTS`` elements: fast paths only take the others, so a
    kernel's 32-bit index entry point never sees one (the checked path runs the main one).
    """

    __slots__ = ("backend", "device", "dtype", "ndim", "strided", "wide")

    def __init__(self, backend: str, device: int, dtype: str, ndim: int, wide: bool = False,
                 strided: bool = False):
        self.backend, self.device, self.dtype, self.ndim = backend, device, dtype, ndim
        self.wide, self.strided = wide, strided

    def __repr__(self) -> str:
        flags = (", wide" if self.wide else "") + (", strided" if self.strided else "")
        return f"<signature {self.dtype}[{self.ndim}D{flags}] on {self.backend}:{self.device}>"


def signature(backend: str, device: int, dtype: str, ndim: int, wide: bool = False,
              strided: bool = False) -> Signature:
    key = (backend, device, dtype, ndim, wide, strided)
    sig = _signatures.get(key)
    if sig is None:
        with _sig_lock:
            sig = _signatures.setdefault(key, Signature(*key))
    return sig


class Allocation:
    """Owns device memory; frees it (stream-ordered) when the last array using it is gone.

    Every live allocation is registered by its address (:func:`allocation_holding`), so that
    another library's wrapper of the same memory (``torch.from_dlpack(a)`` passed back) gets
    the allocation as its ``launch_base`` and a launch compares the two arrays' bytes."""

    __slots__ = ("__weakref__", "backend", "device", "nbytes", "ptr")

    def __init__(self, backend, device: int, nbytes: int):
        self.backend = backend
        self.device = device
        self.nbytes = nbytes
        self.ptr = backend.alloc(nbytes, device)
        _register(self)

    def __del__(self) -> None:
        try:
            _unregister(self)
            self.backend.free(self.ptr, self.device)
        except Exception:  # pragma: no cover - interpreter shutdown, lost context
            pass


# The live allocations of each (backend, device): their start addresses, sorted, and each one's
# allocation by (backend name, device, start).
_registry_lock = threading.Lock()
_starts: dict[tuple[str, int], list[int]] = {}
_allocations: dict[tuple[str, int, int], weakref.ref] = {}


def _register(alloc: Allocation) -> None:
    where = (alloc.backend.name, alloc.device)
    with _registry_lock:
        bisect.insort(_starts.setdefault(where, []), alloc.ptr)
        _allocations[(where[0], where[1], alloc.ptr)] = weakref.ref(alloc)


def _unregister(alloc: Allocation) -> None:
    where = (alloc.backend.name, alloc.device)
    with _registry_lock:
        ref = _allocations.get((where[0], where[1], alloc.ptr))
        if ref is None or ref() not in (alloc, None):
            return  # the address already belongs to a newer allocation
        del _allocations[(where[0], where[1], alloc.ptr)]
        starts = _starts[where]
        del starts[bisect.bisect_left(starts, alloc.ptr)]


def allocation_holding(backend_name: str, device: int, ptr: int) -> Allocation | None:
    """The live gpu_native allocation of ``device`` that holds address ``ptr``, or None."""
    with _registry_lock:
        starts = _starts.get((backend_name, device))
        i = bisect.bisect_right(starts, ptr) - 1 if starts else -1
        ref = _allocations.get((backend_name, device, starts[i])) if i >= 0 and starts else None
    alloc = ref() if ref is not None else None
    if alloc is None or not alloc.ptr <= ptr < alloc.ptr + max(alloc.nbytes, 1):
        return None
    return alloc


if TYPE_CHECKING:
    # Type checkers take a device array to be an argument for any array parameter
    # (``CUDASlice[f32]``, ``CUDASliceMut2D[i32]`` ...); the launch checks its element type,
    # dimensions and writability.
    from ..lang.params import AnyArray as _ArrayBase
else:
    _ArrayBase = object


# DeviceArray.__init__ sets its fields through object's __setattr__: the class refuses every
# other assignment (see DeviceArray.__setattr__); reads stay plain slot reads, as the launchers
# need them.
_set = object.__setattr__


class DeviceArray(_ArrayBase):
    """An array in device memory.  Create one with :func:`to_device`, :func:`empty` or
    :func:`zeros`; pass it to kernels; read it back with :meth:`to_host`.

    Launch protocol
    ---------------
    The launchers the rewrite generates (``gpu-native expand`` shows them) read these attributes
    of an array, fixed when the array (or view) is made; like every field of an array, they
    cannot be assigned (``AttributeError``), and no launcher reads any other:

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
        is all a launcher's fast path checks (the checked path compares addresses, and tells
        interleaved views of one allocation apart byte by byte).
    ``launch_ptr``
        The device address of the first element (:attr:`ptr`), which a launcher tests where a
        kernel's proof of a 16-byte access rests on the address's alignment (``address(a) % 16
        == 0`` in ``gpu-native expand``).
    ``launch_args_strided``, ``launch_sig_strided``, ``launch_sig_strided_mut``
        The same for a ``Strided`` parameter: the packed parameters add one ``i64`` element
        stride per dimension; the signatures are set on every array, contiguous or not, and
        ``launch_sig_strided_mut`` is None on a read-only view and on one whose elements
        overlap (a broadcast stride of 0, say), which no writable parameter may take.

    A non-contiguous view (``a.T``, ``a[:, ::2]``) has signatures no contiguous parameter has:
    a launch binding it to one takes the checked path, which raises ``TypeError``.
    """

    __slots__ = ("__weakref__", "_backend", "_info", "_is_writable", "_owner",
                 "device", "dtype", "is_contiguous", "launch_args", "launch_args_strided",
                 "launch_base", "launch_ptr", "launch_sig", "launch_sig_mut", "launch_sig_strided",
                 "launch_sig_strided_mut", "shape", "strides")
    # The fields, each set once by __init__ (see __setattr__).
    _backend: Any
    device: int
    launch_ptr: int
    shape: tuple[int, ...]
    _info: ScalarInfo | VectorInfo
    dtype: np.dtype
    _owner: Any
    launch_base: Any
    _is_writable: bool
    strides: tuple[int, ...]
    is_contiguous: bool
    launch_args: bytes
    launch_args_strided: bytes
    launch_sig: Signature
    launch_sig_mut: Signature | None
    launch_sig_strided: Signature
    launch_sig_strided_mut: Signature | None

    def __init__(self, backend, device: int, ptr: int, shape: tuple[int, ...],
                 info: ScalarInfo | VectorInfo, owner: Any, base: Any, writable: bool = True,
                 strides: tuple[int, ...] | None = None):
        ndim = len(shape)
        if not 1 <= ndim <= 3:
            raise ValueError(f"device arrays have 1 to 3 dimensions, not {ndim}")
        _set(self, "_backend", backend)
        _set(self, "device", device)
        _set(self, "launch_ptr", ptr)
        shape = tuple(int(s) for s in shape)
        _set(self, "shape", shape)
        _set(self, "_info", info)
        _set(self, "dtype", info.dtype)
        _set(self, "_owner", owner)
        _set(self, "launch_base", base)
        _set(self, "_is_writable", writable)
        contiguous = strides is None or is_c_contiguous(shape, strides)
        strides = c_strides(shape) if contiguous else tuple(int(s) for s in strides or ())
        _set(self, "strides", strides)
        _set(self, "is_contiguous", contiguous)
        size = math.prod(shape)
        if not size or size * info.itemsize > _MAX_BYTES:
            _check_span(shape, info)
        # The kernel parameters this array passes (its address, then its extents), packed once:
        # a launcher's fast path copies them into its argument buffer as they are.
        try:
            _set(self, "launch_args", _ARGS[ndim].pack(ptr, *shape))
            _set(self, "launch_args_strided", _STRIDED_ARGS[ndim].pack(ptr, *shape, *strides))
        except struct.error:  # a foreign view's stride beyond 64 bits
            raise ValueError(f"an array of shape {shape} and element strides {strides} cannot "
                             "be passed to kernels: its strides do not fit 64 bits") from None
        wide = size > abi.INDEX32_MAX_ELEMENTS
        strided = signature(backend.name, device, info.name, ndim, wide, strided=True)
        sig = signature(backend.name, device, info.name, ndim, wide) if contiguous else strided
        _set(self, "launch_sig", sig)
        _set(self, "launch_sig_mut", sig if writable else None)
        _set(self, "launch_sig_strided", strided)
        _set(self, "launch_sig_strided_mut", strided if writable and (
            contiguous or not self_overlaps(shape, strides)) else None)

    def __setattr__(self, name: str, value: Any) -> None:
        # An array's shape, type, address and launch parameters are fixed when it is made: a
        # shape assigned afterwards would let bounds checks pass past the allocation's end.
        raise AttributeError(f"DeviceArray.{name} cannot be assigned: an array's shape, dtype, "
                             "strides and device are fixed when it is made (make a view with "
                             "reshape(), view(), transpose() or slicing instead)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"DeviceArray.{name} cannot be deleted")

    # ---- properties -----------------------------------------------------------------------

    # For type checkers an array is also every parameter class (``AnyArray``), whose ``ndim`` is
    # a class attribute; an array's own is this property.
    @property
    def ndim(self) -> int:  # type: ignore[override]
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._info.itemsize

    @property
    def scalar_type(self) -> type:
        """The gpu_native type of the elements (``gn.f32``, ..., ``gn.vec3f``, ...).  An array
        of structs has none (a ``TypeError``): its :attr:`scalar_info` describes them."""
        from ..lang.types import COMPLEX_CLASSES, SCALAR_CLASSES, VECTOR_CLASSES

        found = {**SCALAR_CLASSES, **VECTOR_CLASSES, **COMPLEX_CLASSES}.get(self._info.name)
        if found is None:
            title = getattr(self._info, "title", self._info.name)
            raise TypeError(f"an array of structs ({title}) has no scalar_type: its "
                            "scalar_info describes the struct, and dtype its NumPy dtype")
        return found

    @property
    def scalar_info(self) -> ScalarInfo | ComplexInfo:
        """The type of the host array's elements: the elements' own (a scalar or complex type),
        or their components' for an array of vectors (for an array of structs, the struct's
        :class:`~gpu_native.lang.structs.StructInfo`, whose ``dtype`` is the host array's)."""
        info = self._info
        if _is_vector(info):
            return info.elem
        assert not isinstance(info, VectorInfo) or isinstance(info, ComplexInfo)
        return info  # a scalar, complex or struct info

    @property
    def host_shape(self) -> tuple[int, ...]:
        """The shape of :meth:`to_host`'s array: :attr:`shape`, and for an array of vectors a
        last axis of their length."""
        info = self._info
        return (*self.shape, info.n) if _is_vector(info) else self.shape

    @property
    def is_writable(self) -> bool:
        """False for a view made with :meth:`readonly` (it cannot bind to ``CUDASliceMut``)."""
        return self._is_writable

    @property
    def byte_strides(self) -> tuple[int, ...]:
        """The strides in bytes, as NumPy's ``strides``."""
        size = self._info.itemsize
        return tuple(s * size for s in self.strides)

    def byte_range(self) -> tuple[int, int]:
        """The device addresses ``[start, end)`` that the view's elements lie in (empty for an
        empty view)."""
        lo, hi = element_span(self.shape, self.strides)
        size = self._info.itemsize
        return self.launch_ptr + lo * size, self.launch_ptr + (hi + 1) * size

    def byte_layout(self) -> tuple[int, tuple[int, ...], tuple[int, ...], int]:
        """``(address, shape, byte strides, element size)``: the bytes the view's elements
        occupy, as :func:`gpu_native.runtime.disjoint.may_share_bytes` takes them."""
        return self.launch_ptr, self.shape, self.byte_strides, self._info.itemsize

    @property
    def ptr(self) -> int:
        """The device address of the first element."""
        return self.launch_ptr

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        flag = "" if self.is_writable else ", read-only"
        return (f"<gpu_native.DeviceArray shape={self.shape} dtype={self._info.name} "
                f"device={self._backend.name}:{self.device}{flag}>")

    # ---- views ---------------------------------------------------------------------------------

    def _view(self, offset_elems: int, shape: tuple[int, ...], writable: bool | None = None,
              strides: tuple[int, ...] | None = None) -> DeviceArray:
        return DeviceArray(self._backend, self.device,
                           self.launch_ptr + offset_elems * self._info.itemsize, shape, self._info,
                           self._owner, self.launch_base,
                           self.is_writable if writable is None else writable,
                           None if strides is None else strides)

    @boundary
    def __getitem__(self, key):
        """Basic indexing, as NumPy's: integers and slices (any step, negative too) per axis,
        ``...``; a view that shares the memory (strided where the slices have steps or skip
        part of an inner axis).  An integer for every axis reads one element to the host."""
        if self.is_contiguous and key.__class__ is slice and key.step is None:
            # The common a[i:j] of a contiguous array, kept quick: a contiguous view.
            start, stop, _ = _slice_indices(key, self.shape[0], 0)
            return self._view(start * self.strides[0], (max(0, stop - start), *self.shape[1:]))
        if key.__class__ is int and self.ndim > 1 and self.is_contiguous and (
                0 <= key < self.shape[0]):
            return self._view(key * self.strides[0], self.shape[1:])  # a row: contiguous
        keys = list(key) if isinstance(key, tuple) else [key]
        if any(k is Ellipsis for k in keys):
            at = keys.index(Ellipsis)
            if Ellipsis in keys[at + 1:]:
                raise IndexError("an index can only have a single ellipsis ('...')")
            keys[at:at + 1] = [slice(None)] * (self.ndim - len(keys) + 1)
        if len(keys) > self.ndim:
            raise IndexError(f"too many indices for a {self.ndim}-D device array: "
                             f"{len(keys)} given")
        keys += [slice(None)] * (self.ndim - len(keys))
        offset = 0
        shape: list[int] = []
        strides: list[int] = []
        for axis, (k, n, s) in enumerate(zip(keys, self.shape, self.strides)):
            if isinstance(k, slice):
                start, stop, step = _slice_indices(k, n, axis)
                shape.append(len(range(start, stop, step)))
                strides.append(s * step)
                offset += start * s if shape[-1] else 0
                continue
            try:
                if isinstance(k, (bool, np.bool_)):  # NumPy reads a[True] as a mask, not a row
                    raise TypeError
                i = operator.index(k)
            except TypeError:
                raise TypeError(f"device arrays are indexed by integers, slices and '...', "
                                f"not {type(k).__name__}") from None
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            offset += i * s
        if not shape:  # one element: read it
            return self._view(offset, (1,)).to_host()[0]
        return self._view(offset, tuple(shape), strides=tuple(strides))

    @boundary
    def transpose(self, *axes: int) -> DeviceArray:
        """A view with the axes permuted (reversed by default), as NumPy's: no copy, a strided
        view unless the array has one axis that is not of extent 1."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        try:
            axes = tuple(operator.index(a) for a in axes)
        except TypeError:
            raise TypeError(f"transpose takes integer axes, not {axes!r}") from None
        given = axes
        axes = tuple(a + self.ndim if a < 0 else a for a in axes)
        if sorted(axes) != list(range(self.ndim)):  # the axes as given, not as counted from 0
            raise ValueError(f"axes {given} are not a permutation of the {self.ndim} axes")
        return self._view(0, tuple(self.shape[a] for a in axes),
                          strides=tuple(self.strides[a] for a in axes))

    @property
    def T(self) -> DeviceArray:
        """The transpose: :meth:`transpose` with the axes reversed."""
        return self.transpose()

    def _require_contiguous(self, what: str, writing: bool = False) -> None:
        if not self.is_contiguous:
            if writing:  # a copy of the view would take the write, and lose it
                raise ValueError(
                    f"cannot {what} a non-contiguous view (strides {self.strides}): write the "
                    "array it was made from, or a contiguous slice of it (a[2:5]), or write "
                    "the view's elements in a kernel (a Strided parameter takes the view)")
            raise ValueError(f"cannot {what} a non-contiguous view (strides {self.strides}); "
                             "make a contiguous copy first with .copy()")

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
        self._require_contiguous("reshape")
        return self._view(0, shape)

    @boundary
    def view(self, dtype) -> DeviceArray:
        """The same memory seen as another element type, as NumPy's ``ndarray.view``: no copy.

        ``a.view(gn.u32)`` of an ``f32`` array gives the bit patterns (and the same shape).  A
        type of another size rescales the last axis, which must then hold a whole number of
        the new elements (``(n, 4)`` ``u8`` viewed as ``f32`` is ``(n, 1)``, ``(n,)`` ``f32``
        viewed as ``u16`` is ``(2 * n,)``), and the address must be aligned for the new type.
        Vector types count as elements of their size (``(n, 3)`` ``f32`` viewed as
        ``gn.vec3f`` is ``(n, 1)``; use ``gn.to_device(a, dtype=gn.vec3f)`` to drop the axis).

        Raises ``ValueError`` when the last axis or the address does not fit the new type.
        """
        info = _resolve_dtype(dtype)
        old, new = self._info.itemsize, info.itemsize
        shape = self.shape
        strides = self.byte_strides
        if new != old and not self.is_contiguous and self.shape[-1] != 1 and strides[-1] != old:
            raise ValueError(f"cannot view this array as {info.name}: its last axis is not "
                             "contiguous, as a view of another itemsize needs (NumPy's rule)")
        if new != old:
            last = shape[-1] * old
            if last % new:
                raise ValueError(
                    f"cannot view an array of shape {shape} and {self._info.name} ({old} bytes) "
                    f"as {info.name} ({new} bytes): the last axis holds {last} bytes, not a "
                    f"multiple of {new}")
            shape = (*shape[:-1], last // new)
        if any(s % new for s in strides[:-1]):
            raise ValueError(f"cannot view this array as {info.name}: its strides "
                             f"{strides} (bytes) are not multiples of {new}")
        align = info.align if isinstance(info, VectorInfo) else new
        if self.launch_ptr % align:
            raise ValueError(f"this array's address is not aligned to {align} bytes, as an "
                             f"array of {info.name} must be; copy it first")
        elements = tuple(s // new for s in (strides if new == old else (*strides[:-1], new)))
        return DeviceArray(self._backend, self.device, self.launch_ptr, shape, info, self._owner,
                           self.launch_base, self.is_writable, elements)

    def readonly(self) -> DeviceArray:
        """A read-only view: launches refuse to bind it to a ``CUDASliceMut`` parameter."""
        return self._view(0, self.shape, writable=False, strides=self.strides)

    # ---- copies --------------------------------------------------------------------------------

    @boundary
    def to_host(self, stream=None) -> np.ndarray:
        """Copy to a new NumPy array.  A synchronisation point: waits for the device's work and
        raises any error a kernel reported (``KernelIndexError`` ...).

        A bf16 array comes back as ``ml_dtypes.bfloat16`` when the optional ``ml_dtypes``
        package is installed, and otherwise widened to float32 (exactly; NumPy itself has no
        bfloat16).  ``a.view(gn.u16).to_host()`` gives the raw bits either way."""
        if self.device != current_device():  # copies are ordered on the array's own device
            with on_device(self.device):
                return self.to_host(stream)
        if stream is not None:
            from .streams import as_stream

            as_stream(stream).synchronize()
        if self.is_contiguous:
            out = np.empty(self.host_shape, dtype=self.scalar_info.dtype)
            self._backend.copy_dtoh(out, self.launch_ptr)
        else:
            out = self._strided_to_host()
        raise_pending(None)
        if self.scalar_info.name == "bf16":  # bf16, or vec2bf's (n, 2) lanes
            dtype = bf16_dtype()
            if dtype is not None:
                return out.view(dtype)
            return bf16_bits_to_f32(out).reshape(self.host_shape)
        return out

    def _strided_to_host(self) -> np.ndarray:
        """A non-contiguous view's elements: the bytes it spans, copied, then gathered."""
        lo, hi = element_span(self.shape, self.strides)
        info = self._info
        dtype = self.scalar_info.dtype
        span = np.empty((hi - lo + 1, *self.host_shape[self.ndim:]), dtype=dtype)
        self._backend.copy_dtoh(span, self.launch_ptr + lo * info.itemsize)
        view = np.lib.stride_tricks.as_strided(
            span[-lo:], self.host_shape, (*self.byte_strides, *span.strides[1:]),
            writeable=False)
        return np.ascontiguousarray(view)

    def _check_writable(self, what: str) -> None:
        if not self.is_writable:
            raise TypeError(f"cannot {what} a read-only view (made with readonly()); write to "
                            "the array it was made from")

    @boundary
    def copy_from_host(self, host) -> None:
        """Overwrite this array with the contents of a host array of the same shape.

        Raises ``TypeError`` for a read-only view."""
        self._check_writable("copy into")
        self._require_contiguous("copy into", writing=True)
        if self.device != current_device():
            with on_device(self.device):
                return self.copy_from_host(host)
        data = host_data(host, self.scalar_info, "data given to copy_from_host()")
        if data.shape != self.host_shape:
            what = "" if data.shape == self.shape else (
                f" ({self._info.name} elements: a last axis of {self._info.n})"
                if _is_vector(self._info) else "")
            raise ValueError(f"shape mismatch: array is {self.host_shape}{what}, data is "
                             f"{data.shape}")
        self._backend.copy_htod(self.launch_ptr, data)

    @boundary
    def fill(self, value) -> None:
        """Set every element to ``value`` (a number, or an array that broadcasts to
        :attr:`host_shape`: a vector's components, say).

        Raises ``TypeError`` for a read-only view or a value that is not a number, and
        ``ValueError`` for one out of the element type's range (as ``to_device`` does)."""
        self._check_writable("fill")
        self._require_contiguous("fill", writing=True)
        info = self.scalar_info
        value = host_array(value, "fill value")
        if info.name == "bf16" and value.dtype == np.uint16:
            value = value.astype(np.float32)  # a fill value is a value, never bf16 bits
        data = host_data(value, info, "fill value")
        try:
            data = np.broadcast_to(data, self.host_shape)
        except ValueError:
            raise ValueError(f"a fill value of shape {data.shape} does not broadcast to the "
                             f"array's {self.host_shape}") from None
        self.copy_from_host(np.ascontiguousarray(data))

    @boundary
    def copy(self) -> DeviceArray:
        """A new array with the same contents, on the same device."""
        if self.device != current_device():
            with on_device(self.device):
                return self.copy()
        if not self.is_contiguous:  # gathered through host memory
            return to_device(self.to_host(), self._info.name)
        out = empty(self.shape, self._info.name)
        self._backend.copy_dtod(out.launch_ptr, self.launch_ptr, self.nbytes)
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
        from .interop import export_stream

        if self._backend.name != "cuda":
            raise AttributeError("simulator arrays live in host memory and have no CUDA array "
                                 "interface")
        dtype = self.scalar_info.dtype
        extra = {"descr": dtype.descr} if dtype.names is not None else {}
        return {
            **extra,
            "shape": self.host_shape,
            "typestr": dtype.str,
            "data": (self.launch_ptr, not self.is_writable),
            "version": 3,
            "strides": None if self.is_contiguous else (
                # A vector's components are a last axis; a complex number is one element.
                *self.byte_strides, *((self.scalar_info.itemsize,) if _is_vector(
                    self._info) else ())),
            # The legacy default stream, made to wait for our non-blocking streams: a consumer
            # that waits for it sees all our work on the device (see runtime.interop).
            "stream": export_stream(self),
        }

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack protocol: a capsule of this array, no copy (unless ``copy=True``).

        ``stream`` is the consumer's stream (None or 1: the legacy default stream, 2: the
        per-thread one, -1: do not synchronise, else a ``CUstream``): it is made to wait for
        our work.  ``max_version`` of ``(1, 0)`` or newer gets a DLPack 1.0
        ``dltensor_versioned`` capsule, else an unversioned ``dltensor`` one."""
        from .interop import to_dlpack

        return to_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device,
                         copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLCUDA, device)`` on a GPU; ``(kDLCPU, 0)`` on the simulator."""
        if self._backend.name != "cuda":
            return (1, 0)  # kDLCPU: the simulator's memory is host memory
        return (2, self.device)  # kDLCUDA

    def __copy__(self) -> DeviceArray:
        """``copy.copy(arr)``: a copy of the data, as NumPy's and CuPy's arrays make (a view
        would alias the memory where a copy is asked for)."""
        return self.copy()

    def __deepcopy__(self, memo: dict) -> DeviceArray:
        """``copy.deepcopy(arr)``: as :meth:`__copy__` (the elements are numbers)."""
        return self.copy()

    def __reduce__(self):
        raise TypeError("a DeviceArray cannot be pickled: its memory lives on one GPU of one "
                        "process; send arr.to_host() (a NumPy array) and call gn.to_device() on "
                        "the other side")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a DeviceArray is in device memory; call .to_host() to get a NumPy array")


def _slice_indices(key: slice, n: int, axis: int) -> tuple[int, int, int]:
    """``key.indices(n)``, with the errors saying which slice and axis."""
    if key.step is not None:
        try:
            step = operator.index(key.step)
        except TypeError:
            step = None
        if step == 0:
            raise ValueError(f"slice {_slice_text(key)} of axis {axis} has step 0; a step must "
                             "be nonzero (a negative one reverses the axis)")
    try:
        return key.indices(n)
    except TypeError:
        bad = next((v for v in (key.start, key.stop, key.step)
                    if v is not None and not hasattr(type(v), "__index__")), key)
        raise TypeError(f"slice {_slice_text(key)} of axis {axis}: device arrays are sliced by "
                        f"integers or None, not {type(bad).__name__}") from None


def _slice_text(key: slice) -> str:
    """A slice as it is written: ``::0``, ``1.5:``."""
    parts = ["" if v is None else str(v) if isinstance(v, (int, np.integer)) else repr(v)
             for v in (key.start, key.stop, key.step)]
    return ":".join(parts if key.step is not None else parts[:2])


def _resolve_dtype(dtype) -> ScalarInfo | VectorInfo:
    return element_info(dtype)


def _is_vector(info: ScalarInfo | VectorInfo | None) -> TypeGuard[VectorInfo]:
    """An array of small vectors (whose host array has an axis of components); a complex
    number, a pair in the kernel language too, is one NumPy element."""
    return isinstance(info, VectorInfo) and not isinstance(info, ComplexInfo)


@boundary
def empty(shape, dtype=None) -> DeviceArray:
    """A new uninitialised device array on the current device (``dtype`` defaults to f32; a
    vector type such as ``gn.vec3f`` makes an array of ``shape`` vectors).

    ``shape`` is an int or a tuple of ints (NumPy integers too): anything else is a
    ``TypeError``, a negative extent or a size beyond the device's memory a ``ValueError``.
    Memory the device has not got free is a ``CudaError`` (``CUDA_ERROR_OUT_OF_MEMORY``), on
    the simulator too."""
    info = _resolve_dtype("f32" if dtype is None else dtype)
    shape = _shape(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    backend = B.select()
    device = current_device()
    nbytes = _check_fits(shape, info, backend, device)
    _check_span(shape, info)  # (an empty array fits any device)
    alloc = Allocation(backend, device, nbytes)
    return DeviceArray(backend, device, alloc.ptr, shape, info, alloc, alloc)


# The most bytes an array may span: kernels take extents and strides as int64, and NumPy (the
# host side of every copy) counts bytes in a signed 64-bit integer.
_MAX_BYTES = 2**63 - 1


def _check_span(shape: tuple[int, ...], info) -> None:
    """Refuse a shape whose bytes, counted as NumPy counts them (its empty axes skipped), exceed
    :data:`_MAX_BYTES`: ``(0, 2**62)`` of ``f32`` holds nothing, but a row of it would span
    ``2**64`` bytes, which no int64 stride and no host array can."""
    span = info.itemsize
    for axis, n in enumerate(shape):
        if n:
            span *= n
        if span > _MAX_BYTES:
            raise ValueError(f"an array of shape {shape} of {info.name} cannot be made: axis "
                             f"{axis}'s extent {n} is too large (its nonempty axes span "
                             f"{span:,} bytes, more than the 2**63 - 1 that kernels' int64 "
                             "strides and NumPy can address, even beside an empty axis)")


def _check_fits(shape: tuple[int, ...], info, backend, device: int) -> int:
    """The bytes an array of ``shape`` takes, or a ``ValueError`` if no allocation on the device
    could hold them (a GPU would say out of memory; NumPy, on the simulator, would say less)."""
    nbytes = math.prod(shape) * info.itemsize
    total = backend.properties(device)["total_memory"]
    if nbytes > total:
        raise ValueError(f"an array of shape {shape} of {info.name} takes {nbytes:,} bytes, more "
                         f"than the {total:,} bytes of memory device {device} has")
    return nbytes


def _shape(shape) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of them, NumPy integers too) as a tuple of ints; a float
    is refused rather than truncated."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        return (int(shape),)
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__") or (
            isinstance(shape, np.ndarray) and shape.ndim != 1):
        raise TypeError(f"shape must be an int or a tuple of ints, not "
                        f"{type(shape).__name__} {shape!r:.60}")
    shape = tuple(shape)
    for s in shape:
        if isinstance(s, (bool, np.bool_)) or not hasattr(s, "__index__"):
            raise TypeError(f"shape {shape!r:.60} must hold ints, not {type(s).__name__} "
                            f"{s!r:.60}")
    return tuple(operator.index(s) for s in shape)


@boundary
def zeros(shape, dtype=None) -> DeviceArray:
    """A new device array of zeros."""
    out = empty(shape, dtype)
    out._backend.memset8(out.launch_ptr, 0, out.nbytes)
    return out


@boundary
def to_device(obj, dtype=None, *, stream=None) -> DeviceArray:
    """Copy a host array (anything NumPy accepts) to the current device.

    A foreign CUDA array (CuPy, PyTorch, Numba: ``__cuda_array_interface__`` or DLPack) is wrapped
    without a copy instead (as :func:`from_dlpack` does), and a ``DeviceArray`` is returned as it
    is.  On the simulator, whose device memory is host memory, a foreign CPU array (a CPU torch
    tensor: DLPack on the CPU) is wrapped likewise; NumPy arrays are copied on both backends.

    ``stream`` is the stream the wrapped array will be used on (default ``DEFAULT_STREAM``): it
    is made to wait for the foreign array's producer (see :func:`from_dlpack`).

    ``dtype`` converts a host array to that element type, checked where NumPy's conversion
    would not be: a value the type cannot hold (``2**60`` or NaN for ``i32``, ``1e40`` for
    ``f32``, a complex number with an imaginary part for a real type) is a ``ValueError``
    naming the element, its value and the type's range, as a launch argument's is; fractions
    truncate toward zero as in ``astype``, and data already of the type is copied unchecked.
    ``copy_from_host`` and ``fill`` convert the same way.  A vector type (``gn.vec3f`` ...)
    takes an array whose last axis holds the components (``(n, 3)`` for ``n`` ``vec3f``s); a
    device array of the element's scalar type with such a last axis is seen as vectors without
    a copy.

    Device arrays have 1 to 3 dimensions: a 0-d array or a scalar (``np.int32(0)``, ``3.0``)
    becomes an array of shape ``(1,)`` (a counter for atomics, say), and ``to_host()`` gives it
    back with that shape.
    """
    want = None if dtype is None else _resolve_dtype(dtype)
    if isinstance(obj, DeviceArray) or _is_foreign_device_array(obj):
        if isinstance(obj, DeviceArray):
            arr = obj
        else:
            from .interop import from_foreign

            arr = from_foreign(obj, stream=stream)
        if want is None or want.name == arr._info.name:
            return arr
        if _is_vector(want) and arr._info.name == want.elem.name:
            return _as_vectors(arr, want)
        raise TypeError(f"array is {arr._info.name}, not {want.name}; convert on the host or in "
                        "a kernel")
    what = "data given to to_device()"
    src = host_array(obj, what)
    # A structured array is an array of structs of its own layout (a kernel parameter of a
    # @gpu_struct type checks the layout at the launch).
    if want is None and src.dtype == object and src.size and all(
            isinstance(v, int) for v in src.flat):
        # NumPy keeps ints beyond 64 bits as Python objects: no element type holds them.
        big = next((v for v in src.flat if not -2**63 <= v < 2**64), None)
        if big is None:  # -1 beside 2**63: no one type holds both
            raise ValueError(f"the {what} mixes negative integers with integers beyond i64: "
                             "no integer type holds them all; give dtype=")
        shown = str(big) if big.bit_length() <= 128 else f"of {big.bit_length()} bits"
        raise ValueError(f"the {what} holds the integer {shown}, beyond every integer type "
                         "(i64, u64)")
    info: ScalarInfo | VectorInfo = element_info(src.dtype) if want is None else want
    if _is_vector(info) and (src.ndim == 0 or src.shape[-1] != info.n):
        raise ValueError(f"an array of {info.name} is given as an array whose last axis "
                         f"holds the {info.n} components, not one of shape {src.shape}")
    shape = (src.shape[:-1] if _is_vector(info) else src.shape) or (1,)
    # Before the host copy a conversion makes: a broadcast view may be far larger than memory.
    _check_fits(shape, info, B.select(), current_device())
    data = host_data(src, info.elem if _is_vector(info) else info, what)
    out = empty(shape, info.name)
    out._backend.copy_htod(out.launch_ptr, data)
    return out


def _as_vectors(arr: DeviceArray, info: VectorInfo) -> DeviceArray:
    """The same memory as an array of vectors: ``arr``'s last axis holds their components."""
    if arr.shape[-1] != info.n or arr.ndim < 2:
        raise ValueError(f"an array of {arr._info.name} with shape {arr.shape} is not an array "
                         f"of {info.name}: its last axis must hold the {info.n} components")
    arr._require_contiguous("see as vectors")
    if arr.launch_ptr % info.align:
        raise ValueError(f"this array's memory is not aligned to {info.align} bytes, as an "
                         f"array of {info.name} must be; copy it first")
    return DeviceArray(arr._backend, arr.device, arr.launch_ptr, arr.shape[:-1], info, arr._owner,
                       arr.launch_base, arr.is_writable)


def _is_cuda_dlpack(obj) -> bool:
    try:
        return obj.__dlpack_device__()[0] in (2, 3, 13)  # CUDA, CUDA host, CUDA managed
    except Exception:
        return False


def _is_foreign_device_array(obj) -> bool:
    """Whether ``obj`` is another library's array in what is device memory to the backend: a
    CUDA array on a GPU, a CPU array other than NumPy's on the simulator."""
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    if not hasattr(obj, "__dlpack_device__"):
        return False
    if _is_cuda_dlpack(obj):
        return True
    if isinstance(obj, np.ndarray) or B.select().name == "cuda":
        return False
    from .interop import is_host_dlpack

    return is_host_dlpack(obj)


@boundary
def from_dlpack(obj, *, stream=None) -> DeviceArray:
    """Wrap another library's array without a copy: writes through the result land in ``obj``.

    On a GPU ``obj`` is a CUDA array (a CuPy array, a CUDA torch tensor, a Numba device array:
    DLPack or ``__cuda_array_interface__``).  On the simulator it is a host array (a NumPy array,
    a CPU torch tensor: DLPack on the CPU), which kernels then read and write in place.  A
    ``DeviceArray`` is returned as it is.

    ``stream`` (default ``DEFAULT_STREAM``) is the stream the array will be used on: it is made
    to wait for the work the producer queued so far (the ``stream`` of the CUDA array interface,
    or ``__dlpack__(stream=...)``), so a tensor still being written on a PyTorch side stream is
    read once written.  Raises ``TypeError`` for an array in the wrong memory (a NumPy array on
    a GPU: use :func:`to_device`) and ``ValueError`` for one that is not C-contiguous or has
    more than 3 dimensions.
    """
    if isinstance(obj, DeviceArray):
        return obj
    from .interop import from_foreign

    if not (hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__")):
        raise TypeError(f"from_dlpack takes an array that exports DLPack or the CUDA array "
                        f"interface, not {type(obj).__name__}")
    return from_foreign(obj, what=f"the {type(obj).__name__} given to from_dlpack", stream=stream)
