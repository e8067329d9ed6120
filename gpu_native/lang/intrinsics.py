"""Device intrinsics: shared and local arrays, barriers, warp operations, ``unsafe``.

Each is compiled when used in a kernel; calling one on the host raises ``RuntimeError``.  The
functions here give editors and type checkers their signatures; their docstrings come from
:mod:`.registry`, which declares the kernel language (tests/language/test_registry.py checks that
each signature matches its entry there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .layouts import _device_only
from .registry import FULL_MASK as FULL_MASK
from .registry import GENERATOR_METHODS, GPU_NATIVE
from .registry import MemoryOrder as MemoryOrder
from .types import _Vector, f32, vec4f

if TYPE_CHECKING:
    from .params import CUDASliceMut, CUDASliceMut2D, CUDASliceMut3D
    from .types import _FloatVector, _IntVector

__all__ = [
    "FULL_MASK",
    "MemoryOrder",
    "activemask",
    "all_sync",
    "any_sync",
    "ballot",
    "bitcast",
    "brev",
    "byte_perm",
    "clz",
    "cp_async",
    "cp_async_commit",
    "cp_async_wait",
    "cross",
    "ctz",
    "dot",
    "ffs",
    "fma",
    "funnelshift_l",
    "funnelshift_lc",
    "funnelshift_r",
    "funnelshift_rc",
    "grid_sync",
    "lane_id",
    "ldmatrix",
    "length",
    "length_sq",
    "load_vec2",
    "load_vec4",
    "local_array",
    "match_all",
    "match_any",
    "mma_sync",
    "normalize",
    "philox",
    "popc",
    "shared_array",
    "shfl_down",
    "shfl_idx",
    "shfl_up",
    "shfl_xor",
    "store_matrix",
    "sync_threads",
    "sync_threads_and",
    "sync_threads_count",
    "sync_threads_or",
    "sync_warp",
    "threadfence",
    "threadfence_block",
    "threadfence_system",
    "tma_load",
    "tma_wait",
    "unroll",
    "unsafe",
    "warp_size",
    "warpgroup_arrive",
    "warpgroup_commit",
    "warpgroup_mma",
    "warpgroup_store",
    "warpgroup_wait",
]

warp_size: int = GPU_NATIVE["warp_size"].value
"""The number of threads of a warp (32); in a kernel, a literal."""

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _intrinsic(fn: F) -> F:
    """Give a host stub its registry entry's documentation."""
    entry = GPU_NATIVE[fn.__name__]
    doc = entry.doc[0].upper() + entry.doc[1:] + "."
    fn.__doc__ = doc + (f"\n\n{entry.more}" if entry.more else "")
    return fn


# The shape's length picks the array type (an int is one dimension), for type checkers.
@overload
def shared_array(dtype: type[T], shape: int | tuple[int], swizzle: int = 0) -> CUDASliceMut[T]: ...
@overload
def shared_array(dtype: type[T], shape: tuple[int, int], swizzle: int = 0
                 ) -> CUDASliceMut2D[T]: ...
@overload
def shared_array(dtype: type[T], shape: tuple[int, int, int], swizzle: int = 0
                 ) -> CUDASliceMut3D[T]: ...
@_intrinsic
def shared_array(dtype: type[T], shape: Any, swizzle: int = 0) -> Any:
    _device_only("shared_array()")


@overload
def local_array(dtype: type[T], shape: int | tuple[int]) -> CUDASliceMut[T]: ...
@overload
def local_array(dtype: type[T], shape: tuple[int, int]) -> CUDASliceMut2D[T]: ...
@overload
def local_array(dtype: type[T], shape: tuple[int, int, int]) -> CUDASliceMut3D[T]: ...
@_intrinsic
def local_array(dtype: type[T], shape: Any) -> Any:
    _device_only("local_array()")


def _generator_method(fn: F) -> F:
    """Give a method of :class:`Philox` its registry entry's documentation."""
    entry = GENERATOR_METHODS[fn.__name__]
    fn.__doc__ = entry.doc[0].upper() + entry.doc[1:] + "."
    return fn


class Philox:
    """The random number generator ``rng = philox(seed, subsequence, offset)`` makes in a kernel:
    what type checkers see of it (it exists in kernels only)."""

    def __init__(self) -> None:
        _device_only("philox()")

    @_generator_method
    def random_u32(self) -> int:
        _device_only("rng.random_u32()")

    @_generator_method
    def uniform(self, dtype: type[float] = f32) -> float:
        _device_only("rng.uniform()")

    @_generator_method
    def normal(self, dtype: type[float] = f32) -> float:
        _device_only("rng.normal()")

    @_generator_method
    def randint(self, n: int) -> int:
        _device_only("rng.randint()")

    @_generator_method
    def uniform4(self) -> vec4f:
        _device_only("rng.uniform4()")

    @_generator_method
    def normal4(self) -> vec4f:
        _device_only("rng.normal4()")


@_intrinsic
def philox(seed: int, subsequence: int = 0, offset: int = 0) -> Philox:
    _device_only("philox()")


@_intrinsic
def sync_threads() -> None:
    _device_only("sync_threads()")


@_intrinsic
def sync_warp(mask: int = FULL_MASK) -> None:
    _device_only("sync_warp()")


@_intrinsic
def sync_threads_count(predicate: bool) -> int:
    _device_only("sync_threads_count()")


