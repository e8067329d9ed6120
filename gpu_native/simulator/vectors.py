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

__all__ = ["cross", "dot", "length", "length_sq", "max", "min", "normalize", "vwhere"]


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


def min(a: tuple, b: tuple) -> tuple:
    return tuple(ops.pymin(x, y) for x, y in zip(a, b))


def max(a: tuple, b: tuple) -> tuple:
    return tuple(ops.pymax(x, y) for x, y in zip(a, b))
