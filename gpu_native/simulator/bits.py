"""The bit intrinsics on lane vectors, bit for bit as the GPU computes them.

``popc``, ``clz``, ``ctz``, ``ffs`` and ``brev`` come in a 32-bit and a 64-bit form (CUDA's
``__popc`` and ``__popcll``; the checker allows ``i32``, ``u32``, ``i64`` and ``u64``) and work on
the operand's bits; ``byte_perm`` and the funnel shifts take 32-bit words (``u32``); ``bitcast``
reads a value's bits as another type of one width.  Each mirrors a CUDA intrinsic or a helper of
the prelude header (``gn_ctz32``, ``gn_byte_perm``, ``gn_bitcast``): the registry names them
(:mod:`gpu_native.lang.registry`) and :func:`gpu_native.simulator.ops.math_function` finds them.

Every function takes NumPy scalars or 1-D lane vectors and returns the same shape.  The work is
done on 1-D unsigned arrays, where NumPy's integer arithmetic wraps without warnings.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..lang.types import ScalarInfo

_U: dict[int, np.dtype] = {4: np.dtype(np.uint32), 8: np.dtype(np.uint64), 2: np.dtype(np.uint16),
      1: np.dtype(np.uint8)}
I32 = np.dtype(np.int32)
U32 = np.dtype(np.uint32)
U64 = np.dtype(np.uint64)

# The bits of each byte in reverse order, and the set bits of each byte.
_REVERSED = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint8)
_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], np.uint8)


def _bits(x) -> tuple[np.ndarray, tuple]:
    """``x``'s bits as a 1-D unsigned array of its width, and ``x``'s shape to restore."""
    a = np.asarray(x)
    return np.ascontiguousarray(a.reshape(-1)).view(_U[a.dtype.itemsize]), a.shape


def _shaped(out: np.ndarray, shape: tuple):
    out = out.reshape(shape)
    return out[()] if out.ndim == 0 else out


def _popcount(u: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # NumPy 2
        return np.bitwise_count(u).astype(I32)
    per_byte = _POPCOUNT[u.view(np.uint8).reshape(len(u), u.itemsize)]
    return per_byte.sum(axis=1, dtype=I32)


def _smear(u: np.ndarray) -> np.ndarray:
    """Every bit below the highest set bit set too."""
    u = u.copy()
    shift = 1
    while shift < u.itemsize * 8:
        u |= u >> u.dtype.type(shift)
        shift *= 2
    return u


def _count(fn: Callable[[np.ndarray], np.ndarray]) -> Callable:
    def apply(x):
        u, shape = _bits(x)
        return _shaped(fn(u), shape)

    apply.__name__ = fn.__name__
    return apply


@_count
def popc(u):
    """``__popc`` / ``__popcll``: the number of set bits."""
    return _popcount(u)


@_count
def clz(u):
    """``__clz`` / ``__clzll``: the zero bits above the highest set bit (the width for 0)."""
    return (u.itemsize * 8 - _popcount(_smear(u))).astype(I32)


@_count
def ctz(u):
    """``gn_ctz32`` / ``gn_ctz64``: the zero bits below the lowest set bit (the width for 0)."""
    lowest = u & (~u + u.dtype.type(1))
    return _popcount(lowest - u.dtype.type(1))  # 0 - 1 wraps to all ones: the width


@_count
def ffs(u):
    """``__ffs`` / ``__ffsll``: the 1-based position of the lowest set bit (0 for 0)."""
    return np.where(u == 0, 0, ctz(u) + 1).astype(I32)


def brev(x):
    """``__brev`` / ``__brevll``: the bits in reverse order, in ``x``'s type."""
    a = np.asarray(x)
    u, shape = _bits(a)
    n = u.itemsize
    flipped = _REVERSED[u.view(np.uint8).reshape(len(u), n)][:, ::-1]
    out = np.ascontiguousarray(flipped).reshape(-1).view(u.dtype).view(a.dtype)
    return _shaped(out, shape)


# The registry names a function per operand width (``popc32``, ``popc64``): one for each.
popc32 = popc64 = popc
clz32 = clz64 = clz
ctz32 = ctz64 = ctz
ffs32 = ffs64 = ffs
brev32 = brev64 = brev


def _words(*values) -> tuple[list[np.ndarray], tuple]:
    """32-bit operands as uint64 vectors of one length (room for ``hi:lo``), and the shape."""
    arrays = np.broadcast_arrays(*(np.asarray(v).astype(U32) for v in values))
    shape = arrays[0].shape
    return [a.reshape(-1).astype(U64) for a in arrays], shape


def byte_perm(x, y, selector):
    """``__byte_perm(x, y, s)``: byte k of the result is byte ``(s >> 4k) & 7`` of ``y:x``."""
    (x, y, s), shape = _words(x, y, selector)
    source = (y << U64.type(32)) | x
    out = np.zeros(len(x), U64)
    for k in range(4):
        pick = (s >> U64.type(4 * k)) & U64.type(7)
        out |= ((source >> (pick * U64.type(8))) & U64.type(0xFF)) << U64.type(8 * k)
    return _shaped(out.astype(U32), shape)


def _funnel(left: bool, clamp: bool) -> Callable:
    def apply(lo, hi, shift):
        (lo, hi, n), shape = _words(lo, hi, shift)
        n = np.minimum(n, U64.type(32)) if clamp else n & U64.type(31)
        source = (hi << U64.type(32)) | lo
        if left:  # the high word of hi:lo << n (n <= 32: the bits wanted stay in 64)
            out = (source << n) >> U64.type(32)
        else:
            out = source >> n
        return _shaped((out & U64.type(0xFFFFFFFF)).astype(U32), shape)

    return apply


funnelshift_l = _funnel(left=True, clamp=False)
funnelshift_lc = _funnel(left=True, clamp=True)
funnelshift_r = _funnel(left=False, clamp=False)
funnelshift_rc = _funnel(left=False, clamp=True)


def bitcast(src: ScalarInfo, dst: ScalarInfo) -> Callable:
    """The lane function of ``bitcast(x, dst)`` for an ``x`` of type ``src`` (one width).

    ``bf16`` values are carried as ``float32`` numbers whose low 16 bits are zero (see
    :mod:`.ops`), so their bits are the float32's high half; NaN payloads are kept."""

    def apply(x):
        a = np.asarray(x)
        if src.name == "bf16":
            u, shape = _bits(a.astype(np.float32))
            u = (u >> np.uint32(16)).astype(np.uint16)
        else:
            u, shape = _bits(a)
        if dst.name == "bf16":
            out = (u.astype(U32) << np.uint32(16)).view(np.float32)
        else:
            out = u.view(np.dtype(dst.numpy))
        return _shaped(out, shape)

    return apply


#: The functions :func:`.ops.math_function` calls with the operand's and the result's types to
#: make the lane function.
TAKES_TYPES = frozenset({bitcast})
