"""Tensor maps: how a kernel's ``tma_load`` copies find their source arrays on the GPU.

A tensor map (the driver's ``CUtensorMap``, 128 opaque bytes) describes a 2-D array to the copy
engine: its address, extents and row pitch, and the box one copy moves, in the 128-byte swizzle.
The launcher encodes one per :class:`~gpu_native.spec.TensorMap` of the variant for the array
passed, with ``cuTensorMapEncodeTiled``, and passes it by value as a hidden parameter (its
address in the argument buffer's ``void*`` array: the driver copies the 128 bytes).  A map
depends only on the array's address, extents and type and on the box, so encoded maps are kept,
by those, in a bounded cache: a kernel launched again on the same arrays encodes nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..spec import TensorMap
from . import driver as D

#: Encoded maps kept (each 128 bytes of host memory); the least recently used go first.
CACHE_SIZE = 1024
#: The bytes of an element of each type a tensor copy moves.
ITEMSIZE = {"f16": 2, "bf16": 2}
#: A tensor copy's coordinates are 32-bit: no extent may reach 2**31.
MAX_EXTENT = 2**31 - 1

_cache: OrderedDict = OrderedDict()
_lock = threading.Lock()


def check_source(where: str, ptr: int, shape: tuple[int, ...], itemsize: int) -> None:
    """Refuse an array the copy engine cannot read (``where`` names the argument): its start
    must be 16-byte aligned, its rows a multiple of 16 bytes, and its extents below 2**31."""
    rows, cols = shape
    if ptr % 16:
        raise ValueError(f"{where}: tma_load() reads arrays that start on a 16-byte boundary; "
                         f"this one starts at 0x{ptr:x} (a view that starts inside its "
                         "allocation?); pass a copy or a view starting on 16 bytes")
    if (cols * itemsize) % 16:
        raise ValueError(f"{where}: tma_load() reads rows whose length is a multiple of 16 "
                         f"bytes; this array's rows are {cols} elements of {itemsize} bytes")
    if not (0 < rows <= MAX_EXTENT and 0 < cols <= MAX_EXTENT):
        raise ValueError(f"{where}: tma_load() reads arrays of 1 to {MAX_EXTENT} rows and "
                         f"columns; this one has shape {shape}")


def encoded(where: str, tm: TensorMap, ptr: int, shape: tuple[int, ...]) -> int:
    """The host address of the tensor map of ``tm`` for the array at ``ptr`` of ``shape``
    (encoded once per array, box and type; ``where`` names the argument in errors)."""
    key = (ptr, shape, tm.dtype, tm.box_rows, tm.box_cols)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found[0]
    itemsize = ITEMSIZE[tm.dtype]
    check_source(where, ptr, shape, itemsize)
    tmap = _encode(tm, ptr, shape, itemsize)
    address = tmap.getPtr()
    with _lock:
        _cache[key] = (address, tmap)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return address


def _encode(tm: TensorMap, ptr: int, shape: tuple[int, ...], itemsize: int):
    drv = D.driver()
    dtypes = {"f16": drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
              "bf16": drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16}
    rows, cols = shape
    return D.check(drv.cuTensorMapEncodeTiled(
        dtypes[tm.dtype], 2, ptr,
        [drv.cuuint64_t(cols), drv.cuuint64_t(rows)],      # innermost first
        [drv.cuuint64_t(cols * itemsize)],                 # the row pitch, in bytes
        [drv.cuuint32_t(tm.box_cols), drv.cuuint32_t(tm.box_rows)],
        [drv.cuuint32_t(1), drv.cuuint32_t(1)],
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled")


def forget() -> None:
    """Drop every encoded map (tests)."""
    with _lock:
        _cache.clear()


__all__ = ["CACHE_SIZE", "ITEMSIZE", "MAX_EXTENT", "check_source", "encoded", "forget"]
