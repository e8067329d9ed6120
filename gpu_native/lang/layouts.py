"""Kernel kinds, launch dimensions, thread layouts and unique ids.

Inside a kernel these names are compiled; on the host the layouts and index objects refuse to be
used, with a message that says so.  Launch dimensions (``GridDim1D`` ...) are ordinary host values.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Generic, NoReturn, TypeVar

from ..tracebacks import strip

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "BlockDim1D",
    "BlockDim2D",
    "BlockDim3D",
    "BlockLayout1D",
    "BlockLayout2D",
    "BlockLayout3D",
    "FlatLayout1D",
    "FlatLayout2D",
    "FlatLayout3D",
    "GridDim1D",
    "GridDim2D",
    "GridDim3D",
    "Kernel1D",
    "Kernel2D",
    "Kernel3D",
    "UniqueId",
    "block_dim",
    "block_idx",
    "grid_dim",
    "thread_idx",
]


def _device_only(what: str) -> NoReturn:
    raise RuntimeError(
        f"{what} can only be used inside a @gpu_kernel or @gpu_device function; "
        "on the host, launch the kernel with kernel.launch(grid, block, shared_mem_bytes, stream)(...)"
    )


class _KernelKind:
    """A kernel's dimensionality, given to ``@gpu_kernel(...)``."""

    ndim: int = 1

    def __init__(self) -> None:
        raise TypeError(f"pass {type(self).__name__} itself to @gpu_kernel, not an instance")


class Kernel1D(_KernelKind):
    """A kernel launched over a 1-D grid of 1-D blocks."""

    ndim = 1


class Kernel2D(_KernelKind):
    """A kernel launched over a 2-D grid of 2-D blocks."""

    ndim = 2


class Kernel3D(_KernelKind):
    """A kernel launched over a 3-D grid of 3-D blocks."""

    ndim = 3


if TYPE_CHECKING:
    # To type checkers a 1-D unique id is the integer it is (``v = uid; v >>= 1`` is an int);
    # what makes it unique is the transpiler's to check.
    UniqueId: TypeAlias = int
else:
    class UniqueId(int):
        """A thread's grid-unique id (``FlatLayout*.uid()``) or block-unique id (``BlockLayout*.uid()``).

        In a 1-D kernel it is an integer index.  In 2-D/3-D kernels its components are ``.x .y .z``.
        Stores into writable arrays must go through a unique id: that is what rules out racing writes.
        """

        @property
        def x(self) -> int:
            _device_only("UniqueId.x")

        @property
        def y(self) -> int:
            _device_only("UniqueId.y")

        @property
        def z(self) -> int:
            _device_only("UniqueId.z")


class UniqueId2D(tuple[UniqueId, UniqueId]):
    """What ``FlatLayout2D.uid()`` and ``BlockLayout2D.uid()`` are to type checkers: ``.x .y``, or
    unpacked, ``x, y = FlatLayout2D.uid()``.  Not a kernel annotation (leave the uid's local
    unannotated)."""

    @property
    def x(self) -> UniqueId:
        _device_only("UniqueId.x")

    @property
    def y(self) -> UniqueId:
        _device_only("UniqueId.y")


class UniqueId3D(tuple[UniqueId, UniqueId, UniqueId]):
    """What ``FlatLayout3D.uid()`` and ``BlockLayout3D.uid()`` are to type checkers: ``.x .y .z``,
    or unpacked, ``x, y, z = FlatLayout3D.uid()``."""

    @property
    def x(self) -> UniqueId:
        _device_only("UniqueId.x")

    @property
    def y(self) -> UniqueId:
        _device_only("UniqueId.y")

    @property
    def z(self) -> UniqueId:
        _device_only("UniqueId.z")


U = TypeVar("U", UniqueId, UniqueId2D, UniqueId3D)


class _Layout(Generic[U]):
    ndim = 1
    scope = "grid"

    @classmethod
    def uid(cls) -> U:
        """This thread's unique id in the layout."""
        _device_only(f"{cls.__name__}.uid()")


class FlatLayout1D(_Layout[UniqueId]):
    """The 1-D grid as one flat range of thread ids: ``uid() = block_idx.x * block_dim.x + thread_idx.x``."""

    @classmethod
    def grid_stride(cls, n: int) -> range:
        """Iterate over ``range(n)`` with a grid-stride loop; every value is visited by one thread."""
        _device_only("FlatLayout1D.grid_stride()")


class FlatLayout2D(_Layout[UniqueId2D]):
    """The 2-D grid as a flat 2-D range: ``uid().x`` is the column, ``uid().y`` the row."""

    ndim = 2


class FlatLayout3D(_Layout[UniqueId3D]):
    """The 3-D grid as a flat 3-D range of thread ids."""

    ndim = 3


