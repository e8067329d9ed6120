"""Device intrinsics: shared and local arrays, barriers, warp operations, ``unsafe``.

Each is compiled when used in a kernel; calling one on the host raises ``RuntimeError``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .layouts import _device_only

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

FULL_MASK = 0xFFFFFFFF


class MemoryOrder(enum.Enum):
    """Memory order of an atomic operation (``order=`` keyword); the default is ``RELAXED``."""

    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"
    SEQ_CST = "seq_cst"


def shared_array(dtype: type[T], shape: Any) -> Any:
    """Allocate block shared memory: ``shared_array(f32, (16, 16))``.

    ``shape`` is a compile-time constant.  ``shared_array(f32, 0)`` declares the dynamic shared
    array, sized by the launch's ``shared_mem_bytes``.
    """
    _device_only("shared_array()")


def local_array(dtype: type[T], shape: Any) -> Any:
    """Allocate a per-thread array of compile-time constant shape."""
    _device_only("local_array()")


def sync_threads() -> None:
    """Barrier for all threads of the block (``__syncthreads()``)."""
    _device_only("sync_threads()")


def sync_warp(mask: int = FULL_MASK) -> None:
    """Barrier for the threads of the warp named in ``mask`` (``__syncwarp(mask)``)."""
    _device_only("sync_warp()")


def shfl_down(value: T, delta: int, width: int = 32, mask: int = FULL_MASK) -> T:
    """Read ``value`` from the lane ``delta`` above this one (``__shfl_down_sync``)."""
    _device_only("shfl_down()")


def shfl_up(value: T, delta: int, width: int = 32, mask: int = FULL_MASK) -> T:
    """Read ``value`` from the lane ``delta`` below this one (``__shfl_up_sync``)."""
    _device_only("shfl_up()")


def shfl_xor(value: T, lane_mask: int, width: int = 32, mask: int = FULL_MASK) -> T:
    """Read ``value`` from lane ``lane_id() ^ lane_mask`` (``__shfl_xor_sync``)."""
    _device_only("shfl_xor()")


def shfl_idx(value: T, src_lane: int, width: int = 32, mask: int = FULL_MASK) -> T:
    """Read ``value`` from lane ``src_lane`` (``__shfl_sync``)."""
    _device_only("shfl_idx()")


def ballot(predicate: bool, mask: int = FULL_MASK) -> int:
    """A ``u32`` whose bit ``k`` is set when lane ``k``'s predicate is true."""
    _device_only("ballot()")


def all_sync(predicate: bool, mask: int = FULL_MASK) -> bool:
    """True when the predicate holds in every lane of ``mask``."""
    _device_only("all_sync()")


def any_sync(predicate: bool, mask: int = FULL_MASK) -> bool:
    """True when the predicate holds in any lane of ``mask``."""
    _device_only("any_sync()")


def lane_id() -> int:
    """This thread's lane in its warp, 0..31."""
    _device_only("lane_id()")


@contextmanager
def unsafe() -> Iterator[None]:
    """``with unsafe():`` allows stores through indices the compiler cannot prove unique.

    Races inside an ``unsafe`` block are the programmer's responsibility; bounds are still checked.
    """
    _device_only("unsafe()")
    yield
