"""Device intrinsics: shared and local arrays, barriers, warp operations, ``unsafe``.

Each is compiled when used in a kernel; calling one on the host raises ``RuntimeError``.  The
functions here give editors and type checkers their signatures; their docstrings come from
:mod:`.registry`, which declares the kernel language (tests/language/test_registry.py checks that
each signature matches its entry there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .layouts import _device_only
from .registry import FULL_MASK as FULL_MASK
from .registry import GPU_NATIVE
from .registry import MemoryOrder as MemoryOrder

__all__ = [
    "FULL_MASK",
    "MemoryOrder",
    "all_sync",
    "any_sync",
    "ballot",
    "lane_id",
    "local_array",
    "shared_array",
    "shfl_down",
    "shfl_idx",
    "shfl_up",
    "shfl_xor",
    "sync_threads",
    "sync_warp",
    "unsafe",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _intrinsic(fn: F) -> F:
    """Give a host stub its registry entry's documentation."""
    entry = GPU_NATIVE[fn.__name__]
    doc = entry.doc[0].upper() + entry.doc[1:] + "."
    fn.__doc__ = doc + (f"\n\n{entry.more}" if entry.more else "")
    return fn


@_intrinsic
def shared_array(dtype: type[T], shape: Any) -> Any:
    _device_only("shared_array()")


@_intrinsic
def local_array(dtype: type[T], shape: Any) -> Any:
    _device_only("local_array()")


@_intrinsic
def sync_threads() -> None:
    _device_only("sync_threads()")


@_intrinsic
def sync_warp(mask: int = FULL_MASK) -> None:
    _device_only("sync_warp()")


@_intrinsic
def shfl_down(value: T, delta: int, width: int = 32, mask: int = FULL_MASK) -> T:
    _device_only("shfl_down()")


@_intrinsic
def shfl_up(value: T, delta: int, width: int = 32, mask: int = FULL_MASK) -> T:
    _device_only("shfl_up()")


@_intrinsic
def shfl_xor(value: T, lane_mask: int, width: int = 32, mask: int = FULL_MASK) -> T:
    _device_only("shfl_xor()")


@_intrinsic
def shfl_idx(value: T, src_lane: int, width: int = 32, mask: int = FULL_MASK) -> T:
    _device_only("shfl_idx()")


@_intrinsic
def ballot(predicate: bool, mask: int = FULL_MASK) -> int:
    _device_only("ballot()")


@_intrinsic
def all_sync(predicate: bool, mask: int = FULL_MASK) -> bool:
    _device_only("all_sync()")


@_intrinsic
def any_sync(predicate: bool, mask: int = FULL_MASK) -> bool:
    _device_only("any_sync()")


@_intrinsic
def lane_id() -> int:
    _device_only("lane_id()")


@contextmanager
@_intrinsic
def unsafe() -> Iterator[None]:
    _device_only("unsafe()")
    yield
