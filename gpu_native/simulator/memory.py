"""The simulator's memory: the arrays a chunk of lanes reads and writes.

Global arrays are flat views of the caller's NumPy arrays, written in place (or, for a
``Strided`` parameter, of every element its view spans: :class:`StridedArray`); constant arrays
are read-only views of a module's ``const_array`` values; shared arrays hold one copy per block of
the chunk and local arrays one per lane, both filled with poison (NaN or 0xCD bytes) so that a
read before a write shows.  Every kind is indexed by element (a vector element is a row of
components) and gives the flat offset of its first element for a block or lane through ``base``;
the bounds checks, race detection and loads and stores that use them are the chunk's
(:mod:`.machine`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from . import ops
from .races import Shadow

if TYPE_CHECKING:
    from .machine import Chunk

def _poison(dtype: np.dtype, info) -> object:
    """What uninitialised shared and local memory holds in the simulator: NaN or 0xCD bytes."""
    if _scalar_info(info).name == "bf16":
        return np.uint16(0x7FC0)
    if dtype.kind == "f":
        return dtype.type(math.nan)
    if dtype.kind == "b":
        return np.bool_(False)
    return np.frombuffer(b"\xcd" * dtype.itemsize, dtype=dtype)[0]


def _scalar_info(info):
    """The scalar type of an array's elements, or of its vectors' components (a complex
    number's parts)."""
    return info.elem if info.kind in ("vector", "complex") else info


class _Array:
    """An array of scalars (``data`` is flat, one entry per element) or of vectors (``width``
    components: ``data`` has one row per element), indexed by element."""

    space = "global"
    shadow: Shadow | None = None
    is_struct = False
    dims: tuple[int, ...]  # set by each kind of array

    def _setup(self, name: str, info) -> None:
        self.name = name
        self.info = info
        self.is_bf16 = _scalar_info(info).name == "bf16"  # bf16 or vec2bf: memory holds bits
        self.width = info.n if info.kind in ("vector", "complex") else 0
        self.is_struct = info.kind == "struct"
        if self.is_struct:
            from .structs import zero as struct_zero

            self.vzero = struct_zero(info)
            return
        zero = ops.zero(_scalar_info(info))
        self.vzero = (zero,) * self.width if self.width else zero

    def _new_data(self, count: int) -> np.ndarray:
        """``count`` elements of poisoned memory (see :func:`_poison`)."""
        if self.is_struct:  # all bits set: NaN in every float field, -1 in every integer
            return np.frombuffer(b"\xff" * (count * self.info.itemsize),
                                 dtype=self.info.dtype).copy()
        info = _scalar_info(self.info)
        dt = ops.memory_dtype(info)
        shape = (count, self.width) if self.width else count
        return np.full(shape, _poison(dt, info), dtype=dt)

    def element(self, e: int) -> tuple[int, ...]:
        """The n-D index of flat element ``e`` (within one block or thread for shared/local)."""
        return tuple(int(i) for i in np.unravel_index(int(e), self.dims))

    def __repr__(self) -> str:
        return f"<{self.space} array {self.name} {self.info.name}{list(self.dims)}>"


class StridedArray:
    """The argument of a ``Strided`` array parameter: ``span`` holds every element the view
    reaches (flat; a last axis of components for vectors), the first element is at ``origin``
    in it, and element ``(i, j)`` at ``origin + i * strides[0] + j * strides[1]``."""

    __slots__ = ("origin", "shape", "span", "strides")

    def __init__(self, span: np.ndarray, origin: int, shape: tuple[int, ...],
                 strides: tuple[int, ...]):
        self.span, self.origin = span, origin
        self.shape, self.strides = shape, strides

    @property
    def size(self) -> int:
        return len(self.span)


class GlobalArray(_Array):
    """A global array parameter: a flat view of the caller's NumPy array (written in place),
    or of the elements a strided view spans (:class:`StridedArray`; ``strides`` is then set,
    and offsets are ``origin`` plus the indices times the strides, not row-major)."""

    strides: tuple[np.int64, ...] | None = None

    def __init__(self, name: str, array, info, shadow=None):
        self._setup(name, info)
        if isinstance(array, StridedArray):
            self.array = array.span
            self.data = array.span
            self.dims = tuple(int(d) for d in array.shape)
            self.shape = tuple(np.int64(d) for d in array.shape)
            self.strides = tuple(np.int64(s) for s in array.strides)
            self.origin = np.int64(array.origin)
            self.shadow = shadow
            return
        if not array.flags.c_contiguous:
            raise ValueError(f"array argument '{name}' must be C-contiguous")
        self.array = array
        shape = array.shape[:-1] if self.width else array.shape  # a vector's axis is its own
        self.data = array.reshape(-1, self.width) if self.width else array.reshape(-1)
        self.dims = tuple(int(d) for d in shape)
        self.shape = tuple(np.int64(d) for d in shape)
        self.shadow = shadow

    def element(self, e: int) -> tuple[int, ...]:
        strides = self.strides
        if strides is None:
            return super().element(e)
        # The index of the element at flat offset ``e`` of the span (races are reported by
        # offset; a view that does not overlap itself has one index per offset).
        rest = int(e) - int(self.origin)
        out = [0] * len(self.dims)
        for axis in sorted(range(len(self.dims)), key=lambda a: -abs(int(strides[a]))):
            s = int(strides[axis])
            if s:
                out[axis] = max(0, min(self.dims[axis] - 1, rest // s))
                rest -= out[axis] * s
        return tuple(out)

    def base(self, chunk: Chunk):
        return None


class ConstArray(GlobalArray):
    """A module-level constant array (``const_array``): a read-only view of its values."""

    space = "const"


class SharedArray(_Array):
    """One shared array of every block of a chunk: ``data`` is (blocks x size), flattened."""

    space = "shared"

    def __init__(self, name: str, info, dims: tuple[int, ...], nblocks: int, shadow=None):
        self._setup(name, info)
        self.dims = dims
        self.shape = tuple(np.int64(d) for d in dims)
        self.size = math.prod(dims)
        self.data = self._new_data(nblocks * self.size)
        self.shadow = shadow

    def base(self, chunk: Chunk):
        return chunk.block_base(self.size)


class LocalArray(_Array):
    """A per-thread array: ``data`` is (lanes x size), flattened."""

    space = "local"

    def __init__(self, name: str, info, dims: tuple[int, ...], lanes: int):
        self._setup(name, info)
        self.dims = dims
        self.shape = tuple(np.int64(d) for d in dims)
        self.size = math.prod(dims)
        self.data = self._new_data(lanes * self.size)

    def base(self, chunk: Chunk):
        return chunk.lane_base(self.size)

    def per_lane(self) -> np.ndarray:
        """``data`` as (lanes, elements) (and components, for vectors)."""
        return self.data.reshape(-1, self.size, self.width) if self.width else \
            self.data.reshape(-1, self.size)

    def compact(self, keep: np.ndarray) -> None:
        kept = self.per_lane()[keep]
        self.data = kept.reshape(-1, self.width) if self.width else kept.reshape(-1)


__all__ = ["ConstArray", "GlobalArray", "LocalArray", "SharedArray", "StridedArray"]