class BlockLayout1D(_Layout[UniqueId]):
    """The thread's index inside its block: unique within a block (for shared-memory stores)."""

    scope = "block"


class BlockLayout2D(_Layout[UniqueId2D]):
    """The thread's 2-D index inside its block."""

    ndim = 2
    scope = "block"


class BlockLayout3D(_Layout[UniqueId3D]):
    """The thread's 3-D index inside its block."""

    ndim = 3
    scope = "block"


class _Dim3:
    """``thread_idx``, ``block_idx``, ``block_dim``, ``grid_dim``: ``.x .y .z`` as in CUDA (kernels only)."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"gpu_native.{self._name}"

    @property
    def x(self) -> int:
        _device_only(f"{self._name}.x")

    @property
    def y(self) -> int:
        _device_only(f"{self._name}.y")

    @property
    def z(self) -> int:
        _device_only(f"{self._name}.z")


thread_idx = _Dim3("thread_idx")
block_idx = _Dim3("block_idx")
block_dim = _Dim3("block_dim")
grid_dim = _Dim3("grid_dim")


def _extents(cls, *values) -> tuple[int, ...]:
    """``values`` as the axes of launch dimension ``cls`` (see :func:`_extent`).  Each public
    constructor is an entry point: plain ints (what a launch site usually computes) take no
    more than a type test, and a wrong value is reported at the user's call, without
    gpu_native's frames (:func:`~gpu_native.tracebacks.strip`, inline in each ``__new__``
    rather than a :func:`~gpu_native.tracebacks.boundary` wrapper, which would add a call to
    every construction)."""
    if len(values) == 1:
        return (_extent(cls.__name__, None, values[0]),)
    return tuple(_extent(cls.__name__, axis, v) for axis, v in zip("xyz", values))


def _extent(kind: str, axis: str | None, value) -> int:
    """``value`` as one axis of a launch dimension: an int, or an integer of another kind (a
    NumPy integer).  A float is refused rather than truncated: ``GridDim1D(1000 / 128)`` would
    launch 7 blocks and leave the last elements unwritten."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        which = kind if axis is None else f"{kind}'s {axis}"
        raise TypeError(f"{which} must be an int, not {type(value).__name__} {value!r:.60}; "
                        "count with integer division, e.g. (n + 127) // 128") from None


class _Extent1(int):
    """A 1-D launch dimension: an int (a NumPy integer too; a float is refused with
    ``TypeError`` rather than truncated)."""

    def __new__(cls, x: int):
        if type(x) is int:
            return int.__new__(cls, x)
        try:
            return int.__new__(cls, *_extents(cls, x))
        except Exception as exc:
            strip(exc)
            raise

    @property
    def x(self) -> int:
        return int(self)

    y = property(lambda self: 1)
    z = property(lambda self: 1)


class GridDim1D(_Extent1):
    """Number of blocks of a 1-D launch: an int (a NumPy integer too; a float is refused with
    ``TypeError`` rather than truncated)."""


class BlockDim1D(_Extent1):
    """Threads per block of a 1-D launch: an int (a NumPy integer too; a float is refused with
    ``TypeError`` rather than truncated)."""


class _Dims(tuple):
    """A 3-D launch dimension ``(x, y, z)``; :class:`_Dims2` is the 2-D one (``z`` is 1)."""

    ndim = 3

    def __new__(cls, x: int, y: int, z: int):
        if type(x) is int and type(y) is int and type(z) is int:
            return tuple.__new__(cls, (x, y, z))
        try:
            return tuple.__new__(cls, _extents(cls, x, y, z))
        except Exception as exc:
            strip(exc)
            raise

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    z = property(lambda self: self[2])

    def __repr__(self) -> str:
        return f"{type(self).__name__}{tuple(self)[: self.ndim]}"

    def __getnewargs__(self) -> tuple[int, ...]:  # pickle and copy call __new__ with these
        return tuple(self)[: self.ndim]


class _Dims2(_Dims):
    ndim = 2

    def __new__(cls, x: int, y: int):
        if type(x) is int and type(y) is int:
            return tuple.__new__(cls, (x, y, 1))
        try:
            return tuple.__new__(cls, _extents(cls, x, y, 1))
        except Exception as exc:
            strip(exc)
            raise


class GridDim2D(_Dims2):
    """Blocks of a 2-D launch: ``GridDim2D(x, y)``."""


class BlockDim2D(_Dims2):
    """Threads per block of a 2-D launch: ``BlockDim2D(x, y)``."""


class GridDim3D(_Dims):
    """Blocks of a 3-D launch: ``GridDim3D(x, y, z)``."""


class BlockDim3D(_Dims):
    """Threads per block of a 3-D launch: ``BlockDim3D(x, y, z)``."""
