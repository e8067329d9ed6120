"""The vector functions on the simulator, mirroring the prelude's (``gn_dot``, ``gn_cross`` ...,
gpu_native/include/gpu_native/prelude.cuh).

A vector value is a tuple of its components, each a value as :mod:`.ops` carries it (a NumPy
scalar or a vector of lanes).  Every function computes in the element type, one rounding per
operation, in the prelude's order: sums run ``x`` first (``dot`` is ``((a.x * b.x + a.y * b.y)
+ a.z * b.z)``), so the results are the GPU's bit for bit where the device compiler does not
contract a product and a sum into an FMA (see :mod:`gpu_native.simulator`).
"""

from __future__ import annotations

import numpy as np

from . import ops
from .machine import where

__all__ = ["cross", "dot", "fma", "length", "length_sq", "max", "min", "normalize", "vwhere"]


def vwhere(m, a: tuple, b: tuple) -> tuple:
    """:func:`.machine.where` component by component: ``a`` on the lanes of ``m``, else ``b``."""
    if m is None:
        return a
    if m is False:
        return b
    return tuple(where(m, x, y) for x, y in zip(a, b))


def dot(a: tuple, b: tuple):
    total = a[0] * b[0]
    for x, y in zip(a[1:], b[1:]):
        total = total + x * y
    return total


def length_sq(a: tuple):
    return dot(a, a)


def length(a: tuple):
    return np.sqrt(dot(a, a))


def normalize(a: tuple) -> tuple:
    """``a / length(a)`` where the length is positive (a NaN length is not), else zero."""
    n = length(a)
    positive = n > 0
    zero = n.dtype.type(0)
    if np.ndim(positive) == 0:  # the same length in every lane: so is every component
        return tuple(x / n for x in a) if positive else (zero,) * len(a)
    return tuple(np.where(positive, x / n, zero) for x in a)


def cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0])


def fma(a: tuple, b: tuple, c: tuple) -> tuple:
    """``a * b + c`` of packed 16-bit pairs, each lane rounded once (CUDA's ``__hfma2``): f16
    lanes are NumPy ``float16`` values, bf16 lanes ``float32`` ones (see :mod:`.ops`)."""
    return tuple(_fma16(x, y, z) for x, y, z in zip(a, b, c))


def _fma16(a, b, c):
    """One lane of :func:`fma`.  The product of two 16-bit floats is exact in f64 (at most 22
    significant bits), but its sum with ``c`` need not be (bf16 spans 2**-133 to 2**127), and a
    sum rounded to f64 can land on a tie of the 16-bit grid that the exact sum is off; so the
    sum is rounded to odd (Boldo and Melquiond: nearest, then the odd neighbour where the
    TwoSum error is nonzero and the last bit even), which a second rounding to at most 51 bits
    keeps correct."""
    half = np.asarray(a).dtype == np.float16
    x, y, z = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(invalid="ignore", over="ignore"):
        p = x * y
        s = p + z
        bb = s - p
        err = (p - (s - bb)) + (z - bb)  # TwoSum: s + err == p + z exactly (finite s)
        fix = (err != 0) & np.isfinite(err) & ((s.view(np.int64) & 1) == 0)
        if np.any(fix):
            s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        out = s.astype(np.float16) if half else ops.f64_to_bf16(s)
    return out[()] if np.ndim(out) == 0 else out


def min(a: tuple, b: tuple) -> tuple:
    return tuple(ops.pymin(x, y) for x, y in zip(a, b))


def max(a: tuple, b: tuple) -> tuple:
    return tuple(ops.pymax(x, y) for x, y in zip(a, b))