@_intrinsic
def sync_threads_and(predicate: bool) -> bool:
    _device_only("sync_threads_and()")


@_intrinsic
def sync_threads_or(predicate: bool) -> bool:
    _device_only("sync_threads_or()")


@_intrinsic
def threadfence() -> None:
    _device_only("threadfence()")


@_intrinsic
def threadfence_block() -> None:
    _device_only("threadfence_block()")


@_intrinsic
def threadfence_system() -> None:
    _device_only("threadfence_system()")


@_intrinsic
def ldmatrix(frag: Any, frag_index: Any, src: Any, src_index: Any, num: int = 4,
             trans: bool = False) -> None:
    _device_only("ldmatrix()")


@_intrinsic
def mma_sync(acc: Any, acc_index: Any, a: Any, a_index: Any, b: Any, b_index: Any) -> None:
    _device_only("mma_sync()")


@_intrinsic
def store_matrix(dst: Any, dst_index: Any, acc: Any, acc_index: Any) -> None:
    _device_only("store_matrix()")


@_intrinsic
def cp_async(dst: Any, dst_index: Any, src: Any, src_index: Any, nbytes: int) -> None:
    _device_only("cp_async()")


@_intrinsic
def cp_async_commit() -> None:
    _device_only("cp_async_commit()")


@_intrinsic
def cp_async_wait(n: int = 0) -> None:
    _device_only("cp_async_wait()")


@_intrinsic
def warpgroup_arrive() -> None:
    _device_only("warpgroup_arrive()")


@_intrinsic
def warpgroup_mma(acc: Any, a: Any, a_index: Any, b: Any, b_index: Any, n: int) -> None:
    _device_only("warpgroup_mma()")


@_intrinsic
def warpgroup_commit() -> None:
    _device_only("warpgroup_commit()")


@_intrinsic
def warpgroup_wait(n: int = 0) -> None:
    _device_only("warpgroup_wait()")


@_intrinsic
def warpgroup_store(dst: Any, dst_index: Any, acc: Any, staging: Any = None,
                    staging_index: Any = None) -> None:
    _device_only("warpgroup_store()")


@_intrinsic
def tma_load(dst: Any, dst_index: Any, src: Any, src_index: Any) -> None:
    _device_only("tma_load()")


@_intrinsic
def tma_wait(dst: Any, dst_index: Any) -> None:
    _device_only("tma_wait()")


@_intrinsic
def grid_sync() -> None:
    _device_only("grid_sync()")


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


@_intrinsic
def activemask() -> int:
    _device_only("activemask()")


@_intrinsic
def match_any(value: Any, mask: int = FULL_MASK) -> int:
    _device_only("match_any()")


@_intrinsic
def match_all(value: Any, mask: int = FULL_MASK) -> int:
    _device_only("match_all()")


# ---- bits ----


@_intrinsic
def popc(x: int) -> int:
    _device_only("popc()")


@_intrinsic
def clz(x: int) -> int:
    _device_only("clz()")


@_intrinsic
def ctz(x: int) -> int:
    _device_only("ctz()")


@_intrinsic
def ffs(x: int) -> int:
    _device_only("ffs()")


@_intrinsic
def brev(x: T) -> T:
    _device_only("brev()")


@_intrinsic
def byte_perm(x: int, y: int, selector: int) -> int:
    _device_only("byte_perm()")


@_intrinsic
def funnelshift_l(lo: int, hi: int, shift: int) -> int:
    _device_only("funnelshift_l()")


@_intrinsic
def funnelshift_lc(lo: int, hi: int, shift: int) -> int:
    _device_only("funnelshift_lc()")


@_intrinsic
def funnelshift_r(lo: int, hi: int, shift: int) -> int:
    _device_only("funnelshift_r()")


@_intrinsic
def funnelshift_rc(lo: int, hi: int, shift: int) -> int:
    _device_only("funnelshift_rc()")


@_intrinsic
def bitcast(x: Any, dtype: type[T]) -> T:
    _device_only("bitcast()")


V = TypeVar("V", bound=_Vector)


@overload
def dot(a: _FloatVector, b: _FloatVector) -> float: ...
@overload
def dot(a: _IntVector, b: _IntVector) -> int: ...
@_intrinsic
def dot(a: Any, b: Any) -> Any:
    _device_only("dot()")


@_intrinsic
def cross(a: V, b: V) -> V:
    _device_only("cross()")


@_intrinsic
def length(v: _FloatVector) -> float:
    _device_only("length()")


@overload
def length_sq(v: _FloatVector) -> float: ...
@overload
def length_sq(v: _IntVector) -> int: ...
@_intrinsic
def length_sq(v: Any) -> Any:
    _device_only("length_sq()")


@_intrinsic
def normalize(v: V) -> V:
    _device_only("normalize()")


@_intrinsic
def fma(a: V, b: V, c: V) -> V:
    _device_only("fma()")


@_intrinsic
def load_vec2(x: Any, *indices: int) -> Any:
    _device_only("load_vec2()")


@_intrinsic
def load_vec4(x: Any, *indices: int) -> Any:
    _device_only("load_vec4()")


@_intrinsic
def unroll(iterable: range, factor: int = 0) -> range:
    _device_only("unroll()")


@contextmanager
@_intrinsic
def unsafe() -> Iterator[None]:
    _device_only("unsafe()")
    yield
